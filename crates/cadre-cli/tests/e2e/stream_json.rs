//! stream-json through the binary: every kind of line the stream holds,
//! pinned to Claude Code's shapes on both wires; and `--input-format
//! stream-json`, where stdin's lines are the turns of one session and
//! `control_request`s steer it.

use crate::common;

use std::time::Duration;

use common::{Harness, Wire, stderr, stdout, user_texts};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A `cadre -p` run whose stdin and stdout the test holds.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
}

impl Live {
    fn start(h: &Harness, extra: &[&str]) -> Live {
        let mut args = vec![
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ];
        args.extend_from_slice(extra);
        let mut child = h
            .command(&args, &[])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Live {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, line: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Reads lines until one of kind `kind` (`type` or `type/subtype`).
    async fn until(&mut self, kind: &str) -> Value {
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let Some(line) = self.lines.next_line().await.unwrap() else {
                    panic!("stdout ended before a {kind} line: {:?}", kinds(&self.seen));
                };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                self.seen.push(v.clone());
                if kind_of(&v) == kind {
                    return v;
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no {kind} line in time: {:?}", kinds(&self.seen)))
    }

    /// Closes stdin and reads the rest; returns the exit status.
    async fn finish(mut self) -> (std::process::ExitStatus, Vec<Value>, String) {
        drop(self.stdin.take());
        while let Some(line) = self.lines.next_line().await.unwrap() {
            self.seen
                .push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
        }
        let out = tokio::time::timeout(Duration::from_secs(30), self.child.wait_with_output())
            .await
            .expect("cadre exits once stdin closes")
            .unwrap();
        (
            out.status,
            self.seen,
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

fn kind_of(v: &Value) -> String {
    match v["subtype"].as_str() {
        Some(sub) => format!("{}/{sub}", v["type"].as_str().unwrap_or("")),
        None => v["type"].as_str().unwrap_or("").to_string(),
    }
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines.iter().map(kind_of).collect()
}

fn user(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
}

#[tokio::test]
async fn three_input_lines_are_three_turns_of_one_process_each_with_its_result() {
    let script = r#"
rules:
  - replies:
      - latency_ms: 600
        text: "first answer"
      - text: "second answer"
      - text: "third answer"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut live = Live::start(&h, &[]);
    live.send(&user("question one")).await;
    // The second is sent while the first turn's reply is still on its way.
    live.until("system/init").await;
    live.send(&json!({"type": "user", "message": {"role": "user", "content": "question two"}}))
        .await;
    let r1 = live.until("result/success").await;
    assert_eq!(r1["result"], "first answer");
    let r2 = live.until("result/success").await;
    assert_eq!(r2["result"], "second answer");
    live.send(&user("question three")).await;
    let r3 = live.until("result/success").await;
    assert_eq!(r3["result"], "third answer");
    assert_eq!(r1["session_id"], r3["session_id"]);
    // Cumulative, as Claude Code's are.
    assert_eq!(r3["num_turns"], 3);
    let (status, _, err) = live.finish().await;
    assert!(status.success(), "{err}");
    let records = h.records();
    assert_eq!(records.len(), 3);
    let last = user_texts(&records[2].body);
    assert!(
        last.contains("question one")
            && last.contains("question two")
            && last.contains("question three"),
        "{last}"
    );
}

#[tokio::test]
async fn appended_messages_bad_lines_and_replays() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"got both\"\n",
        Wire::OpenAi,
    )
    .await;
    let mut live = Live::start(&h, &["--replay-user-messages"]);
    let mut quiet = user("context without a turn");
    quiet["shouldQuery"] = json!(false);
    live.send(&quiet).await;
    live.send_raw("{this is not json\n").await;
    live.send(&json!({"type": "assistant", "message": {}}))
        .await;
    live.send(&json!({"type": "user", "message": {"role": "user", "content": "   "}}))
        .await;
    live.send(&user("the real question")).await;
    let result = live.until("result/success").await;
    assert_eq!(result["result"], "got both");
    let (status, lines, err) = live.finish().await;
    assert!(status.success(), "{err}");
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| kind_of(l) == "system/input_error")
        .collect();
    assert_eq!(errors.len(), 3, "{:?}", kinds(&lines));
    assert_eq!(errors[0]["line"], 2);
    assert!(err.contains("stdin line 2: not JSON"), "{err}");
    let replays: Vec<&Value> = lines.iter().filter(|l| l["isReplay"] == true).collect();
    assert_eq!(replays.len(), 2, "{:?}", kinds(&lines));
    let records = h.records();
    assert_eq!(records.len(), 1, "one turn for both messages");
    let text = user_texts(&records[0].body);
    assert!(
        text.contains("context without a turn") && text.contains("the real question"),
        "{text}"
    );
}

#[tokio::test]
async fn control_requests_set_the_model_and_mode_and_interrupt() {
    let script = r#"
rules:
  - name: slow
    when: { last_user: "take your time" }
    replies:
      - latency_ms: 20000
        text: "too late"
  - name: other
    when: { model: "other-model" }
    replies:
      - text: "from the other model"
      - text: "again"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut live = Live::start(&h, &[]);
    live.send(&json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "set_model", "model": "other-model"}}))
        .await;
    let reply = live.until("control_response").await;
    assert_eq!(reply["response"]["subtype"], "success");
    assert_eq!(reply["response"]["request_id"], "r1");
    live.send(&json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "set_permission_mode", "mode": "sideways"}}))
        .await;
    let reply = live.until("control_response").await;
    assert_eq!(reply["response"]["subtype"], "error", "{reply}");
    live.send(&json!({"type": "control_request", "request_id": "r3", "request": {"subtype": "set_permission_mode", "mode": "plan"}}))
        .await;
    let reply = live.until("control_response").await;
    assert_eq!(reply["response"]["subtype"], "success", "{reply}");
    live.send(&user("hello")).await;
    let r = live.until("result/success").await;
    assert_eq!(r["result"], "from the other model");

    live.send(&user("take your time")).await;
    // Sent while the slow reply is awaited.
    tokio::time::sleep(Duration::from_millis(500)).await;
    live.send(&json!({"type": "control_request", "request_id": "r4", "request": {"subtype": "interrupt"}}))
        .await;
    let r = live.until("result/error_during_execution").await;
    assert_eq!(r["is_error"], true);
    let (status, lines, err) = live.finish().await;
    assert!(status.success(), "{err}");
    assert!(
        kinds(&lines).contains(&"system/permission_mode_changed".to_string())
            || kinds(&lines).contains(&"system/mode_changed".to_string()),
        "{:?}",
        kinds(&lines)
    );
}

