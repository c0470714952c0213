//! Output styles through the binary: a style's text ends the main agent's
//! system prompt, the coding instructions go unless the style keeps them,
//! a plugin's forced style applies by itself, children never get a style,
//! and `/config set outputStyle` writes the user settings the next session
//! reads.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, stderr, system_text};

const QUIET: &str = r#"
rules:
  - name: chat
    replies:
      - text: "Done."
"#;

/// Words of cadre's coding instructions (see `CODING_INSTRUCTIONS`).
const CODING: &str = "make the smallest correct change";

const PIRATE: &str = "---
name: Pirate
description: Talks like a pirate
keep-coding-instructions: false
---
PIRATE-STYLE: answer like a pirate, arr.
";

fn main_system(h: &Harness) -> String {
    system_text(&h.records()[0].body)
}

#[tokio::test]
async fn output_style_text_ends_the_prompt_and_drops_the_coding_instructions() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    h.write(".claude/output-styles/pirate.md", PIRATE);
    h.write(".claude/settings.json", r#"{"outputStyle": "Pirate"}"#);
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = main_system(&h);
    assert!(
        system
            .trim_end()
            .ends_with("PIRATE-STYLE: answer like a pirate, arr."),
        "{system}"
    );
    assert!(system.starts_with("You are cadre"), "{system}");
    assert!(!system.contains(CODING), "{system}");
}

#[tokio::test]
async fn output_style_that_keeps_the_coding_instructions_keeps_them() {
    let h = Harness::new(QUIET, Wire::OpenAi).await;
    // The user's own folder, chosen in the user's settings.
    std::fs::create_dir_all(h.data_dir().join("output-styles")).unwrap();
    std::fs::write(
        h.data_dir().join("output-styles/teach.md"),
        "---\nname: Teach\nkeep-coding-instructions: true\n---\nTEACH-STYLE: explain each step.\n",
    )
    .unwrap();
    std::fs::write(
        h.data_dir().join("settings.json"),
        r#"{"outputStyle": "Teach"}"#,
    )
    .unwrap();
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = main_system(&h);
    assert!(
        system
            .trim_end()
            .ends_with("TEACH-STYLE: explain each step."),
        "{system}"
    );
    assert!(system.contains(CODING), "{system}");
}

#[tokio::test]
async fn output_style_built_in_explanatory_and_an_unknown_name_warns() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    h.write(".claude/settings.json", r#"{"outputStyle": "Explanatory"}"#);
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = main_system(&h);
    assert!(system.contains("# Output style: Explanatory"), "{system}");
    // The built-ins keep cadre's coding instructions.
    assert!(system.contains(CODING), "{system}");

    h.write(".claude/settings.json", r#"{"outputStyle": "Nonesuch"}"#);
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("outputStyle \"Nonesuch\" ignored"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn output_style_of_a_plugin_forced_for_it_applies_by_itself() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    h.write(
        "kit/output-styles/terse.md",
        "---\nname: terse\ndescription: Few words\nforce-for-plugin: true\n---\nKIT-TERSE: one line answers.\n",
    );
    // The user's choice loses to the plugin's forced style.
    h.write(".claude/settings.json", r#"{"outputStyle": "Concise"}"#);
    let out = h.cadre(&["exec", "--plugin-dir", "kit", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = main_system(&h);
    assert!(
        system.trim_end().ends_with("KIT-TERSE: one line answers."),
        "{system}"
    );
    assert!(!system.contains("# Output style: Concise"), "{system}");
    assert!(!system.contains(CODING), "{system}");
    assert!(
        !stderr(&out).contains("output styles"),
        "no longer named as not applied: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn output_style_never_reaches_a_subagent() {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look", prompt: "child-task", subagent_type: "finder" } }
      - text: "All reports in."
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "Nothing found."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/finder.md",
        "---\nname: finder\ndescription: Finds things.\ntools: Read, Grep, Glob\n---\nYou are FINDER.\n",
    );
    h.write(".claude/output-styles/pirate.md", PIRATE);
    h.write(".claude/settings.json", r#"{"outputStyle": "Pirate"}"#);
    let out = h.cadre(&["exec", "find things"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child: Vec<_> = records
        .iter()
        .filter(|r| r.rule.as_deref() == Some("child"))
        .collect();
    assert!(!child.is_empty(), "the child ran: {records:?}");
    for r in child {
        let system = system_text(&r.body);
        assert!(!system.contains("PIRATE-STYLE"), "{system}");
    }
    let parent = records
        .iter()
        .find(|r| r.rule.as_deref() == Some("parent"))
        .map(|r| system_text(&r.body))
        .unwrap_or_default();
    assert!(parent.contains("PIRATE-STYLE"), "{parent}");
}

#[tokio::test]
async fn output_style_set_with_config_is_written_to_the_user_settings_and_used_next_start() {
    let script = r#"
rules:
  - name: chat
    step_by: requests
    replies:
      - text: "Answer one."
      - text: "Answer two."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("settings.json"),
        r#"{"env": {"KEEP_ME": "1"}}"#,
    )
    .unwrap();
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("/config");
    cadre.wait_for_stderr("outputStyle", 1).await;
    pty.type_line("/config set outputStyle explanatory");
    cadre
        .wait_for_stderr("outputStyle = Explanatory written to", 1)
        .await;
    // This process keeps its prompt; the next start reads the file.
    pty.type_line("first");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let out = h.cadre(&["exec", "second"]).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let err = cadre.stderr();
    let table = err
        .lines()
        .find(|l| l.starts_with("outputStyle "))
        .unwrap_or_else(|| panic!("no outputStyle row: {err}"));
    assert!(
        table.contains("Default") && table.contains("the default"),
        "{table}"
    );
    let path = h.data_dir().join("settings.json");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["outputStyle"], "Explanatory");
    assert_eq!(written["env"]["KEEP_ME"], "1", "other keys are kept");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let records = h.records();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(!system_text(&records[0].body).contains("# Output style"));
    assert!(
        system_text(&records[1].body).contains("# Output style: Explanatory"),
        "{}",
        system_text(&records[1].body)
    );
}

#[tokio::test]
async fn output_style_picked_in_the_config_pane_is_written() {
    use common::tmux::{Pane, tmux_available};
    if !tmux_available() {
        return;
    }
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model · default").await;
    pane.type_text("/config");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Settings").await;
    assert!(screen.contains("outputStyle"), "{screen}");
    assert!(screen.contains("permissions.defaultMode"), "{screen}");
    // model, permissions.defaultMode, then outputStyle.
    pane.keys(&["Down"]);
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    pane.wait_text("Explanatory").await;
    pane.keys(&["Down"]);
    pane.keys(&["Enter"]);
    pane.wait_text("outputStyle = Explanatory written to").await;
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.data_dir().join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(written["outputStyle"], "Explanatory");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
