//! `/tasks` in the full-screen front end, end to end: the real `cadre` in a
//! tmux pane against the scripted model. A background child shows in the
//! list; Enter follows its transcript as lines are written; `x` stops it
//! (the task table says cancelled); the status line counts running and
//! unread background tasks and opening `/tasks` reads them. A child's later
//! lines are held back by a shell command waiting for a file the test
//! creates, so "later" never depends on timing. Without tmux these tests say
//! so and do nothing; `.ci/run` installs it.

use crate::common;

use cadre_core::tasks::{TaskKind, TaskStatus};
use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};

const WATCHER: &str = "---
name: watcher
description: Waits for things.
tools: Bash
---
You are WATCHER, a background subagent.
";

/// A parent that starts one background `watcher` child asked `prompt`, and
/// a child that runs `gate_command` first, then answers with `after`.
fn script(prompt: &str, gate_command: &str, after: &str) -> String {
    format!(
        r#"
rules:
  - name: parent
    when: {{ system: "You are cadre" }}
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "watch the gate", prompt: "{prompt}", subagent_type: "watcher", run_in_background: true }} }}
      - text: "Started the watcher."
      - text: "Noted the watcher's end."
      - text: "Noted again."
  - name: child
    when: {{ system: "You are WATCHER" }}
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{gate_command}", description: "wait for the gate" }} }}
{after}
"#
    )
}

/// The task table's only subagent row.
fn child_task(h: &Harness) -> Option<cadre_core::tasks::TaskRow> {
    common::tasks(h)
        .into_iter()
        .find(|t| t.kind == TaskKind::Subagent)
}

