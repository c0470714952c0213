//! The full-screen front end end to end: the real `cadre` in a tmux pane
//! (120×40) against the scripted model, driven with `send-keys` and read
//! with `capture-pane`. Every wait polls the pane (or a file) with a
//! generous deadline. Without tmux these tests say so and do nothing;
//! `.ci/run` installs it.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};

const FINDER: &str = "---
name: finder
description: Finds things in the project.
tools: Read, Grep, Glob
---
You are FINDER, a search subagent. Report briefly.
";

const RUNNER: &str = "---
name: runner
description: Runs commands.
tools: Bash
---
You are RUNNER, a command subagent.
";

/// The id of the harness's only session, once its log exists.
fn session_id(h: &Harness) -> Option<String> {
    std::fs::read_dir(h.data_dir().join("sessions"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_string)
        })
        .next()
}

/// The rows of the pane that show a child of the panel.
fn child_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| l.contains(" finder ") && l.contains(" · running"))
        .collect()
}

fn parent_with_agents(descriptions: &[&str], prompt_prefix: &str) -> String {
    let calls: Vec<String> = descriptions
        .iter()
        .enumerate()
        .map(|(i, d)| {
            format!(
                "          - {{ name: Agent, input: {{ description: \"{d}\", prompt: \"{prompt_prefix}-{i}\", subagent_type: \"finder\" }} }}"
            )
        })
        .collect();
    format!(
        "  - name: parent
    when: {{ system: \"You are cadre\" }}
    replies:
      - tool_calls:
{}
      - text: \"All reports in.\"
",
        calls.join("\n")
    )
}

#[tokio::test]
async fn three_agent_calls_show_three_child_rows_then_one_summary() {
    if !tmux_available() {
        return;
    }
    let script = format!(
        "rules:\n{}  - name: child\n    when: {{ system: \"You are FINDER\" }}\n    replies:\n      - latency_ms: 4000\n        tool_calls:\n          - {{ name: Glob, input: {{ pattern: \"*.md\" }} }}\n      - text: \"found it\"\n",
        parent_with_agents(&["look at a", "look at b", "look at c"], "find")
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/finder.md", FINDER);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("look around");
    pane.keys(&["Enter"]);
    let screen = pane
        .wait_for("three child rows", |s| child_rows(s).len() == 3)
        .await;
    for (i, d) in ["look at a", "look at b", "look at c"].iter().enumerate() {
        assert!(
            screen.contains(&format!("finder {}/3 {d}", i + 1)),
            "row {i}: {screen}"
        );
    }
    let screen = pane.wait_text("All reports in.").await;
    assert!(
        screen.contains("3 subagents: 3 completed · 3 tool calls"),
        "one summary line for the batch: {screen}"
    );
    assert!(
        child_rows(&screen).is_empty(),
        "the rows fold away: {screen}"
    );
    assert_eq!(
        screen.matches("subagents:").count(),
        1,
        "exactly one summary: {screen}"
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn a_childs_approval_is_a_dialog_with_its_label_and_y_runs_the_command() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "make the marker", prompt: "run-it", subagent_type: "runner" } }
      - text: "Parent done."
  - name: child
    when: { system: "You are RUNNER" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "touch approved.txt" } }
      - text: "made it"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/runner.md", RUNNER);
    let pane = Pane::start(&h, &["--permission-mode", "default"]);
    pane.wait_text("mock-model").await;
    pane.type_text("go");
    pane.keys(&["Enter"]);
    pane.wait_text("Permission needed").await;
    // The choices show once the dialog takes keys (a moment after it appears).
    let screen = pane.wait_text("[y] Yes").await;
    assert!(
        screen.contains("Subagent: 1/1 runner: \"run-it\""),
        "the child's label: {screen}"
    );
    assert!(
        screen.contains("touch approved.txt"),
        "the exact input: {screen}"
    );
    assert!(
        !h.path("approved.txt").exists(),
        "nothing ran before the answer"
    );
    pane.keys(&["y"]);
    let marker = h.path("approved.txt");
    common::wait_until("the approved command to run", || marker.exists()).await;
    let screen = pane.wait_text("Parent done.").await;
    assert!(
        !screen.contains("Permission needed"),
        "the dialog is gone: {screen}"
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn esc_stops_a_running_batch_and_its_children_are_cancelled() {
    if !tmux_available() {
        return;
    }
    let script = format!(
        "rules:\n{}  - name: stuck\n    when: {{ system: \"You are FINDER\" }}\n    replies:\n      - latency_ms: 30000\n        text: \"late\"\n",
        parent_with_agents(&["stuck a", "stuck b"], "stuck")
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/finder.md", FINDER);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the batch");
    pane.keys(&["Enter"]);
    pane.wait_for("two child rows", |s| child_rows(s).len() == 2)
        .await;
    // Both children have started (each has begun its log): they are really running.
    common::wait_until("both children started", || {
        session_id(&h).is_some_and(|id| common::child_logs_started(&h, &id) == 2)
    })
    .await;
    pane.keys(&["Escape"]);
    let screen = pane.wait_text("interrupted").await;
    assert!(
        screen.contains("2 subagents: 2 cancelled"),
        "the batch ends cancelled: {screen}"
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    // The session log says the same: both Agent calls ended cancelled, the turn interrupted.
    let sessions = h.data_dir().join("sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session log");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let results: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{records:?}");
    assert!(
        results
            .iter()
            .all(|r| r["content"].as_str().unwrap().contains("cancelled")),
        "{results:?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "turn_end" && r["status"] == "interrupted"),
        "{records:?}"
    );
    // No child asked the model again after the interrupt.
    assert_eq!(common::rule_records(&h.records(), "stuck").len(), 2);
}

#[tokio::test]
async fn help_and_unknown_commands_never_reach_the_model() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - text: "Hello from the model."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("/help");
    pane.keys(&["Enter"]);
    pane.wait_text("/compact [focus]").await;
    pane.type_text("/foo bar");
    pane.keys(&["Enter"]);
    pane.wait_text("unknown command /foo (try /help)").await;
    assert!(h.records().is_empty(), "no request for a command");
    pane.type_text("hi there");
    pane.keys(&["Enter"]);
    pane.wait_text("Hello from the model.").await;
    let records = h.records();
    assert_eq!(records.len(), 1, "one request: the message");
    let sent = common::user_texts(&records[0].body);
    assert!(sent.contains("hi there"), "{sent}");
    assert!(!sent.contains("/help") && !sent.contains("/foo"), "{sent}");
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn quitting_restores_the_terminal() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("mock-model").await;
    assert!(screen.contains('›'), "the prompt shows: {screen}");
    pane.type_text("typed but not sent");
    pane.keys(&["C-c"]);
    pane.wait_text("Press Ctrl+C again to leave").await;
    assert!(
        !pane.screen().contains("typed but not sent"),
        "Ctrl+C cleared the prompt"
    );
    pane.keys(&["C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    let before = std::fs::read_to_string(pane.file("before.txt")).unwrap();
    let after = std::fs::read_to_string(pane.file("after.txt")).unwrap();
    assert!(
        before.contains("icanon") || before.contains("-icanon"),
        "{before}"
    );
    assert_eq!(before, after, "stty -a differs after cadre left");
    // The alternate screen was left: the pane shows the shell's screen, not the TUI.
    let screen = pane.screen();
    assert!(!screen.contains("mock-model"), "{screen}");
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn sigterm_restores_the_terminal_too() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    // The pane's shell runs cadre as its only child.
    let shell: i32 =
        String::from_utf8_lossy(&pane.tmux(&["display-message", "-p", "#{pane_pid}"]).stdout)
            .trim()
            .parse()
            .unwrap();
    let children =
        std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
    let cadre: i32 = children
        .split_whitespace()
        .next()
        .expect("cadre runs under the pane's shell")
        .parse()
        .unwrap();
    // SAFETY: signalling a process this test started.
    unsafe { libc::kill(cadre, libc::SIGTERM) };
    assert_eq!(pane.exit_status().await, 143);
    let before = std::fs::read_to_string(pane.file("before.txt")).unwrap();
    let after = std::fs::read_to_string(pane.file("after.txt")).unwrap();
    assert_eq!(before, after, "stty -a differs after SIGTERM");
}

#[tokio::test]
async fn ctrl_b_moves_the_running_batch_to_the_background() {
    if !tmux_available() {
        return;
    }
    let script = format!(
        "rules:\n{}  - name: slow\n    when: {{ system: \"You are FINDER\" }}\n    replies:\n      - latency_ms: 30000\n        text: \"late\"\n",
        parent_with_agents(&["slow a", "slow b"], "slow")
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/finder.md", FINDER);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the batch");
    pane.keys(&["Enter"]);
    pane.wait_for("two child rows", |s| child_rows(s).len() == 2)
        .await;
    pane.keys(&["C-b"]);
    let screen = pane.wait_text("All reports in.").await;
    assert!(
        screen.contains("2 subagents: 2 in the background"),
        "the batch left the foreground: {screen}"
    );
    assert!(screen.contains("Tasks: 2 running"), "{screen}");
    let running = common::tasks(&h)
        .iter()
        .filter(|t| t.status.is_active())
        .count();
    assert_eq!(running, 2, "both children run on as tasks");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    // Leaving stops what the session still ran.
    assert!(
        common::tasks(&h).iter().all(|t| t.status.is_final()),
        "{:?}",
        common::tasks(&h)
    );
}

#[tokio::test]
async fn no_tui_and_a_dumb_terminal_keep_the_line_front_end() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - text: "Plain answer."
"#;
    for (args, env) in [
        (&["--no-tui"][..], &[][..]),
        (&[][..], &[("TERM", "dumb")][..]),
    ] {
        let h = Harness::new(script, Wire::Anthropic).await;
        let pane = Pane::start_env(&h, args, env);
        // The line front end's banner; the TUI has none.
        pane.wait_text("/exit or Ctrl+D to leave").await;
        pane.type_text("hello");
        pane.keys(&["Enter"]);
        pane.wait_text("Plain answer.").await;
        pane.type_text("/exit");
        pane.keys(&["Enter"]);
        assert_eq!(pane.exit_status().await, 0, "{args:?} {env:?}");
        assert!(!pane.screen().contains("working…"), "{args:?} {env:?}");
    }
}

#[tokio::test]
async fn a_terminal_resized_below_40x10_says_so_and_recovers() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    assert!(
        pane.tmux(&["resize-window", "-x", "36", "-y", "8"])
            .status
            .success()
    );
    let screen = pane.wait_text("terminal too small").await;
    assert_eq!(
        screen.lines().filter(|l| !l.trim().is_empty()).count(),
        1,
        "one line and nothing else: {screen}"
    );
    assert!(
        pane.tmux(&["resize-window", "-x", "80", "-y", "24"])
            .status
            .success()
    );
    pane.wait_text("mock-model").await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn shift_tab_switches_to_accept_edits_and_an_edit_then_runs_without_a_question() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - tool_calls: [{ name: Write, input: { file_path: "made.txt", content: "made\n" } }]
      - text: "Written it."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.keys(&["BTab"]);
    pane.wait_text("permission mode: acceptEdits").await;
    pane.type_text("write it");
    pane.keys(&["Enter"]);
    pane.wait_text("Written it.").await;
    assert_eq!(h.read("made.txt"), "made\n", "ran without a question");
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn the_prompt_history_is_kept_per_project_across_sessions() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - text: "First answer."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    {
        let pane = Pane::start(&h, &[]);
        pane.wait_text("mock-model").await;
        pane.type_text("remember this prompt");
        pane.keys(&["Enter"]);
        pane.wait_text("First answer.").await;
        pane.type_text("/exit");
        pane.keys(&["Enter"]);
        assert_eq!(pane.exit_status().await, 0);
    }
    // A later session in the same project: ↑ brings it back (and `/exit`,
    // typed after it, comes first).
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.keys(&["Up", "Up"]);
    pane.wait_text("› remember this prompt").await;
    let history = std::fs::read_dir(h.data_dir().join("history"))
        .unwrap()
        .flatten()
        .count();
    assert_eq!(history, 1, "one file for the project");
    pane.keys(&["C-c"]);
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
}
