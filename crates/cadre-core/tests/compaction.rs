//! Compaction through the agent's public API against `cadre-mock` over HTTP,
//! on both wires: at the threshold the same model is asked for a summary,
//! the next request is the summary plus the most recent messages, the
//! prompt-cache prefix holds between compactions, a length error compacts
//! and retries once, and a failed summary leaves the conversation as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use cadre_core::context::{PreCompactDecision, PreCompactHook, PreCompactInput};
use cadre_core::model::Provider;
use cadre_core::protocol::{CompactTrigger, Event, TurnStatus};
use futures::future::BoxFuture;
use serde_json::Value;
use support::{World, drain, user_texts};
use tokio_util::sync::CancellationToken;

const WIRES: [Provider; 2] = [Provider::Anthropic, Provider::OpenAI];

/// Replies report growing usage; with a 4000-token window the threshold
/// (85%: 3400) is reached after the third reply. The summary rule comes
/// first: it matches only the summary request.
const GROWING: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-ONE: the task is reading four files; a, b and c are read."
  - name: main
    step_by: requests
    replies:
      - text: "Reading a."
        tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 1000, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
        usage: { input_tokens: 2000, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "c.txt" } }]
        usage: { input_tokens: 3400, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "d.txt" } }]
        usage: { input_tokens: 1500, output_tokens: 20 }
      - text: "All four read."
        usage: { input_tokens: 2000, output_tokens: 20 }
"#;

fn write_files(w: &World) {
    for name in ["a", "b", "c", "d"] {
        w.write(
            &format!("{name}.txt"),
            &format!("{name}{}\n", "x".repeat(2000)),
        );
    }
}

/// A request body without its cache breakpoints (they move to the newest
/// message every request; everything else of the prefix must not change).
fn without_cache_marks(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_marks(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_marks).collect()),
        other => other.clone(),
    }
}

/// True when `later`'s messages start with all of `earlier`'s.
fn extends(earlier: &Value, later: &Value) -> bool {
    let (a, b) = (
        without_cache_marks(&earlier["messages"]),
        without_cache_marks(&later["messages"]),
    );
    let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
    b.len() >= a.len() && a[..] == b[..a.len()]
}

