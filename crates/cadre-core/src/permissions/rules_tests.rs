//! Rule parsing and matching: bash, file, MCP and agent rules.

use std::path::Path;

use super::ToolEffect;
use super::rules::*;

const PROJECT: &str = "/proj";
const HOME: &str = "/home/u";

/// Builds a rule set from `kind:rule` strings.
fn rules(specs: &[&str]) -> RuleSet {
    let mut set = RuleSet::new();
    for spec in specs {
        let (kind, text) = spec.split_once(':').expect("kind:rule");
        let kind = match kind {
            "allow" => RuleKind::Allow,
            "ask" => RuleKind::Ask,
            "deny" => RuleKind::Deny,
            other => panic!("bad kind {other}"),
        };
        set.add(parse_rule(kind, text, Some(Path::new(HOME))).expect(text));
    }
    set
}

fn eval(set: &RuleSet, facts: &CallFacts<'_>) -> Option<RuleKind> {
    set.evaluate(facts, Path::new(PROJECT))
        .map(|(kind, _)| kind)
}

fn bash(command: &str) -> CallFacts<'_> {
    CallFacts {
        tool: "Bash",
        command: Some(command),
        ..CallFacts::default()
    }
}

/// A file tool's call; the effect is what the built-in tool of that name declares.
fn file<'a>(tool: &'a str, path: &'a str) -> CallFacts<'a> {
    let effect = match tool {
        "Edit" | "Write" => ToolEffect::Edit,
        _ => ToolEffect::ReadOnly,
    };
    CallFacts {
        tool,
        effect: Some(effect),
        path: Some(Path::new(path)),
        ..CallFacts::default()
    }
}

use RuleKind::{Allow, Ask, Deny};

