#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cadre_mock::{MockServer, Wire};
use futures::StreamExt;
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Parses an SSE body into (event name, data) pairs.
fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, data)
        })
        .collect()
}

fn anthropic_req(first_user: &str, assistant_turns: usize, stream: bool) -> Value {
    let mut messages = vec![json!({"role": "user", "content": first_user})];
    for i in 0..assistant_turns {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("turn {i}")}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}));
    }
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You are cadre."}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": messages,
        "stream": stream,
    })
}

fn openai_req(first_user: &str, assistant_turns: usize, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are cadre."}),
        json!({"role": "user", "content": first_user}),
    ];
    for i in 0..assistant_turns {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "Read", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "ok"}));
    }
    json!({
        "model": "gpt-test",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "Read", "parameters": {}}}],
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

async fn post(server: &MockServer, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", server.url()))
        .header("x-api-key", "ignored")
        .json(body)
        .send()
        .await
        .unwrap()
}

const TOOLS_SCRIPT: &str = r#"
rules:
  - name: tools
    when: { system: "cadre", first_user: "read", tool: Read }
    replies:
      - text: "Reading the files now, héllo ✓"
        text_chunk_chars: 7
        args_chunk_chars: 3
        tool_calls:
          - { name: Read, input: { file_path: "src/main.rs", limit: 10 } }
          - { name: Grep, id: my_id, input: { pattern: "fn main", paths: ["a", "b"] } }
      - text: "Done."
"#;

