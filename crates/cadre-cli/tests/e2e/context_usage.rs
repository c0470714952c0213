//! `/context` and `/usage` through the binary: the main agent's context by
//! category adds up to what it reports in use and to an estimate of the
//! request it sent; the line front end prints them as tables, the full
//! screen draws the context as a grid; `/usage` (and `/cost`) reads the
//! session's and its subagents' logs by model and by agent.

use crate::common;

use common::line_session::Interactive;
use common::tmux::{Pane, tmux_available};
use common::{Harness, Pty, Wire, events};
use serde_json::Value;

const CHAT: &str = r#"
rules:
  - name: chat
    when: { system: "You are cadre" }
    replies:
      - text: "First answer."
        usage: { input_tokens: 5000, output_tokens: 40 }
      - text: "Second answer."
        usage: { input_tokens: 5100, output_tokens: 60 }
"#;

/// Instructions of a known size, so their category can be checked.
const INSTRUCTIONS: usize = 4000;

fn project(h: &Harness) {
    h.write("CLAUDE.md", &format!("# Rules\n\n{}\n", "x".repeat(INSTRUCTIONS)));
}

fn category(ev: &Value, kind: &str) -> u64 {
    ev["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == kind)
        .and_then(|c| c["tokens"].as_u64())
        .unwrap_or_else(|| panic!("no {kind} in {ev}"))
}

#[tokio::test]
async fn the_categories_add_up_to_the_tokens_in_use_and_to_the_requests_estimate() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"done\"\n",
        Wire::Anthropic,
    )
    .await;
    project(&h);
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let evs = events(&out);
    let breakdowns: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "context_breakdown")
        .collect();
    assert!(!breakdowns.is_empty(), "no context_breakdown event");
    let usage: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "context_usage" && e["agent"] == "main")
        .collect();
    assert_eq!(breakdowns.len(), usage.len(), "one breakdown per main report");
    for (b, u) in breakdowns.iter().zip(&usage) {
        let sum: u64 = b["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, b["tokens"].as_u64().unwrap(), "{b}");
        assert_eq!(b["tokens"], u["tokens"], "{b} vs {u}");
    }
    // The fixed parts are estimated from their text whoever counted the
    // whole; the messages take the rest.
    let last = breakdowns.last().unwrap();
    let instructions = category(last, "instruction_files");
    let expected = (INSTRUCTIONS as u64) / 4;
    assert!(
        instructions >= expected && instructions <= expected + 20,
        "instruction files {instructions}, expected about {expected}"
    );
    assert!(category(last, "tools") > 1000, "{last}");
    assert!(category(last, "messages") > 0, "{last}");
    // Against the request itself: its system prompt, tools and messages at
    // four bytes a token, within a tenth.
    let body = &h.records()[0].body;
    let sent = body["system"].to_string().len()
        + body["tools"].to_string().len()
        + body["messages"].to_string().len();
    let estimate = (sent / 4) as f64;
    let first = breakdowns[0]["tokens"].as_u64().unwrap() as f64;
    assert!(
        (first - estimate).abs() / estimate < 0.1,
        "breakdown {first} vs request estimate {estimate}"
    );
}

#[tokio::test]
async fn context_and_usage_in_the_line_front_end() {
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    project(&h);
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("/context");
    cadre.wait_for_stderr("nothing to show yet", 1).await;
    pty.type_line("hello");
    cadre.wait_for_stdout("First answer.").await;
    pty.type_line("/context");
    cadre.wait_for_stderr("Free space", 1).await;
    let text = cadre.stderr();
    assert!(text.contains("Context: 5k of"), "{text}");
    assert!(text.contains("Instruction files"), "{text}");
    assert!(text.contains("Messages"), "{text}");
    pty.type_line("again");
    cadre.wait_for_stdout("Second answer.").await;
    pty.type_line("/cost");
    cadre.wait_for_stderr("By agent:", 1).await;
    let text = cadre.stderr();
    // Both requests: 10.1k in, 100 out.
    assert!(
        text.contains("Session: 10.2k tokens (in 10.1k, out 100"),
        "{text}"
    );
    assert!(text.contains("mock-model"), "{text}");
    assert!(text.contains("(no subagents yet)"), "{text}");
    pty.type_line("/exit");
    assert!(cadre.exit_status().await);
}

#[tokio::test]
async fn context_in_the_full_screen_is_a_grid() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    project(&h);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("First answer.").await;
    pane.type_text("/context");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Free space").await;
    assert!(screen.contains("■"), "{screen}");
    assert!(screen.contains("· · · ·"), "{screen}");
    assert!(screen.contains("▒ Instruction files"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
