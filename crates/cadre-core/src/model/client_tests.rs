//! The client's retries against a real `cadre-mock` server over HTTP.

use std::time::Duration;

use cadre_mock::{MockServer, Record};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::model::Message;

const KEY: &str = "sk-test-0123456789";

async fn mock(script: &str) -> MockServer {
    MockServer::start(script, None).await.unwrap()
}

fn client(server: &MockServer, provider: Provider, max_attempts: u32) -> ModelClient {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ModelClient::new(ClientConfig {
        provider,
        base_url: server.url(),
        api_key: Some(KEY.into()),
        model: "m".into(),
        max_tokens: 100,
        max_attempts,
        stream_idle_timeout: Duration::from_secs(30),
        request_deadline: Duration::from_secs(600),
        first_byte_timeout: std::time::Duration::from_secs(60),
        models: Default::default(),
    })
    .unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: "sys".into(),
        messages: vec![Message::user_text("go")],
        tools: Default::default(),
        max_tokens: 100,
        cache_after: None,
        effort: None,
        web_search: None,
    }
}

/// What one `stream` call gave: the result and every delta, in order.
struct Outcome {
    result: Result<ModelResponse, ModelError>,
    deltas: Vec<StreamDelta>,
}

impl Outcome {
    fn retries(&self) -> Vec<(u32, Option<u16>, u64, String, bool)> {
        self.deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Retrying {
                    attempt,
                    status,
                    wait_ms,
                    reason,
                    discarded_text,
                } => Some((*attempt, *status, *wait_ms, reason.clone(), *discarded_text)),
                _ => None,
            })
            .collect()
    }

    fn text(&self) -> String {
        match &self.result {
            Ok(r) => r.message.text(),
            Err(e) => panic!("expected a reply, got {e}"),
        }
    }
}

async fn send(client: &ModelClient) -> Outcome {
    let mut deltas = Vec::new();
    let result = client
        .stream(
            &request(),
            &mut |d| deltas.push(d),
            &CancellationToken::new(),
        )
        .await;
    Outcome { result, deltas }
}

fn statuses(records: &[Record]) -> Vec<u16> {
    records.iter().map(|r| r.status).collect()
}

#[tokio::test]
async fn a_server_error_is_retried_after_the_base_backoff() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"hello\"\n        fail_once: { status: 500 }\n",
    )
    .await;
    let out = send(&client(&server, Provider::Anthropic, 3)).await;
    assert_eq!(out.text(), "hello");
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    let (attempt, status, wait_ms, reason, discarded) = &retries[0];
    assert_eq!((*attempt, *status), (2, Some(500)));
    assert_eq!(*wait_ms, BASE_BACKOFF.as_millis() as u64);
    assert!(reason.starts_with("HTTP 500"), "{reason}");
    assert!(!discarded);
    assert_eq!(statuses(&server.records()), [500, 200]);
}

#[tokio::test]
async fn retry_after_from_the_server_replaces_the_backoff() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"ok\"\n        fail_once: { status: 429, retry_after_s: 0 }\n",
    )
    .await;
    let out = send(&client(&server, Provider::Anthropic, 3)).await;
    assert_eq!(out.text(), "ok");
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!((retries[0].1, retries[0].2), (Some(429), 0));
}

#[tokio::test]
async fn tries_stop_at_max_attempts_with_growing_backoff() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"never\"\n        fail: { status: 503, message: \"busy\" }\n",
    )
    .await;
    let out = send(&client(&server, Provider::Anthropic, 3)).await;
    match &out.result {
        Err(ModelError::RetriesExhausted {
            status,
            attempts,
            message,
        }) => {
            assert_eq!((*status, *attempts), (503, 3));
            assert!(message.contains("busy"), "{message}");
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    let waits: Vec<u64> = out.retries().iter().map(|r| r.2).collect();
    assert_eq!(waits, [200, 400]);
    assert_eq!(statuses(&server.records()), [503, 503, 503]);
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"never\"\n        fail: { status: 400, message: \"bad request\" }\n",
    )
    .await;
    let out = send(&client(&server, Provider::Anthropic, 3)).await;
    match &out.result {
        Err(ModelError::Status { status, message }) => {
            assert_eq!(*status, 400);
            assert!(message.contains("bad request"), "{message}");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    assert!(out.retries().is_empty());
    assert_eq!(server.records().len(), 1);
}

#[tokio::test]
async fn an_error_mid_stream_is_retried_and_the_streamed_text_discarded() {
    // message_start, ping, content_block_start and one text delta, then an overloaded error event.
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"hello world, all of it\"\n        text_chunk_chars: 5\n        fail_once: { error_after_events: 4 }\n",
    )
    .await;
    let out = send(&client(&server, Provider::Anthropic, 3)).await;
    assert_eq!(out.text(), "hello world, all of it");
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(
        retries[0].4,
        "the first try's text is announced as discarded"
    );
    assert!(retries[0].3.contains("overloaded"), "{}", retries[0].3);
    // Text deltas: "hello" from the failed try, then the whole reply again.
    let texts: Vec<&str> = out
        .deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.first(), Some(&"hello"));
    assert_eq!(texts[1..].concat(), "hello world, all of it");
}

#[tokio::test]
async fn a_stream_that_ends_early_is_retried() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"whole\"\n        fail_once: { cut_after_bytes: 40 }\n",
    )
    .await;
    let out = send(&client(&server, Provider::OpenAI, 2)).await;
    assert_eq!(out.text(), "whole");
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0].1, None, "no HTTP status: the stream broke");
    assert_eq!(server.records().len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_is_abandoned_after_the_idle_timeout() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"after the stall\"\n        fail_once: { stall_after_events: 1 }\n",
    )
    .await;
    let mut c = client(&server, Provider::Anthropic, 2);
    c.config.stream_idle_timeout = Duration::from_millis(300);
    let out = send(&c).await;
    assert_eq!(out.text(), "after the stall");
    let retries = out.retries();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(
        retries[0].3.contains("stream_idle_timeout_s"),
        "{}",
        retries[0].3
    );
}

#[tokio::test]
async fn the_key_never_appears_in_a_retry_reason() {
    let script = format!(
        "rules:\n  - name: r\n    replies:\n      - text: \"ok\"\n        fail_once: {{ status: 500, message: \"echo {KEY}\" }}\n"
    );
    let server = mock(&script).await;
    let out = send(&client(&server, Provider::Anthropic, 2)).await;
    assert_eq!(out.text(), "ok");
    let reason = &out.retries()[0].3;
    assert!(!reason.contains(KEY), "{reason}");
    assert!(reason.contains("[redacted]"), "{reason}");
}

#[tokio::test]
async fn cancelling_during_the_backoff_ends_the_call() {
    let server = mock(
        "rules:\n  - name: r\n    replies:\n      - text: \"never\"\n        fail: { status: 529, retry_after_s: 100 }\n",
    )
    .await;
    let c = client(&server, Provider::Anthropic, 5);
    let cancel = CancellationToken::new();
    let mut retries = 0;
    let result = c
        .stream(
            &request(),
            &mut |d| {
                if matches!(d, StreamDelta::Retrying { .. }) {
                    retries += 1;
                    cancel.cancel();
                }
            },
            &cancel,
        )
        .await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert_eq!(retries, 1);
    assert_eq!(server.records().len(), 1);
}
