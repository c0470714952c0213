//! The tool-pairing check every end-to-end test runs on the requests the
//! mock recorded (see `common::Harness`): it accepts what the real APIs
//! accept and names each way a call can lose, double or misplace its result.

use crate::common;

use common::{Harness, Wire, tool_pairing_errors};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn anthropic_call(ids: &[&str]) -> Value {
    let mut content = vec![json!({ "type": "text", "text": "calling" })];
    content.extend(
        ids.iter()
            .map(|id| json!({ "type": "tool_use", "id": id, "name": "Read", "input": {} })),
    );
    json!({ "role": "assistant", "content": content })
}

fn anthropic_results(ids: &[&str]) -> Value {
    let content: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "type": "tool_result", "tool_use_id": id, "content": "ok" }))
        .collect();
    json!({ "role": "user", "content": content })
}

fn openai_call(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "type": "function", "function": { "name": "Read", "arguments": "{}" } }))
        .collect();
    json!({ "role": "assistant", "content": null, "tool_calls": calls })
}

fn openai_result(id: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": id, "content": "ok" })
}

fn user(text: &str) -> Value {
    json!({ "role": "user", "content": text })
}

fn body(messages: Vec<Value>) -> Value {
    json!({ "model": "m", "messages": messages })
}

#[test]
fn well_formed_conversations_pass_on_both_wires() {
    let anthropic = body(vec![
        user("go"),
        anthropic_call(&["a", "b"]),
        {
            let mut m = anthropic_results(&["b", "a"]);
            // Text after the results is allowed (a notice joining the message).
            m["content"]
                .as_array_mut()
                .unwrap()
                .push(json!({ "type": "text", "text": "and more" }));
            m
        },
        json!({ "role": "assistant", "content": [{ "type": "text", "text": "done" }] }),
        user("again"),
    ]);
    assert_eq!(tool_pairing_errors(&anthropic), Vec::<String>::new());
    let openai = body(vec![
        json!({ "role": "system", "content": "sys" }),
        user("go"),
        openai_call(&["a", "b"]),
        openai_result("b"),
        openai_result("a"),
        user("a notice"),
        json!({ "role": "assistant", "content": "done" }),
    ]);
    assert_eq!(tool_pairing_errors(&openai), Vec::<String>::new());
}

#[test]
fn each_broken_pairing_is_named() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "a call without its result",
            body(vec![
                user("go"),
                anthropic_call(&["a", "b"]),
                anthropic_results(&["a"]),
            ]),
            "call \"b\" has 0 results",
        ),
        (
            "a result given twice",
            body(vec![
                user("go"),
                anthropic_call(&["a"]),
                anthropic_results(&["a", "a"]),
            ]),
            "call \"a\" has 2 results",
        ),
        (
            "a result for a call never made",
            body(vec![
                user("go"),
                anthropic_call(&["a"]),
                anthropic_results(&["a", "z"]),
            ]),
            "result for \"z\"",
        ),
        (
            "results a message too late",
            body(vec![
                user("go"),
                anthropic_call(&["a"]),
                user("interjection"),
                anthropic_results(&["a"]),
            ]),
            "call \"a\" has 0 results",
        ),
        (
            "text before the results",
            body(vec![
                user("go"),
                anthropic_call(&["a"]),
                json!({ "role": "user", "content": [
                    { "type": "text", "text": "first" },
                    { "type": "tool_result", "tool_use_id": "a", "content": "ok" },
                ] }),
            ]),
            "a tool_result after other content",
        ),
        (
            "calls as the last message",
            body(vec![user("go"), anthropic_call(&["a"])]),
            "are the last message",
        ),
        (
            "one call id used twice",
            body(vec![
                user("go"),
                anthropic_call(&["a", "a"]),
                anthropic_results(&["a"]),
            ]),
            "used twice",
        ),
        (
            "an OpenAI call without its tool message",
            body(vec![
                user("go"),
                openai_call(&["a", "b"]),
                openai_result("a"),
                user("next"),
            ]),
            "call \"b\" has 0 results",
        ),
        (
            "an OpenAI tool message after a user message",
            body(vec![
                user("go"),
                openai_call(&["a"]),
                user("interjection"),
                openai_result("a"),
            ]),
            "result for \"a\"",
        ),
    ];
    for (what, body, expected) in cases {
        let errors = tool_pairing_errors(&body);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{what}: expected {expected:?} in {errors:?}"
        );
    }
}

/// Posts `body` to the mock's Anthropic endpoint as a client would.
async fn post(h: &Harness, body: &Value) {
    let addr = h.mock.url().trim_start_matches("http://").to_string();
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let text = body.to_string();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    sock.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    sock.read_to_end(&mut response).await.unwrap();
}

#[tokio::test]
async fn the_harness_refuses_a_recorded_request_with_a_broken_pairing() {
    let h = Harness::new("rules:\n  - replies:\n      - text: hi\n", Wire::Anthropic).await;
    post(&h, &body(vec![user("go")])).await;
    assert_eq!(h.records().len(), 1, "a well-formed request passes");
    post(
        &h,
        &body(vec![user("go"), anthropic_call(&["a"]), user("no result")]),
    )
    .await;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.records()));
    let message = caught.expect_err("the broken request is refused");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("request 1"), "{message}");
    assert!(message.contains("call \"a\" has 0 results"), "{message}");
    // This test broke the pairing on purpose; dropping the harness must not fail it.
    h.allow_broken_pairing();
}
