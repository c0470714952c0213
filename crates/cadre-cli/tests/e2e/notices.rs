//! Resume and notices through the binary: nothing delivered is delivered
//! again, notices rebuilt after a crash carry the whole report, children from
//! before a resume can be messaged, a log with a torn first line still lists
//! and resumes, and an idle interactive prompt gives its next line to a
//! pending approval question.

use crate::common;

use std::time::Duration;

use cadre_core::tasks::TaskStatus;
use cadre_mock::Record;
use common::{
    Harness, Wire, events, rule_records, stderr, stdout, tasks, tool_results, user_texts,
};
use serde_json::Value;

const HELPER: &str = "---
name: helper
description: Does a job.
tools: Read, Bash
---
You are HELPER.
";

fn session_of(evs: &[Value]) -> String {
    evs.iter()
        .find(|e| e["type"] == "session_started")
        .expect("session_started")["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_foreground_child_is_not_announced_again_after_resume() {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "fg job", prompt: "fg-child: look", subagent_type: "helper" } }
      - text: "The child said FG-REPORT."
      - text: "Second run answer."
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "FG-REPORT: all looked at."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let out = h.cadre(&["exec", "--json", "first run"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&events(&out));
    // The report came back as the Agent call's result.
    let parent = rule_records(&h.records(), "parent")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert!(tool_results(&parent[1].body)[0].0.contains("FG-REPORT"));
    let rows = tasks(&h);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, TaskStatus::Succeeded);
    assert!(rows[0].notified, "its report was delivered: {rows:?}");

    let out = h
        .cadre(&["exec", "--json", "--resume", &session, "second run"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(!evs.iter().any(|e| e["type"] == "tasks_notified"));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    assert_eq!(parent.len(), 3);
    let last = user_texts(&parent[2].body);
    assert!(last.contains("second run"), "{last}");
    assert!(
        !last.contains("task-notification"),
        "the foreground child was announced again: {last}"
    );
}

#[tokio::test]
async fn a_notice_rebuilt_after_a_crash_carries_the_whole_report() {
    let mid = format!("MID-START {} MID-END", "m".repeat(2000));
    let long = format!("LONG-START {} LONG-END", "l".repeat(9000));
    let script = format!(
        r#"
rules:
  - name: resumed
    when: {{ any_user: "after the crash" }}
    replies:
      - text: "never used"
      - text: "after the crash: got the notice"
      - text: "after the crash: got the notice"
  - name: parent
    when: {{ system: "You are cadre" }}
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "mid job", prompt: "mid-task", subagent_type: "helper", run_in_background: true }} }}
          - {{ name: Agent, input: {{ description: "long job", prompt: "long-task", subagent_type: "helper", run_in_background: true }} }}
      - latency_ms: 60000
        text: "too late"
  - name: mid
    when: {{ first_user: "mid-task" }}
    replies:
      - text: "{mid}"
        text_chunk_chars: 500
  - name: long
    when: {{ first_user: "long-task" }}
    replies:
      - text: "{long}"
        text_chunk_chars: 500
"#
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let mut run = h.spawn_json(&["exec", "--json", "go"]);
    let started = run.wait_for("session_started", 1).await;
    let session = started["session_id"].as_str().unwrap().to_string();
    run.wait_for("task_ended", 2).await;
    // The parent is still waiting for its stalled second reply: nothing is announced yet.
    run.kill().await;
    let rows = tasks(&h);
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r.status == TaskStatus::Succeeded && !r.notified),
        "{rows:?}"
    );
    let long_id = rows
        .iter()
        .find(|r| r.description == "long job")
        .unwrap()
        .id
        .clone();

    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--resume",
            &session,
            "--accept-unknown",
            "after the crash",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let resumed = rule_records(&records, "resumed");
    let sent: String = resumed.iter().map(|r| user_texts(&r.body)).collect();
    assert!(sent.contains("<task-notification>"), "{sent}");
    // The 2 KB report is inlined whole, not cut to 500 characters.
    assert!(sent.contains("MID-START"), "{sent}");
    assert!(sent.contains("MID-END"), "the whole report: {sent}");
    // The report over 8 KiB gets the live notice's marker and pointer.
    assert!(sent.contains("<report-omitted bytes=\\\""), "{sent}");
    assert!(
        sent.contains(&format!("TaskOutput(task_id: \\\"{long_id}\\\")")),
        "{sent}"
    );
    assert!(!sent.contains("LONG-END"), "{sent}");
    assert!(tasks(&h).iter().all(|r| r.notified));
}

