//! Unit tests of the session against a real mock model server over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use cadre_mock::{MockServer, Record};
use tempfile::TempDir;
use tokio::sync::mpsc;

use super::*;
use crate::agent::{AgentSetup, TurnLimits};
use crate::model::{ClientConfig, ModelClient, Provider};
use crate::permissions::rules::RuleSet;
use crate::permissions::{ApprovalGate, PermissionMode, PermissionPolicy};
use crate::protocol::{ApprovalAnswer, TaskStatus};
use crate::tools::{ToolContext, ToolRegistry};

/// A session over a mock, with its project and data directories.
struct Fixture {
    mock: MockServer,
    events: mpsc::UnboundedReceiver<Event>,
    handle: SessionHandle,
    run: tokio::task::JoinHandle<SessionOutcome>,
    _project: TempDir,
    _home: TempDir,
}

/// Options a test changes.
struct Options {
    lifetime: Lifetime,
    mode: PermissionMode,
    answers_questions: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lifetime: Lifetime::UntilShutdown,
            mode: PermissionMode::BypassPermissions,
            answers_questions: false,
        }
    }
}

async fn start(script: &str, options: Options) -> Fixture {
    let (project, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sink, events) = EventSink::channel();
    start_in(script, options, project, home, None, sink, events).await
}

/// A session in `project` and `home`, continuing `opened` when given.
async fn start_in(
    script: &str,
    options: Options,
    project: TempDir,
    home: TempDir,
    opened: Option<OpenedLog>,
    sink: EventSink,
    events: mpsc::UnboundedReceiver<Event>,
) -> Fixture {
    // reqwest is built without a TLS provider; the client wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockServer::start(script, None).await.unwrap();
    let (session_id, log, messages) = match opened {
        Some(o) => (o.id, Some(o.log), o.messages),
        None => ("s-test".to_string(), None, Vec::new()),
    };
    let client = ModelClient::new(ClientConfig {
        provider: Provider::Anthropic,
        base_url: mock.url(),
        api_key: None,
        model: "mock-model".into(),
        max_tokens: 1024,
        // One try: a failure reaches the session, whose retries are tested.
        max_attempts: 1,
        stream_idle_timeout: Duration::from_secs(60),
        request_deadline: Duration::from_secs(600),
        first_byte_timeout: std::time::Duration::from_secs(60),
        models: Default::default(),
    })
    .unwrap();
    let policy = Arc::new(PermissionPolicy::new(
        options.mode,
        RuleSet::new(),
        project.path(),
        home.path(),
        false,
    ));
    let setup = SessionSetup {
        session_id,
        provider: crate::model::Provider::Anthropic,
        model: "mock-model".into(),
        cwd: project.path().to_path_buf(),
        warnings: vec!["a warning".into()],
        events: sink,
        tasks: Some(TaskTable::open(home.path()).await.unwrap()),
        messages,
        answers_questions: options.answers_questions,
        lifetime: options.lifetime,
        notices: NoticeTiming {
            settle: Duration::from_millis(5),
            settle_max: Duration::from_millis(100),
            retry: vec![Duration::from_millis(10), Duration::from_millis(10)],
        },
        team: None,
    };
    let cwd = project.path().to_path_buf();
    let (session, handle) = Session::open(setup, |parts: AgentParts| {
        let mut ctx = ToolContext::new(cwd);
        ctx.background = parts
            .background
            .map(|w| w as Arc<dyn crate::tools::BackgroundTasks>);
        ctx.policy = Some(policy.clone());
        let gate = Arc::new(ApprovalGate::new(parts.approvals, parts.events.clone()));
        Ok::<_, TaskError>(Agent::new(AgentSetup {
            id: MAIN.into(),
            label: None,
            hooks: None,
            effort: None,
            context: crate::context::ContextPolicy::builtin(
                client.config().provider,
                &client.config().model,
            ),
            client,
            tools: ToolRegistry::builtin(),
            ctx,
            system: "You are a test agent.".into(),
            limits: TurnLimits::default(),
            events: parts.events,
            policy,
            gate,
            log,
        }))
    })
    .await
    .unwrap();
    Fixture {
        mock,
        events,
        handle,
        run: tokio::spawn(session.run()),
        _project: project,
        _home: home,
    }
}