#[tokio::test]
async fn anthropic_streaming_reassembles() {
    let server = MockServer::start(TOOLS_SCRIPT, None).await.unwrap();
    let resp = post(
        &server,
        "/v1/messages",
        &anthropic_req("please read", 0, true),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = resp.text().await.unwrap();
    let events = parse_sse(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert_eq!(names[names.len() - 2], "message_delta");

    let mut text_out = String::new();
    let mut tools: Vec<(String, String, String)> = Vec::new(); // id, name, args
    let mut arg_deltas = 0;
    for (name, data) in &events {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["type"], name.as_deref().unwrap());
        match name.as_deref().unwrap() {
            "message_start" => {
                assert_eq!(v["message"]["model"], "claude-test");
                assert!(v["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
            }
            "content_block_start" if v["content_block"]["type"] == "tool_use" => {
                let b = &v["content_block"];
                tools.push((
                    b["id"].as_str().unwrap().into(),
                    b["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            "content_block_delta" => match v["delta"]["type"].as_str().unwrap() {
                "text_delta" => text_out.push_str(v["delta"]["text"].as_str().unwrap()),
                "input_json_delta" => {
                    arg_deltas += 1;
                    tools
                        .last_mut()
                        .unwrap()
                        .2
                        .push_str(v["delta"]["partial_json"].as_str().unwrap());
                }
                other => panic!("unexpected delta {other}"),
            },
            "message_delta" => assert_eq!(v["delta"]["stop_reason"], "tool_use"),
            _ => {}
        }
    }
    assert_eq!(text_out, "Reading the files now, héllo ✓");
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].0, "toolu_tools_0_0");
    assert_eq!(tools[0].1, "Read");
    assert_eq!(
        serde_json::from_str::<Value>(&tools[0].2).unwrap(),
        json!({"file_path": "src/main.rs", "limit": 10})
    );
    assert_eq!(tools[1].0, "my_id");
    assert_eq!(
        serde_json::from_str::<Value>(&tools[1].2).unwrap(),
        json!({"pattern": "fn main", "paths": ["a", "b"]})
    );
    assert!(arg_deltas > 10, "args should come in many fragments");
}

#[tokio::test]
async fn openai_streaming_reassembles() {
    let server = MockServer::start(TOOLS_SCRIPT, None).await.unwrap();
    let resp = post(
        &server,
        "/v1/chat/completions",
        &openai_req("please read", 0, true),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    let events = parse_sse(&text);
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(n, d)| {
            assert!(n.is_none());
            serde_json::from_str(d).unwrap()
        })
        .collect();
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let mut text_out = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-test");
        if c["choices"].as_array().unwrap().is_empty() {
            usage = Some(c["usage"].clone());
            continue;
        }
        let choice = &c["choices"][0];
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
        let d = &choice["delta"];
        if let Some(t) = d["content"].as_str() {
            text_out.push_str(t);
        }
        if let Some(tcs) = d["tool_calls"].as_array() {
            for tc in tcs {
                let j = tc["index"].as_u64().unwrap() as usize;
                if let Some(id) = tc["id"].as_str() {
                    assert_eq!(j, calls.len());
                    calls.push((
                        id.into(),
                        tc["function"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                calls[j]
                    .2
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
            }
        }
    }
    assert_eq!(text_out, "Reading the files now, héllo ✓");
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_tools_0_0");
    assert_eq!(calls[0].1, "Read");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        json!({"file_path": "src/main.rs", "limit": 10})
    );
    assert_eq!(calls[1].1, "Grep");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        json!({"pattern": "fn main", "paths": ["a", "b"]})
    );
    let usage = usage.expect("usage chunk");
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn non_streaming_both_wires() {
    let server = MockServer::start(TOOLS_SCRIPT, None).await.unwrap();

    let a: Value = post(&server, "/v1/messages", &anthropic_req("read it", 0, false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(a["type"], "message");
    assert_eq!(a["role"], "assistant");
    assert_eq!(a["model"], "claude-test");
    assert_eq!(a["stop_reason"], "tool_use");
    assert_eq!(a["content"][0]["type"], "text");
    assert_eq!(a["content"][1]["type"], "tool_use");
    assert_eq!(a["content"][1]["name"], "Read");
    assert_eq!(
        a["content"][1]["input"],
        json!({"file_path": "src/main.rs", "limit": 10})
    );
    assert!(a["usage"]["output_tokens"].as_u64().unwrap() > 0);

    let a1: Value = post(&server, "/messages", &anthropic_req("read it", 1, false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(a1["content"], json!([{"type": "text", "text": "Done."}]));
    assert_eq!(a1["stop_reason"], "end_turn");

    let o: Value = post(
        &server,
        "/v1/chat/completions",
        &openai_req("read it", 0, false),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(o["object"], "chat.completion");
    let choice = &o["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let msg = &choice["message"];
    assert_eq!(msg["content"], "Reading the files now, héllo ✓");
    let args = msg["tool_calls"][1]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(args).unwrap(),
        json!({"pattern": "fn main", "paths": ["a", "b"]})
    );
    assert!(o["usage"]["total_tokens"].as_u64().unwrap() > 0);

    let o1: Value = post(
        &server,
        "/chat/completions",
        &openai_req("read it", 1, false),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(o1["choices"][0]["message"]["content"], "Done.");
    assert_eq!(o1["choices"][0]["finish_reason"], "stop");
    assert!(o1["choices"][0]["message"].get("tool_calls").is_none());
}

#[tokio::test]
async fn fail_once_then_success() {
    let script = r#"
rules:
  - name: flaky_a
    when: { first_user: anthropic }
    replies:
      - text: "ok now"
        fail_once: { status: 429, retry_after_s: 0 }
  - name: flaky_o
    when: { first_user: openai }
    replies:
      - text: "ok now"
        fail_once: { status: 429, retry_after_s: 2 }
"#;
    let server = MockServer::start(script, None).await.unwrap();

    let body = anthropic_req("anthropic", 0, false);
    let first = post(&server, "/v1/messages", &body).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "0");
    let err: Value = first.json().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "rate_limit_error");
    assert!(err["error"]["message"].is_string());
    for _ in 0..2 {
        let again = post(&server, "/v1/messages", &body).await;
        assert_eq!(again.status(), 200);
        let v: Value = again.json().await.unwrap();
        assert_eq!(v["content"][0]["text"], "ok now");
    }

    let body = openai_req("openai", 0, true);
    let first = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "2");
    let err: Value = first.json().await.unwrap();
    assert_eq!(err["error"]["type"], "rate_limit_error");
    assert!(err["error"]["message"].is_string());
    let again = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("ok now"));

    let statuses: Vec<u16> = server.records().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 200, 200, 429, 200]);
}

#[tokio::test]
async fn fail_always_and_custom_body() {
    let script = r#"
rules:
  - replies:
      - text: never
        fail: { status: 529, message: "busy" }
  - replies: []
"#;
    let server = MockServer::start(script, None).await.unwrap();
    for _ in 0..2 {
        let r = post(&server, "/v1/messages", &anthropic_req("x", 0, true)).await;
        assert_eq!(r.status(), 529);
        assert!(r.headers().get("retry-after").is_none());
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "overloaded_error");
        assert_eq!(v["error"]["message"], "busy");
    }
    let raw = r#"
rules:
  - replies:
      - fail_once: { status: 500, body: "plain oops" }
        text: fine
"#;
    let server = MockServer::start(raw, None).await.unwrap();
    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, false)).await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.text().await.unwrap(), "plain oops");
    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, false)).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn cut_after_bytes_ends_body_early() {
    let script = r#"
rules:
  - name: cut
    replies:
      - text: "This is a long reply that will be cut somewhere in the middle of the stream."
        text_chunk_chars: 5
        fail: { cut_after_bytes: 200 }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    for (path, body) in [
        ("/v1/messages", anthropic_req("x", 0, true)),
        ("/v1/chat/completions", openai_req("x", 0, true)),
    ] {
        let r = post(&server, path, &body).await;
        assert_eq!(r.status(), 200);
        let bytes = r.bytes().await.unwrap();
        assert_eq!(bytes.len(), 200);
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("message_stop"));
        assert!(!text.contains("[DONE]"));
    }
    let recs = server.records();
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|r| r.status == 200));
}

