//! A second attack round on keys, config and model streams, through the
//! binary: servers that keep a stream alive without ever progressing, and
//! project files that pick which key is sent where.

use crate::common;

use std::time::Duration;

use common::{Harness, Wire, stderr, stdout};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A one-second idle timeout in the user's config.
fn short_idle_timeout(h: &Harness) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[limits]\nstream_idle_timeout_s = 1\n",
    )
    .unwrap();
}

/// Reads one request's head and body; false when the connection ends first.
async fn read_request(sock: &mut tokio::net::TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if sock.read(&mut byte).await.unwrap_or(0) == 0 {
            return false;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body).await.is_ok()
}

/// A server that answers every request with `head`, then sends `piece` every
/// 300 ms (well inside the 1 s idle timeout) for two minutes: bytes keep
/// coming, a reply never does.
async fn trickle_server(head: &'static str, piece: &'static [u8]) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                if !read_request(&mut sock).await {
                    return;
                }
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..400 {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    if sock.write_all(piece).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
const JSON_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
const ERROR_HEAD: &str =
    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";

/// Runs `exec` against a trickling server and checks it gives up on its own,
/// naming the idle timeout, instead of waiting as long as bytes come.
async fn gives_up_on(head: &'static str, piece: &'static [u8]) {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    short_idle_timeout(&h);
    let url = trickle_server(head, piece).await;
    // The limit is a safety net for a hang, far above what the run needs.
    let out = tokio::time::timeout(
        Duration::from_secs(100),
        h.command(&["exec", "hello"], &[("CADRE_BASE_URL", &url)])
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .expect("cadre gave up on a stream that never progresses")
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).trim().is_empty());
    let err = stderr(&out);
    assert!(err.contains("stream_idle_timeout_s"), "{err}");
}

#[tokio::test]
async fn an_endless_stream_of_sse_comments_is_a_stall() {
    gives_up_on(SSE_HEAD, b": keep-alive\n").await;
}

#[tokio::test]
async fn an_event_trickled_a_byte_at_a_time_forever_is_a_stall() {
    gives_up_on(SSE_HEAD, b"d").await;
}

#[tokio::test]
async fn blank_lines_forever_are_a_stall() {
    gives_up_on(SSE_HEAD, b"\n").await;
}

#[tokio::test]
async fn a_json_reply_trickled_forever_is_a_stall() {
    gives_up_on(JSON_HEAD, b" ").await;
}

#[tokio::test]
async fn an_error_body_trickled_forever_does_not_hang() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    short_idle_timeout(&h);
    let url = trickle_server(ERROR_HEAD, b" ").await;
    let out = tokio::time::timeout(
        Duration::from_secs(100),
        h.command(&["exec", "hello"], &[("CADRE_BASE_URL", &url)])
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .expect("cadre gave up on an error body that never ends")
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("400"), "{}", stderr(&out));
}

const ANTHROPIC_KEY: &str = "sk-ant-attack-KEY-7d1e9c3b";
const OPENAI_KEY: &str = "sk-openai-attack-KEY-2a6f0e";

/// A server that records every request (head and body) and answers 500.
async fn witness() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let rec = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let rec = rec.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                rec.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&got).into_owned());
                let _ = sock
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn a_project_provider_cannot_send_the_other_key_to_the_users_server() {
    let h = Harness::new("rules: []\n", Wire::OpenAi).await;
    let (url, seen) = witness().await;
    // The user's own OpenAI-compatible server, with the OpenAI key for it.
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        format!("provider = \"openai\"\nbase_url = \"{url}/v1\"\n"),
    )
    .unwrap();
    h.write(".cadre/config.toml", "provider = \"anthropic\"\n");
    let out = h
        .command(
            // Trusted: the rule binding a project's provider to a
            // server of its own holds whatever the trust.
            &["exec", "--trust", "hello"],
            &[
                ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                ("OPENAI_API_KEY", OPENAI_KEY),
            ],
        )
        .env_remove("CADRE_PROVIDER")
        .env_remove("CADRE_BASE_URL")
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "{}", stderr(&out));
    for req in &seen {
        assert!(
            !req.contains(ANTHROPIC_KEY),
            "the Anthropic key went to the user's OpenAI server: {req}"
        );
        assert!(req.contains(OPENAI_KEY), "{req}");
    }
    assert!(
        stderr(&out).contains("provider ignored"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_project_provider_with_the_users_env_base_url_is_ignored_too() {
    let h = Harness::new("rules: []\n", Wire::OpenAi).await;
    let (url, seen) = witness().await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), "provider = \"openai\"\n").unwrap();
    h.write(".cadre/config.toml", "provider = \"anthropic\"\n");
    let base = format!("{url}/v1");
    let out = h
        .command(
            // Trusted: the rule binding a project's provider to a
            // server of its own holds whatever the trust.
            &["exec", "--trust", "hello"],
            &[
                ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                ("OPENAI_API_KEY", OPENAI_KEY),
                ("CADRE_BASE_URL", &base),
            ],
        )
        .env_remove("CADRE_PROVIDER")
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "{}", stderr(&out));
    for req in &seen {
        assert!(!req.contains(ANTHROPIC_KEY), "{req}");
    }
    assert!(
        stderr(&out).contains("provider ignored"),
        "{}",
        stderr(&out)
    );
}

