//! The TUI's prompt end to end: the real `cadre` in a tmux pane against the
//! scripted model. `@path` completion offers the project's files (not the
//! ignored ones) and the path reaches the model; a bracketed paste of many
//! lines is one placeholder on screen and all of it reaches the model.
//! Without tmux these tests say so and do nothing; `.ci/run` installs it.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};

const CHAT: &str = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - text: "Noted, thanks."
"#;

/// The prompt's row: the last line that starts with the prompt mark.
fn prompt_row(screen: &str) -> &str {
    screen.lines().rfind(|l| l.starts_with("› ")).unwrap_or("")
}

#[tokio::test]
async fn at_path_tab_completes_a_project_file_and_the_message_carries_it() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    h.write("src/main.rs", "fn main() {}\n");
    h.write("src/manual_ignored.rs", "// ignored\n");
    h.write(".gitignore", "src/manual_ignored.rs\n");
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("look at @src/ma");
    let screen = pane
        .wait_for("the popup with src/main.rs", |s| {
            s.lines().any(|l| l.trim_end() == "› src/main.rs")
        })
        .await;
    assert!(screen.contains("files · Tab accepts"), "{screen}");
    assert!(
        !screen.contains("manual_ignored"),
        "an ignored file is not offered: {screen}"
    );
    pane.keys(&["Tab"]);
    pane.wait_for("the completed path", |s| {
        prompt_row(s).trim_end() == "› look at @src/main.rs"
    })
    .await;
    pane.type_text("please");
    pane.keys(&["Enter"]);
    pane.wait_text("Noted, thanks.").await;
    let records = h.records();
    assert_eq!(records.len(), 1);
    let sent = common::user_plain_text(&records[0].body);
    assert!(sent.contains("look at @src/main.rs please"), "{sent}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn a_gitignored_file_and_git_itself_are_not_offered() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    h.write(".gitignore", "secret_notes.txt\n");
    h.write("secret_notes.txt", "do not offer\n");
    h.write("secrets_policy.md", "offer this\n");
    h.write(".git/secret_in_git", "never offered\n");
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("@secre");
    // Once the offered file shows, the walk is over: what is missing was left out.
    let screen = pane.wait_text("secrets_policy.md").await;
    assert!(!screen.contains("secret_notes"), "{screen}");
    assert!(!screen.contains("secret_in_git"), "{screen}");
    // Esc closes the popup and interrupts nothing; the word stays typed.
    pane.keys(&["Escape"]);
    let screen = pane
        .wait_for("the popup to close", |s| !s.contains("secrets_policy.md"))
        .await;
    assert_eq!(prompt_row(&screen).trim_end(), "› @secre");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn a_bracketed_paste_of_200_lines_is_one_placeholder_and_all_of_it_is_sent() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    let pasted: String = (1..=200).map(|i| format!("pasted row {i:03}\n")).collect();
    let file = pane.file("paste.txt");
    std::fs::write(&file, &pasted).unwrap();
    assert!(
        pane.tmux(&["load-buffer", &file.display().to_string()])
            .status
            .success()
    );
    pane.type_text("summarise ");
    // The typed word is in the prompt before the paste follows it.
    pane.wait_text("› summarise").await;
    // -p: bracketed, as a terminal pastes into a program that asked for it.
    assert!(pane.tmux(&["paste-buffer", "-p"]).status.success());
    let screen = pane.wait_text("[Pasted text #1 +200 lines]").await;
    assert_eq!(
        prompt_row(&screen).trim_end(),
        "› summarise [Pasted text #1 +200 lines]"
    );
    assert!(!screen.contains("pasted row"), "{screen}");
    pane.keys(&["Enter"]);
    pane.wait_text("Noted, thanks.").await;
    let records = h.records();
    assert_eq!(records.len(), 1);
    let sent = common::user_plain_text(&records[0].body);
    assert!(
        sent.contains("summarise pasted row 001\npasted row 002\n"),
        "{sent}"
    );
    for i in 1..=200 {
        assert!(
            sent.contains(&format!("pasted row {i:03}")),
            "row {i} missing: {sent}"
        );
    }
    assert!(!sent.contains("[Pasted text"), "{sent}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

/// The pane's mouse modes as tmux sees them: any-motion tracking and SGR reports.
fn mouse_flags(pane: &Pane) -> String {
    let out = pane.tmux(&[
        "display-message",
        "-p",
        "#{mouse_any_flag}#{mouse_sgr_flag}",
    ]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn mouse_capture_is_off_by_default_and_the_setting_turns_it_on_for_the_wheel() {
    if !tmux_available() {
        return;
    }
    let long: String = (1..=80).map(|i| format!("reply line {i}\\n\\n")).collect();
    let script = format!(
        "rules:\n  - name: chat\n    when: {{ system: \"You are cadre\" }}\n    replies:\n      - text: \"{long}\"\n"
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    assert_eq!(mouse_flags(&pane), "00", "off by default: selection works");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    drop(pane);

    let pane = Pane::start_env(&h, &[], &[("CADRE_TUI_MOUSE", "1")]);
    pane.wait_text("mock-model").await;
    assert_eq!(mouse_flags(&pane), "11", "captured with CADRE_TUI_MOUSE=1");
    pane.type_text("talk at length");
    pane.keys(&["Enter"]);
    pane.wait_text("reply line 80").await;
    // A wheel notch up, as the terminal reports it (SGR: button 64 at 10,10).
    let wheel_up: Vec<String> = "\u{1b}[<64;10;10M"
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut args = vec!["send-keys", "-H"];
    args.extend(wheel_up.iter().map(String::as_str));
    assert!(pane.tmux(&args).status.success());
    let screen = pane.wait_text("3 rows up").await;
    assert!(!screen.contains("reply line 80"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    assert_eq!(
        mouse_flags(&pane),
        "00",
        "capture is off again after leaving"
    );
}

#[tokio::test]
async fn slash_then_tab_completes_a_command_that_runs_without_reaching_the_model() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("/he");
    // The popup's row (the prompt itself shows `› /he`).
    let screen = pane.wait_text("› /help").await;
    assert!(screen.contains("commands · Tab completes"), "{screen}");
    pane.keys(&["Tab"]);
    pane.wait_for("the completed command", |s| {
        prompt_row(s).trim_end() == "› /help"
    })
    .await;
    pane.keys(&["Enter"]);
    pane.wait_text("Ctrl+T the todo list").await;
    assert!(h.records().is_empty(), "a command never reaches the model");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn ctrl_t_shows_the_todo_list_the_model_wrote() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: planner
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - name: TodoWrite
            input:
              todos:
                - { content: "Read the parser", status: completed }
                - { content: "Fix the window check", status: in_progress, activeForm: "Fixing the window check" }
                - { content: "Run the tests", status: pending }
      - text: "Plan written."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.keys(&["C-t"]);
    pane.wait_text("No todo list yet").await;
    pane.keys(&["C-t"]);
    pane.wait_for("the pane to close", |s| !s.contains("No todo list yet"))
        .await;
    pane.type_text("plan it");
    pane.keys(&["Enter"]);
    pane.wait_text("Plan written.").await;
    pane.keys(&["C-t"]);
    let screen = pane.wait_text("Todos · 1/3 done").await;
    for row in [
        "● Read the parser",
        "◐ Fix the window check",
        "○ Run the tests",
    ] {
        assert!(screen.contains(row), "{row}: {screen}");
    }
    pane.keys(&["Escape"]);
    pane.wait_for("the pane to close", |s| !s.contains("Todos · 1/3 done"))
        .await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