impl Fixture {
    /// Reads events until one matches, and returns it (with a safety timeout).
    async fn until(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} within 30 s"))
                .unwrap_or_else(|| panic!("the session ended before {what}"));
            if pred(&event) {
                return event;
            }
        }
    }

    /// Waits for the session to end; returns its outcome and the events left.
    async fn finish(self) -> (SessionOutcome, Vec<Event>, Vec<Record>) {
        let Fixture {
            mock,
            mut events,
            run,
            ..
        } = self;
        let outcome = tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("the session ends within 30 s")
            .unwrap();
        let mut rest = Vec::new();
        while let Ok(e) = events.try_recv() {
            rest.push(e);
        }
        let mut records = mock.records();
        records.sort_by_key(|r| r.t_start_ms);
        (outcome, rest, records)
    }
}

fn main_turn_ended(e: &Event) -> bool {
    matches!(e, Event::TurnEnded { agent, .. } if agent == MAIN)
}

fn body_text(r: &Record) -> String {
    r.body.to_string()
}

/// How many task notices (user texts opening with the tag) a request carries.
fn notices_in(r: &Record) -> usize {
    r.body["messages"]
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

const ONE_TURN: &str = r#"
rules:
  - name: main
    replies:
      - text: "hello back"
"#;

#[tokio::test]
async fn a_message_runs_a_turn_and_an_exec_session_ends_after_it() {
    let mut f = start(
        ONE_TURN,
        Options {
            lifetime: Lifetime::AfterTask {
                wait_for_background: true,
            },
            ..Options::default()
        },
    )
    .await;
    let started = f
        .until("session_started", |e| {
            matches!(e, Event::SessionStarted { .. })
        })
        .await;
    assert!(matches!(started, Event::SessionStarted { session_id, .. } if session_id == "s-test"));
    f.until(
        "the warning",
        |e| matches!(e, Event::Warning { message } if message == "a warning"),
    )
    .await;
    assert!(f.handle.submit(Op::UserMessage {
        text: "hello there".into()
    }));
    let ended = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(ended, Event::TurnEnded { status: TurnStatus::Completed, ref final_text, .. } if final_text == "hello back"),
        "{ended:?}"
    );
    let handle = f.handle.clone();
    let (outcome, _, records) = f.finish().await;
    assert!(!outcome.shut_down);
    let last = outcome.last_turn.unwrap();
    assert_eq!(last.status, TurnStatus::Completed);
    assert_eq!(last.final_text, "hello back");
    assert_eq!(records.len(), 1);
    assert!(body_text(&records[0]).contains("hello there"));
    // Once over, the handle says so and takes nothing more.
    assert_eq!(handle.status().phase, Phase::Ended);
    assert!(!handle.submit(Op::Interrupt));
}

const BACKGROUND_ECHO: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo BG-DONE-MARKER", description: "echo", run_in_background: true } }
      - text: "started it"
      - FINAL
"#;

fn background_echo(final_reply: &str) -> String {
    BACKGROUND_ECHO.replace("- FINAL", final_reply)
}

#[tokio::test]
async fn a_notice_is_delivered_in_a_turn_of_its_own_after_a_background_task_ends() {
    let script = background_echo(r#"- text: "got the notice""#);
    let f = start(
        &script,
        Options {
            lifetime: Lifetime::AfterTask {
                wait_for_background: true,
            },
            ..Options::default()
        },
    )
    .await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    let (outcome, _, records) = f.finish().await;
    let last = outcome.last_turn.unwrap();
    assert_eq!(last.status, TurnStatus::Completed);
    assert_eq!(last.final_text, "got the notice");
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(notices_in(&records[2]), 1);
    assert!(body_text(&records[2]).contains("BG-DONE-MARKER"));
    assert_eq!(notices_in(&records[1]), 0);
}

#[tokio::test]
async fn a_delivery_the_model_service_fails_is_retried() {
    let script = background_echo(
        r#"- text: "got the notice on the second try"
        fail_once: { status: 500 }"#,
    );
    let mut f = start(&script, Options::default()).await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    let warning = f
        .until(
            "the retry warning",
            |e| matches!(e, Event::Warning { message } if message.starts_with("delivering")),
        )
        .await;
    let Event::Warning { message } = warning else {
        unreachable!()
    };
    assert!(
        message.starts_with("delivering task notices failed")
            && message.ends_with("retrying in 10 ms"),
        "{message}"
    );
    let retried = f
        .until("the retried turn", |e| {
            matches!(e, Event::TurnEnded { status: TurnStatus::Completed, final_text, .. } if final_text == "got the notice on the second try")
        })
        .await;
    assert!(main_turn_ended(&retried));
    f.handle.submit(Op::Shutdown);
    let (outcome, _, records) = f.finish().await;
    assert!(outcome.shut_down);
    // The notice went out twice: the failed request, then the retry.
    let notices: Vec<&Record> = records.iter().filter(|r| notices_in(r) > 0).collect();
    let statuses: Vec<u16> = records.iter().map(|r| r.status).collect();
    assert_eq!(notices.len(), 2, "{statuses:?}");
    assert_eq!(notices[0].status, 500);
    assert_eq!(notices[1].status, 200);
    // The same notice, once in the conversation: the retry resends, it does not re-announce.
    assert_eq!(notices_in(notices[1]), 1);
}

const BACKGROUND_SLEEP: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "sleep 60", description: "sleeper", run_in_background: true } }
      - text: "sleeping in the background"
      - text: "the sleeper was stopped"
