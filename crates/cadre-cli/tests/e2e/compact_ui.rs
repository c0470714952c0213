//! The interactive front end's commands through a real pseudo-terminal:
//! `/compact [focus]` compacts the conversation (the summary request, the log's
//! boundary, the next request starting from the summary), and a `/word` that
//! is no command never reaches the model.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, rule_records};
use serde_json::Value;

const SCRIPT: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-TEXT: the user wants the parser explained; the parser notes are kept."
  - name: chat
    step_by: requests
    replies:
      - text: "Answer one."
      - text: "Answer two."
"#;

/// The records of the only session log in the harness's data dir.
fn session_log(h: &Harness) -> Vec<Value> {
    let dir = h.data_dir().join("sessions");
    let logs: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    let [log] = logs.as_slice() else {
        return Vec::new();
    };
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The text of a message, its text blocks joined.
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[tokio::test]
async fn compact_with_a_focus_summarises_and_the_next_request_starts_from_the_summary() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--permission-mode", "acceptEdits"]);

    pty.type_line("tell me about the parser");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/compact   keep the parser notes ");
    common::wait_until("the log holds a compaction boundary", || {
        session_log(&h)
            .iter()
            .any(|r| r["type"] == "compact_boundary")
    })
    .await;
    pty.type_line("what next");
    cadre.wait_for_stdout("Answer two.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());

    let records = h.records();
    let rules: Vec<_> = records.iter().map(|r| r.rule.as_deref()).collect();
    assert_eq!(
        rules,
        [Some("chat"), Some("summary"), Some("chat")],
        "a message, the summary request, the next message"
    );

    // The summary request: the conversation so far, then the instructions
    // with the user's focus as the last user text.
    let summary = rule_records(&records, "summary")[0];
    let info = cadre_mock::request_info(summary.wire, &summary.body);
    assert!(
        info.last_user.starts_with("<compaction-request>"),
        "{}",
        info.last_user
    );
    assert!(
        info.last_user.contains("keep the parser notes"),
        "{}",
        info.last_user
    );
    assert!(
        info.first_user.ends_with("tell me about the parser"),
        "{}",
        info.first_user
    );

    // The log keeps everything and marks the boundary with the summary.
    let log = session_log(&h);
    let boundaries: Vec<_> = log
        .iter()
        .filter(|r| r["type"] == "compact_boundary")
        .collect();
    assert_eq!(boundaries.len(), 1, "{log:?}");
    assert_eq!(boundaries[0]["trigger"], "manual");
    assert!(
        boundaries[0]["summary"]
            .as_str()
            .unwrap()
            .contains("SUMMARY-TEXT"),
        "{}",
        boundaries[0]
    );
    assert!(
        log.iter()
            .any(|r| r["type"] == "user" && r["text"] == "tell me about the parser"),
        "nothing before the boundary is deleted: {log:?}"
    );

    // The next request starts from the summary, not from the first message.
    let next = &records[2].body;
    let messages = next["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    let first = message_text(&messages[0]);
    assert!(first.starts_with("<compaction-summary>"), "{first}");
    assert!(first.contains("SUMMARY-TEXT"), "{first}");
    // The user's text, then the roster the summary replaced (it comes back
    // with the next request because compaction dropped the message holding it).
    let last = message_text(messages.last().unwrap());
    assert!(last.starts_with("what next"), "{next}");
    assert!(last.contains("Agent types available"), "{next}");
    assert!(
        !next.to_string().contains("tell me about the parser"),
        "the summarised message is gone from the request: {next}"
    );

    // What the user saw said so.
    let err = cadre.stderr();
    assert!(err.contains("compacting… (manual, "), "{err}");
    assert!(err.contains("compacted: "), "{err}");
}

#[tokio::test]
async fn an_unknown_command_is_not_sent_to_the_model() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--permission-mode", "acceptEdits"]);

    pty.type_line("/nonsense please");
    pty.type_line("/help");
    pty.type_line("hello");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());

    let records = h.records();
    assert_eq!(records.len(), 1, "only the message reached the model");
    let body = records[0].body.to_string();
    for word in ["nonsense", "/help"] {
        assert!(!body.contains(word), "{word} was sent: {body}");
    }
    let info = cadre_mock::request_info(records[0].wire, &records[0].body);
    assert!(info.last_user.ends_with("\nhello"), "{}", info.last_user);
    let err = cadre.stderr();
    assert!(
        err.contains("unknown command /nonsense (try /help)"),
        "{err}"
    );
    assert!(err.contains("/compact [focus]"), "/help lists it: {err}");
}

#[tokio::test]
async fn exec_shows_the_context_used_after_the_turn() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "hello"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out).trim(), "Answer one.");
    let err = common::stderr(&out);
    let status: Vec<&str> = err.lines().filter(|l| l.starts_with("ctx ")).collect();
    assert_eq!(status.len(), 1, "one line for the one turn: {err}");
    // The mock model has no prices: no cost is shown.
    assert!(
        status[0].ends_with(" tokens)") && status[0].contains("% ("),
        "{err}"
    );
}

#[tokio::test]
async fn a_childs_compaction_is_shown_with_the_childs_prefix() {
    // The child's second request is refused as too long once: it compacts
    // and retries; the parent never compacts.
    let script = r#"
rules:
  - name: child-summary
    when: { system: "general-purpose agent", last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "CHILD-SUMMARY: b.txt was read."
  - name: child
    when: { system: "general-purpose agent" }
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
      - text: "CHILD-REPORT: b holds beta."
        fail_once: { status: 400, message: "prompt is too long: 201000 tokens > 200000 maximum" }
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "read b", prompt: "read b.txt", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("b.txt", "beta\n");
    let out = h.cadre(&["exec", "delegate it"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        rule_records(&h.records(), "child-summary").len(),
        1,
        "the child compacted once"
    );
    let err = common::stderr(&out);
    let compaction_lines: Vec<&str> = err.lines().filter(|l| l.contains("compact")).collect();
    assert_eq!(compaction_lines.len(), 2, "{err}");
    assert!(
        compaction_lines[0]
            .starts_with("  [subagent 1/1 general-purpose] compacting… (after a length error, "),
        "{err}"
    );
    assert!(
        compaction_lines[1].starts_with("  [subagent 1/1 general-purpose] compacted: "),
        "{err}"
    );
}
