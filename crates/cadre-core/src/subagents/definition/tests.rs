use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::frontmatter::{QuoteReason, quote_colon_values};
use crate::protocol::PermissionMode;
use crate::subagents::DefinitionSource;

fn parse(text: &str) -> ParseOutcome {
    parse_definition(text, Path::new("/p/agents/a.md"), DefinitionSource::Project)
}

fn loaded(text: &str) -> (AgentDefinition, Vec<DefinitionIssue>) {
    let out = parse(text);
    match out.definition {
        Some(def) => (def, out.issues),
        None => panic!("not loaded: {:?}", out.issues),
    }
}

fn warnings(issues: &[DefinitionIssue]) -> Vec<String> {
    issues
        .iter()
        .filter(|i| i.level == IssueLevel::Warning)
        .map(|i| i.message.clone())
        .collect()
}

#[test]
fn tool_lists_in_every_spelling() {
    let cases: &[(&str, &[&str])] = &[
        ("tools: Read, Grep, Glob", &["Read", "Grep", "Glob"]),
        ("tools: Read Grep Glob", &["Read", "Grep", "Glob"]),
        ("tools: Read,Grep,  Glob,", &["Read", "Grep", "Glob"]),
        (
            "tools:\n  - Read\n  - Grep\n  - Glob",
            &["Read", "Grep", "Glob"],
        ),
        ("tools: [Read, Grep, Glob]", &["Read", "Grep", "Glob"]),
        ("tools: \"*\"", &["*"]),
        ("tools: '*'", &["*"]),
        (
            "tools: Read, Agent(Explore, Plan), Bash",
            &["Read", "Agent(Explore, Plan)", "Bash"],
        ),
        (
            "tools: Task(Explore, Plan) Read",
            &["Agent(Explore, Plan)", "Read"],
        ),
        (
            "tools:\n  - Agent(Explore, Plan)\n  - mcp__github__create_issue",
            &["Agent(Explore, Plan)", "mcp__github__create_issue"],
        ),
        (
            "tools: Bash(git diff:*), Read",
            &["Bash(git diff:*)", "Read"],
        ),
        (
            "tools: MultiEdit, LS, Task, BashOutput, KillShell, KillBash, AgentOutputTool, read_file, write_file, edit_file, bash",
            &[
                "Edit",
                "Glob",
                "Agent",
                "TaskOutput",
                "TaskStop",
                "TaskStop",
                "TaskOutput",
                "Read",
                "Write",
                "Edit",
                "Bash",
            ],
        ),
        ("tools: mcp__srv__*, mcp__srv", &["mcp__srv__*", "mcp__srv"]),
        ("tools: []", &[]),
    ];
    for (line, expected) in cases {
        let text = format!("---\nname: a\ndescription: d\n{line}\n---\nbody\n");
        let (def, issues) = loaded(&text);
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(def.tools, Some(expected), "{line}: {issues:?}");
        assert!(warnings(&issues).is_empty(), "{line}: {issues:?}");
    }
    let (def, _) = loaded("---\nname: a\ndescription: d\n---\nbody");
    assert_eq!(def.tools, None);
    let (def, _) = loaded("---\nname: a\ndescription: d\ntools:\n---\nbody");
    assert_eq!(def.tools, None);
}

#[test]
fn tool_list_oddities_warn_but_keep() {
    let (def, issues) = loaded(
        "---\nname: a\ndescription: d\ntools:\n  - Read\n  - Web Search\n  - ''\n  - NotATool\n---\nb",
    );
    assert_eq!(
        def.tools,
        Some(vec![
            "Read".to_string(),
            "Web Search".to_string(),
            "NotATool".to_string()
        ])
    );
    let w = warnings(&issues);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("Web Search"));
    assert!(w[1].contains("empty entry"));
    assert_eq!(issues[0].line, Some(4));
}