#[tokio::test]
async fn stream_json_input_needs_stream_json_output_and_no_prompt() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"x\"\n",
        Wire::Anthropic,
    )
    .await;
    for args in [
        &["-p", "--input-format", "stream-json", "hi"][..],
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "hi",
        ][..],
        &["-p", "hi", "--include-partial-messages"][..],
        &[
            "-p",
            "hi",
            "--replay-user-messages",
            "--output-format",
            "stream-json",
        ][..],
    ] {
        let out = h.cadre(args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    assert!(h.records().is_empty());
}

/// The fields each kind of line must have, with the JSON type of each.
fn pinned(kind: &str) -> &'static [(&'static str, &'static str)] {
    match kind {
        "system/init" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("cwd", "string"),
            ("model", "string"),
            ("tools", "array"),
            ("mcp_servers", "array"),
            ("permissionMode", "string"),
            ("slash_commands", "array"),
            ("skills", "array"),
            ("agents", "array"),
            ("plugins", "array"),
            ("apiKeySource", "string"),
            ("output_style", "string"),
            ("claude_code_version", "string"),
        ],
        "assistant" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("message", "object"),
            ("message.id", "string"),
            ("message.type", "string"),
            ("message.role", "string"),
            ("message.model", "string"),
            ("message.content", "array"),
            ("message.stop_reason", "string"),
            ("message.usage", "object"),
        ],
        "user" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("message.role", "string"),
            ("message.content", "array"),
        ],
        "stream_event" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("event", "object"),
            ("event.type", "string"),
        ],
        "system/api_retry" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("attempt", "number"),
            ("max_retries", "number"),
            ("retry_delay_ms", "number"),
            ("error_status", "number"),
            ("error", "string"),
        ],
        "system/task_started" => &[
            ("session_id", "string"),
            ("task_id", "string"),
            ("description", "string"),
            ("task_type", "string"),
        ],
        "system/task_notification" => &[
            ("session_id", "string"),
            ("task_id", "string"),
            ("status", "string"),
            ("summary", "string"),
        ],
        "system/subagent_started" | "system/subagent_ended" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("agent_id", "string"),
            ("tool_use_id", "string"),
        ],
        "system/tasks_notified" => &[("session_id", "string"), ("task_ids", "array")],
        "system/mcp_server_status" => &[("server", "string"), ("status", "string")],
        "system/warning" => &[("session_id", "string"), ("message", "string")],
        "system/model_changed" => &[("agent", "string"), ("model", "string")],
        "system/mode_changed" => &[("agent", "string"), ("mode", "string")],
        "system/tool_call_denied" => &[("tool", "string"), ("reason", "string")],
        "system/subagent_backgrounded" => &[("agent_id", "string"), ("task_id", "string")],
        "result/success" => &[
            ("session_id", "string"),
            ("uuid", "string"),
            ("is_error", "bool"),
            ("duration_ms", "number"),
            ("duration_api_ms", "number"),
            ("num_turns", "number"),
            ("result", "string"),
            ("total_cost_usd", "number"),
            ("usage", "object"),
            ("modelUsage", "object"),
            ("permission_denials", "array"),
        ],
        other => panic!("a kind of line no test pins: {other}"),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const EVERYTHING: &str = r#"