#[tokio::test]
async fn the_session_compacts_at_the_threshold_and_goes_on_with_the_summary_and_the_last_turns() {
    for wire in WIRES {
        let w = World::new(GROWING, wire).await;
        write_files(&w);
        let (mut agent, mut rx) = w.agent_with(20, None, Some(4000), None, None);
        let outcome = agent
            .run_turn("read the four files".into(), CancellationToken::new())
            .await;
        assert_eq!(
            outcome.status,
            TurnStatus::Completed,
            "{wire:?}: {outcome:?}"
        );
        assert_eq!(outcome.final_text, "All four read.");
        assert_eq!(outcome.compactions, 1, "{wire:?}");
        assert_eq!(agent.compactions(), 1);

        let records = w.records();
        let rules: Vec<&str> = records
            .iter()
            .map(|r| r.rule.as_deref().unwrap_or("-"))
            .collect();
        assert_eq!(
            rules,
            ["main", "main", "main", "summary", "main", "main"],
            "{wire:?}"
        );
        let summary_req = &records[3].body;
        // Same model, same system prompt and tools: the summary request reads the cache.
        let system_of = |b: &Value| match wire {
            Provider::Anthropic => without_cache_marks(&b["system"]),
            Provider::OpenAI => b["messages"][0].clone(),
        };
        assert_eq!(system_of(summary_req), system_of(&records[2].body));
        assert_eq!(summary_req["tools"], records[2].body["tools"]);
        // With the instructions and room for the summary the whole
        // conversation would not fit the small window: the request holds the
        // first message and the most recent ones.
        let sent = summary_req.to_string();
        assert!(
            sent.contains("read the four files") && sent.contains("c.txt"),
            "{wire:?}"
        );
        assert!(
            sent.contains("were dropped from this summary request"),
            "{wire:?}"
        );
        let texts = user_texts(summary_req);
        let last = texts.last().unwrap();
        assert!(last.contains("<compaction-request>"), "{last}");
        assert!(last.contains("The user's instructions"), "{last}");

        // After: the summary as the first user message, then the last turns.
        let after = &records[4].body;
        let after_texts = user_texts(after);
        assert!(
            after_texts[0].contains("<compaction-summary>")
                && after_texts[0].contains("SUMMARY-ONE"),
            "{wire:?}: {after_texts:?}"
        );
        assert!(
            !after.to_string().contains("read the four files"),
            "{wire:?}: the first message is summarised away"
        );
        assert!(
            after.to_string().contains(r#"c.txt"#),
            "{wire:?}: the most recent call is kept verbatim"
        );
        let size = |b: &Value| b.to_string().len();
        assert!(
            size(after) < size(&records[2].body),
            "{wire:?}: {} < {}",
            size(after),
            size(&records[2].body)
        );
        // Between compactions the prefix stays the same, request after request.
        for (i, pair) in [(0, 1), (1, 2), (4, 5)].iter().enumerate() {
            assert!(
                extends(&records[pair.0].body, &records[pair.1].body),
                "{wire:?}: pair {i} {pair:?}"
            );
        }
        assert!(!extends(&records[2].body, &records[4].body));

        let events = drain(&mut rx);
        let started: Vec<(CompactTrigger, u64)> = events
            .iter()
            .filter_map(|e| match e {
                Event::CompactionStarted {
                    trigger,
                    tokens_before,
                    ..
                } => Some((*trigger, *tokens_before)),
                _ => None,
            })
            .collect();
        assert_eq!(started.len(), 1, "{wire:?}: {started:?}");
        assert_eq!(started[0].0, CompactTrigger::Auto);
        assert!(started[0].1 >= 3420, "{started:?}");
        let ended = events
            .iter()
            .find_map(|e| match e {
                Event::CompactionEnded {
                    tokens_before,
                    tokens_after,
                    kept_messages,
                    error,
                    ..
                } => Some((*tokens_before, *tokens_after, *kept_messages, error.clone())),
                _ => None,
            })
            .unwrap();
        assert!(ended.3.is_none(), "{ended:?}");
        assert!(ended.1 < ended.0, "{ended:?}");
        assert_eq!(ended.2, 2, "{wire:?}: the last call and its result");
        let usages: Vec<(u64, u64, bool)> = events
            .iter()
            .filter_map(|e| match e {
                Event::ContextUsage {
                    tokens,
                    window,
                    estimated,
                    ..
                } => Some((*tokens, *window, *estimated)),
                _ => None,
            })
            .collect();
        assert_eq!(usages.len(), 6, "{wire:?}: five replies and one compaction");
        assert_eq!(usages[0], (1020, 4000, false));
        assert_eq!(usages[2], (3420, 4000, false));
        assert!(usages[3].2, "after a compaction the count is an estimate");
    }
}

#[tokio::test]
async fn a_length_error_compacts_and_retries_once_then_fails_clearly() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: one file read."
      - text: "SUMMARY: still too long."
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 100, output_tokens: 20 }
      - text: "never sent"
        fail: { status: 400, message: "prompt is too long: 250000 tokens > 200000 maximum" }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        write_files(&w);
        let (mut agent, mut rx) = w.agent_with(20, None, Some(200_000), None, None);
        let outcome = agent
            .run_turn("read a".into(), CancellationToken::new())
            .await;
        // Second request: refused, compacted, retried, refused again: the
        // turn fails, said clearly.
        assert_eq!(outcome.status, TurnStatus::Failed, "{wire:?}");
        let error = outcome.error.unwrap();
        assert!(
            error.contains("does not fit in the model's context window even after compacting"),
            "{wire:?}: {error}"
        );
        let rules: Vec<String> = w
            .records()
            .iter()
            .map(|r| format!("{}:{}", r.rule.as_deref().unwrap_or("-"), r.status))
            .collect();
        assert_eq!(
            rules,
            ["main:200", "main:400", "summary:200", "main:400"],
            "{wire:?}"
        );
        let events = drain(&mut rx);
        let triggers: Vec<CompactTrigger> = events
            .iter()
            .filter_map(|e| match e {
                Event::CompactionStarted { trigger, .. } => Some(*trigger),
                _ => None,
            })
            .collect();
        assert_eq!(triggers, [CompactTrigger::LengthError], "{wire:?}");
    }
}