#[tokio::test]
async fn cut_abort_errors_the_body() {
    let script = r#"
rules:
  - replies:
      - text: "This is a long reply that will be cut somewhere in the middle of the stream."
        fail: { cut_after_bytes: 150, cut_abort: true }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let r = post(&server, "/v1/messages", &anthropic_req("x", 0, true)).await;
    assert_eq!(r.status(), 200);
    let mut stream = r.bytes_stream();
    let mut got = 0;
    let mut errored = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => got += b.len(),
            Err(_) => {
                errored = true;
                break;
            }
        }
    }
    assert!(errored, "body should end with an error");
    assert_eq!(got, 150);
}

#[tokio::test]
async fn chunk_bytes_splits_inside_utf8() {
    let script = r#"
rules:
  - replies:
      - text: "héllo wörld ✓"
        chunk_bytes: 1
"#;
    let server = MockServer::start(script, None).await.unwrap();

    let r = post(&server, "/v1/messages", &anthropic_req("x", 0, true)).await;
    let mut stream = r.bytes_stream();
    let mut all = Vec::new();
    let mut pieces = 0;
    while let Some(b) = stream.next().await {
        let b = b.unwrap();
        pieces += 1;
        all.extend_from_slice(&b);
    }
    assert!(pieces > 1);
    let text = String::from_utf8(all).unwrap();
    let mut out = String::new();
    for (_, data) in parse_sse(&text) {
        let v: Value = serde_json::from_str(&data).unwrap();
        if v["type"] == "content_block_delta" {
            out.push_str(v["delta"]["text"].as_str().unwrap());
        }
    }
    assert_eq!(out, "héllo wörld ✓");

    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, false)).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "héllo wörld ✓");
}

#[tokio::test]
async fn no_rule_and_past_last_reply_are_400() {
    let script = r#"
rules:
  - name: parent
    when: { first_user: "hello" }
    replies:
      - text: a
      - text: b
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let r = post(&server, "/v1/messages", &anthropic_req("goodbye", 0, true)).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("no rule matches"), "{msg}");
    assert!(msg.contains("goodbye"), "{msg}");

    let r = post(
        &server,
        "/v1/chat/completions",
        &openai_req("hello", 2, false),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(r#"rule "parent" has 2 replies; this request is at step 2"#),
        "{msg}"
    );

    let recs = server.records();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].status, 400);
    assert_eq!(recs[0].rule, None);
    assert_eq!(recs[0].wire, Wire::Anthropic);
    assert_eq!(recs[1].status, 400);
    assert_eq!(recs[1].rule.as_deref(), Some("parent"));
    assert_eq!(recs[1].step, 2);
    assert_eq!(recs[1].wire, Wire::Openai);
}

