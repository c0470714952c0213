//! Going back in the full-screen front end, end to end under tmux: Esc
//! twice on an empty prompt (or `/rewind`) opens the picker of messages
//! sent, then the actions; the conversation goes back to before the chosen
//! one, the message returns to the prompt, and what is sent next no longer
//! carries what came after. Restoring the code asks about files changed
//! outside cadre, listing them, and brings every file back.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};

const SCRIPT: &str = r#"
rules:
  - name: main
    step_by: requests
    when: { system: "You are cadre" }
    replies:
      - text: "REPLY-ONE"
      - text: "REPLY-TWO"
      - text: "REPLY-AFTER-GOING-BACK"
"#;

#[tokio::test]
async fn esc_twice_goes_back_to_before_a_message_and_the_next_request_leaves_out_what_followed() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("first message");
    pane.keys(&["Enter"]);
    pane.wait_text("REPLY-ONE").await;
    pane.type_text("second message");
    pane.keys(&["Enter"]);
    pane.wait_text("REPLY-TWO").await;
    pane.keys(&["Escape"]);
    pane.wait_text("Esc again").await;
    pane.keys(&["Escape"]);
    let screen = pane.wait_text("Go back to before a message").await;
    assert!(
        screen.contains("second message") && screen.contains("first message"),
        "both messages are offered: {screen}"
    );
    // The most recent is selected: go back to before it, the conversation only.
    pane.keys(&["Enter"]);
    pane.wait_text("Restore code and conversation").await;
    pane.keys(&["2"]);
    let screen = pane.wait_text("went back").await;
    assert!(
        !screen.contains("REPLY-TWO"),
        "what followed is gone from the screen: {screen}"
    );
    assert!(
        screen.contains("› second message"),
        "the message is back in the prompt to edit: {screen}"
    );
    // Edit it and send.
    pane.keys(&["C-u"]);
    pane.type_text("changed message");
    pane.keys(&["Enter"]);
    pane.wait_text("REPLY-AFTER-GOING-BACK").await;
    let records = h.records();
    assert_eq!(records.len(), 3, "three requests");
    let sent = records[2].body.to_string();
    assert!(
        sent.contains("first message")
            && sent.contains("REPLY-ONE")
            && sent.contains("changed message"),
        "{sent}"
    );
    assert!(
        !sent.contains("second message") && !sent.contains("REPLY-TWO"),
        "the message gone back before and its reply are not sent: {sent}"
    );
    // The log says where the conversation went back (and keeps what was before).
    let sessions = h.data_dir().join("sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap();
    assert!(
        log.contains("\"type\":\"rewind\"") && log.contains("REPLY-TWO"),
        "{log}"
    );
    pane.keys(&["C-c"]);
    pane.keys(&["C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

const EDITS: &str = r#"
rules:
  - name: main
    step_by: requests
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Write, input: { file_path: "made.txt", content: "made by one\n" } }
          - { name: Read, input: { file_path: "kept.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "kept.txt", old_string: "original", new_string: "EDITED-ONE" } }
      - text: "REPLY-ONE"
      - tool_calls:
          - { name: Read, input: { file_path: "kept.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "kept.txt", old_string: "EDITED-ONE", new_string: "EDITED-TWO" } }
      - text: "REPLY-TWO"
"#;

#[tokio::test]
async fn slash_rewind_restores_code_and_conversation_after_asking_about_outside_changes() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(EDITS, Wire::Anthropic).await;
    h.write("kept.txt", "original\nsecond line\n");
    h.write("other.txt", "untouched\n");
    let pane = Pane::start(&h, &["--permission-mode", "acceptEdits"]);
    pane.wait_text("mock-model").await;
    pane.type_text("edit one");
    pane.keys(&["Enter"]);
    pane.wait_text("REPLY-ONE").await;
    pane.type_text("edit two");
    pane.keys(&["Enter"]);
    pane.wait_text("REPLY-TWO").await;
    assert_eq!(h.read("kept.txt"), "EDITED-TWO\nsecond line\n");
    // Changed outside cadre meanwhile.
    std::fs::write(h.path("made.txt"), "the user's change\n").unwrap();
    pane.type_text("/rewind");
    pane.keys(&["Enter"]);
    pane.wait_text("Go back to before a message").await;
    pane.keys(&["Up"]);
    pane.keys(&["Enter"]);
    pane.wait_text("Restore code and conversation").await;
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Files changed outside cadre").await;
    assert!(screen.contains("made.txt"), "the file is listed: {screen}");
    pane.keys(&["n"]);
    pane.wait_text("nothing was restored").await;
    assert_eq!(h.read("made.txt"), "the user's change\n");
    assert_eq!(h.read("kept.txt"), "EDITED-TWO\nsecond line\n");
    // Again, and overwrite.
    pane.type_text("/undo");
    pane.keys(&["Enter"]);
    pane.wait_text("Go back to before a message").await;
    pane.keys(&["Up"]);
    pane.keys(&["Enter"]);
    pane.wait_text("Restore code and conversation").await;
    pane.keys(&["Enter"]);
    pane.wait_text("Files changed outside cadre").await;
    pane.keys(&["y"]);
    let screen = pane
        .wait_text("went back: the code and the conversation")
        .await;
    assert!(screen.contains("restored the code"), "{screen}");
    assert!(!screen.contains("REPLY-ONE"), "{screen}");
    assert!(
        screen.contains("› edit one"),
        "the message is back to edit: {screen}"
    );
    assert_eq!(h.read("kept.txt"), "original\nsecond line\n");
    assert!(!h.path("made.txt").exists());
    assert_eq!(h.read("other.txt"), "untouched\n");
    pane.keys(&["C-c"]);
    pane.keys(&["C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
