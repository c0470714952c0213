//! Model streams through the binary: stalls (idle timeout), retries of broken
//! streams and stale kept-alive connections, oversized events, tool-call ids
//! unique per session, and the User-Agent header.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{BOTH_WIRES, Harness, Wire, events, stderr, stdout, tool_results};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A one-second idle timeout in the user's config (tests only; the default is 300 s).
fn short_idle_timeout(h: &Harness) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[limits]\nstream_idle_timeout_s = 1\n",
    )
    .unwrap();
}

fn of_type<'a>(evs: &'a [Value], t: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["type"] == t).collect()
}

fn session_log(h: &Harness, evs: &[Value]) -> Vec<Value> {
    let id = evs[0]["session_id"].as_str().unwrap();
    let path = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn assistant_records(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|r| r["type"] == "assistant").collect()
}

const LONG_TEXT: &str =
    "This reply is long enough to be streamed in many small pieces before it breaks.";

#[tokio::test]
async fn a_stall_before_the_headers_is_retried_and_the_run_succeeds() {
    let script = r#"
rules:
  - name: stuck
    replies:
      - text: "Recovered."
        fail_once: { stall: true }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        short_idle_timeout(&h);
        let out = h.cadre(&["exec", "--json", "hello"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let retries = of_type(&evs, "retrying");
        assert_eq!(retries.len(), 1, "{wire:?}: {evs:?}");
        assert!(
            retries[0]["reason"]
                .as_str()
                .unwrap()
                .contains("stream_idle_timeout_s"),
            "{:?}",
            retries[0]
        );
        assert_eq!(retries[0]["discarded_text"], false);
        let end = of_type(&evs, "turn_ended")[0];
        assert_eq!(end["status"], "completed");
        assert_eq!(end["final_text"], "Recovered.");
    }
}

#[tokio::test]
async fn a_stall_mid_body_discards_the_streamed_text_and_is_recorded_once() {
    let script = format!(
        r#"
rules:
  - name: stuck
    replies:
      - text: "{LONG_TEXT}"
        text_chunk_chars: 5
        fail_once: {{ stall_after_events: 6 }}
"#
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        short_idle_timeout(&h);
        let out = h.cadre(&["exec", "--json", "hello"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let retries = of_type(&evs, "retrying");
        assert_eq!(retries.len(), 1, "{wire:?}");
        assert_eq!(retries[0]["discarded_text"], true, "{:?}", retries[0]);
        // The text streamed after the retry is the whole reply, once.
        let pos = evs.iter().position(|e| e["type"] == "retrying").unwrap();
        let after: String = evs[pos..]
            .iter()
            .filter(|e| e["type"] == "text_delta")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(after, LONG_TEXT, "{wire:?}");
        let log = session_log(&h, &evs);
        let assistants = assistant_records(&log);
        assert_eq!(assistants.len(), 1, "{wire:?}: {log:?}");
        assert_eq!(
            assistants[0]["message"]["content"][0]["text"], LONG_TEXT,
            "{wire:?}"
        );
        assert_eq!(of_type(&evs, "assistant_message").len(), 1);
    }
}

#[tokio::test]
async fn a_reply_whose_last_event_came_is_used_though_the_body_never_ends() {
    // Every event of each reply is sent, then the connection stays open with
    // the body unfinished: the reply is whole at its last event
    // (`message_stop`, or `[DONE]` after a finish reason), so the turn goes on
    // at once instead of waiting out the idle timeout and retrying.
    let script = r#"
rules:
  - name: open
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "notes.txt" } }]
        fail: { stall_after_events: 1000 }
      - text: "Read it."
        fail: { stall_after_events: 1000 }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        short_idle_timeout(&h);
        h.write("notes.txt", "a note\n");
        let out = h.cadre(&["exec", "--json", "read the notes"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        assert!(of_type(&evs, "retrying").is_empty(), "{wire:?}: {evs:?}");
        let end = of_type(&evs, "turn_ended")[0];
        assert_eq!(end["status"], "completed", "{wire:?}");
        assert_eq!(end["final_text"], "Read it.", "{wire:?}");
        // A stalled reply's record is kept once cadre has gone and the mock
        // sees the connection close, which may come just after cadre exits.
        common::wait_until("the mock keeps both records", || {
            h.mock.records().len() >= 2
        })
        .await;
        assert_eq!(h.mock.records().len(), 2, "{wire:?}: one request per reply");
        let results = tool_results(&common::last_body(&h));
        assert!(results[0].0.contains("a note"), "{wire:?}: {results:?}");
    }
}

#[tokio::test]
async fn when_every_try_stalls_exec_ends_with_a_clear_error() {
    let script = r#"
rules:
  - name: dead
    replies:
      - text: "never"
        fail: { stall_after_events: 2 }
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    short_idle_timeout(&h);
    let out = h.cadre(&["exec", "hello"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("gave up after 6 tries"), "{err}");
    assert!(err.contains("stream_idle_timeout_s"), "{err}");
    assert!(stdout(&out).trim().is_empty());
}

#[tokio::test]
async fn a_stalled_foreground_child_retries_and_reports() {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look", prompt: "child-task", subagent_type: "finder" } }
      - text: "Parent done."
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "Child report: all found."
        text_chunk_chars: 4
        fail_once: { stall_after_events: 5 }
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    short_idle_timeout(&h);
    h.write(
        ".cadre/agents/finder.md",
        "---\nname: finder\ndescription: Finds things.\ntools: Read\n---\nYou are FINDER.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let end = evs.iter().rfind(|e| e["type"] == "turn_ended").unwrap();
    assert_eq!(end["final_text"], "Parent done.");
    let child_end = of_type(&evs, "subagent_ended");
    assert_eq!(child_end.len(), 1);
    assert_eq!(child_end[0]["status"], "completed", "{:?}", child_end[0]);
    let last = common::last_body(&h);
    let results = tool_results(&last);
    assert!(
        results[0].0.contains("Child report: all found."),
        "{results:?}"
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_is_retried_and_the_reply_recorded_once() {
    let script = format!(
        r#"
rules:
  - name: peg
    replies:
      - text: "{LONG_TEXT}"
        text_chunk_chars: 5
        fail_once:
          error_after_events: 5
          message: "The model produced output that does not match the expected peg-native format"
"#
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        let out = h.cadre(&["exec", "--json", "hello"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let retries = of_type(&evs, "retrying");
        assert_eq!(retries.len(), 1, "{wire:?}");
        assert!(
            retries[0]["reason"]
                .as_str()
                .unwrap()
                .contains("peg-native"),
            "{:?}",
            retries[0]
        );
        assert_eq!(retries[0]["discarded_text"], true);
        let log = session_log(&h, &evs);
        assert_eq!(assistant_records(&log).len(), 1, "{wire:?}: {log:?}");
        let retries: Vec<&Value> = log.iter().filter(|r| r["type"] == "retry").collect();
        assert_eq!(retries.len(), 1, "the retry is in the session log: {log:?}");
        assert!(
            retries[0]["reason"]
                .as_str()
                .unwrap()
                .contains("peg-native")
        );
        assert_eq!(retries[0]["discarded_text"], true);
        assert_eq!(h.records().len(), 2);
        assert_eq!(of_type(&evs, "turn_ended")[0]["final_text"], LONG_TEXT);
    }
}

#[tokio::test]
async fn a_cut_stream_is_retried_and_the_run_succeeds() {
    let script = format!(
        r#"
rules:
  - name: cut
    replies:
      - text: "{LONG_TEXT}"
        text_chunk_chars: 5
        fail_once: {{ cut_after_bytes: 400, cut_abort: true }}
"#
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        let out = h.cadre(&["exec", "hello"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), LONG_TEXT);
        assert_eq!(h.records().len(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn an_oversized_event_fails_clearly_without_retrying() {
    let script = r#"
rules:
  - name: huge
    replies:
      - text: "never"
        fail: { oversized_event_bytes: 20000000 }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        let out = h.cadre(&["exec", "hello"]).await;
        assert_eq!(out.status.code(), Some(1), "{wire:?}");
        let err = stderr(&out);
        assert!(err.contains("exceeds 16777216 bytes"), "{wire:?}: {err}");
        // The mock records a request when its reply ends: here, once it sees
        // that cadre hung up, which may be after cadre has exited.
        common::wait_until("the request is recorded", || !h.mock.records().is_empty()).await;
        assert_eq!(h.records().len(), 1, "not retried");
    }
}

#[tokio::test]
async fn requests_carry_the_cadre_user_agent() {
    let script = "rules:\n  - replies:\n      - text: hi\n";
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        let out = h.cadre(&["exec", "hello"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let ua = h.records()[0].user_agent.clone();
        assert_eq!(
            ua.as_deref(),
            Some(concat!("cadre/", env!("CARGO_PKG_VERSION"))),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn an_https_endpoint_without_usable_ca_roots_says_so() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let out = h
        .cadre_env(
            &["exec", "hello"],
            &[
                ("CADRE_BASE_URL", "https://127.0.0.1:9"),
                ("SSL_CERT_FILE", "/nonexistent/ca.pem"),
                ("SSL_CERT_DIR", "/nonexistent"),
            ],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("CA root certificates"), "{err}");
}

/// Tool calls without ids (as some OpenAI-compatible servers send them), and
/// two calls sharing an id in one reply, get ids unique in the session; the
/// results go back under the ids recorded, before and after a resume.
#[tokio::test]
async fn tool_call_ids_are_unique_in_the_session_across_replies_and_resume() {
    let script = r#"
rules:
  - name: idless
    replies:
      - tool_calls:
          - { name: Read, id: "", input: { file_path: "a.txt" } }
      - tool_calls:
          - { name: Read, id: "", input: { file_path: "b.txt" } }
      - tool_calls:
          - { name: Read, id: "dup", input: { file_path: "a.txt" } }
          - { name: Read, id: "dup", input: { file_path: "b.txt" } }
      - text: "Read them."
      - text: "Still here."
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    h.write("a.txt", "alpha\n");
    h.write("b.txt", "bravo\n");
    let out = h.cadre(&["exec", "--json", "read"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let out = h.cadre(&["exec", "--resume", &id, "again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Still here.");

    // The request after the resume carries the whole history.
    let body = common::last_body(&h);
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            calls.push((
                c["id"].as_str().unwrap().to_string(),
                c["function"]["arguments"].as_str().unwrap().to_string(),
            ));
        }
        if m["role"] == "tool" {
            results.push((
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert_eq!(calls.len(), 4, "{calls:?}");
    let unique: std::collections::HashSet<&String> = calls.iter().map(|c| &c.0).collect();
    assert_eq!(unique.len(), 4, "ids must be unique: {calls:?}");
    assert!(calls.iter().all(|c| !c.0.is_empty()));
    assert_eq!(results.len(), 4, "{results:?}");
    for (call_id, args) in &calls {
        let matching: Vec<&(String, String)> = results.iter().filter(|r| &r.0 == call_id).collect();
        assert_eq!(matching.len(), 1, "{call_id}: {results:?}");
        let want = if args.contains("a.txt") {
            "alpha"
        } else {
            "bravo"
        };
        assert!(matching[0].1.contains(want), "{call_id}: {matching:?}");
    }
}

/// Answers HTTP/1.1 requests with whole JSON replies (OpenAI wire). The first
/// connection answers one request keep-alive, then closes when the next
/// request arrives on it; later connections answer normally.
async fn stale_connection_server() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (conns, reqs) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let n = conns.fetch_add(1, Ordering::SeqCst);
            let reqs = reqs.clone();
            tokio::spawn(async move {
                let mut served = 0;
                while let Some(body) = read_request(&mut sock).await {
                    reqs.fetch_add(1, Ordering::SeqCst);
                    if n == 0 && served == 1 {
                        // The server closed this kept-alive connection.
                        return;
                    }
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    let has_result = v["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|m| m["role"] == "tool");
                    let reply = if has_result {
                        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}"#.to_string()
                    } else {
                        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"a.txt\"}"}}]},"finish_reason":"tool_calls"}]}"#.to_string()
                    };
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
                        reply.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                    served += 1;
                }
            });
        }
    });
    (url, connections, requests)
}

/// Reads one request's headers and body; None when the connection ends.
async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if sock.read(&mut byte).await.ok()? == 0 {
            return None;
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
    sock.read_exact(&mut body).await.ok()?;
    Some(body)
}

#[tokio::test]
async fn a_kept_alive_connection_the_server_closed_is_retried_at_once() {
    let (url, connections, requests) = stale_connection_server().await;
    let h = Harness::new("rules: []\n", Wire::OpenAi).await;
    h.write("a.txt", "alpha\n");
    // A window of its own: cadre asks this server nothing but chats.
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[models.openai.\"mock-model\"]\ncontext_window = 128000\n",
    )
    .unwrap();
    let out = h
        .cadre_env(&["exec", "--json", "read a"], &[("CADRE_BASE_URL", &url)])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(of_type(&evs, "turn_ended")[0]["final_text"], "Done.");
    let retries = of_type(&evs, "retrying");
    assert_eq!(retries.len(), 1, "{evs:?}");
    assert_eq!(retries[0]["wait_ms"], 0, "retried at once");
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    assert_eq!(connections.load(Ordering::SeqCst), 2, "a new connection");
}

/// The first reply's id-less call completes; the second reply's id-less call
/// is cut by SIGKILL. On resume the second is `unknown`: the first's result
/// is not taken for it.
#[tokio::test]
async fn an_id_less_call_cut_by_sigkill_resumes_as_unknown() {
    let script = r#"
rules:
  - name: idless
    replies:
      - tool_calls:
          - { name: Bash, id: "", input: { command: "echo first > first.txt" } }
      - tool_calls:
          - { name: Bash, id: "", input: { command: "echo $$ >> runs.txt; sleep 30" } }
      - text: "Resumed fine."
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    let mut run = h.spawn_json(&["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    let started = run.wait_for("session_started", 1).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        // The file exists before the shell has written its pid into it.
        while !std::fs::read_to_string(h.path("runs.txt"))
            .is_ok_and(|t| t.ends_with('\n') && t.trim().parse::<i32>().is_ok())
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the second command started");
    run.kill().await;
    let pid: i32 = h.read("runs.txt").trim().parse().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };

    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--resume",
            &id,
            "--accept-unknown",
            "continue",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let resumed = of_type(&evs, "session_resumed");
    assert_eq!(
        resumed[0]["unknown_calls"].as_array().unwrap().len(),
        1,
        "{:?}",
        resumed[0]
    );
    let results = tool_results(&common::last_body(&h));
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].1, "{results:?}");
    assert!(
        results[1].1 && results[1].0.starts_with("unknown"),
        "{results:?}"
    );
    assert_eq!(h.read("runs.txt").lines().count(), 1, "nothing was re-run");
}

/// The interactive front end streams text as it comes; text of a failed try
/// is marked as cut off and the reply is shown again whole.
#[tokio::test]
async fn interactive_marks_text_discarded_by_a_retry() {
    use tokio::io::AsyncBufReadExt;
    let script = format!(
        r#"
rules:
  - name: peg
    replies:
      - text: "{LONG_TEXT}"
        text_chunk_chars: 5
        fail_once: {{ error_after_events: 6 }}
"#
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let mut child = h
        .command(&[], &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"hello\n").await.unwrap();
    let mut seen: Vec<String> = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let done = line.contains(LONG_TEXT);
            seen.push(line);
            if done {
                break;
            }
        }
    })
    .await
    .expect("the reply was shown");
    stdin.write_all(b"/exit\n").await.unwrap();
    let last = seen.last().unwrap();
    assert!(last.ends_with(LONG_TEXT), "{seen:?}");
    let marked = seen
        .iter()
        .position(|l| l.contains("cut off; the reply is retried from the start"));
    assert!(
        marked.is_some_and(|i| i + 1 < seen.len()),
        "the cut-off text is marked on a line of its own before the whole reply: {seen:?}"
    );
    let _ = child.wait().await;
}