"#;

#[tokio::test]
async fn stop_all_stops_the_tasks_the_main_agent_started() {
    let mut f = start(BACKGROUND_SLEEP, Options::default()).await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    let started = f
        .until("task_started", |e| matches!(e, Event::TaskStarted { .. }))
        .await;
    let Event::TaskStarted { task_id, .. } = started else {
        unreachable!()
    };
    f.until("turn_ended", main_turn_ended).await;
    assert_eq!(
        f.handle.tasks().await.unwrap()[0].status,
        TaskStatus::Running
    );
    f.handle.submit(Op::StopAll);
    let ended = f
        .until("task_ended", |e| matches!(e, Event::TaskEnded { .. }))
        .await;
    assert!(
        matches!(ended, Event::TaskEnded { task_id: ref id, status: TaskStatus::Cancelled, .. } if *id == task_id),
        "{ended:?}"
    );
    // Its end is announced like any other.
    f.until("the notice turn", |e| {
        matches!(e, Event::TurnEnded { final_text, .. } if final_text == "the sleeper was stopped")
    })
    .await;
    let rows = f.handle.tasks().await.unwrap();
    assert_eq!(rows[0].status, TaskStatus::Cancelled);
    // The session goes on after stopping its work.
    assert_ne!(f.handle.status().phase, Phase::Ended);
    f.handle.submit(Op::Shutdown);
    let (outcome, _, _) = f.finish().await;
    assert!(outcome.shut_down);
}

#[tokio::test]
async fn shutdown_interrupts_the_turn_and_stops_background_work() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "sleep 60", description: "sleeper", run_in_background: true } }
      - latency_ms: 60000
        text: "never sent"
"#;
    let mut f = start(script, Options::default()).await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    f.until("the second request", |e| {
        matches!(e, Event::RequestStarted { request: 2, .. })
    })
    .await;
    assert_eq!(f.handle.status().phase, Phase::Turn);
    f.handle.submit(Op::Shutdown);
    let (outcome, rest, _) = f.finish().await;
    assert!(outcome.shut_down);
    assert_eq!(outcome.last_turn.unwrap().status, TurnStatus::Interrupted);
    assert!(
        rest.iter().any(|e| matches!(
            e,
            Event::TaskEnded {
                status: TaskStatus::Cancelled,
                ..
            }
        )),
        "{rest:?}"
    );
}

#[tokio::test]
async fn a_question_is_answered_by_the_op_that_names_it() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo ASKED-AND-RAN" } }
      - text: "ran it"