#[test]
fn bash_rules() {
    let cases: &[(&[&str], &str, Option<RuleKind>)] = &[
        // prefix
        (&["allow:Bash(git status:*)"], "git status", Some(Allow)),
        (&["allow:Bash(git status:*)"], "git status -s", Some(Allow)),
        (
            &["allow:Bash(git status:*)"],
            "  git status -s  ",
            Some(Allow),
        ),
        (&["allow:Bash(git status:*)"], "git statusx", None),
        (&["allow:Bash(git status:*)"], "git stat", None),
        (
            &["allow:Bash(git status:*)"],
            "git \"status\" -s",
            Some(Allow),
        ),
        (&["allow:Bash(git status:*)"], "FOO=1 git status", None),
        (&["allow:Bash(npm run:*)"], "npm run-script x", None),
        // exact
        (&["allow:Bash(npm test)"], "npm test", Some(Allow)),
        (&["allow:Bash(npm test)"], " npm test ", Some(Allow)),
        (&["allow:Bash(npm test)"], "npm test --watch", None),
        (
            &["allow:Bash(ls > /dev/null)"],
            "ls >/dev/null",
            Some(Allow),
        ),
        (&["allow:Bash(cd x && make)"], "cd x && make", Some(Allow)),
        (
            &["allow:Bash(cd x && make)"],
            "cd x && make; rm -rf y",
            None,
        ),
        // any
        (
            &["allow:Bash(*)"],
            "rm -rf / && echo $(whoami) > x",
            Some(Allow),
        ),
        (&["allow:Bash"], "anything at all", Some(Allow)),
        (&["allow:bash"], "ls", Some(Allow)),
        // compound commands: allow needs every part
        (
            &["allow:Bash(git status:*)"],
            "git status && rm -rf x",
            None,
        ),
        (
            &["allow:Bash(git status:*)"],
            "git status; git status -s",
            Some(Allow),
        ),
        (
            &["allow:Bash(git status:*)", "allow:Bash(rm:*)"],
            "git status && rm -rf x",
            Some(Allow),
        ),
        (
            &["allow:Bash(ls:*)", "allow:Bash(grep:*)"],
            "ls | grep x",
            Some(Allow),
        ),
        (&["allow:Bash(ls:*)"], "ls | grep x", None),
        (&["allow:Bash(ls:*)"], "ls || rm x", None),
        (&["allow:Bash(ls:*)"], "ls & rm x", None),
        (&["allow:Bash(ls:*)"], "ls\nrm x", None),
        (&["allow:Bash(ls:*)"], "ls |& rm x", None),
        (&["allow:Bash(ls:*)"], "(ls; rm x)", None),
        (&["allow:Bash(ls:*)"], "(ls; ls -l)", Some(Allow)),
        (&["allow:Bash(ls:*)"], "", None),
        (&["allow:Bash(ls:*)"], "   ", None),
        // quoting
        (&["allow:Bash(echo:*)"], "echo 'a; rm -rf x'", Some(Allow)),
        (
            &["allow:Bash(echo:*)"],
            "echo \"a && rm -rf x\"",
            Some(Allow),
        ),
        (&["allow:Bash(echo:*)"], "echo a\\; rm -rf x", Some(Allow)),
        (
            &["allow:Bash(echo:*)"],
            "echo \"a\\\"; rm -rf x\"",
            Some(Allow),
        ),
        (&["allow:Bash(echo:*)"], "echo \"a\\\\\"; rm -rf x", None),
        (&["allow:Bash(echo:*)"], "echo 'unterminated; rm x", None),
        (
            &["allow:Bash(echo:*)"],
            "echo $'a\\'; rm -rf x; echo '",
            Some(Allow),
        ),
        (
            &["allow:Bash(echo:*)"],
            "echo $'\\'' ; rm -rf x ; echo ''",
            None,
        ),
        (
            &["allow:Bash(echo:*)"],
            "echo hi # it's ; fine",
            Some(Allow),
        ),
        (&["allow:Bash(echo:*)"], "echo hi # it's\nrm -rf x #'", None),
        (&["allow:Bash(echo:*)"], "echo ${HOME}", Some(Allow)),
        (
            &["allow:Bash(echo:*)"],
            "echo \"${x:-'\"'}\" ; rm -rf y #'",
            None,
        ),
        // substitution and redirection block prefix/exact allows
        (&["allow:Bash(echo:*)"], "echo $(rm -rf x)", None),
        (&["allow:Bash(echo:*)"], "echo \"$(date)\"", None),
        (
            &["allow:Bash(echo:*)", "allow:Bash(date)"],
            "echo $(date)",
            None,
        ),
        (&["allow:Bash(echo:*)"], "echo `date`", None),
        (&["allow:Bash(echo:*)"], "echo $((1 + 2))", None),
        (&["allow:Bash(diff:*)"], "diff <(ls a) <(ls b)", None),
        (&["allow:Bash(tee:*)"], "tee >(cat)", None),
        (&["allow:Bash(echo:*)"], "echo hi > out.txt", None),
        (&["allow:Bash(echo:*)"], "echo hi >> out.txt", None),
        (&["allow:Bash(echo:*)"], "echo hi>out.txt", None),
        (&["allow:Bash(echo:*)"], "echo hi &> out.txt", None),
        (&["allow:Bash(echo:*)"], "echo hi >& out.txt", None),
        (&["allow:Bash(echo:*)"], "echo hi > $FILE", None),
        (&["allow:Bash(cat:*)"], "cat <> file", None),
        (&["allow:Bash(echo:*)"], "echo hi >", None),
        (&["allow:Bash(echo:*)"], "echo hi 2>&1", Some(Allow)),
        (&["allow:Bash(echo:*)"], "echo hi >&2", Some(Allow)),
        (
            &["allow:Bash(echo:*)"],
            "echo hi >/dev/null 2>&1",
            Some(Allow),
        ),
        (&["allow:Bash(echo:*)"], "echo hi &>/dev/null", Some(Allow)),
        (&["allow:Bash(echo:*)"], "echo hi 2> /dev/null", Some(Allow)),
        (&["allow:Bash(cat:*)"], "cat < input.txt", Some(Allow)),
        (&["allow:Bash(cat:*)"], "cat <<< hello", Some(Allow)),
        // here-documents
        (
            &["allow:Bash(cat:*)"],
            "cat <<'EOF'\nit's; rm -rf x\nEOF",
            Some(Allow),
        ),
        (
            &["allow:Bash(cat:*)"],
            "cat <<EOF\nit's\nEOF\nrm -rf x #'",
            None,
        ),
        (&["allow:Bash(cat:*)"], "cat <<EOF\n$(rm -rf x)\nEOF", None),
        (&["allow:Bash(cat:*)"], "cat <<-EOF\n\thi\n\tEOF\nls", None),
        (
            &["allow:Bash(cat:*)", "allow:Bash(ls)"],
            "cat <<-EOF\n\thi\n\tEOF\nls",
            Some(Allow),
        ),
        // deny / ask match any part
        (&["deny:Bash(rm:*)"], "ls; rm -rf build", Some(Deny)),
        (&["deny:Bash(rm:*)"], "ls && echo 'rm -rf build'", None),
        (&["deny:Bash(rm:*)"], "ls | xargs echo; rm x", Some(Deny)),
        (&["deny:Bash(rm:*)"], "echo $(rm -rf x)", Some(Deny)),
        (&["deny:Bash(rm:*)"], "echo \"$(rm -rf x)\"", Some(Deny)),
        (&["deny:Bash(rm:*)"], "echo `rm -rf x`", Some(Deny)),
        (&["deny:Bash(rm:*)"], "(cd x && rm -rf y)", Some(Deny)),
        (&["deny:Bash(rm:*)"], "FOO=1 rm x", Some(Deny)),
        (&["deny:Bash(rm:*)"], "sudo rm x", Some(Deny)),
        (&["deny:Bash(rm:*)"], "/bin/rm x", Some(Deny)),
        (&["deny:Bash(rm:*)"], "\"rm\" x", Some(Deny)),
        (&["deny:Bash(rm:*)"], "if true; then rm x; fi", Some(Deny)),
        (&["deny:Bash(rm:*)"], "rmdir x", None),
        (&["deny:Bash(rm -rf)"], "ls; rm -rf", Some(Deny)),
        (
            &["deny:Bash(cd /tmp && rm:*)"],
            "cd /tmp && rm x",
            Some(Deny),
        ),
        (&["deny:Bash(*)"], "ls", Some(Deny)),
        (&["deny:Bash"], "ls", Some(Deny)),
        (
            &["ask:Bash(git push:*)"],
            "git add . && git push --force",
            Some(Ask),
        ),
        // precedence
        (
            &["allow:Bash(git:*)", "deny:Bash(git push:*)"],
            "git push",
            Some(Deny),
        ),
        (&["allow:Bash", "deny:Bash(rm:*)"], "rm x", Some(Deny)),
        (
            &["allow:Bash(git:*)", "ask:Bash(git push:*)"],
            "git push",
            Some(Ask),
        ),
        (
            &["ask:Bash(git:*)", "deny:Bash(git push:*)"],
            "git push",
            Some(Deny),
        ),
        (
            &["allow:Bash(git:*)", "ask:Bash(git push:*)"],
            "git status",
            Some(Allow),
        ),
        // rules for other tools don't match
        (&["allow:Read"], "ls", None),
    ];
    for (specs, command, want) in cases {
        let set = rules(specs);
        assert_eq!(
            eval(&set, &bash(command)),
            *want,
            "rules {specs:?}, command {command:?}"
        );
    }
}

