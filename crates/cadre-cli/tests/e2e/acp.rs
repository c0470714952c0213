//! `cadre acp` driven by an editor: the Agent Client Protocol crate's own
//! client side, spawning the binary against the mock model. It records
//! every `session/update` and answers `session/request_permission` as told.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest,
    PermissionOptionKind, PromptRequest, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, StopReason, SubagentCapabilities, TextContent,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, TerminalExitStatus, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use common::{Harness, Wire, mcp_fixture, user_texts};
use serde_json::Value;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// What the editor saw: every update (as JSON) and every question.
#[derive(Default)]
struct Seen {
    updates: Vec<Value>,
    questions: Vec<Value>,
    /// `fs/*` requests the agent made: (method, path).
    files: Vec<(String, String)>,
    /// `terminal/create` requests: the program and its arguments.
    terminals: Vec<Vec<String>>,
    /// The session a script opened, when it says.
    session: String,
}

/// A command the test editor runs for `terminal/create`: its output so
/// far, and how it ended once it has.
#[derive(Clone)]
struct Term {
    output: Arc<Mutex<String>>,
    ended: tokio::sync::watch::Receiver<Option<Option<u32>>>,
    kill: Arc<tokio::sync::Notify>,
}

type Terms = Arc<Mutex<std::collections::HashMap<String, Term>>>;

/// Runs a command as an editor's terminal would: output collected, exit kept.
fn start_term(r: &CreateTerminalRequest) -> Term {
    let mut cmd = tokio::process::Command::new(&r.command);
    cmd.args(&r.args)
        .envs(r.env.iter().map(|v| (v.name.clone(), v.value.clone())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &r.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().unwrap();
    let output = Arc::new(Mutex::new(String::new()));
    let (tx, ended) = tokio::sync::watch::channel(None);
    let kill = Arc::new(tokio::sync::Notify::new());
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    for mut pipe in [
        Box::new(out) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box::new(err),
    ] {
        let output = output.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                output
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }
    let killed = kill.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            s = child.wait() => s.ok().and_then(|s| s.code()).map(|c| c as u32),
            _ = killed.notified() => {
                let _ = child.kill().await;
                None
            }
        };
        // Let the readers take the last output.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = tx.send(Some(status));
    });
    Term {
        output,
        ended,
        kill,
    }
}

/// The editor's open buffers (path → text), served by `fs/*` when the
/// editor offers file access; writes land here, not on disk.
type Buffers = Arc<Mutex<std::collections::HashMap<String, String>>>;

/// How the editor answers questions.
#[derive(Clone, Copy)]
enum Answer {
    Allow,
    Reject,
}

type Shared = Arc<Mutex<Seen>>;

/// Runs `cadre acp` in the harness's project, drives it with `script`
/// (given the connection) and returns what it saw.
async fn editor<F, Fut>(h: &Harness, answer: Answer, script: F) -> Seen
where
    F: FnOnce(ConnectionTo<Agent>, Shared) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    editor_with(h, answer, Buffers::default(), script).await
}

