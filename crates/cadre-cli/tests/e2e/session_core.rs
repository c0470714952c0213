//! The one session core through the binary: what `exec` and the interactive
//! mode now share (notice delivery retried in both), and "background this"
//! (SIGUSR1) latched for the running batch and for no later one.

use crate::common;

use std::time::Duration;

use common::{Harness, Wire, rule_records, stderr, tool_results};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const HELPER: &str = "---
name: helper
description: Does a job.
tools: Read
---
You are HELPER.
";

/// A foreground child that takes two slow steps.
const SLOW_CHILD: &str = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "slow", prompt: "slow-child", subagent_type: "helper" } }
      - text: "moved on"
      - text: "got the slow report"
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - latency_ms: 1500
        tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
      - latency_ms: 1500
        text: "SLOW-REPORT"
"#;

#[tokio::test]
async fn sigusr1_sent_as_the_batch_starts_backgrounds_it() {
    // Several runs: a signal that races the batch to its wait must never be lost.
    for _ in 0..3 {
        let h = Harness::new(SLOW_CHILD, Wire::Anthropic).await;
        h.write(".cadre/agents/helper.md", HELPER);
        h.write("a.txt", "a\n");
        let mut run = h.spawn_json(&["exec", "--json", "go"]);
        // The first sign of the batch: its child is filed. No pause after it.
        run.wait_for("subagent_started", 1).await;
        run.signal(libc::SIGUSR1);
        let (status, events) = run.finish().await;
        assert!(status.success());
        assert!(
            events.iter().any(|e| e["type"] == "subagent_backgrounded"),
            "{events:?}"
        );
        let records = h.records();
        let parent = rule_records(&records, "parent");
        let results = tool_results(&parent[1].body);
        assert!(
            results[0].0.starts_with("launched in background: task t-"),
            "{}",
            results[0].0
        );
        // Not restarted: each of its two steps was asked once.
        let child = rule_records(&records, "child");
        assert_eq!(child.len(), 2);
        assert!(common::user_texts(&parent[2].body).contains("SLOW-REPORT"));
    }
}

#[tokio::test]
async fn sigusr1_before_a_batch_never_reaches_it() {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - latency_ms: 1500
        tool_calls:
          - { name: Agent, input: { description: "quick", prompt: "quick-child", subagent_type: "helper" } }
      - text: "got the quick report"
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "QUICK-REPORT"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let mut run = h.spawn_json(&["exec", "--json", "go"]);
    // The parent's request is out; no batch runs yet.
    run.wait_for("request_started", 1).await;
    run.signal(libc::SIGUSR1);
    let (status, events) = run.finish().await;
    assert!(status.success());
    assert!(
        !events.iter().any(|e| e["type"] == "subagent_backgrounded"),
        "{events:?}"
    );
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let results = tool_results(&parent[1].body);
    assert!(results[0].0.contains("QUICK-REPORT"), "{}", results[0].0);
    assert!(!results[0].1);
}

/// A background shell whose notice the model service refuses once (400,
/// which the client does not retry itself): the session retries it.
const NOTICE_FAILS_ONCE: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo BG-DONE", description: "echo", run_in_background: true } }
      - text: "started it"
      - text: "NOTICE-RETRIED-OK"
        fail_once: { status: 400 }
"#;

fn notices_in(body: &serde_json::Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("<task-notification>"))
        })
        .count()
}

fn assert_delivered_twice(h: &Harness) {
    let records = h.records();
    let with_notice: Vec<u16> = records
        .iter()
        .filter(|r| notices_in(&r.body) > 0)
        .map(|r| r.status)
        .collect();
    assert_eq!(
        with_notice,
        [400, 200],
        "the failed delivery, then the retry"
    );
}

#[tokio::test]
async fn exec_retries_a_notice_delivery_the_model_service_failed() {
    let h = Harness::new(NOTICE_FAILS_ONCE, Wire::Anthropic).await;
    let out = h
        .cadre(&["exec", "--permission-mode", "bypassPermissions", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("delivering task notices failed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(common::stdout(&out).trim(), "NOTICE-RETRIED-OK");
    assert_delivered_twice(&h);
}

#[tokio::test]
async fn the_interactive_mode_retries_a_notice_delivery_the_model_service_failed() {
    let h = Harness::new(NOTICE_FAILS_ONCE, Wire::Anthropic).await;
    let mut child = h
        .command(&["--permission-mode", "bypassPermissions"], &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("cadre starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"go\n").await.unwrap();
    // The retried notice turn's answer is streamed to stdout.
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), stdout.next_line())
            .await
            .expect("the retried notice within 30 s")
            .unwrap()
            .unwrap_or_else(|| panic!("cadre ended early; stdout: {seen:?}"));
        let done = line.contains("NOTICE-RETRIED-OK");
        seen.push(line);
        if done {
            break;
        }
    }
    stdin.write_all(b"/exit\n").await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("cadre leaves within 30 s")
        .unwrap();
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(err.contains("delivering task notices failed"), "{err}");
    assert!(err.contains("(background task finished)"), "{err}");
    assert_delivered_twice(&h);
}
