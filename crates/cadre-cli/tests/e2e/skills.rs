//! Skills through the binary: the roster reminder, the `Skill` tool loading
//! one's full text, `allowed-tools` granted while the skill is active, a
//! definition's `skills` preloaded into its child's system prompt, plugins'
//! skills, `cadre skills list | show`.

use crate::common;

use common::{Harness, Wire, rule_records, stderr, stdout, system_text, tool_results};

/// A turn that loads the skill `greeter` and runs `echo` (the first
/// message), then a turn that runs `echo` without loading it (the second).
const GREETER_TURNS: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Skill, input: { skill: "greeter" } }
      - tool_calls:
          - { name: Bash, input: { command: "echo granted-run" } }
      - text: "one"
      - tool_calls:
          - { name: Bash, input: { command: "echo granted-run" } }
      - text: "two"
"#;

fn write_skills(h: &Harness) {
    h.write(
        ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write a changelog entry in this project's style\n---\nUse the Keep a Changelog headings. See template.md here.\n",
    );
    h.write(".claude/skills/changelog/template.md", "## [x.y.z]\n");
    h.write(
        ".claude/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\ndisable-model-invocation: true\n---\nTag it.\n",
    );
}

#[tokio::test]
async fn the_skill_tool_lists_model_skills_and_loads_one() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Skill, input: { skill: "changelog" } }
          - { name: Skill, input: { skill: "release" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    write_skills(&h);
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let skill = records[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Skill")
        .expect("the Skill tool is offered");
    // The roster is a system reminder, not part of the tool list.
    let description = skill["description"].as_str().unwrap();
    assert!(!description.contains("changelog"), "{description}");
    let users = common::user_texts(&records[0].body);
    assert!(
        users.contains("<system-reminder>")
            && users.contains("- changelog: Write a changelog entry in this project's style"),
        "{users}"
    );
    assert!(
        !users.contains("release"),
        "user-only skills are not listed"
    );
    let results = tool_results(&records[1].body);
    assert!(!results[0].1);
    assert!(
        results[0].0.contains("Use the Keep a Changelog headings"),
        "{:?}",
        results[0]
    );
    assert!(
        results[0].0.contains(".claude/skills/changelog"),
        "where its files are"
    );
    assert!(
        results[1].1 && results[1].0.contains("no skill named"),
        "{:?}",
        results[1]
    );
}

#[tokio::test]
async fn a_definitions_skills_are_preloaded_into_its_childs_prompt() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "w", prompt: "child-task", subagent_type: "writer" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    write_skills(&h);
    h.write(
        ".claude/agents/writer.md",
        "---\nname: writer\ndescription: writes\ntools: Read\nskills: changelog, missing-one\n---\nWrite.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let child = rule_records(&h.records(), "child")[0].body.clone();
    let system = system_text(&child);
    assert!(system.contains("# Skill: changelog"), "{system}");
    assert!(
        system.contains("Use the Keep a Changelog headings"),
        "{system}"
    );
    assert!(
        stdout(&out).contains("`skills` names missing-one, which is no skill here"),
        "a missing skill is a warning"
    );
}

#[tokio::test]
async fn cadre_skills_lists_and_shows_them() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    write_skills(&h);
    let out = h.cadre(&["skills", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("/changelog")
            && l.contains("project")
            && l.contains("Write a changelog")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("/release") && l.contains("user only")),
        "{text}"
    );
    let out = h.cadre(&["skills", "show", "changelog"]).await;
    assert!(stdout(&out).contains("Use the Keep a Changelog headings"));
    let out = h.cadre(&["skills", "show", "nope"]).await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn slash_and_a_skills_name_sends_the_skill_in_the_line_front_end() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Answer one.\"\n",
        Wire::Anthropic,
    )
    .await;
    write_skills(&h);
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &["--no-tui"]);
    // A user-only skill is the user's to invoke.
    pty.type_line("/release v2.4");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let records = h.records();
    assert_eq!(records.len(), 1);
    let text = common::user_texts(&records[0].body);
    assert!(text.contains("/release v2.4"), "{text}");
    assert!(text.contains("Tag it."), "{text}");
    assert!(text.contains("ARGUMENTS: v2.4"), "{text}");
}

