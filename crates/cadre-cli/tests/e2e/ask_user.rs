//! `AskUserQuestion`: the main agent of an interactive session asks, the
//! user picks an option or answers in their own words, in the TUI's dialog
//! and at the line front end's prompt; `exec` and children never get it.

use crate::common;

use common::line_session::Interactive;
use common::tmux::{Pane, tmux_available};
use common::{Harness, Pty, Wire, rule_records, stderr, system_text, tool_results};
use serde_json::Value;

const SCRIPT: &str = r#"
rules:
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "child done"
  - name: main
    replies:
      - tool_calls:
          - name: AskUserQuestion
            input:
              questions:
                - question: "Which colour?"
                  header: "Colour"
                  options:
                    - { label: "Red", description: "warm" }
                    - { label: "Blue", description: "cool" }
                  multiSelect: false
                - question: "Which size?"
                  header: "Size"
                  options:
                    - { label: "Small" }
                    - { label: "Large" }
                  multiSelect: false
      - tool_calls:
          - { name: Agent, input: { description: "child", prompt: "child-task" } }
      - text: "Got the answers."
"#;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The main agent offered the tool, its children did not, and the answers
/// came back as the call's result.
fn check_records(h: &Harness, want: &[&str]) {
    let records = h.records();
    let main = rule_records(&records, "main");
    assert!(
        tool_names(&main[0].body).contains(&"AskUserQuestion".to_string()),
        "{:?}",
        tool_names(&main[0].body)
    );
    let (result, is_error) = tool_results(&main[1].body).remove(0);
    assert!(!is_error, "{result}");
    for w in want {
        assert!(result.contains(w), "missing {w} in {result}");
    }
    let child = rule_records(&records, "child");
    assert!(!child.is_empty());
    assert!(
        !tool_names(&child[0].body).contains(&"AskUserQuestion".to_string()),
        "a child was offered AskUserQuestion"
    );
}

#[tokio::test]
async fn the_tui_shows_the_questions_as_a_dialog_and_returns_the_answers() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("ask me");
    pane.keys(&["Enter"]);
    // The answer line shows once keys count (a new question's first 0.3 s take none).
    let screen = pane.wait_text("Enter sends").await;
    assert!(screen.contains("Which colour?"), "{screen}");
    assert!(
        screen.contains("1. Red") && screen.contains("2. Blue"),
        "{screen}"
    );
    assert!(screen.contains("Question 1/2"), "{screen}");
    pane.type_text("2");
    pane.keys(&["Enter"]);
    pane.wait_text("Which size?").await;
    pane.wait_text("Question 2/2").await;
    pane.wait_text("Enter sends").await;
    pane.type_text("extra large");
    pane.keys(&["Enter"]);
    pane.wait_text("Got the answers.").await;
    check_records(
        &h,
        &[
            r#""Which colour?"="Blue""#,
            r#""Which size?"="extra large""#,
        ],
    );
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn the_line_front_end_asks_at_its_prompt() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("ask me");
    cadre.wait_for_stderr("Question 1/2 · Colour", 1).await;
    pty.type_line("1");
    cadre.wait_for_stderr("Question 2/2 · Size", 1).await;
    pty.type_line("2");
    cadre.wait_for_stdout("Got the answers.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    assert!(
        cadre.stderr().contains("2. Blue — cool"),
        "{}",
        cadre.stderr()
    );
    check_records(
        &h,
        &[r#""Which colour?"="Red""#, r#""Which size?"="Large""#],
    );
}

#[tokio::test]
async fn exec_offers_no_questions_and_tells_the_model_to_decide() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"decided\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let body = &records[0].body;
    assert!(
        !tool_names(body).contains(&"AskUserQuestion".to_string()),
        "{:?}",
        tool_names(body)
    );
    assert!(
        system_text(body).contains("Nobody answers questions in this run"),
        "{}",
        system_text(body)
    );
}
