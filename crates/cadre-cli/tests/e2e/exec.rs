//! `cadre exec` end to end: the real binary against the mock model server over
//! HTTP/SSE, on both wire formats, in temp directories.

use crate::common;

use common::{BOTH_WIRES, Harness, Wire, stderr, stdout, tool_results};
use serde_json::Value;

const MULTI_STEP: &str = r#"
rules:
  - name: fixer
    when: { first_user: "Fix the typo" }
    replies:
      - text: "Reading the config parser."
        tool_calls:
          - { name: Read, input: { file_path: "src/config.rs" } }
      - tool_calls:
          - name: Edit
            input: { file_path: "src/config.rs", old_string: "cofnig", new_string: "config" }
      - tool_calls:
          - { name: Bash, input: { command: "grep -n 'bad config' src/config.rs" } }
      - text: "Fixed the typo in the error message of src/config.rs."
"#;

#[tokio::test]
async fn multi_step_task_reads_edits_runs_and_answers_on_both_wires() {
    for wire in BOTH_WIRES {
        let h = Harness::new(MULTI_STEP, wire).await;
        h.write(
            "src/config.rs",
            "fn parse() {\n    panic!(\"bad cofnig file\");\n}\n",
        );
        let out = h
            .cadre(&[
                "exec",
                "--permission-mode",
                "acceptEdits",
                "Fix the typo in the config error message",
            ])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(
            h.read("src/config.rs"),
            "fn parse() {\n    panic!(\"bad config file\");\n}\n",
            "{wire:?}"
        );
        assert_eq!(
            stdout(&out).trim(),
            "Fixed the typo in the error message of src/config.rs."
        );
        let records = h.records();
        assert_eq!(records.len(), 4, "{wire:?}");
        let results = tool_results(&records[3].body);
        assert_eq!(results.len(), 3);
        assert!(
            results[0].0.contains("\tfn parse() {"),
            "line-numbered Read: {}",
            results[0].0
        );
        assert!(results[0].0.contains("cofnig"));
        assert!(!results[1].1, "edit ok: {}", results[1].0);
        assert!(
            results[2].0.contains("2:    panic!(\"bad config file\");"),
            "bash output: {}",
            results[2].0
        );
        assert!(!results.iter().any(|r| r.1), "{results:?}");
        // Progress lines name each tool.
        let err = stderr(&out);
        for tool in ["Read src/config.rs", "Edit src/config.rs", "Bash grep"] {
            assert!(err.contains(tool), "{wire:?} stderr lacks {tool}: {err}");
        }
    }
}

#[tokio::test]
async fn streamed_arguments_split_across_many_chunks_are_reassembled_exactly() {
    let content = "héllo wörld ✓ 世界 🚀\n\"quoted\" and \\ backslash\n";
    let script = format!(
        r#"
rules:
  - name: writer
    replies:
      - args_chunk_chars: 1
        chunk_bytes: 3
        tool_calls:
          - name: Write
            input: {{ file_path: "out.txt", content: {content} }}
      - text: "Wrote ✓"
        chunk_bytes: 1
"#,
        content = serde_json::to_string(content).unwrap()
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        let out = h
            .cadre(&["exec", "--permission-mode", "acceptEdits", "write it"])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(h.read("out.txt"), content, "{wire:?}");
        assert_eq!(stdout(&out).trim(), "Wrote ✓");
    }
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_once_then_succeeds() {
    let script = r#"
rules:
  - name: flaky
    replies:
      - text: "All good."
        fail_once: { status: 429, retry_after_s: 0 }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        let out = h.cadre(&["exec", "hello"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "All good.");
        let statuses: Vec<u16> = h.records().iter().map(|r| r.status).collect();
        assert_eq!(statuses, [429, 200], "{wire:?}");
        assert!(stderr(&out).contains("HTTP 429"), "{}", stderr(&out));
    }
}

#[tokio::test]
async fn a_stream_cut_mid_reply_on_every_try_exits_1_and_says_it_ended_early() {
    let script = r#"
rules:
  - name: cut
    replies:
      - text: "This reply is long enough that the stream will be cut in the middle of it, well before the end."
        text_chunk_chars: 5
        fail: { cut_after_bytes: 400 }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        let out = h.cadre(&["exec", "hello"]).await;
        assert_eq!(out.status.code(), Some(1), "{wire:?}");
        assert!(
            stderr(&out).contains("stream ended early"),
            "{wire:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("after 6 tries"),
            "{wire:?}: {}",
            stderr(&out)
        );
        assert!(stdout(&out).trim().is_empty(), "no short answer on stdout");
        assert_eq!(h.records().len(), 6, "a cut stream is retried five times");
    }
}

#[tokio::test]
async fn a_server_that_keeps_failing_gives_up_after_six_tries() {
    let script = r#"
rules:
  - name: down
    replies:
      - text: "never"
        fail: { status: 503 }
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "hello"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(h.records().len(), 6);
    assert!(stderr(&out).contains("after 6 tries"), "{}", stderr(&out));
}