/// [`editor`] whose `fs/*` answers come from `buffers` (disk for the rest).
async fn editor_with<F, Fut>(h: &Harness, answer: Answer, buffers: Buffers, script: F) -> Seen
where
    F: FnOnce(ConnectionTo<Agent>, Shared) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let mut child = h
        .command(&["acp"], &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let seen: Shared = Arc::default();
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let (s4, s5, s6) = (seen.clone(), seen.clone(), seen.clone());
    let terms: Terms = Arc::default();
    let (t1, t2, t3, t4, t5) = (
        terms.clone(),
        terms.clone(),
        terms.clone(),
        terms.clone(),
        terms,
    );
    let (b1, b2) = (buffers.clone(), buffers);
    let run = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                s1.lock()
                    .unwrap()
                    .updates
                    .push(serde_json::to_value(&n).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                s2.lock()
                    .unwrap()
                    .questions
                    .push(serde_json::to_value(&r).unwrap());
                let kind = match answer {
                    Answer::Allow => PermissionOptionKind::AllowOnce,
                    Answer::Reject => PermissionOptionKind::RejectOnce,
                };
                let option = r
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .expect("the question offers that answer");
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        option.option_id.clone(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest, responder, _cx| {
                let path = r.path.display().to_string();
                s4.lock().unwrap().files.push(("read".into(), path.clone()));
                let held = b1.lock().unwrap().get(&path).cloned();
                let text = held.unwrap_or_else(|| std::fs::read_to_string(&r.path).unwrap());
                responder.respond(ReadTextFileResponse::new(text))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WriteTextFileRequest, responder, _cx| {
                let path = r.path.display().to_string();
                s5.lock()
                    .unwrap()
                    .files
                    .push(("write".into(), path.clone()));
                b2.lock().unwrap().insert(path, r.content.clone());
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: CreateTerminalRequest, responder, _cx| {
                let mut argv = vec![r.command.clone()];
                argv.extend(r.args.iter().cloned());
                s6.lock().unwrap().terminals.push(argv);
                let id = format!("term-{}", t1.lock().unwrap().len() + 1);
                t1.lock().unwrap().insert(id.clone(), start_term(&r));
                responder.respond(CreateTerminalResponse::new(id))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WaitForTerminalExitRequest, responder, _cx| {
                let term = t2.lock().unwrap().get(&r.terminal_id.to_string()).cloned();
                tokio::spawn(async move {
                    let mut ended = term.unwrap().ended;
                    let code = loop {
                        if let Some(code) = *ended.borrow() {
                            break code;
                        }
                        if ended.changed().await.is_err() {
                            break None;
                        }
                    };
                    let _ = responder.respond(WaitForTerminalExitResponse::new(
                        TerminalExitStatus::new().exit_code(code),
                    ));
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: TerminalOutputRequest, responder, _cx| {
                let term = t3.lock().unwrap().get(&r.terminal_id.to_string()).cloned();
                let term = term.unwrap();
                let text = term.output.lock().unwrap().clone();
                let ended = *term.ended.borrow();
                let mut response = TerminalOutputResponse::new(text, false);
                if let Some(code) = ended {
                    response = response.exit_status(TerminalExitStatus::new().exit_code(code));
                }
                responder.respond(response)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: KillTerminalRequest, responder, _cx| {
                if let Some(term) = t4.lock().unwrap().get(&r.terminal_id.to_string()) {
                    term.kill.notify_one();
                }
                responder.respond(KillTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReleaseTerminalRequest, responder, _cx| {
                if let Some(term) = t5.lock().unwrap().remove(&r.terminal_id.to_string()) {
                    term.kill.notify_one();
                }
                responder.respond(ReleaseTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            ByteStreams::new(stdin.compat_write(), stdout.compat()),
            async move |cx: ConnectionTo<Agent>| {
                script(cx, s3).await;
                Ok(())
            },
        );
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the editor's script finishes")
        .expect("the ACP connection works");
    drop(child);
    Arc::try_unwrap(seen)
        .ok()
        .map(|m| m.into_inner().unwrap())
        .unwrap_or_default()
}

/// `initialize` (with or without child sessions) and `session/new` here.
async fn open(cx: &ConnectionTo<Agent>, h_cwd: &std::path::Path, child_sessions: bool) -> String {
    let mut caps = ClientCapabilities::new();
    if child_sessions {
        caps = caps.subagents(SubagentCapabilities::new());
    }
    open_with(cx, h_cwd, caps).await
}

/// `initialize` with `caps`, then `session/new` here.
async fn open_with(
    cx: &ConnectionTo<Agent>,
    h_cwd: &std::path::Path,
    caps: ClientCapabilities,
) -> String {
    let init = cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
        .block_task()
        .await
        .unwrap();
    assert!(init.agent_capabilities.load_session);
    let session = cx
        .send_request(NewSessionRequest::new(h_cwd.to_path_buf()))
        .block_task()
        .await
        .unwrap();
    let modes = session.modes.expect("the modes are offered");
    assert_eq!(modes.current_mode_id.to_string(), "default");
    session.session_id.to_string()
}

/// An editor that opens a session in the harness's project (with or
/// without child sessions), runs one prompt to its end, and returns what it
/// saw and the session's id.
async fn one_prompt(
    h: &Harness,
    answer: Answer,
    child_sessions: bool,
    text: &'static str,
) -> (Seen, String) {
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(h, answer, async move |cx, shared| {
        let session = open(&cx, &dir, child_sessions).await;
        assert_eq!(prompt(&cx, &session, text).await, StopReason::EndTurn);
        shared.lock().unwrap().session = session;
    })
    .await;
    let session = seen.session.clone();
    (seen, session)
}

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(t))]
}

async fn prompt(cx: &ConnectionTo<Agent>, session: &str, t: &str) -> StopReason {
    cx.send_request(PromptRequest::new(session.to_string(), text(t)))
        .block_task()
        .await
        .unwrap()
        .stop_reason
}

/// The `sessionUpdate` kind of an update.
fn kind(u: &Value) -> &str {
    u["update"]["sessionUpdate"].as_str().unwrap_or_default()
}

/// The position of the first update matching `f`, or a panic naming `what`.
fn position(updates: &[Value], what: &str, f: impl Fn(&Value) -> bool) -> usize {
    updates
        .iter()
        .position(f)
        .unwrap_or_else(|| panic!("no {what} among {updates:#?}"))
}

const READ_THEN_WRITE: &str = r#"
rules:
  - replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - tool_calls: [{ name: Write, input: { file_path: "new.txt", content: "fresh\n" } }]
      - text: "Done."
"#;

#[tokio::test]
async fn a_prompt_streams_its_calls_in_order_and_a_rejected_write_does_not_run() {
    let h = Harness::new(READ_THEN_WRITE, Wire::Anthropic).await;
    h.write("a.txt", "alpha\n");
    let cwd = h.project.path().canonicalize().unwrap();
    let (seen, _) = one_prompt(&h, Answer::Reject, false, "read and write").await;
    assert!(
        !cwd.join("new.txt").exists(),
        "the rejected write never ran"
    );
    let u = &seen.updates;
    let read = position(u, "the Read call", |u| {
        kind(u) == "tool_call" && u["update"]["kind"] == "read"
    });
    let read_id = u[read]["update"]["toolCallId"].as_str().unwrap();
    assert_eq!(
        u[read]["update"]["locations"][0]["path"],
        cwd.join("a.txt").display().to_string()
    );
    let read_done = position(u, "the Read result", |u| {
        kind(u) == "tool_call_update"
            && u["update"]["toolCallId"] == read_id
            && u["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("alpha"))
    });
    let write = position(u, "the Write call", |u| {
        kind(u) == "tool_call" && u["update"]["kind"] == "edit"
    });
    let write_id = u[write]["update"]["toolCallId"].as_str().unwrap();
    assert_eq!(u[write]["update"]["content"][0]["type"], "diff");
    assert_eq!(u[write]["update"]["content"][0]["newText"], "fresh\n");
    let write_failed = position(u, "the Write's failure", |u| {
        kind(u) == "tool_call_update"
            && u["update"]["toolCallId"] == write_id
            && u["update"]["status"] == "failed"
    });
    let done = position(u, "the final text", |u| {
        kind(u) == "agent_message_chunk" && u["update"]["content"]["text"] == "Done."
    });
    assert!(read < read_done && read_done < write && write < write_failed && write_failed < done);
    // The question named the Write call and offered allow and reject.
    assert_eq!(seen.questions.len(), 1, "{:#?}", seen.questions);
    let q = &seen.questions[0];
    assert_eq!(q["toolCall"]["toolCallId"], write_id);
    let kinds: Vec<&str> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{kinds:?}"
    );
    // The slash-command menu came with the session.
    assert!(u.iter().any(|u| kind(u) == "available_commands_update"));
}

#[tokio::test]
async fn an_allowed_write_runs() {
    let h = Harness::new(READ_THEN_WRITE, Wire::OpenAi).await;
    h.write("a.txt", "alpha\n");
    let (seen, _) = one_prompt(&h, Answer::Allow, false, "read and write").await;
    assert_eq!(h.read("new.txt"), "fresh\n");
    assert!(seen.updates.iter().any(|u| {
        kind(u) == "tool_call_update"
            && u["update"]["status"] == "completed"
            && u["update"]["rawOutput"].is_object()
    }));
}

const STALLS: &str = r#"
rules:
  - name: quick
    when: { last_user: "and now?" }
    replies:
      - text: "quick answer"
  - name: slow
    replies:
      - text: "too late"
        latency_ms: 30000
"#;

#[tokio::test]
async fn cancel_stops_the_turn_and_the_session_goes_on() {
    let h = Harness::new(STALLS, Wire::Anthropic).await;
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(&h, Answer::Allow, async move |cx, _| {
        let session = open(&cx, &dir, false).await;
        let waiting = cx
            .send_request(PromptRequest::new(session.clone(), text("take your time")))
            .block_task();
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cx.send_notification(CancelNotification::new(session.clone()))
                .unwrap();
        };
        let (stopped, ()) = tokio::join!(waiting, cancel);
        assert_eq!(stopped.unwrap().stop_reason, StopReason::Cancelled);
        assert_eq!(prompt(&cx, &session, "and now?").await, StopReason::EndTurn);
    })
    .await;
    let texts: Vec<&str> = seen
        .updates
        .iter()
        .filter(|u| kind(u) == "agent_message_chunk")
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(texts.concat(), "quick answer");
}

/// A batch of two: `scout` (which starts a `leaf` of its own) and a `leaf`.
const FAMILY: &str = r#"
rules:
  - name: leaf-a
    when: { system: "You are LEAF", first_user: "leaf-a" }
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - text: "LEAF-A: alpha"
  - name: leaf-b
    when: { system: "You are LEAF", first_user: "leaf-b" }
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
      - text: "LEAF-B: beta"
  - name: scout
    when: { system: "You are SCOUT" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "read a", prompt: "leaf-a: read a.txt", subagent_type: "leaf" } }
      - text: "SCOUT-REPORT: a is alpha."
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scout it", prompt: "scout around", subagent_type: "scout" } }
          - { name: Agent, input: { description: "read b", prompt: "leaf-b: read b.txt", subagent_type: "leaf" } }
      - text: "All done."
"#;

/// The child sessions announced, as (child session, parent session, title).
fn announced(updates: &[Value]) -> Vec<(String, String, String)> {
    updates
        .iter()
        .filter(|u| kind(u) == "subagent_update" && u["update"]["title"].is_string())
        .map(|u| {
            (
                u["update"]["sessionId"].as_str().unwrap().to_string(),
                u["sessionId"].as_str().unwrap().to_string(),
                u["update"]["title"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn with_child_sessions_each_child_is_a_session_of_its_parent() {
    let h = Harness::new(FAMILY, Wire::Anthropic).await;
    common::scout_and_leaf_files(&h);
    let (seen, main) = one_prompt(&h, Answer::Allow, true, "look around").await;
    let u = &seen.updates;
    let children = announced(u);
    assert_eq!(children.len(), 3, "{children:#?}");
    let by_title = |t: &str| children.iter().find(|c| c.2 == t).unwrap().clone();
    let (scout, scout_parent, _) = by_title("scout it");
    let (leaf_b, leaf_b_parent, _) = by_title("read b");
    let (leaf_a, leaf_a_parent, _) = by_title("read a");
    assert_eq!(scout_parent, main);
    assert_eq!(leaf_b_parent, main);
    assert_eq!(
        leaf_a_parent, scout,
        "the nested child is announced on its parent"
    );
    // Each child's calls and text flow under its own session id.
    for (child, file, report) in [
        (&leaf_a, "a.txt", "LEAF-A: alpha"),
        (&leaf_b, "b.txt", "LEAF-B: beta"),
    ] {
        let announced_at = position(u, "the announcement", |x| {
            kind(x) == "subagent_update" && x["update"]["sessionId"] == child.as_str()
        });
        let call = position(u, "the child's Read", |x| {
            x["sessionId"] == child.as_str()
                && kind(x) == "tool_call"
                && x["update"]["locations"][0]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(file))
        });
        assert!(announced_at < call, "announced before its traffic");
        assert!(u.iter().any(|x| x["sessionId"] == child.as_str()
            && kind(x) == "agent_message_chunk"
            && x["update"]["content"]["text"] == report));
        // It went idle when it ended.
        assert!(u.iter().any(|x| kind(x) == "subagent_update"
            && x["update"]["sessionId"] == child.as_str()
            && x["update"]["state"]["state"] == "idle"));
    }
    // None of the children's calls show as the main session's.
    assert!(!u.iter().any(|x| x["sessionId"] == main.as_str()
        && kind(x) == "tool_call"
        && x["update"]["kind"] == "read"));
    // The reports came back to the parent as its calls' results.
    assert!(u.iter().any(|x| {
        x["sessionId"] == main.as_str()
            && kind(x) == "tool_call_update"
            && x["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("SCOUT-REPORT"))
    }));
}

#[tokio::test]
async fn without_child_sessions_the_agent_call_shows_its_childs_progress_and_report() {
    let h = Harness::new(FAMILY, Wire::Anthropic).await;
    common::scout_and_leaf_files(&h);
    let (seen, _) = one_prompt(&h, Answer::Allow, false, "look around").await;
    let u = &seen.updates;
    assert!(
        announced(u).is_empty(),
        "no child sessions without the capability"
    );
    let scout = position(u, "the scout call", |x| {
        kind(x) == "tool_call" && x["update"]["title"] == "scout it"
    });
    assert_eq!(u[scout]["update"]["kind"], "think");
    let scout_id = u[scout]["update"]["toolCallId"].as_str().unwrap();
    // Its content grew with the nested child's progress, then ended with the report.
    let progress: Vec<&str> = u
        .iter()
        .filter(|x| kind(x) == "tool_call_update" && x["update"]["toolCallId"] == scout_id)
        .filter_map(|x| x["update"]["content"][0]["content"]["text"].as_str())
        .collect();
    assert!(
        progress
            .iter()
            .any(|t| t.contains("Read") && t.contains("a.txt")),
        "{progress:#?}"
    );
    assert!(
        progress.last().is_some_and(|t| t.contains("SCOUT-REPORT")),
        "{progress:#?}"
    );
}

/// A child, then a request refused as too long once: the session compacts.
const COMPACTS: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-A: the notes were listed."
  - name: child
    when: { first_user: "list the notes" }
    replies:
      - tool_calls: [{ name: Glob, input: { pattern: "*.txt" } }]
      - text: "one note"
  - name: main
    step_by: requests
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "notes", prompt: "list the notes", subagent_type: Explore } }
      - text: "first answer"
        fail_once: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" }
      - text: "second answer"
"#;

#[tokio::test]
async fn load_replays_a_session_with_its_compaction_and_its_child() {
    let h = Harness::new(COMPACTS, Wire::Anthropic).await;
    h.write("a.txt", "alpha\n");
    let dir = h.project.path().canonicalize().unwrap();
    let d = dir.clone();
    let first = editor(&h, Answer::Allow, async move |cx, shared| {
        let session = open(&cx, &d, true).await;
        assert_eq!(
            prompt(&cx, &session, "list them").await,
            StopReason::EndTurn
        );
        shared
            .lock()
            .unwrap()
            .questions
            .push(Value::String(session));
    })
    .await;
    let id = first
        .questions
        .last()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let (d, sid) = (dir.clone(), id.clone());
    let seen = editor(&h, Answer::Allow, async move |cx, _| {
        let caps = ClientCapabilities::new().subagents(SubagentCapabilities::new());
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
            .block_task()
            .await
            .unwrap();
        cx.send_request(LoadSessionRequest::new(sid.clone(), d))
            .block_task()
            .await
            .unwrap();
        // The loaded session goes on.
        assert_eq!(prompt(&cx, &sid, "more").await, StopReason::EndTurn);
    })
    .await;
    let u = &seen.updates;
    let user = position(u, "the user's message", |x| {
        kind(x) == "user_message_chunk" && x["update"]["content"]["text"] == "list them"
    });
    let call = position(u, "the Agent call", |x| {
        x["sessionId"] == id.as_str() && kind(x) == "tool_call" && x["update"]["kind"] == "think"
    });
    let compacted = position(u, "the compaction", |x| {
        kind(x) == "agent_thought_chunk"
            && x["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("SUMMARY-A"))
    });
    let answer = position(u, "the answer after it", |x| {
        kind(x) == "agent_message_chunk" && x["update"]["content"]["text"] == "first answer"
    });
    assert!(user < call && call < compacted && compacted < answer);
    let children = announced(u);
    assert_eq!(children.len(), 1, "{children:#?}");
    let (child, parent, title) = &children[0];
    assert_eq!(parent, &id);
    assert_eq!(title, "notes");
    assert!(u.iter().any(|x| x["sessionId"] == child.as_str()
        && kind(x) == "tool_call"
        && x["update"]["kind"] == "search"));
    assert!(u.iter().any(|x| x["sessionId"] == child.as_str()
        && kind(x) == "agent_message_chunk"
        && x["update"]["content"]["text"] == "one note"));
    assert!(
        u.iter().any(|x| kind(x) == "agent_message_chunk"
            && x["update"]["content"]["text"] == "second answer")
    );
}

/// A child that writes: its question comes on its own session.
const CHILD_WRITES: &str = r#"
rules:
  - name: writer
    when: { system: "You are WRITER" }
    replies:
      - tool_calls: [{ name: Write, input: { file_path: "out.txt", content: "from the child\n" } }]
      - text: "WRITER: wrote out.txt"
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "write it", prompt: "write out.txt", subagent_type: "writer" } }
      - text: "Written."
"#;

#[tokio::test]
async fn a_childs_question_comes_on_its_own_session_and_its_answer_holds() {
    let h = Harness::new(CHILD_WRITES, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/writer.md",
        "---\nname: writer\ndescription: Writes one file.\ntools: Write\n---\nYou are WRITER.\n",
    );
    let (seen, _) = one_prompt(&h, Answer::Allow, true, "delegate").await;
    assert_eq!(h.read("out.txt"), "from the child\n");
    let children = announced(&seen.updates);
    assert_eq!(children.len(), 1, "{children:#?}");
    let child = &children[0].0;
    assert_eq!(seen.questions.len(), 1, "{:#?}", seen.questions);
    let q = &seen.questions[0];
    assert_eq!(
        q["sessionId"],
        child.as_str(),
        "asked on the child's session"
    );
    let write_call = position(&seen.updates, "the child's Write", |x| {
        x["sessionId"] == child.as_str() && kind(x) == "tool_call" && x["update"]["kind"] == "edit"
    });
    assert_eq!(
        q["toolCall"]["toolCallId"],
        seen.updates[write_call]["update"]["toolCallId"]
    );
    assert!(
        q["toolCall"]["title"]
            .as_str()
            .is_some_and(|t| t.contains("writer")),
        "the question names the child: {q}"
    );
    // The context use is reported as it changes.
    assert!(seen.updates.iter().any(|u| kind(u) == "usage_update"));
}

/// Reads the buffer, edits it and writes a new file, all through the editor.
const EDITS: &str = r#"
rules:
  - replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - tool_calls: [{ name: Edit, input: { file_path: "a.txt", old_string: "unsaved", new_string: "edited" } }]
      - tool_calls: [{ name: Write, input: { file_path: "b.txt", content: "new file\n" } }]
      - text: "Edited."
"#;

#[tokio::test]
async fn an_editor_with_file_access_serves_reads_and_takes_writes() {
    let h = Harness::new(EDITS, Wire::Anthropic).await;
    h.write("a.txt", "saved text\n");
    let dir = h.project.path().canonicalize().unwrap();
    let a = dir.join("a.txt").display().to_string();
    let b = dir.join("b.txt").display().to_string();
    let buffers = Buffers::default();
    buffers
        .lock()
        .unwrap()
        .insert(a.clone(), "unsaved text\n".into());
    let held = buffers.clone();
    let d = dir.clone();
    let seen = editor_with(&h, Answer::Allow, buffers, async move |cx, _| {
        let mut caps = ClientCapabilities::new();
        caps.fs = FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true);
        let session = open_with(&cx, &d, caps).await;
        assert_eq!(prompt(&cx, &session, "edit it").await, StopReason::EndTurn);
    })
    .await;
    // The model saw the unsaved buffer, not the disk.
    assert!(seen.updates.iter().any(|u| {
        kind(u) == "tool_call_update"
            && u["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("unsaved text"))
    }));
    // The edit and the new file went to the editor; the disk is as it was.
    let buffers = held.lock().unwrap().clone();
    assert_eq!(buffers.get(&a).map(String::as_str), Some("edited text\n"));
    assert_eq!(buffers.get(&b).map(String::as_str), Some("new file\n"));
    assert_eq!(h.read("a.txt"), "saved text\n");
    assert!(!dir.join("b.txt").exists());
    assert!(
        seen.files.contains(&("write".to_string(), b.clone())),
        "{:?}",
        seen.files
    );
}

#[tokio::test]
async fn without_file_access_cadre_reads_and_writes_the_disk() {
    let h = Harness::new(EDITS, Wire::Anthropic).await;
    h.write("a.txt", "unsaved text\n");
    let (seen, _) = one_prompt(&h, Answer::Allow, false, "edit it").await;
    assert!(seen.files.is_empty(), "{:?}", seen.files);
    assert_eq!(h.read("a.txt"), "edited text\n");
    assert_eq!(h.read("b.txt"), "new file\n");
}

/// A background child: the prompt ends first, the child's session goes on,
/// and its notice gets a turn of its own after it.
const BACKGROUND: &str = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - latency_ms: 400
        text: "CHILD-REPORT: done in the background."
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "bg job", prompt: "work quietly", subagent_type: "helper", run_in_background: true } }
      - text: "Started it."
      - text: "The child reported."
      - text: "Again."
"#;

#[tokio::test]
async fn a_background_child_goes_on_after_the_prompt_and_its_notice_streams() {
    let h = Harness::new(BACKGROUND, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/helper.md",
        "---\nname: helper\ndescription: Works in the background.\ntools: Read\n---\nYou are HELPER.\n",
    );
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(&h, Answer::Allow, async move |cx, shared| {
        let session = open(&cx, &dir, true).await;
        assert_eq!(prompt(&cx, &session, "start it").await, StopReason::EndTurn);
        // The notice's own turn streams later, without a prompt.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let done = shared.lock().unwrap().updates.iter().any(|u| {
                kind(u) == "agent_message_chunk"
                    && u["update"]["content"]["text"] == "The child reported."
            });
            if done {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the notice's turn never came"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The session still takes prompts after it.
        assert_eq!(prompt(&cx, &session, "again").await, StopReason::EndTurn);
    })
    .await;
    let u = &seen.updates;
    let children = announced(u);
    assert_eq!(children.len(), 1, "{children:#?}");
    let child = &children[0].0;
    let started = position(u, "the first answer", |x| {
        kind(x) == "agent_message_chunk" && x["update"]["content"]["text"] == "Started it."
    });
    let report = position(u, "the child's report", |x| {
        x["sessionId"] == child.as_str()
            && kind(x) == "agent_message_chunk"
            && x["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("CHILD-REPORT"))
    });
    let noticed = position(u, "the notice's answer", |x| {
        kind(x) == "agent_message_chunk" && x["update"]["content"]["text"] == "The child reported."
    });
    assert!(
        started < report && report < noticed,
        "{started} {report} {noticed}"
    );
}

#[tokio::test]
async fn the_editors_mcp_server_runs_and_its_prompts_join_the_menu() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Hello sent.\"\n",
        Wire::Anthropic,
    )
    .await;
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(&h, Answer::Allow, async move |cx, _| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        let server = McpServer::Stdio(McpServerStdio::new("fixture", mcp_fixture()));
        let session = cx
            .send_request(NewSessionRequest::new(dir).mcp_servers(vec![server]))
            .block_task()
            .await
            .unwrap()
            .session_id
            .to_string();
        assert_eq!(
            prompt(&cx, &session, "/mcp__fixture__greet Ann").await,
            StopReason::EndTurn
        );
    })
    .await;
    // The server's prompt ran as a command: its message is what was sent.
    let records = h.records();
    assert_eq!(records.len(), 1);
    assert!(user_texts(&records[0].body).contains("Say hello to Ann."));
    // Once the server was ready, the menu offered its prompt.
    assert!(seen.updates.iter().any(|u| {
        kind(u) == "available_commands_update"
            && u["update"]["availableCommands"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["name"] == "mcp__fixture__greet"))
    }));
    // The servers' file with the editor's entries is gone.
    let acp_dir = h.data_dir().join("acp");
    let left = std::fs::read_dir(&acp_dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "no MCP file is left in {}", acp_dir.display());
}

/// A command the editor runs, and one that tries to write cadre's data dir
/// (`ESCAPE`, filled in by the test).
const COMMANDS: &str = r#"
rules:
  - replies:
      - tool_calls: [{ name: Bash, input: { command: "echo hello-from-the-terminal" } }]
      - tool_calls: [{ name: Bash, input: { command: "echo x > ESCAPE && echo wrote-it" } }]
      - text: "Ran them."
"#;

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "needs Landlock")]
async fn an_editor_with_terminals_runs_bash_there_still_in_cadres_sandbox() {
    // Outside the temp dirs, as the harness keeps its data dirs.
    let home = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let escape = home.path().join("cadre").join("escaped.txt");
    std::fs::create_dir_all(home.path().join("cadre")).unwrap();
    let script = COMMANDS.replace("ESCAPE", &escape.display().to_string());
    let mock = cadre_mock::MockServer::start(&script, None).await.unwrap();
    let h = Harness::from_parts(tempfile::tempdir().unwrap(), home, mock, Wire::Anthropic);
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(&h, Answer::Allow, async move |cx, _| {
        let mut caps = ClientCapabilities::new();
        caps.terminal = true;
        let session = open_with(&cx, &dir, caps).await;
        assert_eq!(prompt(&cx, &session, "run them").await, StopReason::EndTurn);
    })
    .await;
    // Both commands ran in the editor's terminals, through cadre's launcher.
    assert_eq!(seen.terminals.len(), 2, "{:#?}", seen.terminals);
    for argv in &seen.terminals {
        assert_eq!(
            argv.get(1).map(String::as_str),
            Some("__sandbox-exec"),
            "{argv:?}"
        );
    }
    let u = &seen.updates;
    let results: Vec<&str> = u
        .iter()
        .filter(|x| kind(x) == "tool_call_update")
        .filter_map(|x| x["update"]["content"][0]["content"]["text"].as_str())
        .collect();
    // The call showed its terminal, and its output came back as the result.
    assert!(
        u.iter()
            .any(|x| kind(x) == "tool_call_update"
                && x["update"]["content"][0]["type"] == "terminal")
    );
    assert!(
        results
            .iter()
            .any(|t| t.contains("hello-from-the-terminal")),
        "{results:#?}"
    );
    // The sandbox held in the editor's terminal: the data dir stayed closed.
    assert!(
        !escape.exists(),
        "a sandboxed command wrote cadre's data dir"
    );
    assert!(
        results
            .iter()
            .any(|t| t.contains("Permission denied") && !t.contains("wrote-it")),
        "{results:#?}"
    );
}

#[tokio::test]
async fn without_terminals_bash_runs_inside_cadre() {
    let script = COMMANDS.replace("ESCAPE", "/dev/null");
    let h = Harness::new(&script, Wire::Anthropic).await;
    let (seen, _) = one_prompt(&h, Answer::Allow, false, "run them").await;
    assert!(seen.terminals.is_empty(), "{:#?}", seen.terminals);
    assert!(seen.updates.iter().any(|x| {
        kind(x) == "tool_call_update"
            && x["update"]["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("hello-from-the-terminal"))
    }));
}

const TEAM: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - text: "alice ready"
      - text: "alice got it"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "helper", prompt: "alice: wait for work", name: alice } } ]
      - text: "Started alice."
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;