"#;
    let mut f = start(
        script,
        Options {
            mode: PermissionMode::Default,
            answers_questions: true,
            ..Options::default()
        },
    )
    .await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    let asked = f
        .until("approval_requested", |e| {
            matches!(e, Event::ApprovalRequested { .. })
        })
        .await;
    let Event::ApprovalRequested { id, question } = asked else {
        unreachable!()
    };
    assert_eq!(question.tool, "Bash");
    let open = f.handle.status().question.expect("an open question");
    assert_eq!(open.id, id);
    // An answer naming another question changes nothing.
    f.handle.submit(Op::ApprovalAnswer {
        id: Some(id + 1),
        answer: ApprovalAnswer::No,
    });
    f.handle.submit(Op::ApprovalAnswer {
        id: Some(id),
        answer: ApprovalAnswer::Once,
    });
    let answered = f
        .until("approval_answered", |e| {
            matches!(e, Event::ApprovalAnswered { .. })
        })
        .await;
    assert!(
        matches!(
            answered,
            Event::ApprovalAnswered {
                answer: ApprovalAnswer::Once,
                ..
            }
        ),
        "{answered:?}"
    );
    let ran = f
        .until("tool_call_ended", |e| {
            matches!(e, Event::ToolCallEnded { .. })
        })
        .await;
    assert!(
        matches!(
            ran,
            Event::ToolCallEnded {
                is_error: false,
                ..
            }
        ),
        "{ran:?}"
    );
    f.until("turn_ended", main_turn_ended).await;
    assert!(f.handle.status().question.is_none());
    f.handle.submit(Op::Shutdown);
    let (_, _, records) = f.finish().await;
    assert!(body_text(&records[1]).contains("ASKED-AND-RAN"));
}

#[tokio::test]
async fn a_message_sent_while_a_turn_runs_gets_the_next_turn() {
    let script = r#"
rules:
  - name: second
    when: { last_user: "second message" }
    replies:
      - text: "never"
      - text: "answer two"
  - name: first
    replies:
      - latency_ms: 300
        text: "answer one"
"#;
    let mut f = start(script, Options::default()).await;
    f.handle.submit(Op::UserMessage {
        text: "first message".into(),
    });
    f.until("the first request", |e| {
        matches!(e, Event::RequestStarted { .. })
    })
    .await;
    f.handle.submit(Op::UserMessage {
        text: "second message".into(),
    });
    let first = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(first, Event::TurnEnded { ref final_text, .. } if final_text == "answer one"),
        "{first:?}"
    );
    let second = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(second, Event::TurnEnded { ref final_text, .. } if final_text == "answer two"),
        "{second:?}"
    );
    f.handle.submit(Op::Shutdown);
    f.finish().await;
}

#[tokio::test]
async fn a_resumed_session_continues_with_calls_that_may_have_run_recorded_unknown() {
    use crate::model::{ContentBlock, Role};
    use crate::session::{RecordBody, UNKNOWN_RESULT};

    let (project, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // An earlier run stopped while a call was running.
    let earlier = create_log(home.path(), project.path(), "anthropic", "mock-model").unwrap();
    let id = earlier.id.clone();
    for body in [
        RecordBody::User {
            text: "first question".into(),
        },
        RecordBody::Assistant {
            usage: None,
            cost_nanodollars: None,
            message: Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "toolu_earlier".into(),
                    name: "Bash".into(),
                    input: r#"{"command":"touch x"}"#.into(),
                }]
                .into(),
            },
        },
        RecordBody::ToolStart {
            call_id: "toolu_earlier".into(),
            tool: "Bash".into(),
            input: r#"{"command":"touch x"}"#.into(),
        },
    ] {
        earlier.log.append(body).await.unwrap();
    }
    // While it is held, nobody else resumes it.
    let (sink, mut events) = EventSink::channel();
    assert!(matches!(
        PendingResume::load(home.path(), &id, &sink),
        Err(OpenError::Session(
            crate::session::SessionError::InUse { .. }
        ))
    ));
    drop(earlier);

    let pending = PendingResume::load(home.path(), &id, &sink).unwrap();
    let maybe: Vec<&str> = pending
        .may_have_run()
        .iter()
        .map(|c| c.call_id.as_str())
        .collect();
    assert_eq!(maybe, ["toolu_earlier"]);
    let opened = pending.accept(&sink).unwrap();
    let resumed = events.try_recv().unwrap();
    assert!(
        matches!(&resumed, Event::SessionResumed { unknown_calls, messages: 3, .. } if unknown_calls == &["toolu_earlier"]),
        "{resumed:?}"
    );
    let log_path = opened.log.path().to_path_buf();

    let script = r#"
rules:
  - name: main
    replies:
      - text: "never: the resumed conversation holds one reply"
      - text: "carrying on"