#[tokio::test]
async fn allowed_tools_run_without_asking_only_while_the_skill_is_active() {
    let h = Harness::new(GREETER_TURNS, Wire::Anthropic).await;
    h.write(
        ".claude/skills/greeter/SKILL.md",
        "---\nname: greeter\ndescription: Greets\nallowed-tools: Bash(echo:*), Nonsense(((\n---\nRun echo.\n",
    );
    // A plugin's skill is found too, under its plugin's name.
    std::fs::create_dir_all(h.data_dir().join("plugins/tools-kit/skills/lint")).unwrap();
    std::fs::write(
        h.data_dir().join("plugins/tools-kit/skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lints the code\n---\nLint.\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let users = common::user_texts(&records[0].body);
    assert!(
        users.contains("- tools-kit:lint: Lints the code"),
        "{users}"
    );
    let loaded = tool_results(&records[1].body);
    assert!(
        loaded[0]
            .0
            .contains("these run without asking: Bash(echo:*)"),
        "{loaded:?}"
    );
    assert!(loaded[0].0.contains("Not granted"), "{loaded:?}");
    // Active: the command runs although `exec` asks nobody.
    let ran = tool_results(&records[2].body);
    let ran = ran.last().unwrap();
    assert!(!ran.1 && ran.0.contains("granted-run"), "{ran:?}");

    // In one session, the next turn no longer has it: the same command asks.
    let h = Harness::new(GREETER_TURNS, Wire::Anthropic).await;
    h.write(
        ".claude/skills/greeter/SKILL.md",
        "---\nname: greeter\ndescription: Greets\nallowed-tools: Bash(echo:*)\n---\nRun echo.\n",
    );
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &["--trust"]);
    pty.type_line("go");
    cadre.wait_for_stdout("one").await;
    assert!(
        !cadre.stderr().contains("Permission needed"),
        "{}",
        cadre.stderr()
    );
    pty.type_line("again");
    cadre.wait_for_stderr("Permission needed: Bash", 1).await;
    pty.type_line("n");
    cadre.wait_for_stdout("two").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let records = h.records();
    let again = tool_results(&records.last().unwrap().body);
    let last = again.last().unwrap();
    assert!(last.1 && !last.0.contains("granted-run"), "{again:?}");
}

#[tokio::test]
async fn a_skills_model_runs_the_rest_of_the_turn() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Skill, input: { skill: "quick" } }
      - text: "answered quickly"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/skills/quick/SKILL.md",
        "---\nname: quick\ndescription: Answers fast\nmodel: haiku\n---\nBe brief.\n",
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records[0].body["model"], "mock-model");
    let model = records[1].body["model"].as_str().unwrap();
    assert!(model.starts_with("claude-haiku"), "{model}");
    let loaded = tool_results(&records[1].body);
    assert!(
        loaded[0].0.contains(&format!("runs on the model {model}")),
        "{loaded:?}"
    );
}

#[tokio::test]
async fn a_skill_sent_with_slash_grants_its_allowed_tools_for_that_turn() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo deployed" } }
      - text: "Deploy done."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    write_skills(&h);
    h.write(
        ".claude/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys\ndisable-model-invocation: true\nallowed-tools: Bash(echo:*)\n---\nRun echo deployed.\n",
    );
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &["--no-tui", "--trust"]);
    pty.type_line("/deploy now");
    cadre.wait_for_stdout("Deploy done.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    assert!(
        !cadre.stderr().contains("Permission needed"),
        "{}",
        cadre.stderr()
    );
    let records = h.records();
    let ran = tool_results(&records[1].body);
    assert!(!ran[0].1 && ran[0].0.contains("deployed"), "{ran:?}");
}

#[tokio::test]
async fn a_project_skills_allowed_tools_need_the_folder_trusted() {
    let h = Harness::new(GREETER_TURNS, Wire::Anthropic).await;
    h.write(
        ".claude/skills/greeter/SKILL.md",
        "---\nname: greeter\ndescription: Greets\nallowed-tools: Bash(echo:*)\n---\nRun echo.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("the allowed-tools of the project skills greeter do not apply"),
        "{}",
        stdout(&out)
    );
    let records = h.records();
    let ran = tool_results(&records[2].body);
    let ran = ran.last().unwrap();
    assert!(ran.1 && !ran.0.contains("granted-run"), "{ran:?}");
}

#[tokio::test]
async fn slash_and_a_skills_name_sends_the_skill_in_the_tui() {
    if !common::tmux::tmux_available() {
        return;
    }
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Released it.\"\n",
        Wire::Anthropic,
    )
    .await;
    write_skills(&h);
    let pane = common::tmux::Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("/release v3.0");
    pane.keys(&["Enter"]);
    pane.wait_text("Released it.").await;
    let records = h.records();
    assert_eq!(records.len(), 1);
    let text = common::user_texts(&records[0].body);
    assert!(text.contains("/release v3.0"), "{text}");
    assert!(text.contains("Tag it."), "{text}");
    assert!(text.contains("ARGUMENTS: v3.0"), "{text}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