#[tokio::test]
async fn after_a_length_error_and_a_compaction_the_retry_carries_the_turn_on() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: a was read."
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - text: "done after the retry"
        fail_once: { status: 400, message: "context_length_exceeded: maximum context length is 8192 tokens" }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        write_files(&w);
        let (mut agent, _rx) = w.agent_with(20, None, Some(8192), None, None);
        let outcome = agent
            .run_turn("read a".into(), CancellationToken::new())
            .await;
        assert_eq!(
            outcome.status,
            TurnStatus::Completed,
            "{wire:?}: {outcome:?}"
        );
        assert_eq!(outcome.final_text, "done after the retry");
        let records = w.records();
        let retried = &records.last().unwrap().body;
        assert!(
            user_texts(retried)[0].contains("SUMMARY: a was read."),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn a_failed_summary_fails_the_turn_and_leaves_the_conversation_as_it_was() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    replies:
      - fail: { status: 400, message: "invalid_request_error: something else" }
      - fail: { status: 400, message: "invalid_request_error: something else" }
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 3500, output_tokens: 20 }
      - text: "unreached"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        write_files(&w);
        let (mut agent, mut rx) = w.agent_with(20, None, Some(4000), None, None);
        let outcome = agent
            .run_turn("read a".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Failed, "{wire:?}");
        let error = outcome.error.unwrap();
        assert!(
            error.contains("compacting it failed") && error.contains("unchanged"),
            "{wire:?}: {error}"
        );
        assert_eq!(agent.compactions(), 0);
        // user, call, result: nothing replaced.
        assert_eq!(agent.conversation().len(), 3, "{wire:?}");
        let ended_with_error = drain(&mut rx).iter().any(|e| {
            matches!(e, Event::CompactionEnded { error: Some(m), .. } if m.contains("summary request failed"))
        });
        assert!(ended_with_error, "{wire:?}");
    }
}

#[tokio::test]
async fn compact_now_keeps_the_users_focus_and_an_empty_conversation_has_nothing_to_compact() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: greeted."
  - name: main
    step_by: requests
    replies:
      - text: "hello"
      - text: "hello again"
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, _rx) = w.agent_with(20, None, None, None, None);
        let cancel = CancellationToken::new();
        let empty = agent.compact(None, &cancel).await.unwrap_err();
        assert!(empty.to_string().contains("nothing to compact"), "{empty}");
        agent.run_turn("hi".into(), cancel.clone()).await;
        agent
            .compact(Some("the greeting".into()), &cancel)
            .await
            .unwrap();
        // A conversation that ended with the model's answer keeps it.
        assert_eq!(agent.conversation().len(), 2, "{wire:?}");
        agent.run_turn("again".into(), cancel.clone()).await;
        let records = w.records();
        let summary_req = user_texts(&records[1].body);
        assert!(
            summary_req
                .last()
                .unwrap()
                .ends_with("above all: the greeting"),
            "{wire:?}: {summary_req:?}"
        );
        let next = user_texts(&records[2].body);
        assert!(next[0].contains("SUMMARY: greeted."), "{wire:?}: {next:?}");
        assert!(next.last().unwrap().contains("again"));
    }
}