"#;
    let mut f = start_in(
        script,
        Options::default(),
        project,
        home,
        Some(opened),
        sink,
        events,
    )
    .await;
    f.handle.submit(Op::UserMessage {
        text: "go on".into(),
    });
    let ended = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(ended, Event::TurnEnded { ref final_text, .. } if final_text == "carrying on"),
        "{ended:?}"
    );
    // The log goes on where the earlier run stopped.
    let log = std::fs::read_to_string(log_path).unwrap();
    assert!(
        log.contains("\"resumed\"") && log.contains("go on"),
        "{log}"
    );
    f.handle.submit(Op::Shutdown);
    let (_, _, records) = f.finish().await;
    let sent = body_text(&records[0]);
    assert!(
        sent.contains("first question") && sent.contains("go on"),
        "{sent}"
    );
    // The call is not run again: its result says it may have run.
    assert!(sent.contains(&UNKNOWN_RESULT[..20]), "{sent}");
}

#[tokio::test]
async fn an_interrupt_stops_the_turn_and_the_session_goes_on() {
    let script = r#"
rules:
  - name: second
    when: { last_user: "second message" }
    replies:
      - text: "answer two"
  - name: first
    replies:
      - latency_ms: 60000
        text: "never sent"
"#;
    let mut f = start(script, Options::default()).await;
    f.handle.submit(Op::UserMessage {
        text: "first message".into(),
    });
    f.until("the first request", |e| {
        matches!(e, Event::RequestStarted { .. })
    })
    .await;
    f.handle.submit(Op::Interrupt);
    let first = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(
            first,
            Event::TurnEnded {
                status: TurnStatus::Interrupted,
                ..
            }
        ),
        "{first:?}"
    );
    f.handle.submit(Op::UserMessage {
        text: "second message".into(),
    });
    let second = f.until("turn_ended", main_turn_ended).await;
    assert!(
        matches!(second, Event::TurnEnded { status: TurnStatus::Completed, ref final_text, .. } if final_text == "answer two"),
        "{second:?}"
    );
    f.handle.submit(Op::Shutdown);
    let (outcome, _, _) = f.finish().await;
    assert_eq!(outcome.last_turn.unwrap().status, TurnStatus::Completed);
}

#[tokio::test]
async fn stop_task_stops_that_task_alone() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "sleep 60", description: "one", run_in_background: true } }
          - { name: Bash, input: { command: "sleep 60", description: "two", run_in_background: true } }
      - text: "two sleepers"
      - text: "one was stopped"
"#;
    let mut f = start(script, Options::default()).await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    f.until("turn_ended", main_turn_ended).await;
    let rows = f.handle.tasks().await.unwrap();
    let one = rows
        .iter()
        .find(|r| r.description == "one")
        .unwrap()
        .id
        .clone();
    f.handle.submit(Op::StopTask {
        task_id: one.clone(),
    });
    let ended = f
        .until("task_ended", |e| matches!(e, Event::TaskEnded { .. }))
        .await;
    assert!(
        matches!(ended, Event::TaskEnded { ref task_id, status: TaskStatus::Cancelled, .. } if *task_id == one),
        "{ended:?}"
    );
    f.until("turn_ended", main_turn_ended).await;
    let rows = f.handle.tasks().await.unwrap();
    let two = rows.iter().find(|r| r.description == "two").unwrap();
    assert_eq!(two.status, TaskStatus::Running);
    // A task nobody has is reported, not a failure of the session.
    f.handle.submit(Op::StopTask {
        task_id: "t-nonexistent".into(),
    });
    f.until(
        "the warning",
        |e| matches!(e, Event::Warning { message } if message.contains("t-nonexistent")),
    )
    .await;
    f.handle.submit(Op::Shutdown);
    f.finish().await;
}

#[tokio::test]
async fn a_message_waiting_at_the_start_carries_the_notices_of_an_earlier_run() {
    // Several sessions: which of a waiting message and a waiting notice the
    // session sees first must not be left to chance.
    for _ in 0..8 {
        message_and_notice_waiting_at_the_start().await;
    }
}

