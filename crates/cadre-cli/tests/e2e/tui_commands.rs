//! The TUI's slash commands that its host answers, end to end: the real
//! `cadre` in a tmux pane against the scripted model. `/resume`'s picker and
//! `/resume ID`, `/clear`, the text commands, a resume that asks about calls
//! that may have run, and what is typed while a session switch runs. Where a
//! message goes is read from the session logs; what reached the model from
//! the mock's record.

use crate::common;

use std::path::PathBuf;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};
use serde_json::Value;

/// A reply for each message the tests send, by its words (at any position
/// of a conversation: up to four earlier turns).
const CHAT: &str = r#"
rules:
  - name: slow
    when: { first_user: "run the slow thing" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ >> runs.txt; sleep 30" } }
      - text: "Resumed fine."
  - name: earlier
    when: { last_user: "earlier question" }
    replies:
      - text: "Earlier answer."
  - name: stuck
    when: { last_user: "take your time" }
    replies:
      - latency_ms: 30000
        text: "too late"
  - name: next
    when: { last_user: "next message" }
    replies:
      - text: "Next answer."
      - text: "Next answer."
      - text: "Next answer."
      - text: "Next answer."
      - text: "Next answer."
  - name: other
    when: { system: "You are cadre" }
    replies:
      - text: "Other answer."
      - text: "Other answer."
      - text: "Other answer."
      - text: "Other answer."
"#;

/// Every session log: (id, records), any order.
fn session_logs(h: &Harness) -> Vec<(String, Vec<Value>)> {
    let Ok(dir) = std::fs::read_dir(h.data_dir().join("sessions")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let path: PathBuf = e.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            let records = std::fs::read_to_string(&path)
                .ok()?
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            Some((id, records))
        })
        .collect()
}

/// The user messages a log holds, in order.
fn user_messages(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "user")
        .filter_map(|r| r["text"].as_str().map(str::to_string))
        .filter(|t| !t.starts_with("<system-reminder>"))
        .collect()
}

/// The records of session `id`'s log.
fn log_of(h: &Harness, id: &str) -> Vec<Value> {
    session_logs(h)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, r)| r)
        .unwrap_or_default()
}

/// The session whose log holds this user message.
fn session_with_message(h: &Harness, text: &str) -> Option<String> {
    session_logs(h)
        .into_iter()
        .find(|(_, r)| user_messages(r).iter().any(|m| m == text))
        .map(|(id, _)| id)
}

/// Waits for a session log to hold `text` as a user message; returns its id.
async fn wait_for_message(h: &Harness, text: &str) -> String {
    common::wait_until(&format!("a session log holding {text:?}"), || {
        session_with_message(h, text).is_some()
    })
    .await;
    session_with_message(h, text).unwrap()
}

/// Starts the TUI and waits until it shows its session; returns that session's id.
async fn start(h: &Harness) -> (Pane, String) {
    let before: Vec<String> = session_logs(h).into_iter().map(|(id, _)| id).collect();
    let pane = Pane::start(h, &[]);
    pane.wait_text("mock-model").await;
    common::wait_until("the TUI's session log", || {
        session_logs(h).iter().any(|(id, _)| !before.contains(id))
    })
    .await;
    let id = session_logs(h)
        .into_iter()
        .map(|(id, _)| id)
        .find(|id| !before.contains(id))
        .unwrap();
    pane.wait_text(&format!("session {id}")).await;
    (pane, id)
}

fn send(pane: &Pane, text: &str) {
    pane.type_text(text);
    pane.keys(&["Enter"]);
}

async fn leave(pane: &Pane) {
    send(pane, "/exit");
    assert_eq!(pane.exit_status().await, 0);
}