#[test]
fn bash_reports_the_deciding_rule() {
    let set = rules(&[
        "allow:Bash(git status:*)",
        "allow:Bash(ls:*)",
        "deny:Bash(rm:*)",
    ]);
    let project = Path::new(PROJECT);
    assert_eq!(
        set.evaluate(&bash("ls && git status"), project),
        Some((Allow, "Bash(ls:*)".into()))
    );
    assert_eq!(
        set.evaluate(&bash("ls && rm x"), project),
        Some((Deny, "Bash(rm:*)".into()))
    );
    let no_command = CallFacts {
        tool: "Bash",
        ..CallFacts::default()
    };
    assert_eq!(set.evaluate(&no_command, project), None);
}

#[test]
fn file_rules() {
    let cases: &[(&[&str], &str, &str, Option<RuleKind>)] = &[
        (
            &["allow:Edit(src/**)"],
            "Edit",
            "/proj/src/a/b.rs",
            Some(Allow),
        ),
        (
            &["allow:Edit(src/**)"],
            "Write",
            "/proj/src/a/b.rs",
            Some(Allow),
        ),
        (
            &["allow:MultiEdit(src/**)"],
            "Write",
            "/proj/src/a/b.rs",
            Some(Allow),
        ),
        (&["allow:Edit(src/**)"], "Read", "/proj/src/a/b.rs", None),
        (&["allow:Edit(src/**)"], "Edit", "/proj/tests/a.rs", None),
        (&["allow:Edit(src/**)"], "Edit", "/proj/x/src/a.rs", None),
        (
            &["allow:Edit(src/**)"],
            "Edit",
            "/proj/src/../tests/a.rs",
            None,
        ),
        (
            &["allow:Edit(src/**)"],
            "Edit",
            "/proj/./src/./a.rs",
            Some(Allow),
        ),
        (
            &["allow:Edit(/src/**)"],
            "Edit",
            "/proj/src/a.rs",
            Some(Allow),
        ),
        (
            &["allow:Edit(./src/**)"],
            "Edit",
            "/proj/src/a.rs",
            Some(Allow),
        ),
        (
            &["allow:Edit(src/*.rs)"],
            "Edit",
            "/proj/src/a.rs",
            Some(Allow),
        ),
        (&["allow:Edit(src/*.rs)"], "Edit", "/proj/src/a/b.rs", None),
        (
            &["allow:Edit(src)"],
            "Edit",
            "/proj/src/a/b.rs",
            Some(Allow),
        ),
        (
            &["allow:Edit(src/)"],
            "Edit",
            "/proj/src/a/b.rs",
            Some(Allow),
        ),
        (&["allow:Write(src/**)"], "Edit", "/proj/src/a.rs", None),
        (
            &["allow:Write(src/**)"],
            "Write",
            "/proj/src/a.rs",
            Some(Allow),
        ),
        (
            &["allow:Read(*.md)"],
            "Read",
            "/proj/docs/x.md",
            Some(Allow),
        ),
        (&["allow:Read(*.md)"], "Read", "/proj/x.md", Some(Allow)),
        (
            &["allow:Read(*.md)"],
            "Grep",
            "/proj/docs/x.md",
            Some(Allow),
        ),
        (
            &["allow:Read(*.md)"],
            "Glob",
            "/proj/docs/x.md",
            Some(Allow),
        ),
        (&["allow:Read(*.md)"], "Read", "/proj/docs/x.rs", None),
        (&["allow:Read(*.md)"], "Edit", "/proj/docs/x.md", None),
        (&["allow:Read(*.md)"], "Read", "/elsewhere/x.md", None),
        (
            &["allow:read_file(*.md)"],
            "Read",
            "/proj/x.md",
            Some(Allow),
        ),
        (&["allow:Glob(src/**)"], "Glob", "/proj/src", None),
        (&["allow:Glob(src/**)"], "Glob", "/proj/src/a", Some(Allow)),
        (&["allow:Glob(src/**)"], "Read", "/proj/src/a", None),
        (&["allow:Grep(src/**)"], "Grep", "/proj/src/a", Some(Allow)),
        (&["deny:Read(.env)"], "Read", "/proj/.env", Some(Deny)),
        (&["deny:Read(.env)"], "Read", "/proj/sub/.env", Some(Deny)),
        (&["deny:Read(.env)"], "Grep", "/proj/.env", Some(Deny)),
        (
            &["deny:Read(secrets/**)"],
            "Read",
            "/proj/secrets/k",
            Some(Deny),
        ),
        // absolute and home globs
        (&["deny:Read(//etc/**)"], "Read", "/etc/passwd", Some(Deny)),
        (&["deny:Read(//etc/**)"], "Read", "/proj/etc/passwd", None),
        (&["allow:Edit(//tmp/)"], "Write", "/tmp/a/b", Some(Allow)),
        (
            &["allow:Read(//proj/docs/**)"],
            "Read",
            "/proj/docs/a",
            Some(Allow),
        ),
        (
            &["deny:Read(~/.ssh/**)"],
            "Read",
            "/home/u/.ssh/id_rsa",
            Some(Deny),
        ),
        (
            &["deny:Read(~/.ssh/**)"],
            "Read",
            "/home/v/.ssh/id_rsa",
            None,
        ),
        (&["deny:Read(~)"], "Read", "/home/u/notes", Some(Deny)),
        (&["allow:Read(/etc/**)"], "Read", "/etc/passwd", None),
        (&["allow:Read(**)"], "Read", "/etc/passwd", None),
        // bare names
        (&["allow:Read"], "Read", "/anywhere", Some(Allow)),
        (&["allow:Read"], "Grep", "/anywhere", Some(Allow)),
        (&["allow:Edit"], "Write", "/anywhere", Some(Allow)),
        (&["allow:Write"], "Edit", "/anywhere", None),
        (&["allow:Read"], "Edit", "/anywhere", None),
        // precedence
        (
            &["allow:Read", "deny:Read(.env)"],
            "Read",
            "/proj/.env",
            Some(Deny),
        ),
        (
            &["allow:Edit", "ask:Edit(*.lock)"],
            "Write",
            "/proj/Cargo.lock",
            Some(Ask),
        ),
        (
            &["allow:Edit", "ask:Edit(*.lock)"],
            "Write",
            "/proj/Cargo.toml",
            Some(Allow),
        ),
    ];
    for (specs, tool, path, want) in cases {
        let set = rules(specs);
        assert_eq!(
            eval(&set, &file(tool, path)),
            *want,
            "rules {specs:?}, {tool} {path}"
        );
    }
}