#[tokio::test]
async fn concurrent_conversations_are_independent() {
    let script = r#"
rules:
  - name: conv
    replies:
      - { text: "step zero", latency_ms: 400 }
      - { text: "step one" }
      - { text: "step two", latency_ms: 100 }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let t0 = Instant::now();
    let (r0, r1, r2) = tokio::join!(
        async {
            post(&server, "/v1/messages", &anthropic_req("a", 0, true))
                .await
                .text()
                .await
                .unwrap()
        },
        async {
            let v: Value = post(&server, "/v1/messages", &anthropic_req("b", 1, false))
                .await
                .json()
                .await
                .unwrap();
            (v, t0.elapsed())
        },
        async {
            let v: Value = post(&server, "/v1/chat/completions", &openai_req("c", 2, false))
                .await
                .json()
                .await
                .unwrap();
            v
        },
    );
    assert!(r0.contains("step zero"));
    assert_eq!(r1.0["content"][0]["text"], "step one");
    assert!(r1.1 < Duration::from_millis(400), "step one must not wait");
    assert_eq!(r2["choices"][0]["message"]["content"], "step two");
    assert!(t0.elapsed() >= Duration::from_millis(400));

    let recs = server.records();
    let steps: Vec<usize> = recs.iter().map(|r| r.step).collect();
    assert_eq!(steps, vec![1, 2, 0], "completion order");
    let slow = &recs[2];
    assert!(slow.t_end_ms - slow.t_start_ms >= 400);
}