/// An earlier session, run headless: its id.
async fn earlier_session(h: &Harness) -> String {
    let out = h.cadre(&["exec", "earlier question"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    session_with_message(h, "earlier question").expect("the earlier session's log")
}

#[tokio::test]
async fn resume_opens_a_picker_and_enter_continues_the_chosen_session() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let earlier = earlier_session(&h).await;
    // A newer one, listed first.
    let out = h.cadre(&["exec", "a newer question"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let newer = session_with_message(&h, "a newer question").unwrap();
    let (pane, shown) = start(&h).await;
    send(&pane, "/resume");
    let screen = pane.wait_text("Resume a session (2)").await;
    let at = |text: &str| {
        screen
            .find(text)
            .unwrap_or_else(|| panic!("{text} not shown: {screen}"))
    };
    assert!(
        at("› a newer question") < at("earlier question"),
        "newest first, the first selected: {screen}"
    );
    assert!(at(&newer) < at(&earlier), "{screen}");
    assert!(
        !screen.contains(&shown),
        "the session shown is not listed: {screen}"
    );
    assert!(screen.contains("Enter resume"), "{screen}");
    pane.keys(&["Down"]);
    pane.wait_text("› earlier question").await;
    pane.keys(&["Enter"]);
    pane.wait_text(&format!("resumed session {earlier}")).await;
    let screen = pane.wait_text("ends here (it stays resumable").await;
    assert!(
        screen.contains(&format!("session {shown} ends here")),
        "{screen}"
    );
    assert!(
        !screen.contains("Resume a session"),
        "the picker closed: {screen}"
    );
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    assert_eq!(
        user_messages(&log_of(&h, &earlier)),
        ["earlier question", "next message"],
        "the message went on in the resumed session"
    );
    assert!(user_messages(&log_of(&h, &shown)).is_empty());
    // The model got the resumed conversation with the new message.
    let records = h.records();
    let last = records.last().unwrap();
    assert_eq!(last.rule.as_deref(), Some("next"));
    let sent = common::user_texts(&last.body);
    assert!(
        sent.contains("earlier question") && sent.contains("next message"),
        "{sent}"
    );
    leave(&pane).await;
}

#[tokio::test]
async fn esc_closes_the_picker_and_the_session_goes_on() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let earlier = earlier_session(&h).await;
    let (pane, shown) = start(&h).await;
    send(&pane, "/resume");
    pane.wait_text("Resume a session (1)").await;
    pane.keys(&["Escape"]);
    pane.wait_for("the picker to close", |s| !s.contains("Resume a session"))
        .await;
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    assert_eq!(user_messages(&log_of(&h, &shown)), ["next message"]);
    assert_eq!(user_messages(&log_of(&h, &earlier)), ["earlier question"]);
    leave(&pane).await;
}

#[tokio::test]
async fn resume_of_an_unknown_id_warns_and_the_session_goes_on() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let (pane, shown) = start(&h).await;
    let missing = "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee";
    send(&pane, &format!("/resume {missing}"));
    let screen = pane.wait_text("still in session").await;
    assert!(
        screen.contains(&format!("cannot resume {missing}")),
        "{screen}"
    );
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    let logs = session_logs(&h);
    assert_eq!(logs.len(), 1, "no other session was made: {logs:?}");
    assert_eq!(user_messages(&log_of(&h, &shown)), ["next message"]);
    leave(&pane).await;
}

#[tokio::test]
async fn resume_of_a_session_in_use_elsewhere_warns_and_the_session_goes_on() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    // Another cadre holds its session (it stays open in its own pane).
    let (elsewhere, busy) = start(&h).await;
    let (pane, shown) = start(&h).await;
    send(&pane, &format!("/resume {busy}"));
    let screen = pane.wait_text("still in session").await;
    assert!(
        screen.contains(&format!("cannot resume {busy}")),
        "{screen}"
    );
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    assert_eq!(user_messages(&log_of(&h, &shown)), ["next message"]);
    assert!(user_messages(&log_of(&h, &busy)).is_empty());
    leave(&pane).await;
    leave(&elsewhere).await;
}