#[test]
fn read_and_edit_rules_cover_tools_by_effect_on_a_path() {
    let call = |tool, effect, path: Option<&'static str>| CallFacts {
        tool,
        effect: Some(effect),
        path: path.map(Path::new),
        ..CallFacts::default()
    };
    let cases: &[(&str, CallFacts<'static>, Option<RuleKind>)] = &[
        // A tool cadre does not ship, declaring what it does to a path.
        (
            "deny:Read",
            call("NotebookRead", ToolEffect::ReadOnly, Some("/proj/a")),
            Some(Deny),
        ),
        (
            "allow:Edit(src/**)",
            call("NotebookEdit", ToolEffect::Edit, Some("/proj/src/a")),
            Some(Allow),
        ),
        // Read-only tools that touch no path are not file reads.
        (
            "deny:Read",
            call("TodoWrite", ToolEffect::ReadOnly, None),
            None,
        ),
        ("deny:Read", call("Agent", ToolEffect::ReadOnly, None), None),
        // An effect other than the rule's family is not covered.
        (
            "allow:Read",
            call("Write", ToolEffect::Edit, Some("/proj/a")),
            None,
        ),
        (
            "allow:Edit",
            call("Bash", ToolEffect::Execute, Some("/proj/a")),
            None,
        ),
        // Other rules name their own tool only.
        (
            "allow:Write",
            call("Edit", ToolEffect::Edit, Some("/proj/a")),
            None,
        ),
    ];
    for (spec, facts, want) in cases {
        assert_eq!(eval(&rules(&[spec]), facts), *want, "{spec} on {facts:?}");
    }
}

