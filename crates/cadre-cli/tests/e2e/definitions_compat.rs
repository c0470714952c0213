//! Claude Code's definition files as Claude Code reads them: the
//! quote-and-retry parsing, `cadre agents validate`'s grouped warnings and
//! the fields it reads, and fields honoured by a spawned child.

use crate::common;

use common::*;

#[tokio::test]
async fn role_descriptions_load_and_a_literal_newline_is_kept_as_one() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(
        ".claude/agents/role.md",
        "---\nname: role\ndescription: **ROLE**: Senior reviewer. Use PROACTIVELY.\\nSecond line\ntools: Read\n---\nBody\n",
    );
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let file = h.path(".claude/agents/role.md").display().to_string();
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l == format!("ok      project ({file}): role")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l
            == format!(
                "warning {file}:3: a value with ': ' was quoted to parse (as Claude Code does)"
            )),
        "{text}"
    );
    let out = h.cadre(&["agents", "show", "role"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // `show` prints the description's first line: the `\n` made a second one.
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l == "description: **ROLE**: Senior reviewer. Use PROACTIVELY."),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn validate_groups_a_repeated_warning_and_lists_it_under_verbose() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    for i in 0..5 {
        h.write(
            &format!(".claude/agents/a{i}.md"),
            &format!("---\nname: a{i}\ndescription: d\nemoji: 🤖\n---\nBody\n"),
        );
    }
    h.write(
        ".claude/agents/odd.md",
        "---\nname: odd\ndescription: d\nversion: 2\n---\nBody\n",
    );
    h.write(
        ".claude/agents/bad.md",
        "---\nname: bad\ndescription: d\n  indent: wrong\n---\nBody\n",
    );
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let grouped = "warning (5 files): unknown field `emoji` (kept, ignored) — `cadre agents validate --verbose` lists them";
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("`emoji`"))
            .collect::<Vec<_>>(),
        [&grouped],
        "{text}"
    );
    let dir = h.path(".claude/agents").display().to_string();
    assert!(
        lines.contains(
            &format!("warning {dir}/odd.md:4: unknown field `version` (kept, ignored)").as_str()
        ),
        "a single warning stays on its own line:\n{text}"
    );
    // The error comes last, after every warning.
    let last = lines.last().copied().unwrap_or_default();
    assert!(
        last.starts_with(&format!("error   {dir}/bad.md:4: invalid YAML")),
        "{text}"
    );

    let out = h.cadre(&["agents", "validate", "--verbose"]).await;
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    for i in 0..5 {
        let want = format!("warning {dir}/a{i}.md:4: unknown field `emoji` (kept, ignored)");
        assert!(text.lines().any(|l| l == want), "missing `{want}`:\n{text}");
    }
    assert!(!text.contains("files):"), "{text}");
}