rules:
  - name: fg-child
    when: { first_user: "list the notes" }
    replies:
      - tool_calls:
          - { name: Glob, input: { pattern: "*.txt" } }
      - text: "one note"
  - name: bg-child
    when: { first_user: "in the background" }
    replies:
      - text: "background report"
  - name: main
    replies:
      - text: "Reading first."
        fail_once: { status: 503 }
        tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
      - tool_calls:
          - { name: Agent, input: { description: "notes", prompt: "list the notes", subagent_type: Explore } }
          - { name: Agent, input: { description: "bg", prompt: "in the background", subagent_type: Explore, run_in_background: true } }
      - text: "Waiting for the background child."
      - text: "All done."
"#;

#[tokio::test]
async fn every_kind_of_line_has_claude_codes_fields_on_both_wires() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let h = Harness::new(EVERYTHING, wire).await;
        h.write("a.txt", "alpha\n");
        let out = h
            .cadre(&[
                "-p",
                "do it all",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
            ])
            .await;
        assert!(out.status.success(), "{}", stderr(&out));
        let lines: Vec<Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        let kinds = kinds(&lines);
        for (line, kind) in lines.iter().zip(&kinds) {
            for (path, ty) in pinned(kind) {
                let mut v = line;
                for part in path.split('.') {
                    v = &v[part];
                }
                assert_eq!(json_type(v), *ty, "{kind}: {path} in {line}");
            }
            if kind == "assistant" || kind == "user" || kind == "stream_event" {
                assert!(line.get("parent_tool_use_id").is_some(), "{line}");
            }
        }
        for needed in [
            "system/init",
            "system/api_retry",
            "stream_event",
            "assistant",
            "user",
            "system/task_started",
            "system/subagent_started",
            "system/subagent_ended",
            "system/task_notification",
            "result/success",
        ] {
            assert!(
                kinds.iter().any(|k| k == needed),
                "{wire:?}: no {needed} in {kinds:?}"
            );
        }
        assert_eq!(kinds[0], "system/init");
        assert_eq!(kinds.last().unwrap(), "result/success");
        // The partial stream is the main agent's alone and spells the reply.
        let deltas: String = lines
            .iter()
            .filter(|l| l["type"] == "stream_event" && l["event"]["type"] == "content_block_delta")
            .filter_map(|l| l["event"]["delta"]["text"].as_str())
            .collect();
        assert!(deltas.contains("Reading first."), "{deltas}");
        assert!(
            lines
                .iter()
                .filter(|l| l["type"] == "stream_event")
                .all(|l| l["parent_tool_use_id"].is_null())
        );
        // The background child's notice names its task.
        let notice = lines
            .iter()
            .find(|l| kind_of(l) == "system/task_notification")
            .unwrap();
        assert_eq!(notice["status"], "completed", "{notice}");
        assert_eq!(notice["summary"], "bg");
    }
}