#[test]
fn path_rules_need_a_path() {
    let set = rules(&["allow:Read(src/**)"]);
    let facts = CallFacts {
        tool: "Read",
        ..CallFacts::default()
    };
    assert_eq!(eval(&set, &facts), None);
}

#[test]
fn tool_mcp_and_agent_rules() {
    let agent = |t: Option<&'static str>| CallFacts {
        tool: "Agent",
        agent_type: t,
        ..CallFacts::default()
    };
    let tool = |name: &'static str| CallFacts {
        tool: name,
        ..CallFacts::default()
    };
    let cases: &[(&[&str], CallFacts<'static>, Option<RuleKind>)] = &[
        (&["allow:WebFetch"], tool("WebFetch"), Some(Allow)),
        (&["allow:WebFetch"], tool("WebSearch"), None),
        (&["allow:TodoWrite"], tool("TodoWrite"), Some(Allow)),
        (
            &["allow:mcp__github__*"],
            tool("mcp__github__create_issue"),
            Some(Allow),
        ),
        (
            &["allow:mcp__github"],
            tool("mcp__github__create_issue"),
            Some(Allow),
        ),
        (
            &["allow:mcp__github"],
            tool("mcp__githubx__create_issue"),
            None,
        ),
        (
            &["allow:mcp__github__*"],
            tool("mcp__gitlab__create_issue"),
            None,
        ),
        (
            &["allow:mcp__github__create_issue"],
            tool("mcp__github__create_issue"),
            Some(Allow),
        ),
        (
            &["allow:mcp__github__create_issue"],
            tool("mcp__github__delete_repo"),
            None,
        ),
        (
            &["allow:mcp__github", "deny:mcp__github__delete_repo"],
            tool("mcp__github__delete_repo"),
            Some(Deny),
        ),
        (
            &["allow:Agent(Explore)"],
            agent(Some("Explore")),
            Some(Allow),
        ),
        (&["allow:Agent(Explore)"], agent(Some("explore")), None),
        (&["allow:Agent(Explore)"], agent(Some("Plan")), None),
        (&["allow:Agent(Explore)"], agent(None), None),
        (
            &["allow:Task(Explore)"],
            agent(Some("Explore")),
            Some(Allow),
        ),
        (&["allow:Agent"], agent(Some("Plan")), Some(Allow)),
        (&["allow:Task"], agent(None), Some(Allow)),
        (
            &["allow:Agent", "deny:Agent(Plan)"],
            agent(Some("Plan")),
            Some(Deny),
        ),
        (&["allow:Agent(Explore)"], tool("Task"), None),
    ];
    for (specs, facts, want) in cases {
        let set = rules(specs);
        assert_eq!(eval(&set, facts), *want, "rules {specs:?}, facts {facts:?}");
    }
}