#[test]
fn parse_tool_list_and_normalize() {
    assert_eq!(
        parse_tool_list(&Value::String("Read, Agent(Explore, Plan)".into())),
        vec!["Read", "Agent(Explore, Plan)"]
    );
    assert_eq!(
        parse_tool_list(&serde_json::json!([" MultiEdit ", "", "Grep"])),
        vec!["Edit", "Grep"]
    );
    assert_eq!(parse_tool_list(&Value::Null), Vec::<String>::new());
    assert_eq!(normalize_tool_name("Task(Explore)"), "Agent(Explore)");
    assert_eq!(normalize_tool_name("Agent(a, b)"), "Agent(a, b)");
    assert_eq!(normalize_tool_name("mcp__x__y"), "mcp__x__y");
    assert_eq!(normalize_tool_name("Read"), "Read");
    assert_eq!(normalize_tool_name("bash(ls:*)"), "Bash(ls:*)");
}

#[test]
fn disallowed_tools_and_snake_case_variants() {
    let (def, issues) = loaded(
        "---\nname: a\ndescription: d\ndisallowed_tools: Write, MultiEdit\nmax_turns: 7\npermission_mode: plan\n---\nb",
    );
    assert_eq!(def.disallowed_tools, vec!["Write", "Edit"]);
    assert_eq!(def.max_turns, Some(7));
    assert_eq!(def.permission_mode, Some(PermissionMode::Plan));
    assert!(issues.is_empty(), "{issues:?}");
    let (def, _) = loaded(
        "---\nname: a\ndescription: d\ndisallowedTools: [Agent]\nmaxTurns: 3\npermissionMode: acceptEdits\n---\nb",
    );
    assert_eq!(def.disallowed_tools, vec!["Agent"]);
    assert_eq!(def.max_turns, Some(3));
    assert_eq!(def.permission_mode, Some(PermissionMode::AcceptEdits));
}

const ONE_LINE_EXAMPLES: &str = r#"Use this agent when the user asks for a review.\n\n<example>\nContext: the user wrote code.\nuser: "Please review my change"\nassistant: "I'll use the reviewer agent."\n<commentary>\nA review was asked for.\n</commentary>\n</example>"#;

#[test]
fn multi_line_descriptions() {
    // Block scalar with <example> blocks.
    let text = "---\nname: reviewer\ndescription: |\n  Use for reviews.\n\n  <example>\n  Context: code was written\n  user: \"review it\"\n  </example>\nmodel: sonnet\n---\nYou review.\n";
    let (def, issues) = loaded(text);
    assert_eq!(
        def.description,
        "Use for reviews.\n\n<example>\nContext: code was written\nuser: \"review it\"\n</example>"
    );
    assert!(issues.is_empty(), "{issues:?}");
    // Folded block scalar.
    let (def, _) = loaded("---\nname: r\ndescription: >\n  one\n  two: three\n---\nb");
    assert_eq!(def.description, "one two: three");

    // Long single-line value, unquoted: contains ": " so it needs the quoting retry.
    let text = format!(
        "---\nname: reviewer\ndescription: {ONE_LINE_EXAMPLES}\ntools: Read, Grep\ncolor: blue\n---\nYou review."
    );
    let (def, issues) = loaded(&text);
    assert_eq!(def.description, ONE_LINE_EXAMPLES.replace("\\n", "\n"));
    assert_eq!(
        def.tools,
        Some(vec!["Read".to_string(), "Grep".to_string()])
    );
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].line, Some(3));

    // The same, single-quoted: the literal backslash-n is a newline too.
    let quoted = ONE_LINE_EXAMPLES.replace('\'', "''");
    let text = format!("---\nname: reviewer\ndescription: '{quoted}'\n---\nb");
    let (def, issues) = loaded(&text);
    assert_eq!(def.description, ONE_LINE_EXAMPLES.replace("\\n", "\n"));
    assert!(issues.is_empty(), "{issues:?}");

    // Double-quoted: YAML escapes apply (\n is a newline).
    let text = "---\nname: r\ndescription: \"Use it.\\n<example>\\nuser: hi\\n</example>\"\n---\nb";
    let (def, issues) = loaded(text);
    assert_eq!(def.description, "Use it.\n<example>\nuser: hi\n</example>");
    assert!(issues.is_empty(), "{issues:?}");
}

