//! Claude Code's definition files as Claude Code reads them: the
//! quote-and-retry parsing, `cadre agents validate`'s grouped warnings and
//! its "not supported yet" fields, and fields honoured by a spawned child.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
async fn fields_not_supported_yet_are_named_by_validate_and_once_at_start_up() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"hi\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".claude/agents/a.md",
        "---\nname: a\ndescription: d\nhooks:\n  Stop:\n    - hooks:\n        - { type: command, command: \"true\" }\nmemory: project\n---\nBody\n",
    );
    h.write(
        ".claude/agents/b.md",
        "---\nname: b\ndescription: d\nmemory: user\nskills: lint\n---\nBody\n",
    );
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    let b = h.path(".claude/agents/b.md").display().to_string();
    for want in [
        format!("warning {b}:5: `skills`: not supported yet (ignored)"),
        "warning (2 files): `memory`: not supported yet (ignored) — `cadre agents validate --verbose` lists them".to_string(),
    ] {
        assert!(text.lines().any(|l| l == want), "missing `{want}`:\n{text}");
    }

    let out = h.cadre(&["agents", "show", "a"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l == "unsupported: memory (not supported yet, ignored)"),
        "{}",
        stdout(&out)
    );

    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .filter(|m| m.contains("not supported yet"))
        .collect();
    assert_eq!(
        warnings,
        [
            "agent definitions: `skills` is not supported yet and is ignored in: b",
            "agent definitions: `memory` is not supported yet and is ignored in: a, b",
        ],
    );
}
