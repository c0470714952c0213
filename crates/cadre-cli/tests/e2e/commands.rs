//! Custom slash commands through the binary, as Claude Code users write
//! them: `.claude/commands/**/*.md` become `/name`, their bodies take
//! arguments, run `` !`cmd` `` lines under the `Bash` policy (never
//! asking) and attach `@file` mentions, in `exec`, the line front end and
//! the full screen; the model runs them through the `Skill` tool; they
//! stack; a `context: fork` one runs as a child.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr, stdout, tool_results, user_texts};
use serde_json::Value;

/// The text blocks of the first user message of a request.
fn first_user_blocks(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

const REVIEW: &str = "---\ndescription: Review a change\nargument-hint: \"[target] [reason]\"\nallowed-tools: Bash(echo:*)\n---\nAll: $ARGUMENTS\nFirst: $0\nSecond: $1\nMissing: $2\nShell: !`echo from-shell`\nNotes: @notes.txt\n";

fn write_review(h: &Harness) {
    h.write(".claude/commands/team/review.md", REVIEW);
    h.write("notes.txt", "NOTE-CONTENT-77\n");
}

fn assert_review_rendered(text: &str) {
    for want in [
        "/review a 'b c'",
        "All: a 'b c'",
        "First: a",
        "Second: b c",
        "Missing: $2",
        "Shell: from-shell",
        "NOTE-CONTENT-77",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    assert!(!text.contains("!`echo"), "the command ran: {text}");
}

#[tokio::test]
async fn exec_sends_a_commands_rendered_body_with_shell_output_and_mentioned_files() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Reviewed.\"\n",
        Wire::Anthropic,
    )
    .await;
    write_review(&h);
    let out = h.cadre(&["exec", "--trust", "/review a 'b c'"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Reviewed.");
    let records = h.records();
    assert_eq!(records.len(), 1);
    let blocks = first_user_blocks(&records[0].body);
    // The typed line stays its own block; the body follows it.
    assert!(blocks.iter().any(|b| b == "/review a 'b c'"), "{blocks:?}");
    assert!(
        blocks
            .iter()
            .any(|b| b.starts_with("All: a 'b c'\nFirst: a")),
        "{blocks:?}"
    );
    assert_review_rendered(&user_texts(&records[0].body));
}

#[tokio::test]
async fn a_shell_line_the_policy_does_not_allow_aborts_the_command_and_sends_nothing() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"never\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".claude/commands/sneaky.md",
        "Status: !`touch escaped.txt`\n",
    );
    h.write(
        ".claude/commands/broken.md",
        "---\nallowed-tools: Bash(ls:*)\n---\nList: !`ls no-such-dir-here`\n",
    );
    let out = h.cadre(&["exec", "--json", "--trust", "/sneaky"]).await;
    assert!(!out.status.success());
    let ended = events(&out)
        .into_iter()
        .find(|e| e["type"] == "turn_ended")
        .unwrap();
    let error = ended["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "Shell command permission check failed for pattern \"!`touch escaped.txt`\""
        ),
        "{error}"
    );
    assert!(!h.path("escaped.txt").exists());

    let out = h.cadre(&["exec", "--trust", "/broken"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Shell command failed for pattern \"!`ls no-such-dir-here`\""),
        "{}",
        stderr(&out)
    );
    assert!(h.records().is_empty(), "nothing reached the model");
}