#[test]
fn unquoted_colon_value_is_quoted_with_warning() {
    let text = "---\nname: helper\nmodel: haiku\ndescription: Use this: when it's needed\ninitialPrompt: Start: now\n---\nBody";
    let (def, issues) = loaded(text);
    assert_eq!(def.description, "Use this: when it's needed");
    assert_eq!(def.initial_prompt.as_deref(), Some("Start: now"));
    let lines: Vec<_> = issues.iter().map(|i| (i.level, i.line)).collect();
    assert_eq!(
        lines,
        vec![
            (IssueLevel::Warning, Some(4)),
            (IssueLevel::Warning, Some(5))
        ]
    );
    assert!(issues[0].message.contains("was quoted to parse"));
    assert_eq!(issues[0].path.as_deref(), Some(Path::new("/p/agents/a.md")));
}

#[test]
fn crlf_and_bom() {
    let text = "\u{feff}---\r\nname: a\r\ndescription: d\r\ntools: Read\r\n---\r\nLine one\r\nLine two\r\n";
    let (def, issues) = loaded(text);
    assert_eq!(def.name, "a");
    assert_eq!(def.prompt, "Line one\nLine two");
    assert_eq!(def.tools, Some(vec!["Read".to_string()]));
    assert!(issues.is_empty());
}

#[test]
fn unknown_fields_kept_and_warned() {
    let text = "---\nname: a\ndescription: d\ncolor: automatic-purple\nmodel: claude-3-5-sonnet-20241022\nversion: 2\nauthor:\n  name: x\n---\nb";
    let (def, issues) = loaded(text);
    // Not one of Claude Code's eight: dropped, with a warning.
    assert_eq!(def.color, None);
    assert_eq!(def.model.as_deref(), Some("claude-3-5-sonnet-20241022"));
    assert_eq!(def.unknown_fields.len(), 2);
    assert_eq!(def.unknown_fields["version"], serde_json::json!(2));
    assert_eq!(
        def.unknown_fields["author"],
        serde_json::json!({"name": "x"})
    );
    let w: Vec<_> = issues
        .iter()
        .map(|i| (i.line, i.message.as_str()))
        .collect();
    assert_eq!(
        w,
        vec![
            (
                Some(4),
                "`color`: unknown color `automatic-purple` (ignored; expected one of red, blue, green, yellow, purple, orange, pink, cyan)"
            ),
            (Some(7), "unknown field `author` (kept, ignored)"),
            (Some(6), "unknown field `version` (kept, ignored)"),
        ]
    );
}

#[test]
fn all_fields() {
    let text = "---\nname: full\ndescription: d\nmodel: inherit\nskills: a, b\nmcpServers:\n  - github\nhooks:\n  PreToolUse:\n    - {matcher: Bash, hooks: [{type: command, command: x}]}\nmemory: project\nbackground: true\nisolation: worktree\neffort: high\ninitialPrompt: go\n---\nb";
    let (def, issues) = loaded(text);
    // Every field is read and acted on: none is an issue.
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(def.model.as_deref(), Some("inherit"));
    assert_eq!(def.skills, vec!["a", "b"]);
    assert_eq!(def.mcp_servers, Some(serde_json::json!(["github"])));
    assert_eq!(
        def.hooks,
        Some(
            serde_json::json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]})
        )
    );
    assert_eq!(def.memory, Some(serde_json::json!("project")));
    assert!(def.background);
    assert_eq!(def.isolation.as_deref(), Some("worktree"));
    assert_eq!(def.effort.as_deref(), Some("high"));
    assert_eq!(def.initial_prompt.as_deref(), Some("go"));
    assert!(def.include_project_instructions);
    assert!(!def.read_only && !def.one_shot && !def.reports_verdict);
    assert_eq!(def.source, DefinitionSource::Project);
    assert_eq!(def.path.as_deref(), Some(Path::new("/p/agents/a.md")));
}