#[tokio::test]
async fn send_message_reaches_a_child_from_before_a_resume() {
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "FIRST-ANSWER from the scout"
      - text: "SECOND-ANSWER after the follow-up"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scouting", prompt: "scout-task", subagent_type: "helper", name: "scout" } }
      - text: "scout said FIRST-ANSWER"
      - tool_calls:
          - { name: SendMessage, input: { to: "scout", message: "FOLLOW-UP question" } }
      - text: "waiting for the scout"
      - text: "scout answered SECOND-ANSWER"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let out = h.cadre(&["exec", "--json", "first run"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&events(&out));

    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--resume",
            &session,
            "ask the scout again",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let results = tool_results(&parent[3].body);
    let sent = &results.last().unwrap().0;
    assert!(sent.starts_with("resumed agent "), "{sent}");
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 2);
    let history = child[1].body["messages"].to_string();
    for part in ["scout-task", "FIRST-ANSWER", "FOLLOW-UP question"] {
        assert!(history.contains(part), "{part} in {history}");
    }
    // The resumed child keeps its definition's system prompt and tools.
    assert!(
        child[1].body["system"]
            .to_string()
            .contains("You are HELPER")
    );
    let tool_names = |r: &Record| -> Vec<String> {
        let mut names: Vec<String> = r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    assert_eq!(tool_names(child[0]), tool_names(child[1]));
    assert_eq!(tool_names(child[1]), ["Bash", "Read"]);
    assert!(
        user_texts(&parent.last().unwrap().body).contains("SECOND-ANSWER"),
        "its answer came back as a notice"
    );
}

#[tokio::test]
async fn a_child_reached_after_a_resume_runs_no_wider_than_the_resumed_session() {
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "FIRST-ANSWER"
      - tool_calls:
          - { name: Bash, input: { command: "echo wrote > out.txt" } }
      - text: "could not write"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "work", prompt: "work-task", subagent_type: "helper", name: "worker" } }
      - text: "worker answered"
      - tool_calls:
          - { name: SendMessage, input: { to: "worker", message: "now write out.txt" } }
      - text: "waiting"
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "acceptEdits",
            "first run",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&events(&out));
    // Resumed in the default mode, headless: the child's command is not allowed.
    let out = h
        .cadre(&["exec", "--json", "--resume", &session, "ask the worker"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 3);
    let results = tool_results(&child[2].body);
    assert!(
        results[0].1 && results[0].0.starts_with("denied"),
        "{results:?}"
    );
    assert!(!h.path("out.txt").exists());
}

#[tokio::test]
async fn a_log_with_a_corrupt_first_line_lists_and_resumes() {
    let script = r#"
rules:
  - name: parent
    replies:
      - text: "FIRST-REPLY"
      - text: "SECOND-REPLY"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "remember FIRST-PROMPT"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let session = session_of(&events(&out));
    let path = h
        .data_dir()
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (_, rest) = text.split_once('\n').unwrap();
    std::fs::write(&path, format!("{{\"v\":1,\"time_ms\":garbage\n{rest}")).unwrap();

    let out = h.cadre(&["sessions"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&session), "listed: {}", stdout(&out));
    assert!(stdout(&out).contains("FIRST-PROMPT"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("warning") && stderr(&out).contains(&session),
        "{}",
        stderr(&out)
    );

    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--resume",
            &session,
            "and now SECOND-PROMPT",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(
        evs.iter()
            .any(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("line 1")),
        "{evs:?}"
    );
    let last = h.records().last().unwrap().body.to_string();
    for part in ["FIRST-PROMPT", "FIRST-REPLY", "SECOND-PROMPT"] {
        assert!(last.contains(part), "{part} in {last}");
    }
    // It stays readable for the next run too.
    let out = h.cadre(&["sessions"]).await;
    assert!(stdout(&out).contains(&session));
}

#[tokio::test]
async fn an_idle_prompt_gives_its_next_line_to_a_pending_question() {
    use tokio::io::AsyncBufReadExt;
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - latency_ms: 1500
        tool_calls:
          - { name: Bash, input: { command: "echo ran > ran.txt" } }
      - text: "CHILD-DONE"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "bg job", prompt: "bg-task", subagent_type: "helper", run_in_background: true } }
      - text: "PARENT-STARTED"
      - text: "PARENT-NOTED"
      - text: "PARENT-EXTRA"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let pty = common::Pty::open();
    let mut child = h
        .command(&[], &[])
        .stdin(pty.slave_stdio())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let _stdout = child.stdout.take();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (asked_tx, asked_rx) = tokio::sync::oneshot::channel();
    let log = seen.clone();
    tokio::spawn(async move {
        let mut asked_tx = Some(asked_tx);
        while let Ok(Some(line)) = err.next_line().await {
            if line.contains("Permission needed: Bash")
                && let Some(tx) = asked_tx.take()
            {
                let _ = tx.send(());
            }
            log.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    pty.type_line("start the job");
    // The parent's turn ends, the prompt is idle, then the child asks.
    let asked = tokio::time::timeout(Duration::from_secs(20), asked_rx).await;
    assert!(asked.is_ok(), "the child asked: {}", seen.lock().unwrap());
    assert_eq!(rule_records(&h.records(), "parent").len(), 2, "parent idle");
    pty.type_line("y");
    let ran = tokio::time::timeout(Duration::from_secs(10), async {
        while !h.path("ran.txt").exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Let the notice turn happen, then leave.
    let noticed = tokio::time::timeout(Duration::from_secs(10), async {
        while rule_records(&h.records(), "parent").len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    pty.type_line("/exit");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    assert!(
        ran.is_ok(),
        "one `y` answered the question and the command ran: {}",
        seen.lock().unwrap()
    );
    assert!(noticed.is_ok());
    let records = h.records();
    for r in &records {
        for m in r.body["messages"].as_array().unwrap() {
            if m["role"] != "user" {
                continue;
            }
            let texts: Vec<&str> = match &m["content"] {
                Value::String(s) => vec![s.as_str()],
                Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
                _ => vec![],
            };
            assert!(
                !texts.iter().any(|t| t.trim() == "y"),
                "the answer went to the model as a message: {m}"
            );
        }
    }
    let child_records = rule_records(&records, "child");
    assert_eq!(child_records.len(), 2);
    let results = tool_results(&child_records[1].body);
    assert!(!results[0].1, "the command ran: {results:?}");
    assert!(status.unwrap().unwrap().success());
}
