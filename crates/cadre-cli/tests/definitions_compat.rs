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