#[test]
fn bad_values_warn_and_unset() {
    let cases: &[(&str, &str)] = &[
        ("permissionMode: yolo", "unknown permission mode `yolo`"),
        ("maxTurns: 0", "positive integer"),
        ("maxTurns: -3", "positive integer"),
        ("maxTurns: lots", "positive integer"),
        ("background: maybe", "expected true or false"),
        ("tools: {a: b}", "expected a list"),
        ("effort: extreme", "unknown effort `extreme`"),
        ("effort: 3", "unknown effort `3`"),
        ("color: magenta", "unknown color `magenta`"),
    ];
    for (line, needle) in cases {
        let text = format!("---\nname: a\ndescription: d\n{line}\n---\nb");
        let (def, issues) = loaded(&text);
        assert!(def.permission_mode.is_none() && def.max_turns.is_none() && !def.background);
        assert!(def.tools.is_none() && def.effort.is_none() && def.color.is_none());
        assert_eq!(issues.len(), 1, "{line}: {issues:?}");
        assert_eq!(issues[0].level, IssueLevel::Warning);
        assert_eq!(issues[0].line, Some(4));
        assert!(issues[0].message.contains(needle), "{:?}", issues[0]);
    }
}

#[test]
fn skip_rules() {
    let cases: &[(&str, IssueLevel, Option<usize>, &str)] = &[
        ("# Just docs\n", IssueLevel::Info, None, "no frontmatter"),
        (
            "---\ndescription: d\n---\nb",
            IssueLevel::Info,
            None,
            "no name: treated as documentation",
        ),
        ("---\n---\nb", IssueLevel::Info, None, "no name"),
        (
            "---\nname: -x\ndescription: d\n---\nb",
            IssueLevel::Error,
            Some(2),
            "must not start with `-`",
        ),
        (
            "---\nname: 'a:b'\ndescription: d\n---\nb",
            IssueLevel::Error,
            Some(2),
            "must not contain `:`",
        ),
        (
            "---\nname: a\n---\nb",
            IssueLevel::Error,
            Some(2),
            "has no `description`",
        ),
        (
            "---\nname: a\ndescription: ''\n---\nb",
            IssueLevel::Error,
            Some(3),
            "has no `description`",
        ),
        (
            "---\nname: a\ndescription: d\nunclosed",
            IssueLevel::Error,
            Some(1),
            "not closed",
        ),
        (
            "---\n- a\n- b\n---\nb",
            IssueLevel::Error,
            Some(2),
            "not a mapping",
        ),
    ];
    for (text, level, line, needle) in cases {
        let out = parse(text);
        assert!(out.definition.is_none(), "{text}");
        assert_eq!(out.issues.len(), 1, "{text}: {:?}", out.issues);
        let issue = &out.issues[0];
        assert_eq!(issue.level, *level, "{text}");
        assert_eq!(issue.line, *line, "{text}: {issue:?}");
        assert!(issue.message.contains(needle), "{text}: {issue:?}");
    }
}

#[test]
fn bad_yaml_reports_file_line() {
    // An unclosed flow list is quoted by the retry, as Claude Code does: the
    // file loads (the odd entry is then unresolved), with a warning.
    let text = "---\nname: a\ndescription: d\ntools: [Read, Grep\nmodel: sonnet\n---\nb";
    let (def, issues) = loaded(text);
    assert_eq!(
        def.tools,
        Some(vec!["[Read".to_string(), "Grep".to_string()])
    );
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].line, Some(4));
    assert!(issues[0].message.contains("'['"), "{issues:?}");

    let text = "---\nname: a\ndescription: d\n  bad: indent\n---\nb";
    let out = parse(text);
    assert!(out.definition.is_none());
    assert_eq!(out.issues[0].line, Some(4), "{:?}", out.issues);

    // Quoting does not help: still an error, at the original place.
    let text = "---\nname: a\ndescription: a: b\ntools: \"Read\n---\nb";
    let out = parse(text);
    assert!(out.definition.is_none());
    assert_eq!(out.issues[0].level, IssueLevel::Error);
}