#[tokio::test]
async fn bad_tool_calls_get_defined_errors_and_the_run_goes_on() {
    let script = r#"
rules:
  - name: clumsy
    replies:
      - tool_calls:
          - { name: Read, input_raw: '{"file_path": "a.txt", ' }
          - { name: Read, input: { file_path: "a.txt", bogus: 1 } }
          - { name: Read, input: { file_path: 7 } }
          - { name: Frobnicate, input: {} }
          - { name: Read, input: { file_path: "missing.txt" } }
          - { name: Edit, input: { file_path: "a.txt", old_string: "a", new_string: "b" } }
          - { name: Bash, input: { command: "sleep 5", timeout: 300 } }
          - { name: Bash, input: { command: "head -c 200000 /dev/zero | tr '\\0' x" } }
      - text: "Coped."
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        h.write("a.txt", "aaa\n");
        let out = h
            .cadre(&["exec", "--permission-mode", "acceptEdits", "try things"])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "Coped.");
        assert_eq!(h.read("a.txt"), "aaa\n", "unread file not edited");
        let records = h.records();
        let results = tool_results(&records[1].body);
        assert_eq!(results.len(), 8, "{results:?}");
        let expect = [
            "invalid_arguments",
            "invalid_arguments",
            "invalid_arguments",
            "unknown tool 'Frobnicate'",
            "not found",
            "has not been read",
            "timed out",
        ];
        for (i, want) in expect.iter().enumerate() {
            assert!(
                results[i].1,
                "{wire:?} result {i} should be an error: {:?}",
                results[i]
            );
            assert!(
                results[i].0.contains(want),
                "{wire:?} result {i}: want {want:?}, got {:?}",
                results[i].0
            );
        }
        assert!(
            results[3].0.contains("Read, Write, Edit"),
            "{}",
            results[3].0
        );
        let big = &results[7].0;
        assert!(big.len() <= 64 * 1024 + 100, "capped: {}", big.len());
        assert!(big.contains("[truncated "), "marker present");
    }
}

#[tokio::test]
async fn json_mode_prints_every_event_as_a_line_in_order() {
    let script = r#"
rules:
  - name: two
    replies:
      - text: "Looking."
        tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
          - { name: Glob, input: { pattern: "*.txt" } }
      - text: "Two files checked."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("a.txt", "one\n");
    let out = h.cadre(&["exec", "--json", "look"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| *t != "text_delta")
        .collect();
    assert_eq!(
        types[..7],
        [
            "session_started",
            "turn_started",
            "request_started",
            "usage",
            "assistant_message",
            "context_usage",
            "context_breakdown",
        ]
    );
    // Read and Glob are read-only and run side by side: their starts and
    // ends may interleave either way, but each ends after it starts and
    // both end before the next request.
    let mut calls = types[7..11].to_vec();
    calls.sort_unstable();
    assert_eq!(
        calls,
        [
            "tool_call_ended",
            "tool_call_ended",
            "tool_call_started",
            "tool_call_started"
        ]
    );
    let tool_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_started" || e["type"] == "tool_call_ended")
        .collect();
    for (i, e) in tool_events.iter().enumerate() {
        if e["type"] == "tool_call_ended" {
            assert!(
                tool_events[..i]
                    .iter()
                    .any(|s| s["type"] == "tool_call_started" && s["call_id"] == e["call_id"]),
                "{e} ended before it started"
            );
        }
    }
    assert_eq!(
        types[11..],
        [
            "request_started",
            "usage",
            "assistant_message",
            "context_usage",
            "context_breakdown",
            "turn_ended"
        ]
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["status"], "completed");
    assert_eq!(ended["final_text"], "Two files checked.");
    assert_eq!(ended["tool_calls"], 2);
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_started")
        .collect();
    assert_eq!(started[0]["tool"], "Read");
    assert_eq!(started[0]["input"]["file_path"], "a.txt");
    assert!(events.iter().any(|e| e["type"] == "text_delta"));
}

#[tokio::test]
async fn the_system_prompt_carries_agents_md_and_requests_use_the_configured_model() {
    let script = r#"
rules:
  - name: only
    when: { system: "Always answer in haiku" }
    replies:
      - text: "ok"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("AGENTS.md", "Always answer in haiku.\n");
    let out = h.cadre(&["exec", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &h.records()[0].body;
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    // Prompt-cache breakpoints on system, tools and the conversation tail.
    assert!(body["system"][0]["cache_control"].is_object());
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.last().unwrap()["cache_control"].is_object());
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "Read",
            "Write",
            "Edit",
            "NotebookEdit",
            "Glob",
            "Grep",
            "Bash",
            "TodoWrite",
            "WebFetch",
            "Agent",
            "TaskList",
            "TaskOutput",
            "TaskStop",
            "SendMessage"
        ]
    );
}

#[tokio::test]
async fn a_remote_endpoint_without_a_key_is_refused_and_keys_stay_out_of_output() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let out = h
        .cadre_env(
            &["exec", "--base-url", "https://api.example.invalid", "hi"],
            &[],
        )
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&out)
    );

    // A key is sent to the server but never printed, even in a server's error.
    let secret = "sk-ant-test-SECRET-1234567890";
    let out = h
        .cadre_env(&["exec", "--json", "hi"], &[("ANTHROPIC_API_KEY", secret)])
        .await;
    assert_eq!(out.status.code(), Some(1), "no rule matches → 400");
    assert!(!stdout(&out).contains(secret));
    assert!(!stderr(&out).contains(secret));
}

#[tokio::test]
async fn commands_the_model_runs_do_not_see_the_api_key() {
    let script = r#"
rules:
  - name: snoop
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo \"key=[${ANTHROPIC_API_KEY:-}${OPENAI_API_KEY:-}]\"" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let secret = "sk-ant-test-SECRET-0987654321";
    let out = h
        .cadre_env(
            &["exec", "--json", "--permission-mode", "acceptEdits", "hi"],
            &[("ANTHROPIC_API_KEY", secret), ("OPENAI_API_KEY", secret)],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0].0, "key=[]");
    assert!(!stdout(&out).contains(secret));
}

#[tokio::test]
async fn bad_usage_exits_2() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let out = h.cadre(&["exec"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = h.cadre(&["exec", "--provider", "nope", "hi"]).await;
    assert_eq!(out.status.code(), Some(2));
}