/// The shape of Claude Code's own `/commit` (its commit-commands plugin):
/// `allowed-tools` lists only the writing `git` commands, and its lines run
/// `git status`, `git diff HEAD`, `git branch --show-current` and `git log`,
/// which only read and so run without a rule, sandboxed.
#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn read_only_lines_run_without_a_rule_as_in_claude_codes_commit_command() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Committed.\"\n",
        Wire::Anthropic,
    )
    .await;
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(h.path(""))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "trunk"]);
    git(&[
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first-commit-subject",
    ]);
    h.write("changed.txt", "new\n");
    h.write(
        ".claude/commands/commit.md",
        "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)\ndescription: Create a git commit\n---\n\n## Context\n\n- Current git status: !`git status`\n- Current git diff (staged and unstaged changes): !`git diff HEAD`\n- Current branch: !`git branch --show-current`\n- Recent commits: !`git log --oneline -10`\n\n## Your task\n\nCreate a single git commit.\n",
    );
    let out = h.cadre(&["exec", "--json", "--trust", "/commit"]).await;
    common::require_landlock(&events(&out));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = user_texts(&h.records()[0].body);
    assert!(text.contains("Current branch: trunk"), "{text}");
    assert!(text.contains("first-commit-subject"), "{text}");
    assert!(text.contains("changed.txt"), "{text}");

    // A line that writes still needs a rule.
    h.write(".claude/commands/wipe.md", "Gone: !`git branch -D trunk`\n");
    let out = h.cadre(&["exec", "--trust", "/wipe"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("permission check failed"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_projects_allowed_tools_wait_for_trust_and_the_refusal_says_so() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"never\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".claude/commands/stamp.md",
        "---\nallowed-tools: Bash(touch:*)\n---\nStamped: !`touch stamp.txt`\n",
    );
    let out = h.cadre(&["exec", "/stamp"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Shell command permission check failed for pattern \"!`touch stamp.txt`\"")
            && err.contains("this folder is not trusted"),
        "{err}"
    );
    assert!(!h.path("stamp.txt").exists());
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn an_unknown_command_is_named_and_not_sent() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"never\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h.cadre(&["exec", "/onboard"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown command /onboard"),
        "{}",
        stderr(&out)
    );
    assert!(h.records().is_empty());
    // A path is a message, not a command.
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"paths are fine\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h.cadre(&["exec", "/usr/bin/env looks odd"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn commands_stack_and_each_takes_the_text_after_them() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Both.\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(".claude/commands/plan.md", "Plan for: $ARGUMENTS");
    h.write(".claude/commands/check.md", "Check it.");
    let out = h.cadre(&["exec", "/plan /check the parser"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = user_texts(&h.records()[0].body);
    assert!(text.contains("Plan for: the parser"), "{text}");
    assert!(
        text.contains("Check it.\\n\\nARGUMENTS: the parser"),
        "{text}"
    );
}

#[tokio::test]
async fn the_model_runs_a_user_command_through_the_skill_tool() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Skill, input: { skill: "summarize", args: "src lib" } }
          - { name: Skill, input: { skill: "release" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/commands/summarize.md",
        "---\ndescription: Summarize folders\n---\nSummarize $0 then $1.",
    );
    h.write(
        ".claude/commands/release.md",
        "---\ndescription: Cut a release\ndisable-model-invocation: true\n---\nTag it.",
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let reminder = user_texts(&records[0].body);
    assert!(
        reminder.contains("- summarize: Summarize folders"),
        "{reminder}"
    );
    assert!(!reminder.contains("release"), "{reminder}");
    let results = tool_results(&records[1].body);
    assert!(
        !results[0].1 && results[0].0.contains("Summarize src then lib."),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].0.contains("no skill named"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_forked_command_runs_as_a_child_and_its_report_follows() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "Investigate the cache" }
    replies:
      - text: "CHILD-REPORT: the cache is cold"
  - name: main
    replies:
      - text: "Thanks."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/commands/dig.md",
        "---\ncontext: fork\nagent: Explore\n---\nInvestigate the $ARGUMENTS",
    );
    let out = h.cadre(&["exec", "/dig cache"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 1, "the body ran as a child");
    let main = rule_records(&records, "main");
    let text = user_texts(&main[0].body);
    assert!(text.contains("CHILD-REPORT: the cache is cold"), "{text}");
    assert!(
        text.contains("ran as a Explore subagent")
            || text.contains("ran as an Explore subagent")
            || text.contains("Explore subagent"),
        "{text}"
    );
}

#[tokio::test]
async fn the_model_runs_a_forked_command_as_a_child_and_a_deny_rule_keeps_it_out() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "Investigate the index" }
    replies:
      - text: "CHILD-REPORT: the index is stale"
  - name: main
    replies:
      - tool_calls:
          - { name: Skill, input: { skill: "dig", args: "index" } }
      - text: "Noted."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/commands/dig.md",
        "---\ndescription: Dig into something\ncontext: fork\nagent: Explore\n---\nInvestigate the $ARGUMENTS",
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(rule_records(&records, "child").len(), 1);
    let main = rule_records(&records, "main");
    let results = tool_results(&main[1].body);
    assert!(
        !results[0].1 && results[0].0.contains("CHILD-REPORT: the index is stale"),
        "{results:?}"
    );

    // A rule that denies the agent type stops both ways in.
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/commands/dig.md",
        "---\ncontext: fork\nagent: Explore\n---\nInvestigate the $ARGUMENTS",
    );
    let out = h
        .cadre(&["exec", "--deny", "Agent(Explore)", "/dig index"])
        .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/dig: denied by the rule Agent(Explore)"),
        "{}",
        stderr(&out)
    );
    let out = h.cadre(&["exec", "--deny", "Agent(Explore)", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(rule_records(&records, "child").is_empty());
    let results = tool_results(&records.last().unwrap().body);
    assert!(
        results[0].1 && results[0].0.contains("denied by the rule Agent(Explore)"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_line_front_end_sends_a_command_and_lists_it_in_help() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Reviewed in line.\"\n",
        Wire::Anthropic,
    )
    .await;
    write_review(&h);
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &["--no-tui", "--trust"]);
    pty.type_line("/help");
    cadre.wait_for_stderr("/review [target] [reason]", 1).await;
    pty.type_line("/review a 'b c'");
    cadre.wait_for_stdout("Reviewed in line.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let records = h.records();
    assert_eq!(records.len(), 1);
    assert_review_rendered(&user_texts(&records[0].body));
}

#[tokio::test]
async fn the_full_screen_sends_a_command_completes_it_and_lists_it_in_help() {
    if !common::tmux::tmux_available() {
        return;
    }
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Reviewed on screen.\"\n",
        Wire::Anthropic,
    )
    .await;
    write_review(&h);
    let pane = common::tmux::Pane::start(&h, &["--trust"]);
    pane.wait_text("mock-model").await;
    pane.type_text("/revi");
    pane.wait_text("[target] [reason]").await;
    pane.keys(&["C-u"]);
    pane.type_text("/review a 'b c'");
    pane.wait_text("› /review a 'b c'").await;
    pane.keys(&["Enter"]);
    pane.wait_text("Reviewed on screen.").await;
    let records = h.records();
    assert_eq!(records.len(), 1);
    assert_review_rendered(&user_texts(&records[0].body));
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

/// Thirty commands in the shapes real repositories' `.claude/commands/`
/// hold: no frontmatter, a description only, tool lists as strings and as
/// YAML lists, argument hints, subfolders, `$ARGUMENTS` inline and absent,
/// old-style `$1`, headings as the first paragraph, a model, a
/// `disable-model-invocation` flag spelled `yes`.
fn write_thirty(h: &Harness) -> Vec<(String, String)> {
    let mut made = Vec::new();
    let shapes: [(&str, &str); 10] = [
        ("", "# Title\n\nDo the thing for $ARGUMENTS."),
        (
            "---\ndescription: Only a description\n---\n",
            "Body without arguments.",
        ),
        (
            "---\nallowed-tools: Bash(git status:*), Bash(git diff:*), Read\ndescription: Commit helper\n---\n",
            "## Context\n\n- Branch: work\n\nCommit $ARGUMENTS",
        ),
        (
            "---\nallowed-tools:\n  - Read\n  - Grep\nargument-hint: <file>\n---\n",
            "Explain $1 in detail.",
        ),
        (
            "---\ndescription: \"Quoted: with colon\"\nmodel: haiku\n---\n",
            "Quick answer: $ARGUMENTS",
        ),
        (
            "---\ndisable-model-invocation: yes\n---\n",
            "User-only step.\n\nMore text $0.",
        ),
        (
            "---\nargument-hint: [pr-number] [priority]\n---\n",
            "Review PR #$0 at $1 priority.",
        ),
        (
            "---\ndescription: Multi\nwhen_to_use: when asked\n---\n",
            "Line one\nline two $ARGUMENTS[0]",
        ),
        ("", "Plain text with a $ sign and $HOME left alone."),
        (
            "---\ndescription: >\n  Folded description\n  over lines\n---\n",
            "Folded body.",
        ),
    ];
    for i in 0..30 {
        let (front, body) = shapes[i % shapes.len()];
        let dir = match i % 3 {
            0 => ".claude/commands",
            1 => ".claude/commands/tools",
            _ => ".claude/commands/ops/deep",
        };
        let name = format!("cmd-{i:02}");
        let marker = format!("MARKER-{i:02}");
        h.write(
            &format!("{dir}/{name}.md"),
            &format!("{front}{body}\n\n{marker}\n"),
        );
        made.push((name, marker));
    }
    made
}

#[tokio::test]
async fn thirty_commands_in_real_shapes_load_and_expand() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"ok\"\n",
        Wire::Anthropic,
    )
    .await;
    let made = write_thirty(&h);
    let out = h.cadre(&["skills", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    for (name, _) in &made {
        assert!(
            listed.contains(&format!("/{name}")),
            "{name} missing from {listed}"
        );
    }
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(listed.contains("(project:ops/deep)"), "{listed}");
    for (name, marker) in &made {
        let out = h.cadre(&["exec", &format!("/{name} 7 high")]).await;
        assert!(out.status.success(), "/{name}: {}", stderr(&out));
        let records = h.records();
        let text = user_texts(&records.last().unwrap().body);
        assert!(text.contains(marker), "/{name}: {text}");
    }
    let records = h.records();
    let texts: Vec<String> = records.iter().map(|r| user_texts(&r.body)).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Review PR #7 at high priority."))
    );
    assert!(texts.iter().any(|t| t.contains("Explain high in detail.")));
    assert!(texts.iter().any(|t| t.contains("Do the thing for 7 high.")));
    assert!(texts.iter().any(|t| t.contains("$HOME left alone")));
}
