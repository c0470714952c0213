//! Shell mode (`!command`) through the binary: the command runs as the
//! user typed it, its output shows, and the next request to the model holds
//! it (without a request of its own). Deny rules still hold; the mode does
//! not ask. In the full screen (tmux) and the line front end.

use crate::common;

use common::line_session::Interactive;
use common::tmux::{Pane, tmux_available};
use common::{Harness, Pty, Wire};

const CHAT: &str = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - text: "Saw it."
      - text: "Saw it."
"#;

/// The user text of the recorded requests, one string per request.
fn sent(h: &Harness) -> Vec<String> {
    h.records()
        .iter()
        .map(|r| common::user_texts(&r.body))
        .collect()
}

#[tokio::test]
async fn bang_runs_the_command_shows_it_and_the_next_request_holds_it_in_the_full_screen() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    h.write("notes.txt", "PARSNIP\n");
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("!echo hi-from-shell && cat notes.txt");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("PARSNIP").await;
    assert!(screen.contains("hi-from-shell"), "{screen}");
    // Running it asked the model nothing.
    assert_eq!(h.records().len(), 0);
    pane.type_text("what did it print?");
    pane.keys(&["Enter"]);
    pane.wait_text("Saw it.").await;
    let texts = sent(&h);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].contains("<bash-input>echo hi-from-shell && cat notes.txt</bash-input>"),
        "{}",
        texts[0]
    );
    assert!(texts[0].contains("hi-from-shell"), "{}", texts[0]);
    assert!(texts[0].contains("PARSNIP"), "{}", texts[0]);
    assert!(texts[0].contains("what did it print?"), "{}", texts[0]);
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn bang_in_the_line_front_end_prints_the_output_and_a_deny_rule_still_refuses() {
    let h = Harness::new(CHAT, Wire::OpenAi).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--deny", "Bash(rm:*)"]);
    // A first message, so the shell's output joins an existing conversation.
    pty.type_line("hello");
    cadre.wait_for_stdout("Saw it.").await;
    pty.type_line("!echo line-front-end-42");
    cadre.wait_for_stdout("line-front-end-42").await;
    h.write("keep.txt", "kept\n");
    pty.type_line("!rm keep.txt");
    cadre.wait_for_stderr("not run:", 1).await;
    assert!(h.project.path().join("keep.txt").exists());
    pty.type_line("and now?");
    cadre.wait_for_stdout("Saw it.").await;
    let texts = sent(&h);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[1].contains("line-front-end-42"), "{}", texts[1]);
    assert!(texts[1].contains("<bash-input>rm keep.txt</bash-input>"));
    assert!(texts[1].contains("not run:"), "{}", texts[1]);
    pty.type_line("/exit");
    assert!(cadre.exit_status().await);
}