#[test]
fn quoting_leaves_block_scalars_alone() {
    let fm = "description: |\n  user: hi: there\nmodel: a: b\nlist:\n  - x: y: z\nc: `x` it's\nd: Examples:\ne: \"q: x\"";
    let (out, lines) = quote_colon_values(fm);
    assert_eq!(
        lines,
        vec![
            (2, QuoteReason::Colon),
            (5, QuoteReason::Special('`')),
            (6, QuoteReason::Colon)
        ]
    );
    assert_eq!(
        out,
        "description: |\n  user: hi: there\nmodel: 'a: b'\nlist:\n  - x: y: z\nc: '`x` it''s'\nd: 'Examples:'\ne: \"q: x\""
    );
    let (def, issues) = loaded("---\nname: a\ndescription: `code` reviewer\n---\nb");
    assert_eq!(def.description, "`code` reviewer");
    assert_eq!(
        issues[0].message,
        "a value containing '`' was quoted to parse (as Claude Code does)"
    );
}

#[test]
fn issue_display() {
    let issue = DefinitionIssue {
        path: Some(PathBuf::from("/a/b.md")),
        level: IssueLevel::Error,
        line: Some(3),
        message: "boom".into(),
    };
    assert_eq!(issue.to_string(), "/a/b.md:3: error: boom");
}

#[test]
fn json_agents() {
    let json = r#"{
        "reviewer": {"description": "Reviews code", "prompt": "You review.", "tools": ["Read", "Grep", "MultiEdit"], "disallowedTools": "Write", "model": "sonnet", "permissionMode": "plan", "maxTurns": 5, "background": true, "extra": 1},
        "tester": {"description": "Tests", "prompt": "You test.", "tools": "Read, Bash"}
    }"#;
    let defs = definitions_from_json(json).unwrap();
    assert_eq!(defs.len(), 2);
    let r = &defs[0];
    assert_eq!(r.name, "reviewer");
    assert_eq!(r.prompt, "You review.");
    assert_eq!(
        r.tools,
        Some(vec![
            "Read".to_string(),
            "Grep".to_string(),
            "Edit".to_string()
        ])
    );
    assert_eq!(r.disallowed_tools, vec!["Write"]);
    assert_eq!(r.model.as_deref(), Some("sonnet"));
    assert_eq!(r.permission_mode, Some(PermissionMode::Plan));
    assert_eq!(r.max_turns, Some(5));
    assert!(r.background);
    assert_eq!(r.source, DefinitionSource::Flag);
    assert!(r.path.is_none());
    assert!(r.include_project_instructions);
    assert_eq!(r.unknown_fields["extra"], serde_json::json!(1));
    assert_eq!(
        defs[1].tools,
        Some(vec!["Read".to_string(), "Bash".to_string()])
    );

    let bad: &[(&str, &str)] = &[
        ("not json", "invalid JSON"),
        ("[1]", "expected a JSON object"),
        (r#"{"a": 1}"#, "agent `a`: expected an object"),
        (
            r#"{"a": {"prompt": "p"}}"#,
            "agent `a`: field `description` is required",
        ),
        (
            r#"{"a": {"description": "d"}}"#,
            "agent `a`: field `prompt` is required",
        ),
        (
            r#"{"a": {"description": "d", "prompt": 3}}"#,
            "agent `a`: field `prompt`: expected a string",
        ),
        (
            r#"{"a": {"description": "d", "prompt": "p", "maxTurns": "x"}}"#,
            "agent `a`: field `maxTurns`",
        ),
        (
            r#"{"a": {"description": "d", "prompt": "p", "permissionMode": "yolo"}}"#,
            "agent `a`: field `permissionMode`",
        ),
        (
            r#"{"a": {"description": "d", "prompt": "p", "tools": 3}}"#,
            "agent `a`: field `tools`",
        ),
        (
            r#"{"x:y": {"description": "d", "prompt": "p"}}"#,
            "must not contain `:`",
        ),
        (
            r#"{"-x": {"description": "d", "prompt": "p"}}"#,
            "must not start with `-`",
        ),
    ];
    for (json, needle) in bad {
        let err = definitions_from_json(json).unwrap_err();
        assert!(err.contains(needle), "{json}: {err}");
    }
}