/// The pane's last row: the status line.
fn status_line(screen: &str) -> String {
    screen
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn tasks_lists_a_background_child_follows_its_transcript_and_x_stops_it() {
    if !tmux_available() {
        return;
    }
    // After the gate the child waits in a second command for a file that
    // never comes: it is running when `x` comes.
    let script = script(
        "follow-me",
        "while [ ! -e gate ]; do sleep 0.1; done; echo LATER-LINE",
        "      - tool_calls:\n          - { name: Bash, input: { command: \"while [ ! -e never ]; do sleep 0.1; done\", description: \"wait forever\" } }\n      - text: \"never sent\"",
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/watcher.md", WATCHER);
    let pane = Pane::start(&h, &["--permission-mode", "acceptEdits"]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the watcher");
    pane.keys(&["Enter"]);
    pane.wait_text("Started the watcher.").await;
    pane.wait_text("Tasks: 1 running").await;
    pane.type_text("/tasks");
    pane.keys(&["Enter"]);
    let screen = pane
        .wait_for("the child's row", |s| {
            s.lines()
                .any(|l| l.contains("subagent") && l.contains("watcher") && l.contains("running"))
        })
        .await;
    assert!(screen.contains("watch the gate"), "{screen}");
    assert!(screen.contains("Tasks · 1 running · 1 in all"), "{screen}");
    pane.keys(&["Enter"]);
    // The first lines: what it was asked and the call it is in.
    let screen = pane.wait_text("→ Bash").await;
    assert!(screen.contains("user: follow-me"), "{screen}");
    assert!(
        screen.contains("transcript · watcher: watch the gate · running"),
        "{screen}"
    );
    assert!(
        !screen.contains("← LATER-LINE"),
        "not written yet: {screen}"
    );
    // A later line arrives while the pane is open.
    std::fs::write(h.path("gate"), "").unwrap();
    pane.wait_text("← LATER-LINE").await;
    // Its next call is running: `x` stops it.
    pane.wait_text("→ Bash while [ ! -e never ]").await;
    pane.keys(&["x"]);
    pane.wait_text("stopping t-").await;
    common::wait_until("the task to be cancelled", || {
        child_task(&h).is_some_and(|t| t.status == TaskStatus::Cancelled)
    })
    .await;
    pane.wait_text("watch the gate · cancelled").await;
    // The log says so too (its turn ended cancelled), and the pane shows it.
    pane.wait_for("the turn's end in the transcript", |s| {
        s.contains("(turn ended: cancelled)") || s.contains("(turn ended: interrupted)")
    })
    .await;
    // Esc: back to the list, which shows it cancelled; Esc again: the conversation.
    pane.keys(&["Escape"]);
    pane.wait_for("the list with the cancelled child", |s| {
        s.lines()
            .any(|l| l.contains("subagent") && l.contains("cancelled"))
    })
    .await;
    pane.keys(&["Escape"]);
    let screen = pane
        .wait_for("the pane to close", |s| !s.contains("Esc close"))
        .await;
    // It ended while /tasks was open: seen, so nothing is unread.
    assert!(
        !status_line(&screen).contains("Tasks:"),
        "{}",
        status_line(&screen)
    );
    // The child asked the model twice and never again.
    assert_eq!(common::rule_records(&h.records(), "child").len(), 2);
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn the_status_line_counts_running_then_unread_and_tasks_reads_them() {
    if !tmux_available() {
        return;
    }
    let script = script(
        "count-me",
        "while [ ! -e gate ]; do sleep 0.1; done; echo opened",
        "      - text: \"WATCHER-DONE\"",
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/watcher.md", WATCHER);
    let pane = Pane::start(&h, &["--permission-mode", "acceptEdits"]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the watcher");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Tasks: 1 running — /tasks").await;
    assert!(
        status_line(&screen).contains("Tasks: 1 running — /tasks"),
        "on the status line: {screen}"
    );
    std::fs::write(h.path("gate"), "").unwrap();
    let screen = pane.wait_text("Tasks: 1 unread — /tasks").await;
    assert!(
        status_line(&screen).contains("Tasks: 1 unread — /tasks"),
        "{screen}"
    );
    assert_eq!(
        child_task(&h).map(|t| t.status),
        Some(TaskStatus::Succeeded)
    );
    pane.type_text("/tasks");
    pane.keys(&["Enter"]);
    let screen = pane
        .wait_for("the list with the child", |s| {
            s.lines()
                .any(|l| l.contains("subagent") && l.contains("succeeded"))
        })
        .await;
    assert!(
        !status_line(&screen).contains("Tasks:"),
        "opening /tasks read it: {}",
        status_line(&screen)
    );
    pane.keys(&["Escape"]);
    let screen = pane
        .wait_for("the pane to close", |s| !s.contains("Esc close"))
        .await;
    assert!(!status_line(&screen).contains("Tasks:"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

/// True when a row of the pane (inside its border) is exactly `text`.
fn has_row(screen: &str, text: &str) -> bool {
    screen
        .lines()
        .any(|l| l.trim_matches(|c| c == '│' || c == ' ') == text)
}

#[tokio::test]
async fn enter_on_a_background_shell_follows_its_output_and_x_stops_it() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: main
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo FIRST-OUT; while [ ! -e gate ]; do sleep 0.1; done; echo SECOND-OUT; while [ ! -e never ]; do sleep 0.1; done", run_in_background: true, description: "gated shell" } }
      - text: "Shell started."
      - text: "Noted the shell's end."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &["--permission-mode", "acceptEdits"]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the shell");
    pane.keys(&["Enter"]);
    pane.wait_text("Shell started.").await;
    pane.type_text("/tasks");
    pane.keys(&["Enter"]);
    pane.wait_for("the shell's row", |s| {
        s.lines()
            .any(|l| l.contains("bash") && l.contains("running") && l.contains("gated shell"))
    })
    .await;
    pane.keys(&["Enter"]);
    let screen = pane
        .wait_for("its first line", |s| has_row(s, "FIRST-OUT"))
        .await;
    assert!(
        screen.contains("output · gated shell · running"),
        "{screen}"
    );
    assert!(!has_row(&screen, "SECOND-OUT"), "not written yet: {screen}");
    std::fs::write(h.path("gate"), "").unwrap();
    pane.wait_for("its later line", |s| has_row(s, "SECOND-OUT"))
        .await;
    pane.keys(&["x"]);
    common::wait_until("the shell's task to be cancelled", || {
        common::tasks(&h)
            .iter()
            .any(|t| t.kind == TaskKind::Bash && t.status == TaskStatus::Cancelled)
    })
    .await;
    pane.wait_text("gated shell · cancelled").await;
    pane.keys(&["Escape", "Escape"]);
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