#[tokio::test]
async fn a_tool_result_too_long_for_the_window_alone_is_cut_before_it_is_sent() {
    let script = r#"
rules:
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "big.txt" } }]
        usage: { input_tokens: 100, output_tokens: 20 }
      - text: "read"
        usage: { input_tokens: 100, output_tokens: 20 }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        // 40 KB of lines: about 10k tokens, against a 4000-token window.
        let big: String = (0..1000)
            .map(|i| format!("line {i:05} {}\n", "y".repeat(28)))
            .collect();
        w.write("big.txt", &big);
        let (mut agent, _rx) = w.agent_with(20, None, Some(4000), None, None);
        let outcome = agent
            .run_turn("read big".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        let records = w.records();
        let results = support::tool_results(&records[1].body);
        let (content, _) = &results[0];
        assert!(content.len() <= 2000 * 4, "{wire:?}: {}", content.len());
        assert!(
            content.contains("cut here by cadre"),
            "{wire:?}: {}",
            &content[..200]
        );
        assert!(content.contains("line 00000"), "the head is kept");
        assert!(content.contains("line 00999"), "the tail is kept");
    }
}

#[tokio::test]
async fn a_reply_cut_off_by_the_context_limit_is_continued_after_a_compaction() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: writing the report, first half written."
  - name: main
    step_by: requests
    replies:
      - text: "The report, first half"
        stop_reason: max_tokens
        usage: { input_tokens: 3300, output_tokens: 400 }
      - text: "and the second half."
        usage: { input_tokens: 900, output_tokens: 20 }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        let (mut agent, _rx) = w.agent_with(20, None, Some(4000), None, None);
        let outcome = agent
            .run_turn("write the report".into(), CancellationToken::new())
            .await;
        assert_eq!(
            outcome.status,
            TurnStatus::Completed,
            "{wire:?}: {outcome:?}"
        );
        assert_eq!(outcome.final_text, "and the second half.");
        assert_eq!(outcome.compactions, 1);
        let records = w.records();
        assert_eq!(records.len(), 3, "{wire:?}");
        let texts = user_texts(&records[2].body);
        assert!(
            texts
                .last()
                .unwrap()
                .contains("continue the reply from where it stopped"),
            "{wire:?}: {texts:?}"
        );
        // The cut reply itself is kept verbatim after the summary.
        assert!(
            records[2]
                .body
                .to_string()
                .contains("The report, first half")
        );
    }
}

/// A hook that blocks when told to, and otherwise adds an instruction.
struct Hook {
    block: bool,
    seen: std::sync::Mutex<Vec<PreCompactInput>>,
}

impl PreCompactHook for Hook {
    fn pre_compact(&self, input: PreCompactInput) -> BoxFuture<'static, PreCompactDecision> {
        self.seen.lock().unwrap().push(input);
        let decision = if self.block {
            PreCompactDecision {
                block: Some("not now".into()),
                extra_instructions: None,
            }
        } else {
            PreCompactDecision {
                block: None,
                extra_instructions: Some("mention the HOOK-NOTE".into()),
            }
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn the_pre_compact_point_sees_every_compaction_and_may_add_to_it_or_stop_it() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: hi."
  - name: main
    step_by: requests
    replies:
      - text: "hello"
"#;
    for block in [false, true] {
        let w = World::new(script, Provider::Anthropic).await;
        let hook = Arc::new(Hook {
            block,
            seen: Default::default(),
        });
        let (mut agent, _rx) = w.agent_with(20, None, None, None, Some(hook.clone()));
        let cancel = CancellationToken::new();
        agent.run_turn("hi".into(), cancel.clone()).await;
        let result = agent.compact(Some("focus".into()), &cancel).await;
        let seen = hook.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [PreCompactInput {
                agent_id: "main".into(),
                trigger: CompactTrigger::Manual,
                custom_instructions: Some("focus".into()),
            }]
        );
        let records = w.records();
        if block {
            let e = result.unwrap_err().to_string();
            assert!(
                e.contains("PreCompact hook stopped") && e.contains("not now"),
                "{e}"
            );
            assert_eq!(records.len(), 1, "no summary request");
            assert_eq!(agent.compactions(), 0);
        } else {
            result.unwrap();
            let last = user_texts(&records[1].body).pop().unwrap();
            assert!(
                last.ends_with("Further instructions for the summary: mention the HOOK-NOTE"),
                "{last}"
            );
        }
    }
}

