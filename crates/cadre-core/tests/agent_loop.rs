//! The agent loop through its public API against `cadre-mock` over HTTP:
//! a turn runs every call and sends each result back once, in order; limits,
//! model failures and interrupts end a turn with the conversation still
//! sendable; calls the loop cannot run are reported to the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use cadre_core::model::Provider;
use cadre_core::protocol::{Event, TurnStatus};
use support::{World, drain, tool_results, user_texts};
use tokio_util::sync::CancellationToken;

const WIRES: [Provider; 2] = [Provider::Anthropic, Provider::OpenAI];

#[tokio::test]
async fn a_turn_runs_each_call_and_sends_every_result_back_once_in_order() {
    let script = r#"
rules:
  - replies:
      - text: "Looking."
        tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
          - { name: Read, input: { file_path: "missing.txt" } }
          - { name: Glob, input: { pattern: "*.txt" } }
      - text: "All done."
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        w.write("a.txt", "alpha contents\n");
        let (mut agent, mut rx) = w.agent(10, None);
        let outcome = agent
            .run_turn("look around".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(outcome.final_text, "All done.");
        assert_eq!((outcome.requests, outcome.tool_calls), (2, 3), "{wire:?}");

        let records = w.records();
        assert_eq!(records.len(), 2);
        let results = tool_results(&records[1].body);
        assert_eq!(results.len(), 3, "{wire:?}: {results:?}");
        assert!(results[0].0.contains("alpha contents") && !results[0].1);
        assert!(results[1].1, "a missing file is an error: {results:?}");
        assert!(results[2].0.contains("a.txt") && !results[2].1);
        // user, assistant with calls, results, final assistant.
        assert_eq!(agent.conversation().len(), 4, "{wire:?}");

        let events = drain(&mut rx);
        let started: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallStarted { tool, .. } => Some(tool.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(started, ["Read", "Read", "Glob"], "{wire:?}");
        let ended = events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallEnded { .. }))
            .count();
        assert_eq!(ended, 3);
        assert!(matches!(
            events.last(),
            Some(Event::TurnEnded {
                status: TurnStatus::Completed,
                ..
            })
        ));
    }
}

#[tokio::test]
async fn calls_the_loop_cannot_run_are_answered_with_errors() {
    let script = r#"
rules:
  - replies:
      - tool_calls:
          - { name: NoSuchTool, input: {} }
          - { name: Read, input_raw: "{not json" }
          - { name: Read, input: { no_file_path: 1 } }
      - text: "noted"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, _rx) = w.agent(10, None);
        let outcome = agent.run_turn("go".into(), CancellationToken::new()).await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        let records = w.records();
        let results = tool_results(&records[1].body);
        assert_eq!(results.len(), 3, "{wire:?}: {results:?}");
        assert!(results.iter().all(|r| r.1), "{wire:?}: {results:?}");
        assert!(results[0].0.contains("NoSuchTool"), "{results:?}");
    }
}

#[tokio::test]
async fn the_request_limit_ends_the_turn_and_the_next_turn_is_well_formed() {
    let script = r#"
rules:
  - replies:
      - tool_calls:
          - { name: Glob, input: { pattern: "*" } }
      - tool_calls:
          - { name: Glob, input: { pattern: "*" } }
      - text: "resumed"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, _rx) = w.agent(2, None);
        let outcome = agent
            .run_turn("loop".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::LimitReached, "{wire:?}");
        assert_eq!(outcome.requests, 2);
        assert_eq!(w.records().len(), 2, "no request past the limit");

        let outcome = agent
            .run_turn("carry on".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(outcome.final_text, "resumed");
        // The third request answers the second call (the records check
        // pairing) and carries the new text.
        let records = w.records();
        assert_eq!(records.len(), 3);
        assert_eq!(tool_results(&records[2].body).len(), 2, "{wire:?}");
        assert!(
            user_texts(&records[2].body)
                .last()
                .unwrap()
                .contains("carry on"),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_model_failure_fails_the_turn_and_the_next_turn_starts_clean() {
    let script = r#"
rules:
  - replies:
      - fail_once: { status: 500, message: "overloaded" }
        text: "second try answered"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, _rx) = w.agent(10, None);
        let outcome = agent
            .run_turn("hello".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Failed, "{wire:?}");
        assert!(outcome.model_error.is_some(), "{wire:?}: {outcome:?}");

        let outcome = agent
            .run_turn("again".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(outcome.final_text, "second try answered");
        let records = w.records();
        assert_eq!(records.len(), 2);
        // No assistant turn was invented for the failure; both texts are sent.
        assert_eq!(records[1].step, 0, "{wire:?}");
        let sent = user_texts(&records[1].body).join("\n");
        assert!(sent.contains("hello") && sent.contains("again"), "{sent}");
    }
}

#[tokio::test]
async fn an_interrupt_while_the_model_answers_ends_the_turn_interrupted() {
    let script = r#"
rules:
  - when: { last_user: "quick" }
    replies:
      - text: "quick answer"
  - replies:
      - latency_ms: 30000
        text: "too late"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, mut rx) = w.agent(10, None);
        let cancel = CancellationToken::new();
        let interrupt = {
            let cancel = cancel.clone();
            async move {
                // Interrupt once the request is on its way.
                while let Some(e) = rx.recv().await {
                    if matches!(e, Event::RequestStarted { .. }) {
                        cancel.cancel();
                        break;
                    }
                }
                rx
            }
        };
        let (outcome, _rx) = tokio::join!(agent.run_turn("slow".into(), cancel.clone()), interrupt);
        assert_eq!(outcome.status, TurnStatus::Interrupted, "{wire:?}");

        let outcome = agent
            .run_turn("quick".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(outcome.final_text, "quick answer");
        let last = w.records().pop().unwrap();
        let sent = user_texts(&last.body).join("\n");
        assert!(sent.contains("slow") && sent.contains("quick"), "{sent}");
    }
}