#[test]
fn parses_valid_rules() {
    for text in [
        "Read",
        " Bash ",
        "Bash(*)",
        "Bash(git status:*)",
        "Bash(echo \")\")",
        "Bash(echo $(date))",
        "Edit(src/**)",
        "Read(//etc/**)",
        "Read(~/.ssh/**)",
        "Read(/)",
        "WebFetch",
        "Task",
        "MultiEdit",
        "edit_file",
        "write_file",
        "mcp__github",
        "mcp__github__*",
        "mcp__my-server__some_tool",
        "Agent(Explore)",
        "SomeFutureTool",
    ] {
        let rule = parse_rule(Allow, text, Some(Path::new(HOME)));
        assert!(rule.is_ok(), "{text:?}: {rule:?}");
    }
    let rule = parse_rule(Deny, "  Bash(ls:*) ", None).expect("parses");
    assert_eq!(rule.text, "Bash(ls:*)");
    assert_eq!(rule.kind, Deny);
}

#[test]
fn parse_errors_name_the_rule() {
    let cases: &[(&str, Option<&Path>, &str)] = &[
        ("", None, "the rule is empty"),
        ("   ", None, "the rule is empty"),
        ("Bash(", None, "missing closing \")\""),
        ("Bash(ls", None, "missing closing \")\""),
        ("Bash)", None, "unbalanced parentheses"),
        ("Read(a(b)", None, "unbalanced parentheses"),
        ("Bash(ls))", None, "unbalanced parentheses"),
        ("Bash(ls)x", None, "unexpected text after"),
        ("(ls)", None, "missing tool name"),
        ("Ba sh", None, "not a valid tool name"),
        ("Bash (ls)", None, "not a valid tool name"),
        ("*", None, "not a valid tool name"),
        ("mcp__", None, "not a valid tool name"),
        ("mcp__*", None, "not a valid tool name"),
        ("mcp__a__", None, "not a valid tool name"),
        ("mcp__a__b*", None, "not a valid tool name"),
        ("mcp__github(x)", None, "take no"),
        ("Bash()", None, "empty \"()\""),
        ("Read( )", None, "empty \"()\""),
        ("Agent()", None, "empty \"()\""),
        ("Bash(:*)", None, "empty command prefix"),
        ("Bash( :*)", None, "empty command prefix"),
        ("Bash(echo 'x:*)", None, "unterminated quote"),
        ("TodoWrite(x)", None, "TodoWrite rules take no"),
        (
            "WebFetch(example.com)",
            None,
            "WebFetch rules take \"domain:HOST\"",
        ),
        ("WebFetch(domain:)", None, "domain:HOST"),
        ("Read(src/[)", None, "invalid glob \"src/[\""),
        ("Read(~/.ssh/**)", None, "needs a home directory"),
    ];
    for (text, home, reason) in cases {
        let err = parse_rule(Allow, text, *home).expect_err(text);
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("invalid permission rule {text:?}: ")),
            "{message}"
        );
        assert!(message.contains(reason), "{text:?}: {message}");
        assert_eq!(err.rule(), *text);
    }
    assert_eq!(
        parse_rule(Allow, "Bash(", None)
            .expect_err("bad")
            .to_string(),
        r#"invalid permission rule "Bash(": missing closing ")""#
    );
}

#[test]
fn rule_sets() {
    let mut set = RuleSet::new();
    assert!(set.is_empty());
    set.extend([
        parse_rule(Allow, "Read", None).expect("rule"),
        parse_rule(Deny, "Read(.env)", None).expect("rule"),
    ]);
    assert!(!set.is_empty());
    assert_eq!(set.iter().count(), 2);
    assert_eq!(
        set.evaluate(&file("Read", "/proj/.env"), Path::new(PROJECT)),
        Some((Deny, "Read(.env)".into()))
    );
    assert_eq!(
        serde_json::to_string(&RuleKind::Ask).expect("json"),
        "\"ask\""
    );
}