#[tokio::test]
async fn a_teammate_is_a_child_session_that_rests_between_turns_and_takes_prompts() {
    let h = Harness::new(TEAM, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[teams]\nenabled = true\n",
    )
    .unwrap();
    let dir = h.project.path().canonicalize().unwrap();
    let seen = editor(&h, Answer::Allow, async move |cx, shared| {
        let session = open(&cx, &dir, true).await;
        assert_eq!(
            prompt(&cx, &session, "start a team").await,
            StopReason::EndTurn
        );
        // Wait for alice's child session to rest after her first turn.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let child = loop {
            let rested = shared.lock().unwrap().updates.iter().find_map(|u| {
                (kind(u) == "subagent_update"
                    && u["update"]["_meta"]["teammate"] == "alice"
                    && u["update"]["state"]["state"] == "idle")
                    .then(|| u["update"]["sessionId"].as_str().unwrap().to_string())
            });
            if let Some(child) = rested {
                break child;
            }
            assert!(std::time::Instant::now() < deadline, "alice never rested");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // A prompt on her session is her next input.
        assert_eq!(
            prompt(&cx, &child, "PLEASE-ADD-A-LINE").await,
            StopReason::EndTurn
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !shared.lock().unwrap().updates.iter().any(|u| {
            u["sessionId"] == child.as_str()
                && kind(u) == "agent_message_chunk"
                && u["update"]["content"]["text"] == "alice got it"
        }) {
            assert!(std::time::Instant::now() < deadline, "alice never answered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        shared.lock().unwrap().session = child;
    })
    .await;
    let child = seen.session.clone();
    let u = &seen.updates;
    // Announced as a child session, running then idle, twice over.
    let states: Vec<&str> = u
        .iter()
        .filter(|x| kind(x) == "subagent_update" && x["update"]["sessionId"] == child.as_str())
        .filter_map(|x| x["update"]["state"]["state"].as_str())
        .collect();
    assert!(
        states
            .windows(2)
            .filter(|w| w == &["running", "idle"])
            .count()
            >= 2,
        "{states:?}"
    );
    // Her request held the editor's words.
    let records = h.records();
    let alice = common::rule_records(&records, "alice");
    assert_eq!(alice.len(), 2);
    assert!(alice[1].body.to_string().contains("PLEASE-ADD-A-LINE"));
}