/// A server that answers every request with `response`, whole.
async fn answering_server(response: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let response = response.clone();
            tokio::spawn(async move {
                if read_request(&mut sock).await {
                    let _ = sock.write_all(response.as_bytes()).await;
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn a_key_echoed_where_an_error_message_is_cut_leaves_no_part_of_it() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    // Not JSON: the message is the body's first 500 characters, and the key
    // straddles that cut.
    let body = format!("{}{ANTHROPIC_KEY} echoed", "x".repeat(490));
    let url = answering_server(format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
    .await;
    let out = h
        .cadre_env(
            &["exec", "--json", "hello"],
            &[
                ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                ("CADRE_BASE_URL", &url),
            ],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("400"), "{all}");
    assert!(
        !all.contains(&ANTHROPIC_KEY[..10]),
        "part of the key shown: {all}"
    );
}

#[tokio::test]
async fn a_key_in_a_cut_stream_error_event_leaves_no_part_of_it() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let data = format!("{}{ANTHROPIC_KEY}", "y".repeat(490));
    let body = format!("event: error\ndata: {data}\n\n");
    let url = answering_server(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
    .await;
    let out = h
        .cadre_env(
            &["exec", "--json", "hello"],
            &[
                ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                ("CADRE_BASE_URL", &url),
            ],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        !all.contains(&ANTHROPIC_KEY[..10]),
        "part of the key shown: {all}"
    );
}

#[tokio::test]
async fn a_key_in_a_cut_redirect_location_leaves_no_part_of_it() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let location = format!("http://127.0.0.1:9/{}{ANTHROPIC_KEY}", "z".repeat(171));
    let url = answering_server(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    ))
    .await;
    let out = h
        .cadre_env(
            &["exec", "--json", "hello"],
            &[
                ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                ("CADRE_BASE_URL", &url),
            ],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("redirect"), "{all}");
    assert!(
        !all.contains(&ANTHROPIC_KEY[..10]),
        "part of the key shown: {all}"
    );
}

#[tokio::test]
async fn max_tool_calls_per_child_zero_is_refused_naming_file_and_key() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(
        ".cadre/config.toml",
        "[subagents]\nmax_tool_calls_per_child = 0\n",
    );
    let out = h.cadre(&["agents", "list"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("config.toml") && err.contains("subagents.max_tool_calls_per_child"),
        "{err}"
    );
}

#[tokio::test]
async fn an_upper_case_scheme_in_the_base_url_is_accepted() {
    let script = "rules:\n  - name: hi\n    replies:\n      - text: \"hello back\"\n";
    let h = Harness::new(script, Wire::Anthropic).await;
    let url = h.mock.url().replacen("http://", "HTTP://", 1);
    let out = h
        .cadre_env(&["exec", "hello"], &[("CADRE_BASE_URL", &url)])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello back"), "{}", stdout(&out));
}

#[tokio::test]
async fn a_base_url_flag_with_userinfo_is_a_usage_error() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let out = h
        .cadre(&[
            "exec",
            "--base-url",
            "http://127.0.0.1:9@192.0.2.2/",
            "hello",
        ])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("user name or password"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn an_event_stream_content_type_in_other_case_is_read_as_sse() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"case-insensitive\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let url = answering_server(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
    .await;
    let out = h
        .cadre_env(&["exec", "hello"], &[("CADRE_BASE_URL", &url)])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("case-insensitive"),
        "{}",
        stdout(&out)
    );
}

/// Every byte of every file under `dir`, lossily as text.
fn all_files_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.push_str(&all_files_text(&p));
        } else if ft.is_file() {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[tokio::test]
async fn a_server_echoing_the_key_in_its_reply_does_not_put_it_in_the_logs() {
    let script = format!(
        "rules:\n  - name: echo\n    replies:\n      - text: \"your key is {ANTHROPIC_KEY} ok\"\n"
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let out = h
        .cadre_env(
            &["exec", "--json", "hello"],
            &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = all_files_text(&h.data_dir());
    assert!(files.contains("your key is"), "no session log written");
    assert!(
        !files.contains(ANTHROPIC_KEY),
        "the key is in the data directory"
    );
}