#[tokio::test]
async fn record_file_has_exact_keys() {
    let path = std::env::temp_dir().join(format!(
        "cadre-mock-record-{}-{}.jsonl",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_file(&path);
    let script = r#"
rules:
  - name: r
    when: { first_user: "go" }
    replies:
      - { text: "a", fail: { cut_after_bytes: 50 } }
      - { text: "b" }
"#;
    let server = MockServer::start(script, Some(path.clone())).await.unwrap();
    post(&server, "/v1/messages", &anthropic_req("go", 0, true))
        .await
        .bytes()
        .await
        .unwrap();
    post(&server, "/v1/chat/completions", &openai_req("go", 1, true))
        .await
        .bytes()
        .await
        .unwrap();
    post(&server, "/v1/messages", &anthropic_req("stop", 0, false))
        .await
        .bytes()
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let expected: BTreeSet<&str> = [
        "t_start_ms",
        "t_end_ms",
        "t_start_us",
        "t_end_us",
        "rule",
        "step",
        "wire",
        "status",
        "body",
        "user_agent",
    ]
    .into();
    for l in &lines {
        let keys: BTreeSet<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, expected);
        assert!(l["t_start_ms"].is_u64());
        assert!(l["t_end_ms"].as_u64() >= l["t_start_ms"].as_u64());
        assert!(l["t_end_us"].as_u64() >= l["t_start_us"].as_u64());
        assert_eq!(
            l["t_start_us"].as_u64().unwrap() / 1000,
            l["t_start_ms"].as_u64().unwrap()
        );
        assert!(l["step"].is_u64());
        assert!(l["status"].is_u64());
        assert!(l["body"].is_object());
    }
    assert_eq!(lines[0]["wire"], "anthropic");
    assert_eq!(lines[0]["rule"], "r");
    assert_eq!(lines[0]["status"], 200);
    assert_eq!(lines[1]["wire"], "openai");
    assert_eq!(lines[1]["step"], 1);
    assert_eq!(lines[1]["body"]["model"], "gpt-test");
    assert!(lines[2]["rule"].is_null());
    assert_eq!(lines[2]["status"], 400);

    let recs = server.records();
    assert_eq!(recs.len(), 3);
    assert_eq!(serde_json::to_value(&recs[1]).unwrap(), lines[1]);
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn latency_and_invalid_json() {
    let script = "rules:\n  - replies:\n      - { text: slow, latency_ms: 250 }\n";
    let server = MockServer::start(script, None).await.unwrap();
    let t = Instant::now();
    let r = post(&server, "/v1/messages", &anthropic_req("x", 0, false)).await;
    assert_eq!(r.status(), 200);
    assert!(t.elapsed() >= Duration::from_millis(250));

    let r = client()
        .post(format!("{}/v1/messages", server.url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(server.records()[1].body, json!("not json"));
}

#[tokio::test]
async fn start_rejects_bad_script() {
    let err = MockServer::start("rules:\n  - replies:\n      - bogus: 1\n", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3"), "{err}");
}

#[tokio::test]
async fn error_after_events_sends_each_wires_error_event_then_ends() {
    let script = r#"
rules:
  - replies:
      - text: "Some text that streams first."
        text_chunk_chars: 5
        fail: { error_after_events: 3, message: "peg-native format" }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let r = post(&server, "/v1/messages", &anthropic_req("x", 0, true)).await;
    assert_eq!(r.status(), 200);
    let events = parse_sse(&r.text().await.unwrap());
    assert_eq!(events.len(), 4);
    let (name, data) = &events[3];
    assert_eq!(name.as_deref(), Some("error"));
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(v["error"]["message"], "peg-native format");
    // llama.cpp's shape on the OpenAI wire: a data line holding `error`, no [DONE].
    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, true)).await;
    let events = parse_sse(&r.text().await.unwrap());
    assert_eq!(events.len(), 4);
    let v: Value = serde_json::from_str(&events[3].1).unwrap();
    assert_eq!(v["error"]["type"], "server_error");
    assert_eq!(v["error"]["code"], 500);
    assert_eq!(v["error"]["message"], "peg-native format");
}

#[tokio::test]
async fn stall_after_events_keeps_the_body_open_and_silent() {
    let script = r#"
rules:
  - replies:
      - text: "Some text that streams first."
        fail: { stall_after_events: 2 }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let r = post(&server, "/v1/messages", &anthropic_req("x", 0, true)).await;
    assert_eq!(r.status(), 200);
    let mut stream = r.bytes_stream();
    let mut got = String::new();
    while !got.contains("ping") {
        let b = stream.next().await.unwrap().unwrap();
        got.push_str(&String::from_utf8_lossy(&b));
    }
    let more = tokio::time::timeout(std::time::Duration::from_millis(300), stream.next()).await;
    assert!(more.is_err(), "nothing after the stall point: {more:?}");
}

#[tokio::test]
async fn ping_after_events_sends_only_pings_after_the_first_events() {
    let script = r#"
rules:
  - replies:
      - text: "Never sent whole."
        fail: { ping_after_events: 1, ping_every_ms: 10 }
"#;
    let server = MockServer::start(script, None).await.unwrap();
    for (path, body) in [
        ("/v1/messages", anthropic_req("x", 0, true)),
        ("/v1/chat/completions", openai_req("x", 0, true)),
    ] {
        let r = post(&server, path, &body).await;
        assert_eq!(r.status(), 200);
        let mut stream = r.bytes_stream();
        let mut got = String::new();
        while got.matches("event: ping").count() < 5 {
            let b = stream.next().await.unwrap().unwrap();
            got.push_str(&String::from_utf8_lossy(&b));
        }
        let events = parse_sse(&got);
        // The first event, then pings alone: no text, no end of message.
        assert!(events[1..].iter().all(|(name, data)| name.as_deref() == Some("ping")
            && data == r#"{"type":"ping"}"#), "{path}: {events:?}");
        assert!(!got.contains("Never sent"), "{got}");
    }
    assert!(
        cadre_mock::parse_script(
            "rules:\n  - replies:\n      - text: x\n        fail: { ping_every_ms: 5 }\n"
        )
        .is_err(),
        "ping_every_ms alone is refused"
    );
}

#[tokio::test]
async fn an_empty_tool_call_id_is_left_out_on_the_openai_wire() {
    let script = r#"
rules:
  - replies:
      - tool_calls: [{ name: Read, id: "", input: { file_path: "a" } }]
"#;
    let server = MockServer::start(script, None).await.unwrap();
    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, true)).await;
    let text = r.text().await.unwrap();
    assert!(text.contains("\"name\":\"Read\""), "{text}");
    assert!(!text.contains("\"id\":\"\""), "{text}");
    let r = post(&server, "/v1/chat/completions", &openai_req("x", 0, false)).await;
    let v: Value = r.json().await.unwrap();
    assert!(
        v["choices"][0]["message"]["tool_calls"][0]
            .get("id")
            .is_none()
    );
}

#[tokio::test]
async fn step_by_requests_counts_answered_requests_not_turns() {
    let script = r#"
rules:
  - name: shrinking
    step_by: requests
    replies:
      - text: "first"
      - text: "second"
        fail_once: { status: 500 }
      - text: "third"
"#;
    let server = MockServer::start(script, None).await.unwrap();
    // The same request (no assistant turns) three times, plus a retry of
    // the failed one: the failure does not advance the step.
    let body = anthropic_req("go", 0, false);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let resp = post(&server, "/v1/messages", &body).await;
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.unwrap();
        seen.push((status, v["content"][0]["text"].as_str().map(str::to_string)));
    }
    assert_eq!(
        seen,
        vec![
            (200, Some("first".into())),
            (500, None),
            (200, Some("second".into())),
            (200, Some("third".into())),
        ]
    );
    let steps: Vec<usize> = server.records().iter().map(|r| r.step).collect();
    assert_eq!(steps, vec![0, 1, 1, 2]);
}