#[tokio::test]
async fn clear_starts_a_new_session_and_the_next_message_lands_there() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let (pane, first) = start(&h).await;
    send(&pane, "earlier question");
    pane.wait_text("Earlier answer.").await;
    send(&pane, "/clear");
    let screen = pane.wait_text("ends here (it stays resumable").await;
    assert!(
        screen.contains(&format!("session {first} ends here")),
        "{screen}"
    );
    common::wait_until("a second session log", || session_logs(&h).len() == 2).await;
    let second = session_logs(&h)
        .into_iter()
        .map(|(id, _)| id)
        .find(|id| *id != first)
        .unwrap();
    let screen = if screen.contains(&format!("session {second}")) {
        screen
    } else {
        pane.wait_text(&format!("session {second}")).await
    };
    assert!(
        !screen.contains("Earlier answer."),
        "the transcript restarted: {screen}"
    );
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    assert_eq!(user_messages(&log_of(&h, &first)), ["earlier question"]);
    assert_eq!(user_messages(&log_of(&h, &second)), ["next message"]);
    // The new conversation starts empty: the model does not see the old one.
    let last = h.records().last().unwrap().body.clone();
    let sent = common::user_texts(&last);
    assert!(!sent.contains("earlier question"), "{sent}");
    leave(&pane).await;
}

#[tokio::test]
async fn a_message_typed_while_the_session_switches_goes_to_the_new_session() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let (pane, first) = start(&h).await;
    // A turn that waits on the model: the switch has to stop it first.
    send(&pane, "take your time");
    wait_for_message(&h, "take your time").await;
    send(&pane, "/clear");
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    let second = wait_for_message(&h, "next message").await;
    assert_ne!(second, first, "{:?}", session_logs(&h));
    assert_eq!(user_messages(&log_of(&h, &first)), ["take your time"]);
    assert_eq!(user_messages(&log_of(&h, &second)), ["next message"]);
    let screen = pane.screen();
    assert!(screen.contains("next message"), "{screen}");
    leave(&pane).await;
}

#[tokio::test]
async fn resuming_a_session_whose_calls_may_have_run_asks_in_the_tui() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let crashed = crash_mid_call(&h).await;
    let (pane, shown) = start(&h).await;
    send(&pane, &format!("/resume {crashed}"));
    let screen = pane.wait_text(&format!("Resume session {crashed}?")).await;
    assert!(screen.contains("echo $$ >> runs.txt; sleep 30"), "{screen}");
    assert!(screen.contains("may or may not have run"), "{screen}");
    // No: this session goes on, the other is untouched.
    pane.keys(&["n"]);
    pane.wait_text(&format!("not resumed; still in session {shown}"))
        .await;
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    assert_eq!(user_messages(&log_of(&h, &shown)), ["next message"]);
    assert!(
        !log_of(&h, &crashed)
            .iter()
            .any(|r| r["type"] == "tool_result"),
        "nothing recorded in the crashed session"
    );
    // Yes: resumed, the call recorded as unknown and never run again.
    send(&pane, &format!("/resume {crashed}"));
    pane.wait_text(&format!("Resume session {crashed}?")).await;
    pane.keys(&["y"]);
    pane.wait_text(&format!("resumed session {crashed}")).await;
    pane.wait_text("1 call(s) recorded as unknown").await;
    send(&pane, "continue");
    pane.wait_text("Resumed fine.").await;
    let records = log_of(&h, &crashed);
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "tool_result" && r["status"] == "unknown"),
        "{records:?}"
    );
    assert_eq!(user_messages(&records), ["run the slow thing", "continue"]);
    assert_eq!(h.read("runs.txt").lines().count(), 1, "nothing was re-run");
    leave(&pane).await;
}

#[tokio::test]
async fn resume_at_start_asks_on_the_plain_terminal_before_the_full_screen() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let crashed = crash_mid_call(&h).await;
    let pane = Pane::start(&h, &["--resume", &crashed]);
    let screen = pane.wait_text("Continue the session? [y/N]").await;
    assert!(screen.contains("echo $$ >> runs.txt; sleep 30"), "{screen}");
    assert_eq!(
        screen.matches("may or may not have run").count(),
        1,
        "the calls are listed once: {screen}"
    );
    pane.keys(&["y", "Enter"]);
    pane.wait_text(&format!("resumed session {crashed}")).await;
    send(&pane, "continue");
    pane.wait_text("Resumed fine.").await;
    assert_eq!(
        user_messages(&log_of(&h, &crashed)),
        ["run the slow thing", "continue"]
    );
    assert_eq!(h.read("runs.txt").lines().count(), 1, "nothing was re-run");
    leave(&pane).await;
}