async fn message_and_notice_waiting_at_the_start() {
    use crate::tasks::{NewTask, TaskKind};

    let (project, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A task of this session ended unannounced in an earlier run.
    let table = TaskTable::open(home.path()).await.unwrap();
    let row = table
        .create(NewTask {
            kind: TaskKind::Bash,
            session_id: "s-test".into(),
            parent_agent: MAIN.into(),
            description: "earlier job".into(),
            agent_type: None,
            name: None,
            background: true,
        })
        .await
        .unwrap();
    table
        .set_status(&row.id, TaskStatus::Running, None, None)
        .await
        .unwrap();
    table
        .set_status(&row.id, TaskStatus::Succeeded, None, Some("EARLIER-REPORT"))
        .await
        .unwrap();
    drop(table);
    let script = r#"
rules:
  - name: main
    replies:
      - text: "one turn for both"
"#;
    let (sink, events) = EventSink::channel();
    let f = start_in(
        script,
        Options {
            lifetime: Lifetime::AfterTask {
                wait_for_background: true,
            },
            ..Options::default()
        },
        project,
        home,
        None,
        sink,
        events,
    )
    .await;
    f.handle.submit(Op::UserMessage {
        text: "next task".into(),
    });
    let (outcome, _, records) = f.finish().await;
    assert_eq!(outcome.last_turn.unwrap().final_text, "one turn for both");
    // One request: the user's message, with the notice joined to it.
    assert_eq!(records.len(), 1);
    assert_eq!(notices_in(&records[0]), 1);
    let sent = body_text(&records[0]);
    assert!(
        sent.contains("next task") && sent.contains("EARLIER-REPORT"),
        "{sent}"
    );
}

#[tokio::test]
async fn compact_sent_during_a_turn_waits_for_it_then_the_next_message_goes_out_compacted() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: said hello."
  - name: main
    step_by: requests
    replies:
      - text: "hello back"
        latency_ms: 200
      - text: "second answer"
"#;
    let mut f = start(script, Options::default()).await;
    // Both sent at once: the compaction is queued behind the turn.
    assert!(f.handle.submit(Op::UserMessage {
        text: "hello there".into()
    }));
    assert!(f.handle.submit(Op::Compact {
        focus: Some("the greeting".into())
    }));
    f.until("turn_ended", main_turn_ended).await;
    let ended = f
        .until("compaction_ended", |e| {
            matches!(e, Event::CompactionEnded { .. })
        })
        .await;
    assert!(
        matches!(
            ended,
            Event::CompactionEnded {
                error: None,
                kept_messages: 1,
                ..
            }
        ),
        "{ended:?}"
    );
    assert!(f.handle.submit(Op::UserMessage {
        text: "and then".into()
    }));
    f.until("second turn_ended", main_turn_ended).await;
    f.handle.submit(Op::Shutdown);
    let (_, _, records) = f.finish().await;
    let rules: Vec<&str> = records.iter().filter_map(|r| r.rule.as_deref()).collect();
    assert_eq!(rules, ["main", "summary", "main"]);
    assert!(body_text(&records[1]).contains("above all: the greeting"));
    let last = body_text(&records[2]);
    assert!(
        last.contains("SUMMARY: said hello.") && !last.contains("hello there"),
        "{last}"
    );
}

#[tokio::test]
async fn a_mode_switch_applies_while_idle_and_bypass_cannot_be_entered_from_a_stricter_session() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls: [{ name: Write, input: { file_path: "x.txt", content: "x" } }]
      - text: "tried"
"#;
    let mut f = start(
        script,
        Options {
            mode: PermissionMode::AcceptEdits,
            ..Options::default()
        },
    )
    .await;
    assert!(f.handle.submit(Op::SetMode {
        mode: PermissionMode::BypassPermissions
    }));
    f.until("the refusal", |e| {
        matches!(e, Event::Warning { message } if message.contains("bypassPermissions can only be chosen"))
    })
    .await;
    assert!(f.handle.submit(Op::SetMode {
        mode: PermissionMode::Plan
    }));
    let changed = f
        .until("mode_changed", |e| matches!(e, Event::ModeChanged { .. }))
        .await;
    assert!(
        matches!(changed, Event::ModeChanged { mode: PermissionMode::Plan, ref agent } if agent == MAIN),
        "{changed:?}"
    );
    // In plan mode the write that acceptEdits would have run is refused.
    assert!(f.handle.submit(Op::UserMessage {
        text: "write x".into()
    }));
    let denied = f
        .until("tool_call_denied", |e| {
            matches!(e, Event::ToolCallDenied { .. })
        })
        .await;
    assert!(
        matches!(denied, Event::ToolCallDenied { ref tool, .. } if tool == "Write"),
        "{denied:?}"
    );
    f.until("turn_ended", main_turn_ended).await;
    f.handle.submit(Op::Shutdown);
    f.finish().await;
}