/// The tool names a request offered.
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn subagent_type_matches_ignoring_case_and_separators_and_fable_is_an_alias() {
    let script = r#"
rules:
  - name: reviewer
    when: { first_user: "review-task" }
    replies:
      - text: "REVIEWED"
  - name: bare
    when: { first_user: "bare-task" }
    replies:
      - text: "BARE"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "review", prompt: "review-task", subagent_type: "Code Reviewer" } }
          - { name: Agent, input: { description: "bare", prompt: "bare-task", subagent_type: "no_tools" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/code-reviewer.md",
        "---\nname: code-reviewer\ndescription: Reviews code.\nmodel: fable\ntools: Read\n---\nYou are MY-REVIEWER.\n",
    );
    h.write(
        ".claude/agents/no-tools.md",
        "---\nname: no-tools\ndescription: Answers from its prompt alone.\ntools: []\n---\nYou have no tools.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let reviewer = rule_records(&records, "reviewer");
    assert_eq!(reviewer.len(), 1, "the reviewer ran once");
    let body = &reviewer[0].body;
    assert!(body["system"].to_string().contains("MY-REVIEWER"));
    assert_eq!(body["model"], "claude-fable-5-2");
    assert_eq!(offered_tools(body), ["Read"]);
    // `tools: []` starts the child with no tools at all, as Claude Code does.
    let bare = rule_records(&records, "bare");
    assert_eq!(bare.len(), 1, "the tool-less child ran");
    assert_eq!(offered_tools(&bare[0].body), Vec::<String>::new());
    let parent = rule_records(&records, "parent");
    let results = tool_results(&parent[1].body);
    assert!(
        results
            .iter()
            .any(|(text, error)| !error && text.contains("REVIEWED")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|(text, error)| !error && text.contains("BARE")),
        "{results:?}"
    );
}

#[tokio::test]
async fn isolation_and_the_other_documented_fields_load_without_a_warning() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"hi\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".claude/agents/a.md",
        "---\nname: a\ndescription: d\nhooks:\n  Stop:\n    - hooks:\n        - { type: command, command: \"true\" }\nisolation: worktree\n---\nBody\n",
    );
    h.write(
        ".claude/agents/b.md",
        "---\nname: b\ndescription: d\nisolation: worktree\nmemory: project\n---\nBody\n",
    );
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(!text.contains("warning"), "{text}");

    let out = h.cadre(&["agents", "show", "a"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("isolation"), "{}", stdout(&out));

    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn effort_goes_on_the_childs_requests_and_color_on_its_started_event() {
    let script = r#"
rules:
  - name: thinker
    when: { first_user: "think-task" }
    replies:
      - text: "THOUGHT"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "think", prompt: "think-task", subagent_type: "thinker" } }
      - text: "parent done"
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        h.write(
            ".claude/agents/thinker.md",
            "---\nname: thinker\ndescription: Thinks hard.\neffort: high\ncolor: red\ntools: Read\n---\nYou think.\n",
        );
        let out = h.cadre(&["exec", "--json", "go"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        let child = rule_records(&records, "thinker");
        assert_eq!(child.len(), 1, "{wire:?}");
        let body = &child[0].body;
        let parents = rule_records(&records, "parent");
        assert_eq!(parents.len(), 2, "{wire:?}");
        match wire {
            Wire::Anthropic => {
                assert_eq!(body["output_config"]["effort"], "high", "{body}");
                assert!(body.get("reasoning_effort").is_none());
            }
            Wire::OpenAi => {
                assert_eq!(body["reasoning_effort"], "high", "{body}");
                assert!(body.get("output_config").is_none());
            }
        }
        for parent in parents {
            assert!(parent.body.get("output_config").is_none(), "{wire:?}");
            assert!(parent.body.get("reasoning_effort").is_none(), "{wire:?}");
        }
        // The colour travels on the child's `subagent_started` event.
        let started: Vec<_> = events(&out)
            .into_iter()
            .filter(|e| e["type"] == "subagent_started")
            .collect();
        assert_eq!(started.len(), 1, "{wire:?}");
        assert_eq!(started[0]["agent_type"], "thinker");
        assert_eq!(started[0]["color"], "red");
        // Both fields are honoured now: nothing calls them unsupported.
        assert!(
            !events(&out)
                .iter()
                .any(|e| e["type"] == "warning" && e["message"].to_string().contains("effort")),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_child_without_a_color_has_none_on_its_event_and_bad_values_are_named() {
    let script = r#"
rules:
  - name: plain
    when: { first_user: "plain-task" }
    replies:
      - text: "PLAIN"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "plain", prompt: "plain-task", subagent_type: "plain" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/plain.md",
        "---\nname: plain\ndescription: d\neffort: extreme\ncolor: automatic\n---\nBody\n",
    );
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let file = h.path(".claude/agents/plain.md").display().to_string();
    let text = stdout(&out);
    for want in [
        format!(
            "warning {file}:4: `effort`: unknown effort `extreme` (ignored; expected one of low, medium, high, xhigh, max)"
        ),
        format!(
            "warning {file}:5: `color`: unknown color `automatic` (ignored; expected one of red, blue, green, yellow, purple, orange, pink, cyan)"
        ),
    ] {
        assert!(text.lines().any(|l| l == want), "missing `{want}`:\n{text}");
    }
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "plain");
    assert_eq!(child.len(), 1);
    assert!(child[0].body.get("output_config").is_none());
    let started: Vec<_> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "subagent_started")
        .collect();
    assert_eq!(started.len(), 1);
    assert!(started[0].get("color").is_none(), "{}", started[0]);
}

#[tokio::test]
async fn initial_prompt_comes_first_under_agent_and_show_prints_the_fields() {
    let script = r#"
rules:
  - name: main
    replies:
      - text: "STARTED"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/starter.md",
        "---\nname: starter\ndescription: Starts by reading.\neffort: max\ncolor: cyan\ninitialPrompt: read the README first\ntools: Read\n---\nYou are STARTER.\n",
    );
    let out = h.cadre(&["agents", "show", "starter"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "effort:      max",
        "color:       cyan",
        "initialPrompt: read the README first (sent first under --agent)",
    ] {
        assert!(text.lines().any(|l| l == want), "missing `{want}`:\n{text}");
    }
    assert!(!text.contains("unsupported"), "{text}");

    let out = h
        .cadre(&["exec", "--agent", "starter", "then list the files"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("not supported yet"),
        "{}",
        stderr(&out)
    );
    let records = h.records();
    assert_eq!(records.len(), 1);
    let body = &records[0].body;
    let first = &body["messages"][0];
    assert_eq!(first["role"], "user");
    let text = match &first["content"] {
        serde_json::Value::String(s) => s.clone(),
        blocks => blocks[0]["text"].as_str().unwrap_or_default().to_string(),
    };
    assert_eq!(text, "read the README first\n\nthen list the files");
    // The main session runs as the definition: its effort too.
    assert_eq!(body["output_config"]["effort"], "max", "{body}");
    assert!(system_text(body).contains("You are STARTER."));
}

#[tokio::test]
async fn initial_prompt_is_ignored_when_the_definition_runs_as_a_child() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "CHILD"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "c", prompt: "child-task", subagent_type: "starter" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/starter.md",
        "---\nname: starter\ndescription: d\ninitialPrompt: FIRST-THING\n---\nBody\n",
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("initialPrompt"), "{}", stderr(&out));
    let records = h.records();
    for r in &records {
        assert!(!user_texts(&r.body).contains("FIRST-THING"), "{}", r.body);
    }
    assert_eq!(rule_records(&records, "child").len(), 1);
}
