//! Agent definitions end to end (DESIGN 7.2–7.5): where they come from and
//! which one wins, which files are skipped and why, Claude Code files, the
//! `--agents` and `--agent` flags, `cadre agents list|show|validate`, and what
//! a spawned child is actually sent — all through the real binary against the
//! mock model server.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use cadre_mock::Record;
use common::{Harness, Wire, events, stderr, stdout, system_text, tool_results};
use serde_json::Value;

/// The main session's system prompt starts with this (the built-in base prompt).
const MAIN_SYSTEM: &str = "You are cadre,";
/// The built-in `Explore` prompt starts with this.
const BUILTIN_EXPLORE: &str = "You are Explore, a read-only search specialist";

/// A definition file: frontmatter lines `extra` after name and description.
fn agent_md(name: &str, description: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs cadre in `cwd` instead of the project root.
async fn cadre_in(h: &Harness, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    h.command(args, env)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("cadre runs")
}

/// The tool names a request offers (Anthropic wire).
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The text of the first user message (Anthropic wire).
fn first_user_text(body: &Value) -> String {
    let m = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Records answered by the named rule.
fn by_rule<'a>(records: &'a [Record], rule: &str) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| r.rule.as_deref() == Some(rule))
        .collect()
}

/// The names of the rules that answered, in order.
fn rules_hit(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| r.rule.clone().unwrap_or_else(|| "<none>".into()))
        .collect()
}

/// The `cadre agents list` line of `name`.
fn list_line(out: &Output, name: &str) -> Option<String> {
    stdout(out)
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .map(str::to_string)
}

/// The value of a `cadre agents show` field (`tools:`, `mode:`, …).
fn show_field(out: &Output, field: &str) -> String {
    let prefix = format!("{field}:");
    stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_string()))
        .unwrap_or_else(|| panic!("no {field} in: {}", stdout(out)))
}

/// A script: one child rule per `(rule name, system marker)`, answering with
/// `"<rule name> report"`, then the parent, whose first reply is `calls`
/// (a YAML list of tool calls) and whose second is `parent done`.
fn spawn_script(children: &[(&str, &str)], parent_system: &str, calls: &str) -> String {
    let mut s = String::from("rules:\n");
    for (rule, marker) in children {
        s.push_str(&format!(
            "  - name: {rule}\n    when: {{ system: {marker:?} }}\n    replies:\n      - text: \"{rule} report\"\n"
        ));
    }
    s.push_str(&format!(
        "  - name: parent\n    when: {{ system: {parent_system:?} }}\n    replies:\n      - tool_calls:\n{calls}      - text: \"parent done\"\n"
    ));
    s
}

/// One `Agent` call as a YAML list item of `spawn_script`'s `calls`.
fn agent_call(subagent_type: &str, prompt: &str) -> String {
    format!(
        "          - name: Agent\n            input: {{ description: \"look into it\", prompt: {prompt:?}, subagent_type: {subagent_type:?} }}\n"
    )
}

// ---------------------------------------------------------------------------
// 1. Precedence
// ---------------------------------------------------------------------------

/// One level that defines `Explore`.
struct Level {
    /// What `list` prints for it: the source, with the file in parentheses.
    shown: String,
    /// The marker its body starts with.
    marker: &'static str,
    /// The child rule keyed by the marker.
    rule: &'static str,
}