#[tokio::test]
async fn no_and_what_to_do_instead_reaches_the_model_as_the_calls_result() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls: [{ name: Bash, input: { command: "grep -r parse_config ." } }]
      - text: "using rg then"
"#;
    let mut f = start(
        script,
        Options {
            mode: PermissionMode::Default,
            answers_questions: true,
            ..Options::default()
        },
    )
    .await;
    f.handle.submit(Op::UserMessage { text: "go".into() });
    let Event::ApprovalRequested { id, .. } = f
        .until("approval_requested", |e| {
            matches!(e, Event::ApprovalRequested { .. })
        })
        .await
    else {
        unreachable!()
    };
    f.handle.submit(Op::ApprovalAnswer {
        id: Some(id),
        answer: ApprovalAnswer::Instead("use rg, it is faster".into()),
    });
    f.until("turn_ended", main_turn_ended).await;
    f.handle.submit(Op::Shutdown);
    let (_, _, records) = f.finish().await;
    let result = body_text(&records[1]);
    assert!(
        result.contains("declined this call and said what to do instead")
            && result.contains("use rg, it is faster"),
        "{result}"
    );
}

#[tokio::test]
async fn going_back_cuts_the_conversation_and_the_log_and_a_new_model_takes_the_next_turn() {
    let (project, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let opened = create_log(home.path(), project.path(), "anthropic", "mock-model").unwrap();
    let id = opened.id.clone();
    let log_path = opened.log.path().to_path_buf();
    let script = r#"
rules:
  - name: main
    step_by: requests
    replies:
      - text: "reply one"
      - text: "reply two"
      - text: "reply three"
"#;
    let (sink, events) = EventSink::channel();
    let mut f = start_in(
        script,
        Options::default(),
        project,
        home,
        Some(opened),
        sink,
        events,
    )
    .await;
    for text in ["one", "two"] {
        f.handle.submit(Op::UserMessage { text: text.into() });
        f.until("turn_ended", main_turn_ended).await;
    }
    // A message that was never sent: nothing changes, and the user is told.
    f.handle.submit(Op::Rewind {
        prompt: "never sent".into(),
        later_same: 0,
        action: Default::default(),
        overwrite: false,
    });
    f.until(
        "the warning",
        |e| matches!(e, Event::Warning { message } if message.starts_with("cannot go back")),
    )
    .await;
    f.handle.submit(Op::Rewind {
        prompt: "two".into(),
        later_same: 0,
        action: Default::default(),
        overwrite: false,
    });
    let rewound = f
        .until("rewound", |e| matches!(e, Event::Rewound { .. }))
        .await;
    assert!(
        matches!(&rewound, Event::Rewound { prompt, messages: 2, .. } if prompt == "two"),
        "{rewound:?}"
    );
    f.handle.submit(Op::SetModel {
        model: "other-model".into(),
    });
    f.until(
        "model_changed",
        |e| matches!(e, Event::ModelChanged { model, .. } if model == "other-model"),
    )
    .await;
    f.handle.submit(Op::UserMessage {
        text: "three".into(),
    });
    f.until("turn_ended", main_turn_ended).await;
    f.handle.submit(Op::Shutdown);
    let home = f._home.path().to_path_buf();
    let keep_home = std::mem::replace(&mut f._home, tempfile::tempdir().unwrap());
    let (_, _, records) = f.finish().await;
    let sent = &records[2].body;
    assert_eq!(sent["model"], "other-model");
    let text = sent.to_string();
    assert!(
        text.contains("one") && text.contains("reply one") && text.contains("three"),
        "{text}"
    );
    assert!(
        !text.contains("\"two\"") && !text.contains("reply two"),
        "the message gone back before and its reply are not sent: {text}"
    );
    // The log keeps everything and says where it went back; a resume
    // rebuilds the same conversation the live session had.
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("reply two") && log.contains("\"rewind\""),
        "{log}"
    );
    let (sink, _events) = EventSink::channel();
    let resumed = PendingResume::load(&home, &id, &sink)
        .unwrap()
        .accept(&sink)
        .unwrap();
    let rebuilt = serde_json::to_string(&resumed.messages).unwrap();
    assert_eq!(resumed.messages.len(), 4, "{rebuilt}");
    assert!(!rebuilt.contains("reply two"), "{rebuilt}");
    drop(keep_home);
}