#[test]
fn permission_mode_is_parsed_when_read() {
    let cases: &[(&str, PermissionMode)] = &[
        ("permissionMode: default", PermissionMode::Default),
        ("permissionMode: manual", PermissionMode::Default),
        ("permissionMode: ' plan '", PermissionMode::Plan),
        ("permissionMode: dontAsk", PermissionMode::DontAsk),
        ("permission_mode: acceptEdits", PermissionMode::AcceptEdits),
        (
            "permissionMode: bypassPermissions",
            PermissionMode::BypassPermissions,
        ),
    ];
    for (line, mode) in cases {
        let (def, issues) = loaded(&format!("---\nname: a\ndescription: d\n{line}\n---\nb"));
        assert_eq!(def.permission_mode, Some(*mode), "{line}");
        assert!(issues.is_empty(), "{line}: {issues:?}");
    }
    // Case matters, as in Claude Code: a near miss is a warning naming every accepted value.
    let (def, issues) = loaded("---\nname: a\ndescription: d\npermissionMode: Plan\n---\nb");
    assert_eq!(def.permission_mode, None);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(
        issues[0].message,
        "`permissionMode`: unknown permission mode `Plan` (ignored; expected one of default, manual, acceptEdits, plan, dontAsk, bypassPermissions)"
    );
    assert_eq!(issues[0].line, Some(4));
}

#[test]
fn role_descriptions_load_as_in_claude_code() {
    // Three shapes of published definitions whose description starts with
    // `**ROLE**`: YAML reads `*ROLE**` as an alias, Claude Code's retry quotes it.
    let shapes = [
        "**ROLE**: Senior reviewer. Use PROACTIVELY after code changes.",
        "**ROLE** Backend architect — designs APIs & services",
        "**ROLE**: Security auditor: checks `unsafe` code, #secrets and @mentions; it's thorough",
    ];
    for description in shapes {
        let text =
            format!("---\nname: role\ndescription: {description}\ntools: Read, Grep\n---\nBody");
        let (def, issues) = loaded(&text);
        assert_eq!(def.description, description);
        assert_eq!(
            def.tools,
            Some(vec!["Read".to_string(), "Grep".to_string()])
        );
        let w = warnings(&issues);
        assert_eq!(w.len(), 1, "{issues:?}");
        assert_eq!(issues[0].line, Some(3));
        assert!(w[0].contains("was quoted to parse"), "{w:?}");
    }
}

#[test]
fn literal_backslash_n_in_description_becomes_newline() {
    let (def, issues) =
        loaded("---\nname: r\ndescription: Use it.\\n<example>hi</example>\n---\nb");
    assert_eq!(def.description, "Use it.\n<example>hi</example>");
    assert!(issues.is_empty(), "{issues:?}");
    // Also after the quoting retry (a `: ` in it).
    let text = format!("---\nname: reviewer\ndescription: {ONE_LINE_EXAMPLES}\n---\nb");
    let (def, _) = loaded(&text);
    assert_eq!(def.description, ONE_LINE_EXAMPLES.replace("\\n", "\n"));
    assert_eq!(def.description.lines().count(), 10);
}

#[test]
fn error_after_retry_names_the_line_that_still_fails() {
    // Line 3 needs quoting (and is fixed by it); line 5's unclosed quote is
    // what still fails after the retry.
    let text = "---\nname: a\ndescription: a: b\nmodel: sonnet\ntools: \"Read\n---\nb";
    let out = parse(text);
    assert!(out.definition.is_none());
    assert_eq!(out.issues.len(), 1, "{:?}", out.issues);
    let issue = &out.issues[0];
    assert_eq!(issue.level, IssueLevel::Error);
    assert!(issue.message.starts_with("invalid YAML"), "{issue:?}");
    assert!(matches!(issue.line, Some(5..=6)), "{issue:?}");
}

#[test]
fn effort_and_color_take_claude_codes_values() {
    for effort in ["low", "medium", "high", "xhigh", "max", "High"] {
        let text = format!("---\nname: a\ndescription: d\neffort: {effort}\n---\nb");
        let (def, issues) = loaded(&text);
        assert_eq!(def.effort, Some(effort.to_ascii_lowercase()));
        assert!(issues.is_empty(), "{issues:?}");
    }
    for color in [
        "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
    ] {
        let text = format!("---\nname: a\ndescription: d\ncolor: {color}\n---\nb");
        let (def, issues) = loaded(&text);
        assert_eq!(def.color.as_deref(), Some(color));
        assert!(issues.is_empty(), "{issues:?}");
    }
}