#[tokio::test]
async fn precedence_is_managed_flag_project_inner_outer_user_cadre_user_claude_builtin() {
    let levels_markers = [
        ("managed", "MARKER-MANAGED"),
        ("flag", "MARKER-FLAG"),
        ("inner", "MARKER-PROJECT-INNER"),
        ("outer", "MARKER-PROJECT-OUTER"),
        ("usercadre", "MARKER-USER-CADRE"),
        ("userclaude", "MARKER-USER-CLAUDE"),
        ("builtin", BUILTIN_EXPLORE),
        // Above the repository root: must never be used.
        ("above", "MARKER-ABOVE-ROOT"),
    ];
    let script = spawn_script(
        &levels_markers,
        MAIN_SYSTEM,
        &agent_call("Explore", "find the config loader"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let managed_root = tempfile::tempdir().unwrap();
    let managed = managed_root.path().join("agents");
    let p = h.project.path().to_path_buf();
    let repo = p.join("repo");
    let sub = repo.join("sub");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();

    let explore = |marker: &str, what: &str| agent_md("Explore", what, "", &format!("{marker}\n"));
    let managed_file = managed.join("nested/explore.md");
    let inner_file = sub.join(".cadre/agents/explore.md");
    let outer_file = repo.join(".claude/agents/explore.md");
    let user_cadre_file = h.data_dir().join("agents/explore.md");
    let user_claude_file = h.home.path().join(".claude/agents/mine.md");
    write_file(&managed_file, &explore("MARKER-MANAGED", "managed"));
    write_file(&inner_file, &explore("MARKER-PROJECT-INNER", "inner"));
    write_file(&outer_file, &explore("MARKER-PROJECT-OUTER", "outer"));
    write_file(
        &user_cadre_file,
        &explore("MARKER-USER-CADRE", "user cadre"),
    );
    write_file(
        &user_claude_file,
        &explore("MARKER-USER-CLAUDE", "user claude"),
    );
    // Above the repository root (the project dir holds the repo).
    write_file(
        &p.join(".claude/agents/explore.md"),
        &explore("MARKER-ABOVE-ROOT", "above"),
    );
    write_file(
        &p.join(".cadre/agents/other.md"),
        &agent_md("above-root-only", "d", "", "MARKER-ABOVE-ROOT"),
    );
    // Same directory: .cadre beats .claude; across directories the closest wins.
    write_file(
        &sub.join(".claude/agents/s.md"),
        &agent_md("samedir", "claude", "", "b"),
    );
    write_file(
        &sub.join(".cadre/agents/s.md"),
        &agent_md("samedir", "cadre", "", "b"),
    );
    write_file(
        &sub.join(".claude/agents/c.md"),
        &agent_md("closest", "inner claude", "", "b"),
    );
    write_file(
        &repo.join(".cadre/agents/c.md"),
        &agent_md("closest", "outer cadre", "", "b"),
    );
    let flag = r#"{"Explore": {"description": "flag", "prompt": "MARKER-FLAG"}}"#;

    let shown = |source: &str, f: &Path| format!("{source} ({})", f.display());
    let levels = [
        Level {
            shown: shown("managed", &managed_file),
            marker: "MARKER-MANAGED",
            rule: "managed",
        },
        Level {
            shown: "flag".into(),
            marker: "MARKER-FLAG",
            rule: "flag",
        },
        Level {
            shown: shown("project", &inner_file),
            marker: "MARKER-PROJECT-INNER",
            rule: "inner",
        },
        Level {
            shown: shown("project", &outer_file),
            marker: "MARKER-PROJECT-OUTER",
            rule: "outer",
        },
        Level {
            shown: shown("user", &user_cadre_file),
            marker: "MARKER-USER-CADRE",
            rule: "usercadre",
        },
        Level {
            shown: shown("user", &user_claude_file),
            marker: "MARKER-USER-CLAUDE",
            rule: "userclaude",
        },
        Level {
            shown: "built-in".into(),
            marker: BUILTIN_EXPLORE,
            rule: "builtin",
        },
    ];

    let managed_env = managed.to_str().unwrap().to_string();
    let mut seen = 0;
    for (i, level) in levels.iter().enumerate() {
        let env = [("CADRE_MANAGED_AGENTS_DIR", managed_env.as_str())];
        let mut args: Vec<&str> = Vec::new();
        if i <= 1 {
            args.extend(["--agents", flag]);
        }

        // `list`: the winner, then what it overrides, highest first.
        let mut list_args = args.clone();
        list_args.extend(["agents", "list"]);
        let out = cadre_in(&h, &sub, &list_args, &env).await;
        assert!(out.status.success(), "{}: {}", level.rule, stderr(&out));
        let line = list_line(&out, "Explore").expect("Explore listed");
        let mut want = format!(
            "{:<24} {:<9} ",
            "Explore",
            level.shown.split(' ').next().unwrap()
        );
        want.push_str(level.shown.split_once(' ').map_or("", |(_, f)| f));
        let shadows: Vec<&str> = levels[i + 1..].iter().map(|l| l.shown.as_str()).collect();
        if !shadows.is_empty() {
            want.push_str(&format!("  overrides: {}", shadows.join(", ")));
        }
        assert_eq!(line.trim_end(), want.trim_end(), "stage {}", level.rule);
        assert!(!stdout(&out).contains("MARKER-ABOVE-ROOT"));
        assert!(
            list_line(&out, "above-root-only").is_none(),
            "a definition above the repository root is not loaded: {}",
            stdout(&out)
        );
        if i == 0 {
            let samedir = list_line(&out, "samedir").expect("samedir listed");
            assert_eq!(
                samedir,
                format!(
                    "{:<24} {:<9} ({})  overrides: project ({})",
                    "samedir",
                    "project",
                    sub.join(".cadre/agents/s.md").display(),
                    sub.join(".claude/agents/s.md").display()
                )
            );
            let closest = list_line(&out, "closest").expect("closest listed");
            assert_eq!(
                closest,
                format!(
                    "{:<24} {:<9} ({})  overrides: project ({})",
                    "closest",
                    "project",
                    sub.join(".claude/agents/c.md").display(),
                    repo.join(".cadre/agents/c.md").display()
                )
            );
        }

        // A spawn uses the winner: its body starts the child's system prompt.
        let mut exec_args = args.clone();
        exec_args.extend(["exec", "explore for me"]);
        let out = cadre_in(&h, &sub, &exec_args, &env).await;
        assert!(out.status.success(), "{}: {}", level.rule, stderr(&out));
        assert_eq!(stdout(&out).trim(), "parent done");
        let records = h.records();
        let new = &records[seen..];
        seen = records.len();
        assert_eq!(
            rules_hit(new),
            ["parent", level.rule, "parent"],
            "stage {}",
            level.rule
        );
        let child = &new[1].body;
        assert!(
            system_text(child).starts_with(level.marker),
            "stage {}: {}",
            level.rule,
            system_text(child)
        );
        assert_eq!(first_user_text(child), "find the config loader");
        // The winner replaces the built-in whole: only the built-in asks for
        // its small model; the others inherit the parent's.
        let model = if level.rule == "builtin" {
            "claude-haiku-4-5"
        } else {
            "mock-model"
        };
        assert_eq!(child["model"], model, "stage {}", level.rule);
        let results = tool_results(&new[2].body);
        assert!(
            results[0].0.contains(&format!("{} report", level.rule)) && !results[0].1,
            "{results:?}"
        );

        // Remove this level for the next stage.
        match level.rule {
            "managed" => std::fs::remove_file(&managed_file).unwrap(),
            "flag" => {}
            "inner" => std::fs::remove_file(&inner_file).unwrap(),
            "outer" => std::fs::remove_file(&outer_file).unwrap(),
            "usercadre" => std::fs::remove_file(&user_cadre_file).unwrap(),
            "userclaude" => std::fs::remove_file(&user_claude_file).unwrap(),
            _ => {}
        }
    }
    assert!(by_rule(&h.records(), "above").is_empty());
}

// ---------------------------------------------------------------------------
// 2. Skipped files
// ---------------------------------------------------------------------------

/// Writes the bad and good files into `<project>/.claude/agents`; returns that dir.
fn write_mixed_agents(h: &Harness) -> PathBuf {
    let d = h.path(".claude/agents");
    write_file(&d.join("README.md"), "# Our agents\n\nNotes for people.\n");
    write_file(
        &d.join("noname.md"),
        "---\ndescription: only notes\n---\nb\n",
    );
    write_file(&d.join("colon.md"), &agent_md("team:lint", "d", "", "b"));
    write_file(&d.join("dash.md"), &agent_md("-dash", "d", "", "b"));
    write_file(&d.join("nodesc.md"), "---\nname: nodesc\n---\nb\n");
    // The stray indentation is on line 7 of the file.
    write_file(
        &d.join("broken.md"),
        "---\nname: broken\ndescription: d\nmodel: sonnet\ntools:\n  - Read\n - Grep\n---\nb\n",
    );
    write_file(
        &d.join("good.md"),
        &agent_md("good", "a good one", "tools: Read\n", "MARKER-GOOD"),
    );
    // Scanned recursively; identity is the name, not the file name.
    write_file(
        &d.join("team/whatever.md"),
        &agent_md("helper", "another good one", "", "MARKER-HELPER"),
    );
    d
}

fn expected_issue_lines(d: &Path) -> Vec<String> {
    let d = d.display();
    vec![
        format!("info    {d}/README.md: no frontmatter; treated as documentation"),
        format!("info    {d}/noname.md: no name: treated as documentation"),
        format!("error   {d}/colon.md:2: invalid name `team:lint`: must not contain `:`"),
        format!("error   {d}/dash.md:2: invalid name `-dash`: must not start with `-`"),
        format!(
            "error   {d}/nodesc.md:2: agent `nodesc` has no `description` (required with `name`)"
        ),
    ]
}

#[tokio::test]
async fn skip_rules_each_reported_with_its_reason_and_the_good_files_still_load() {
    let script = spawn_script(
        &[("good", "MARKER-GOOD")],
        MAIN_SYSTEM,
        &agent_call("good", "do the good thing"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let d = write_mixed_agents(&h);
    let yaml_prefix = format!(
        "error   {}/broken.md:7: invalid YAML in frontmatter: ",
        d.display()
    );

    // With a PATH and without one (every source).
    let with_path = h.cadre(&["agents", "validate", d.to_str().unwrap()]).await;
    let without = h.cadre(&["agents", "validate"]).await;
    for (label, out) in [("PATH", &with_path), ("no PATH", &without)] {
        let text = stdout(out);
        assert_eq!(out.status.code(), Some(1), "{label}: {text}");
        for want in expected_issue_lines(&d) {
            assert!(
                text.lines().any(|l| l == want),
                "{label}: missing `{want}` in:\n{text}"
            );
        }
        assert!(
            text.lines().any(|l| l.starts_with(&yaml_prefix)),
            "{label}: YAML error with file and line:\n{text}"
        );
        for (name, file) in [("good", "good.md"), ("helper", "team/whatever.md")] {
            let want = format!("ok      project ({}/{file}): {name}", d.display());
            assert!(
                text.lines().any(|l| l == want),
                "{label}: `{want}`:\n{text}"
            );
        }
        for bad in ["team:lint", "-dash", "nodesc", "broken"] {
            assert!(
                !text
                    .lines()
                    .any(|l| l.starts_with("ok") && l.ends_with(&format!(": {bad}"))),
                "{label}: {bad} must not load:\n{text}"
            );
        }
    }
    // Without a PATH the built-ins are there too.
    assert!(
        stdout(&without)
            .lines()
            .any(|l| l == "ok      built-in: Explore")
    );

    // `list` shows the good ones and says how many files were skipped.
    let out = h.cadre(&["agents", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let good = list_line(&out, "good").expect("good listed");
    assert!(
        good.contains(&format!("({}/good.md)", d.display())),
        "{good}"
    );
    let helper = list_line(&out, "helper").expect("helper listed");
    assert!(helper.contains("team/whatever.md"), "{helper}");
    let listed = stdout(&out);
    let names: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        ["Explore", "Plan", "general-purpose", "good", "helper"]
    );
    assert!(
        stderr(&out).contains("4 definition file(s) skipped; see `cadre agents validate`"),
        "{}",
        stderr(&out)
    );

    // A good one spawns.
    let out = h.cadre(&["exec", "delegate it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "good", "parent"]);
    assert!(system_text(&records[1].body).starts_with("MARKER-GOOD"));
    assert_eq!(tool_names(&records[1].body), ["Read"]);

    // A directory of only good files passes.
    let clean = h.path("clean");
    write_file(&clean.join("a.md"), &agent_md("a", "d", "", "b"));
    write_file(&clean.join("deep/b.md"), &agent_md("b", "d", "", "b"));
    let out = h
        .cadre(&["agents", "validate", clean.to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "ok      project ({}): a\nok      project ({}): b\n",
            clean.join("a.md").display(),
            clean.join("deep/b.md").display()
        )
    );
    // So does a single good file.
    let out = h
        .cadre(&["agents", "validate", clean.join("a.md").to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[tokio::test]
async fn skipped_files_are_warned_about_at_start_up_and_documentation_is_silent() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"hi\"\n",
        Wire::Anthropic,
    )
    .await;
    let d = write_mixed_agents(&h);
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect();
    for file in ["colon.md", "dash.md", "nodesc.md", "broken.md"] {
        let path = d.join(file).display().to_string();
        assert!(
            warnings.iter().any(|w| w.contains(&path)),
            "no start-up warning for {file}: {warnings:?}"
        );
    }
    for file in ["README.md", "noname.md", "good.md"] {
        assert!(
            !warnings.iter().any(|w| w.contains(file)),
            "{file} must be silent: {warnings:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 3. Claude Code compatibility
// ---------------------------------------------------------------------------

#[tokio::test]
async fn claude_code_files_load_crlf_bom_comma_tools_examples_color_model_unknown_fields() {
    let script = spawn_script(
        &[("reviewer", "MARKER-REVIEWER")],
        MAIN_SYSTEM,
        &agent_call("reviewer", "review src/lib.rs"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    // As Claude Code writes them: one long unquoted line with literal `\n`
    // sequences, `<example>` blocks and `: ` inside.
    let description = r#"Use this agent after writing code to review it.\n\n<example>\nContext: the user just wrote a parser.\nuser: "Please review my parser"\nassistant: "I'll use the reviewer agent to review it"\n<commentary>\nNew code was written, so review it.\n</commentary>\n</example>"#;
    let text = format!(
        "\u{feff}---\nname: reviewer\ndescription: {description}\ntools: Read, Grep, Glob\ncolor: purple\nmodel: claude-3-5-sonnet-20241022\nproactive: true\n---\n\nMARKER-REVIEWER You are a meticulous code reviewer.\n\nReview carefully.\n"
    )
    .replace('\n', "\r\n");
    h.write(".claude/agents/reviewer.md", &text);

    let out = h.cadre(&["agents", "show", "reviewer"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let tools: Vec<String> = show_field(&out, "tools")
        .split(", ")
        .map(str::to_string)
        .collect();
    assert_eq!(sorted(tools), strings(&["Glob", "Grep", "Read"]));
    assert_eq!(show_field(&out, "model"), "claude-3-5-sonnet-20241022");
    // The literal `\n`s are newlines, as Claude Code reads them: `show`
    // prints the first line.
    assert_eq!(
        show_field(&out, "description"),
        "Use this agent after writing code to review it."
    );
    assert_eq!(
        show_field(&out, "source"),
        format!(
            "project ({})",
            h.path(".claude/agents/reviewer.md").display()
        )
    );
    assert_eq!(
        show_field(&out, "unknown"),
        r#"["proactive"] (kept, ignored)"#
    );
    assert!(
        !stdout(&out).contains('\r'),
        "CRLF leaked: {:?}",
        stdout(&out)
    );

    let out = h.cadre(&["agents", "list"]).await;
    assert!(list_line(&out, "reviewer").is_some(), "{}", stdout(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));

    // Warnings, not errors: the unknown field and the quoted description.
    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let file = h.path(".claude/agents/reviewer.md").display().to_string();
    let text = stdout(&out);
    for want in [
        format!("warning {file}:7: unknown field `proactive` (kept, ignored)"),
        format!("ok      project ({file}): reviewer"),
    ] {
        assert!(text.lines().any(|l| l == want), "missing `{want}`:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("warning {file}:3: "))
                && l.ends_with("value with ': ' was quoted to parse (as Claude Code does)")),
        "{text}"
    );
    assert!(!text.contains("color"), "color is a known field:\n{text}");

    // Spawned: exactly those tools (no Agent), that model, the body as the prompt.
    let out = h.cadre(&["exec", "get it reviewed"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "reviewer", "parent"]);
    let child = &records[1].body;
    assert_eq!(
        sorted(tool_names(child)),
        strings(&["Glob", "Grep", "Read"])
    );
    assert_eq!(child["model"], "claude-3-5-sonnet-20241022");
    assert_eq!(records[0].body["model"], "mock-model");
    let system = system_text(child);
    assert!(
        system.starts_with(
            "MARKER-REVIEWER You are a meticulous code reviewer.\n\nReview carefully."
        ),
        "{system:?}"
    );
    assert!(!system.contains('\r') && !system.contains('\u{feff}'));
    assert_eq!(first_user_text(child), "review src/lib.rs");
    // The parent offers the long description in its roster, flattened to one line.
    let roster = first_user_text(&records[0].body);
    assert!(
        roster.contains("- reviewer: Use this agent after writing code"),
        "{roster}"
    );
}

#[tokio::test]
async fn an_unquoted_colon_in_a_one_line_description_is_quoted_and_validate_says_so() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(
        ".claude/agents/triage.md",
        "---\nname: triage\ndescription: Use when: a bug report arrives\ntools: Read\n---\nTriage.\n",
    );
    let out = h.cadre(&["agents", "show", "triage"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        show_field(&out, "description"),
        "Use when: a bug report arrives"
    );

    let out = h.cadre(&["agents", "validate"]).await;
    assert_eq!(out.status.code(), Some(0), "a warning is not an error");
    let file = h.path(".claude/agents/triage.md");
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l == format!("ok      project ({}): triage", file.display())),
        "{text}"
    );
    let warning = text
        .lines()
        .find(|l| l.starts_with("warning"))
        .unwrap_or_else(|| panic!("no warning:\n{text}"));
    assert!(
        warning.starts_with(&format!("warning {}:3: ", file.display()))
            && warning.contains("value with ': ' was quoted to parse"),
        "{warning}"
    );
}

// ---------------------------------------------------------------------------
// 4. --agents JSON
// ---------------------------------------------------------------------------

#[tokio::test]
async fn agents_flag_json_defines_a_spawnable_agent_and_bad_json_is_a_usage_error() {
    let script = spawn_script(
        &[("reviewer", "MARKER-FLAG-REVIEWER")],
        MAIN_SYSTEM,
        &agent_call("reviewer", "check the diff"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let json = r#"{"reviewer": {"description": "Reviews code", "prompt": "MARKER-FLAG-REVIEWER Review the change.", "tools": ["Read", "Grep"], "model": "opus"}}"#;

    let out = h
        .cadre(&["--agents", json, "agents", "show", "reviewer"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(show_field(&out, "source"), "flag");

    let out = h.cadre(&["--agents", json, "exec", "review it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "parent done");
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "reviewer", "parent"]);
    let child = &records[1].body;
    assert!(system_text(child).starts_with("MARKER-FLAG-REVIEWER Review the change."));
    assert_eq!(tool_names(child), ["Read", "Grep"]);
    assert_eq!(child["model"], "claude-opus-4-1", "alias resolved");
    assert_eq!(first_user_text(child), "check the diff");
    let results = tool_results(&records[2].body);
    assert!(results[0].0.contains("reviewer report"), "{results:?}");

    // Bad JSON: exit 2, a message, and no request.
    let before = h.records().len();
    for args in [
        vec!["--agents", "{not json", "exec", "review it"],
        vec!["--agents", "{not json", "agents", "list"],
        vec!["--agents", r#"{"x": {"description": "d"}}"#, "exec", "hi"],
    ] {
        let out = h.cadre(&args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("--agents"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = h.cadre(&["--agents", "{not json", "exec", "x"]).await;
    assert!(stderr(&out).contains("invalid JSON"), "{}", stderr(&out));
    let out = h
        .cadre(&[
            "--agents",
            r#"{"x": {"description": "d"}}"#,
            "agents",
            "list",
        ])
        .await;
    assert!(
        stderr(&out).contains("`x`") && stderr(&out).contains("`prompt`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(h.records().len(), before, "no request on a usage error");
}

// ---------------------------------------------------------------------------
// 5. --agent NAME
// ---------------------------------------------------------------------------

#[tokio::test]
async fn agent_flag_runs_the_main_session_as_the_definition_and_agent_types_limit_spawns() {
    let calls = format!(
        "{}{}",
        agent_call("general-purpose", "do everything"),
        agent_call("Explore", "find the parser")
    );
    let script = spawn_script(&[("explore", BUILTIN_EXPLORE)], "MARKER-LEAD", &calls);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/lead.md",
        &agent_md(
            "lead",
            "Leads the work",
            "tools: Read, Agent(Explore)\n",
            "MARKER-LEAD You lead; delegate searches.",
        ),
    );
    let out = h.cadre(&["--agent", "lead", "exec", "lead this"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "parent done");
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "explore", "parent"]);
    let main = &records[0].body;
    assert!(
        system_text(main).starts_with("MARKER-LEAD You lead; delegate searches."),
        "{}",
        system_text(main)
    );
    assert!(!system_text(main).contains(MAIN_SYSTEM));
    assert_eq!(tool_names(main), ["Read", "Agent"]);
    // The roster only offers what it may spawn.
    let first = first_user_text(main);
    assert!(first.contains("- Explore:"), "{first}");
    assert!(!first.contains("- general-purpose:"), "{first}");
    assert!(first.ends_with("lead this"), "{first}");

    let results = tool_results(&records[2].body);
    assert_eq!(results.len(), 2);
    assert!(results[0].1, "general-purpose refused: {results:?}");
    assert_eq!(
        results[0].0,
        "this agent may only start these agent types: Explore"
    );
    assert!(
        !results[1].1 && results[1].0.contains("explore report"),
        "{results:?}"
    );
    assert!(system_text(&records[1].body).starts_with(BUILTIN_EXPLORE));

    // An unknown --agent is a usage error naming the known ones.
    let out = h.cadre(&["--agent", "nobody", "exec", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no agent definition named 'nobody'")
            && stderr(&out).contains("lead"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------
// 6. permissionMode and the source's trust
// ---------------------------------------------------------------------------

#[tokio::test]
async fn show_says_a_project_definition_cannot_widen_the_mode_but_a_user_one_can() {
    let script = spawn_script(
        &[("wide", "MARKER-WIDE")],
        MAIN_SYSTEM,
        &agent_call("wide", "go wide"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let text = agent_md(
        "wide",
        "Wants everything",
        "permissionMode: bypassPermissions\n",
        "MARKER-WIDE",
    );
    h.write(".claude/agents/wide.md", &text);

    let out = h.cadre(&["agents", "show", "wide"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = stdout(&out);
    assert!(
        body.contains(
            "mode:        default (session: default; definition asks for bypassPermissions)\n             project definition asks for bypassPermissions; runs at default (a project file cannot widen permissions until the folder is trusted)\n"
        ),
        "{body}"
    );

    // Spawned from the project file: runs at the session's mode, with a warning.
    let out = h.cadre(&["exec", "--json", "spawn it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let started = evs
        .iter()
        .find(|e| e["type"] == "subagent_started")
        .expect("subagent_started");
    assert_eq!(started["mode"], "default", "{started}");
    assert!(
        evs.iter().any(|e| e["type"] == "warning"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .contains("a project file cannot widen permissions")),
        "{evs:?}"
    );

    // The same file in the user dir is trusted.
    std::fs::remove_file(h.path(".claude/agents/wide.md")).unwrap();
    write_file(&h.data_dir().join("agents/wide.md"), &text);
    let out = h.cadre(&["agents", "show", "wide"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        show_field(&out, "mode"),
        "bypassPermissions (session: default; definition asks for bypassPermissions)"
    );
    assert!(!stdout(&out).contains("cannot widen"), "{}", stdout(&out));
    assert_eq!(
        show_field(&out, "source"),
        format!("user ({})", h.data_dir().join("agents/wide.md").display())
    );
}

// ---------------------------------------------------------------------------
// 7. Tool filtering through a spawn
// ---------------------------------------------------------------------------

#[tokio::test]
async fn tools_and_disallowed_tools_filter_the_child_and_an_empty_result_does_not_start() {
    let calls = format!(
        "{}{}",
        agent_call("narrow", "read only"),
        agent_call("bogus", "never runs")
    );
    let script = spawn_script(
        &[("narrow", "MARKER-NARROW"), ("bogus", "MARKER-BOGUS")],
        MAIN_SYSTEM,
        &calls,
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/narrow.md",
        &agent_md(
            "narrow",
            "d",
            "tools: [Read, Grep]\ndisallowedTools: [Grep]\n",
            "MARKER-NARROW",
        ),
    );
    h.write(
        ".claude/agents/bogus.md",
        &agent_md("bogus", "d", "tools: [Frobnicate, Nope]\n", "MARKER-BOGUS"),
    );

    let out = h.cadre(&["agents", "show", "narrow"]).await;
    assert_eq!(show_field(&out, "tools"), "Read");
    assert!(
        stdout(&out).contains("removed:     Grep (in both tools and disallowedTools)"),
        "{}",
        stdout(&out)
    );
    let out = h.cadre(&["agents", "show", "bogus"]).await;
    let tools = show_field(&out, "tools");
    assert!(
        tools.contains("would not start")
            && tools.contains("`Frobnicate`")
            && tools.contains("`Nope`"),
        "{tools}"
    );

    let out = h.cadre(&["exec", "split the work"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "narrow", "parent"]);
    assert_eq!(tool_names(&records[1].body), ["Read"]);
    let results = tool_results(&records[2].body);
    assert_eq!(results.len(), 2);
    assert!(
        !results[0].1 && results[0].0.contains("narrow report"),
        "{results:?}"
    );
    let (text, is_error) = &results[1];
    assert!(*is_error, "{text}");
    assert!(
        text.starts_with("bogus was not started")
            && text.contains("`Frobnicate`")
            && text.contains("`Nope`"),
        "{text}"
    );
    assert!(by_rule(&records, "bogus").is_empty());
}

// ---------------------------------------------------------------------------
// 8. Unknown types and fork
// ---------------------------------------------------------------------------

#[tokio::test]
async fn an_unknown_subagent_type_lists_the_known_ones_and_starts_nothing() {
    let calls = agent_call("Explorer", "typo'd type");
    // No child rule: a child request would match nothing and show up as `<none>`.
    let script = spawn_script(&[], MAIN_SYSTEM, &calls);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/mine.md",
        &agent_md("mine", "d", "", "MARKER-MINE"),
    );
    let out = h.cadre(&["exec", "spawn things"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(
        rules_hit(&records),
        ["parent", "parent"],
        "no child request"
    );
    let results = tool_results(&records[1].body);
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "{results:?}");
    assert_eq!(
        results[0].0,
        "unknown subagent_type 'Explorer'; nothing was started. Known types: Explore, Plan, general-purpose, mine"
    );
}

#[tokio::test]
async fn without_a_repository_only_the_working_directory_is_searched() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let sub = h.path("sub");
    std::fs::create_dir_all(&sub).unwrap();
    h.write(
        ".claude/agents/parent.md",
        &agent_md("from-parent", "d", "", "b"),
    );
    h.write(
        "sub/.claude/agents/here.md",
        &agent_md("from-here", "d", "", "b"),
    );
    let out = cadre_in(&h, &sub, &["agents", "list"], &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(list_line(&out, "from-here").is_some(), "{}", stdout(&out));
    assert!(list_line(&out, "from-parent").is_none(), "{}", stdout(&out));

    // With a repository at the project dir, the walk reaches it.
    std::fs::create_dir_all(h.path(".git")).unwrap();
    let out = cadre_in(&h, &sub, &["agents", "list"], &[]).await;
    assert!(list_line(&out, "from-parent").is_some(), "{}", stdout(&out));
}

#[tokio::test]
async fn a_definition_is_frozen_when_its_child_starts_and_the_next_spawn_sees_the_edit() {
    let new_def = agent_md("editor", "edits itself", "", "MARKER-NEW");
    let script = format!(
        r#"
rules:
  - name: old
    when: {{ system: "MARKER-OLD" }}
    replies:
      - tool_calls:
          - {{ name: Read, input: {{ file_path: ".claude/agents/editor.md" }} }}
      - tool_calls:
          - name: Write
            input: {{ file_path: ".claude/agents/editor.md", content: {new_def:?} }}
      - text: "old report"
  - name: new
    when: {{ system: "MARKER-NEW" }}
    replies:
      - text: "new report"
  - name: parent
    when: {{ system: {MAIN_SYSTEM:?} }}
    replies:
      - tool_calls:
{first}      - tool_calls:
{second}      - text: "parent done"
"#,
        first = agent_call("editor", "first task"),
        second = agent_call("editor", "second task"),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/editor.md",
        &agent_md("editor", "edits itself", "", "MARKER-OLD"),
    );
    let out = h
        .cadre(&["exec", "--permission-mode", "bypassPermissions", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(h.read(".claude/agents/editor.md"), new_def);
    let records = h.records();
    assert_eq!(
        rules_hit(&records),
        ["parent", "old", "old", "old", "parent", "new", "parent"]
    );
    let results = tool_results(&records[3].body);
    assert!(!results[1].1, "the child's write: {results:?}");
    // The running child kept its prompt after its file changed.
    assert!(system_text(&records[3].body).starts_with("MARKER-OLD"));
    assert!(system_text(&records[5].body).starts_with("MARKER-NEW"));
    assert_eq!(first_user_text(&records[5].body), "second task");
}

/// Runs `cadre <args> exec --json --permission-mode acceptEdits go` in a
/// project outside /tmp (temp dirs stay writable in every sandbox), where the
/// script's first reply (main or child) runs `touch <file>`; returns whether
/// the file was created.
async fn touch_in_a_real_project(h: &Harness, args: &[&str], file: &str) -> bool {
    let proj = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let mut all = args.to_vec();
    all.extend(["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    let out = cadre_in(h, proj.path(), &all, &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    proj.path().join(file).exists()
}

fn touch_script(first_rule: &str) -> String {
    format!(
        "rules:\n{first_rule}  - name: touch\n    replies:\n      - tool_calls:\n          - {{ name: Bash, input: {{ command: \"touch made\" }} }}\n      - text: \"done\"\n"
    )
}

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn a_read_only_builtin_child_cannot_write_the_project_even_in_accept_edits() {
    let parent = format!(
        "  - name: parent\n    when: {{ system: {MAIN_SYSTEM:?} }}\n    replies:\n      - tool_calls:\n{}      - text: \"parent done\"\n",
        agent_call("Explore", "touch it")
    );
    let h = Harness::new(&touch_script(&parent), Wire::Anthropic).await;
    let made = touch_in_a_real_project(&h, &[], "made").await;
    assert!(!made, "Explore's sandbox keeps the project read-only");
    let records = h.records();
    assert_eq!(rules_hit(&records), ["parent", "touch", "touch", "parent"]);
    let (text, is_error) = &tool_results(&records[2].body)[0];
    assert!(*is_error && text.contains("Permission denied"), "{text}");
}

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn agent_flag_with_a_read_only_builtin_keeps_the_project_read_only() {
    let h = Harness::new(&touch_script(""), Wire::Anthropic).await;
    let made = touch_in_a_real_project(&h, &["--agent", "Explore"], "made").await;
    let records = h.records();
    assert_eq!(records[0].body["model"], "claude-haiku-4-5");
    assert!(!made, "{:?}", tool_results(&records[1].body));
}