#[tokio::test]
async fn a_server_that_reports_no_usage_is_estimated_and_still_compacts() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: a and b were read."
        usage: { input_tokens: 0, output_tokens: 0 }
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 0, output_tokens: 0 }
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
        usage: { input_tokens: 0, output_tokens: 0 }
      - text: "done"
        usage: { input_tokens: 0, output_tokens: 0 }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        // Two results of about 5000 tokens each against a 16000-token window
        // (the tool list alone is a few thousand).
        for f in ["a", "b"] {
            let text: String = (0..500)
                .map(|i| format!("{f} {i:04} {}\n", "q".repeat(32)))
                .collect();
            w.write(&format!("{f}.txt"), &text);
        }
        let (mut agent, mut rx) = w.agent_with(20, None, Some(16_000), None, None);
        let outcome = agent
            .run_turn("read a and b".into(), CancellationToken::new())
            .await;
        assert_eq!(
            outcome.status,
            TurnStatus::Completed,
            "{wire:?}: {outcome:?}"
        );
        assert_eq!(outcome.compactions, 1, "{wire:?}");
        let estimated = drain(&mut rx)
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::ContextUsage {
                        estimated: true,
                        ..
                    }
                )
            })
            .count();
        assert!(estimated >= 3, "{wire:?}: every count is an estimate");
    }
}

#[tokio::test]
async fn a_local_server_smaller_than_assumed_is_learned_from_its_length_error() {
    // llama.cpp's refusal, with its context size beside the message.
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: big.txt was read."
        fail_once:
          status: 400
          body: '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5200,"n_ctx":4096}}'
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "big.txt" } }]
      - text: "done"
        fail_once:
          status: 400
          body: '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":12000,"n_ctx":4096}}'
"#;
    let w = World::new(script, Provider::OpenAI).await;
    let big: String = (0..800)
        .map(|i| format!("row {i:04} {}\n", "w".repeat(30)))
        .collect();
    w.write("big.txt", &big);
    // No window configured: the default (128k) is assumed at first.
    let (mut agent, mut rx) = w.agent_with(20, None, None, None, None);
    let outcome = agent
        .run_turn("read big".into(), CancellationToken::new())
        .await;
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.final_text, "done");
    assert_eq!(agent.context_policy().profile.context_window, 4096);
    let events = drain(&mut rx);
    assert!(events.iter().any(|e| matches!(e, Event::Warning { message } if message.contains("context window of 4096 tokens"))));
    let records = w.records();
    let summaries: Vec<usize> = records
        .iter()
        .filter(|r| r.rule.as_deref() == Some("summary"))
        .map(|r| r.body.to_string().len())
        .collect();
    assert_eq!(summaries.len(), 2, "refused once, then cut further");
    assert!(summaries[1] < summaries[0], "{summaries:?}");
    let last = records.last().unwrap();
    assert_eq!(last.status, 200);
    assert!(user_texts(&last.body)[0].contains("SUMMARY: big.txt was read."));
}

#[tokio::test]
async fn a_summary_request_that_fits_is_the_conversation_as_sent_so_it_reads_the_cache() {
    let script = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY: two small files read."
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 8000, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
        usage: { input_tokens: 13600, output_tokens: 20 }
      - text: "done"
        usage: { input_tokens: 2000, output_tokens: 20 }
"#;
    for wire in WIRES {
        let w = World::new(script, wire).await;
        w.write("a.txt", "alpha\n");
        w.write("b.txt", "beta\n");
        let (mut agent, _rx) = w.agent_with(20, None, Some(16_000), None, None);
        let outcome = agent
            .run_turn("read two".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.compactions, 1, "{wire:?}");
        let records = w.records();
        let rules: Vec<&str> = records.iter().map(|r| r.rule.as_deref().unwrap()).collect();
        assert_eq!(rules, ["main", "main", "summary", "main"], "{wire:?}");
        assert!(extends(&records[1].body, &records[2].body), "{wire:?}");
        assert_eq!(
            without_cache_marks(&records[1].body["tools"]),
            without_cache_marks(&records[2].body["tools"])
        );
    }
}
