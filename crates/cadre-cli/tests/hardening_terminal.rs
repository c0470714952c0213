//! Issue 23, items 6 and 17: terminal control sequences a model sends are
//! shown, never obeyed, by the line front end and by `exec` on a terminal
//! (while `exec`'s piped stdout keeps the exact bytes); and the smaller
//! things a user found in `/help`, `/permissions`, `/tasks`, `cadre mcp
//! list` and `cadre agents list|show`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire, stderr};

/// A model reply that tries the window title (OSC 0 and 2), the clipboard
/// (OSC 52, "PWNED-CLIP" in base64), a hyperlink (OSC 8) and a clear screen.
const HOSTILE_ANSWER: &str = "answer \u{1b}]0;PWNED-TITLE\u{7} \u{1b}]52;c;UFdORUQtQ0xJUA==\u{7} \u{1b}]8;;http://evil.example/\u{7}link\u{1b}]8;;\u{7} \u{1b}]2;PWNED-TWO\u{1b}\\ \u{1b}[2J end.";

/// `text` as a YAML double-quoted string's content.
fn yaml(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\u{1b}', "\\x1b")
        .replace('\u{7}', "\\x07")
}

/// The pane's text with wrapped lines joined.
fn joined_screen(pane: &Pane) -> String {
    String::from_utf8_lossy(&pane.tmux(&["capture-pane", "-p", "-J"]).stdout).into_owned()
}

/// The pane's title as tmux keeps it.
fn pane_title(pane: &Pane) -> String {
    String::from_utf8_lossy(&pane.tmux(&["display", "-p", "#{pane_title}"]).stdout)
        .trim()
        .to_string()
}

/// The paste buffers tmux holds (an OSC 52 the pane obeyed would add one).
fn paste_buffers(pane: &Pane) -> String {
    let out = pane.tmux(&["show-buffer"]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&pane.tmux(&["list-buffers"]).stdout)
    )
}

/// Lets the pane's programs set tmux's paste buffer (OSC 52), as a user
/// with `set-clipboard on` has it; the default ignores them.
fn accept_clipboard_writes(pane: &Pane) {
    assert!(
        pane.tmux(&["set", "-g", "set-clipboard", "on"])
            .status
            .success()
    );
}

#[tokio::test]
async fn the_line_front_end_shows_a_models_escapes_and_obeys_none() {
    if !tmux_available() {
        return;
    }
    let script = format!(
        "rules:\n  - when: {{ system: \"You are cadre\" }}\n    replies:\n      - text: \"{}\"\n",
        yaml(HOSTILE_ANSWER)
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &["--no-tui"]);
    accept_clipboard_writes(&pane);
    pane.wait_text("/exit or Ctrl+D to leave").await;
    let title_before = pane_title(&pane);
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    // The status line after the answer (which wraps: read it joined).
    pane.wait_text("tokens)").await;
    let screen = joined_screen(&pane);
    // Shown in caret notation, on the screen next to the prompt's banner
    // (a clear screen obeyed would have wiped it).
    assert!(screen.contains("answer ^[]0;PWNED-TITLE^G"), "{screen}");
    assert!(screen.contains("^[]52;c;UFdORUQtQ0xJUA==^G"), "{screen}");
    assert!(screen.contains("^[[2J end."), "{screen}");
    assert!(screen.contains("/exit or Ctrl+D to leave"), "{screen}");
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
    let title = pane_title(&pane);
    assert!(!title.contains("PWNED"), "the title was set: {title}");
    assert_eq!(title, title_before);
    let buffers = paste_buffers(&pane);
    assert!(
        !buffers.contains("PWNED-CLIP") && buffers.trim().is_empty(),
        "the paste buffer was filled: {buffers:?}"
    );
}

/// A parent that calls `Read` and `Agent` with escapes in the arguments it
/// chose, a child whose `Grep` pattern holds one, then [`HOSTILE_ANSWER`].
fn exec_script() -> String {
    format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "CHILD-TASK" }}
    replies:
      - tool_calls:
          - {{ name: Grep, input: {{ pattern: "pat\x1b]0;PWNED-GREP\x07" }} }}
      - text: "child done"
  - name: parent
    replies:
      - text: "looking \x1b]0;PWNED-INTERIM\x07 first"
        tool_calls:
          - {{ name: Read, input: {{ file_path: "nope\x1b]0;PWNED-READ\x07.txt" }} }}
          - {{ name: Agent, input: {{ description: "look \x1b]2;PWNED-AGENT\x07", prompt: "CHILD-TASK", subagent_type: "general-purpose" }} }}
      - text: "{}"
"#,
        yaml(HOSTILE_ANSWER)
    )
}

#[tokio::test]
async fn exec_on_a_terminal_shows_escapes_in_its_progress_and_its_answer() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(&exec_script(), Wire::Anthropic).await;
    let pane = Pane::start(&h, &["exec", "go"]);
    accept_clipboard_writes(&pane);
    let title_before = pane_title(&pane);
    assert_eq!(pane.exit_status().await, 0, "{}", pane.screen());
    let screen = joined_screen(&pane);
    // The progress lines quote the model's arguments, controls shown.
    for shown in [
        "looking ^[]0;PWNED-INTERIM^G first",
        "Read nope^[]0;PWNED-READ^G.txt",
        "Agent look ^[]2;PWNED-AGENT^G",
        "Grep \"pat^[]0;PWNED-GREP^G\"",
        // The answer on stdout.
        "answer ^[]0;PWNED-TITLE^G ^[]52;c;UFdORUQtQ0xJUA==^G",
        "^[]2;PWNED-TWO^[\\ ^[[2J end.",
    ] {
        assert!(screen.contains(shown), "missing {shown:?} in:\n{screen}");
    }
    let title = pane_title(&pane);
    assert!(!title.contains("PWNED"), "the title was set: {title}");
    assert_eq!(title, title_before);
    let buffers = paste_buffers(&pane);
    assert!(
        buffers.trim().is_empty(),
        "the paste buffer was filled: {buffers:?}"
    );
}

#[tokio::test]
async fn exec_into_a_pipe_keeps_the_answers_exact_bytes() {
    let h = Harness::new(&exec_script(), Wire::Anthropic).await;
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Byte for byte, escapes included, for whatever reads the pipe.
    assert_eq!(
        String::from_utf8(out.stdout.clone()).unwrap(),
        format!("{HOSTILE_ANSWER}\n")
    );
    // Progress is for a person: shown, never obeyed, wherever it goes.
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("Read nope^[]0;PWNED-READ^G.txt"), "{err}");
}