/// Starts a headless run whose Bash call sleeps, kills cadre with SIGKILL
/// once the command runs, and returns the session id.
async fn crash_mid_call(h: &Harness) -> String {
    let mut run = h.spawn_json(&[
        "exec",
        "--json",
        "--permission-mode",
        "acceptEdits",
        "run the slow thing",
    ]);
    let started = run.wait_for("session_started", 1).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let marker = h.path("runs.txt");
    // The file can exist before the shell has written its pid into it.
    let pid = || {
        std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    common::wait_until("the command to start", || pid().is_some()).await;
    run.kill().await;
    // The orphaned shell is its own process group; end it too.
    let pid = pid().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    id
}

#[tokio::test]
async fn text_commands_show_in_the_transcript_and_never_reach_the_model() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let earlier = earlier_session(&h).await;
    let before = h.records().len();
    let (pane, shown) = start(&h).await;
    // 80 columns, as many terminals are.
    assert!(
        pane.tmux(&["resize-window", "-x", "80", "-y", "24"])
            .status
            .success()
    );
    send(&pane, "/sessions");
    let screen = pane.wait_text(&earlier).await;
    // Two rows a session, each whole within the 80 columns: the id, start
    // and tokens, then the directory and the first prompt.
    let row = |start: &str, has: &str| {
        screen
            .lines()
            .any(|l| l.starts_with(start) && l.trim_end().ends_with(has))
    };
    assert!(row(&format!("{earlier} · "), " tok"), "{screen}");
    assert!(row("  in ", " · earlier question"), "{screen}");
    assert!(row(&format!("{shown} · "), " · this session"), "{screen}");
    send(&pane, "/permissions");
    let screen = pane.wait_text("permission mode: default (from ").await;
    assert!(screen.contains("sandbox:"), "{screen}");
    // Shift+Tab changes the mode: /permissions says the one in force now.
    pane.keys(&["BTab"]);
    pane.wait_text("permission mode: acceptEdits").await;
    send(&pane, "/permissions");
    pane.wait_text("permission mode: acceptEdits (changed in this session; started as default")
        .await;
    send(&pane, "/model");
    let screen = pane.wait_text("model: mock-model").await;
    assert!(screen.contains("/model NAME"), "{screen}");
    send(&pane, "/help");
    // The help is taller than 24 rows: its end (the keys) is what stays on screen.
    pane.wait_text("Keys: Enter sends").await;
    send(&pane, "/foo bar");
    pane.wait_text("unknown command /foo (try /help)").await;
    assert_eq!(h.records().len(), before, "no request for a command");
    assert!(user_messages(&log_of(&h, &shown)).is_empty());
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    let records = h.records();
    assert_eq!(records.len(), before + 1, "one request: the message");
    let sent = common::user_texts(&records.last().unwrap().body);
    for command in ["/sessions", "/permissions", "/model", "/help", "/foo"] {
        assert!(!sent.contains(command), "{command}: {sent}");
    }
    leave(&pane).await;
}

#[tokio::test]
async fn model_name_switches_the_running_session_from_its_next_turn() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let (pane, _) = start(&h).await;
    send(&pane, "/model other-model");
    let screen = pane.wait_text("from the next turn on").await;
    assert!(screen.contains("model: other-model"), "{screen}");
    // The status line follows once the session has switched.
    pane.wait_for("the status line's model", |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim_start().starts_with("other-model ·"))
    })
    .await;
    let before = h.records().len();
    send(&pane, "next message");
    pane.wait_text("Next answer.").await;
    let records = h.records();
    assert_eq!(records.len(), before + 1);
    assert_eq!(records[before].body["model"], "other-model");
    leave(&pane).await;
}
