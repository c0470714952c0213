//! Hardening of the model client and the turn loop against a misbehaving
//! server or model: pings that never end, a request's overall deadline,
//! aliases on a local endpoint, arguments checked before any decision,
//! out-of-range numbers, repeated failing calls, and the OpenAI wire's
//! output token ceiling.

use crate::common;

use std::process::Output;

use common::{BOTH_WIRES, Harness, Wire, events, rule_records, stderr, tool_results};
use serde_json::Value;

/// Writes the user's `config.toml`.
fn user_config(h: &Harness, text: &str) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), text).unwrap();
}

/// Runs `cadre <args>` within `secs` (see [`Harness::cadre_bounded`]).
async fn cadre_bounded(h: &Harness, args: &[&str], secs: u64) -> Output {
    h.cadre_bounded(args, secs).await
}

fn of_type<'a>(evs: &'a [Value], t: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["type"] == t).collect()
}

// ---------------------------------------------------------------------------
// Item 7: pings do not keep a stream alive; each request has a deadline.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_stream_of_pings_alone_times_out_and_the_run_fails_clearly() {
    let script = r#"
rules:
  - name: pinger
    replies:
      - text: "never"
        fail: { ping_after_events: 1, ping_every_ms: 50 }
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        user_config(&h, "[limits]\nstream_idle_timeout_s = 1\n");
        let out = cadre_bounded(&h, &["exec", "--json", "hello"], 90).await;
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let retries = of_type(&evs, "retrying");
        assert_eq!(retries.len(), 5, "{wire:?}: {evs:?}");
        assert!(
            retries.iter().all(|r| r["reason"]
                .as_str()
                .unwrap()
                .contains("stream_idle_timeout_s")),
            "{retries:?}"
        );
        let end = of_type(&evs, "turn_ended")[0];
        assert_eq!(end["status"], "failed");
        let error = end["error"].as_str().unwrap();
        assert!(error.contains("gave up after 6 tries"), "{error}");
        assert!(error.contains("stream_idle_timeout_s"), "{error}");
    }
}

#[tokio::test]
async fn the_request_deadline_ends_retries_that_would_outlast_it() {
    // Every try is refused with a long retry-after: without a deadline six
    // tries are made; with it, the one whose wait passes the deadline is not.
    let script = r#"
rules:
  - name: busy
    replies:
      - text: "never"
        fail: { status: 503, retry_after_s: 5, message: "overloaded" }
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    user_config(&h, "[limits]\nrequest_deadline_s = 3\n");
    let out = cadre_bounded(&h, &["exec", "--json", "hello"], 60).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let evs = events(&out);
    let end = of_type(&evs, "turn_ended")[0];
    assert_eq!(end["status"], "failed");
    let error = end["error"].as_str().unwrap();
    assert!(error.contains("request_deadline_s"), "{error}");
    assert!(
        error.contains("overloaded"),
        "the last failure is named: {error}"
    );
    assert!(of_type(&evs, "retrying").is_empty(), "{evs:?}");
    assert_eq!(rule_records(&h.records(), "busy").len(), 1);
}

#[tokio::test]
async fn the_request_deadline_ends_a_stream_that_only_pings() {
    // The default idle timeout (300 s) would wait; the deadline does not.
    let script = r#"
rules:
  - name: pinger
    replies:
      - text: "never"
        fail: { ping_after_events: 1, ping_every_ms: 50 }
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    user_config(&h, "[limits]\nrequest_deadline_s = 2\n");
    let out = cadre_bounded(&h, &["exec", "hello"], 60).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("request_deadline_s"), "{err}");
    assert!(err.contains("did not complete within 2 s"), "{err}");
}

#[tokio::test]
async fn a_request_deadline_out_of_range_is_refused_naming_the_key() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    user_config(&h, "[limits]\nrequest_deadline_s = 0\n");
    let out = cadre_bounded(&h, &["exec", "hello"], 60).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("limits.request_deadline_s"),
        "{}",
        stderr(&out)
    );
    assert!(h.records().is_empty());
}

// ---------------------------------------------------------------------------
// Item 23: the OpenAI wire carries the output token ceiling.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_openai_wire_sends_max_tokens_to_a_server_other_than_openai() {
    let script = "rules:\n  - name: main\n    replies:\n      - text: \"ok\"\n";
    for (config, want) in [("", 8192), ("max_tokens = 1234\n", 1234)] {
        let h = Harness::new(script, Wire::OpenAi).await;
        user_config(&h, config);
        let out = cadre_bounded(&h, &["exec", "hello"], 60).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let body = &h.records()[0].body;
        assert_eq!(body["max_tokens"], want, "{body}");
        // `max_completion_tokens` is for OpenAI's own API only.
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
    }
}

// ---------------------------------------------------------------------------
// Item 19: an alias with no mapping at a local endpoint; no assumed prices.
// ---------------------------------------------------------------------------

const OPUS_CHILD: &str = r#"
rules:
  - name: child
    when: { first_user: "child-task" }
    replies:
      - text: "child report"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look", prompt: "child-task", subagent_type: "general-purpose", model: "opus" } }
      - text: "parent done"
"#;

#[tokio::test]
async fn an_unmapped_alias_at_a_local_openai_endpoint_keeps_the_sessions_model() {
    let h = Harness::new(OPUS_CHILD, Wire::OpenAi).await;
    let out = cadre_bounded(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 1);
    assert_eq!(
        child[0].body["model"], "mock-model",
        "not OpenAI's hosted model"
    );
    let evs = events(&out);
    let warned = of_type(&evs, "warning").into_iter().any(|w| {
        let m = w["message"].as_str().unwrap_or("");
        m.contains("'opus'") && m.contains("session's model")
    });
    assert!(warned, "a warning names the alias: {evs:?}");
    // No price is assumed for the child either.
    for e in of_type(&evs, "subagent_ended") {
        assert!(e.get("cost_usd").is_none(), "{e}");
    }

    // The user's own mapping holds at any endpoint.
    let h = Harness::new(OPUS_CHILD, Wire::OpenAi).await;
    user_config(&h, "[models.openai]\nopus = \"local-big\"\n");
    let out = cadre_bounded(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(
        rule_records(&records, "child")[0].body["model"],
        "local-big"
    );
}

#[tokio::test]
async fn a_hosted_models_built_in_prices_do_not_apply_at_a_local_endpoint() {
    let script = "rules:\n  - name: main\n    replies:\n      - text: \"ok\"\n";
    for wire in BOTH_WIRES {
        let model = match wire {
            Wire::Anthropic => "claude-sonnet-4-5",
            Wire::OpenAi => "gpt-4.1",
        };
        let h = Harness::new(script, wire).await;
        let out = h
            .cadre_env(&["exec", "--json", "hello"], &[("CADRE_MODEL", model)])
            .await;
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(h.records()[0].body["model"], model);
        let evs = events(&out);
        let usage = of_type(&evs, "usage");
        assert_eq!(usage.len(), 1);
        assert!(usage[0].get("cost_usd").is_none(), "{wire:?}: {}", usage[0]);
        assert!(of_type(&evs, "turn_ended")[0].get("cost_usd").is_none());

        // Configured prices still count.
        let h = Harness::new(script, wire).await;
        let provider = match wire {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        };
        user_config(
            &h,
            &format!("[models.{provider}.\"{model}\"]\ninput_price = 2.0\noutput_price = 8.0\n"),
        );
        let out = h
            .cadre_env(&["exec", "--json", "hello"], &[("CADRE_MODEL", model)])
            .await;
        assert!(out.status.success(), "{}", stderr(&out));
        let evs = events(&out);
        assert!(
            of_type(&evs, "usage")[0]["cost_usd"].as_f64().is_some(),
            "{wire:?}: {evs:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Item 20: arguments are checked before any hook, rule or question.
// ---------------------------------------------------------------------------

/// Writes an executable hook script that appends its stdin to `log`.
fn recording_hook(h: &Harness, log: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = h.home.path().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("record.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/bash\ncat >> {log}\necho >> {log}\nexit 0\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn calls_with_unknown_fields_are_argument_errors_before_hooks_or_approval() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: WebFetch, input: { url: "https://example.com/", prompt: "p", bogus: 1 } }
          - { name: Bash, input: { command: "echo ran > ran.txt", bogus: true } }
          - { name: Write, input: { file_path: "w.txt", content: "x", bogus: true } }
          - { name: Edit, input: { file_path: "present.txt", old_string: "a", new_string: "b", bogus: true } }
          - { name: Agent, input: { description: "d", prompt: "p", subagent_type: "Explore", bogus: true } }
          - { name: Read, input: { file_path: "present.txt" } }
      - text: "done"
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        h.write("present.txt", "a\n");
        let log = h.home.path().join("hook.log");
        let hook = recording_hook(&h, &log);
        let settings = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "*",
            "hooks": [{"type": "command", "command": hook.display().to_string(), "timeout": 30}]}]}});
        let p = h.home.path().join(".claude").join("settings.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, settings.to_string()).unwrap();

        let out = cadre_bounded(&h, &["exec", "--json", "go"], 60).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        let results = tool_results(&records[1].body);
        assert_eq!(results.len(), 6, "{results:?}");
        for (text, is_error) in &results[..5] {
            assert!(*is_error, "{wire:?}: {text}");
            assert!(
                text.starts_with("invalid_arguments: unknown field `bogus`"),
                "{wire:?}: {text}"
            );
        }
        assert!(!results[5].1, "the valid Read ran: {:?}", results[5]);
        let evs = events(&out);
        assert!(of_type(&evs, "tool_call_denied").is_empty(), "{evs:?}");
        assert!(!h.path("ran.txt").exists());
        assert!(!h.path("w.txt").exists());
        // Only the valid call reached the hook.
        let seen: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let tools: Vec<&str> = seen
            .iter()
            .map(|v| v["tool_name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["Read"], "{wire:?}: {seen:?}");
    }
}

// ---------------------------------------------------------------------------
// Item 21: numbers out of range are argument errors naming the range.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn out_of_range_numbers_are_refused_naming_the_range() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo zero > zero.txt", timeout: 0 } }
          - { name: Bash, input: { command: "echo big > big.txt", timeout: 600001 } }
          - { name: Bash, input: { command: "echo neg > neg.txt", timeout: -5 } }
          - { name: TaskOutput, input: { task_id: "t-000000000000", wait_ms: 60000 } }
          - { name: Read, input: { file_path: "present.txt", limit: 0 } }
          - { name: Read, input: { file_path: "present.txt", offset: 0 } }
          - { name: Bash, input: { command: "echo ok > ok.txt", timeout: 600000 } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("present.txt", "first line\n");
    let out = cadre_bounded(&h, &["exec", "--json", "--allow", "Bash", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let results = tool_results(&records[1].body);
    assert_eq!(results.len(), 7, "{results:?}");
    let refused = [
        (0, "timeout must be between 1 and 600000"),
        (1, "timeout must be between 1 and 600000"),
        (2, "timeout must be between 1 and 600000"),
        (3, "wait_ms must be between 0 and 30000"),
        (4, "limit must be at least 1"),
    ];
    for (i, want) in refused {
        let (text, is_error) = &results[i];
        assert!(*is_error, "call {i}: {text}");
        assert!(text.starts_with("invalid_arguments: "), "call {i}: {text}");
        assert!(text.contains(want), "call {i}: {text}");
    }
    for name in ["zero.txt", "big.txt", "neg.txt"] {
        assert!(!h.path(name).exists(), "{name} was not run");
    }
    // Offset 0 is the first line; the longest timeout is in range.
    assert!(!results[5].1, "{:?}", results[5]);
    assert!(results[5].0.contains("first line"), "{:?}", results[5]);
    assert!(!results[6].1, "{:?}", results[6]);
    assert_eq!(h.read("ok.txt"), "ok\n");
}

// ---------------------------------------------------------------------------
// Item 22: the same failing call again and again.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_call_repeated_with_the_same_error_is_pointed_out_then_stops_the_turn() {
    let call = "      - tool_calls: [{ name: Read, input: { file_path: \"missing.txt\" } }]\n";
    let script = format!(
        "rules:\n  - name: main\n    replies:\n{}      - text: \"gave up\"\n",
        call.repeat(7)
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        let out = cadre_bounded(&h, &["exec", "--json", "go"], 60).await;
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        // Five failing calls, then no further request.
        assert_eq!(records.len(), 5, "{wire:?}");
        let told = |i: usize| common::user_texts(&records[i].body).contains("same arguments");
        assert!(!told(1) && !told(2), "{wire:?}: not before the third");
        assert!(
            told(3),
            "{wire:?}: {}",
            common::user_texts(&records[3].body)
        );
        let evs = events(&out);
        let end = of_type(&evs, "turn_ended")[0];
        assert_eq!(end["status"], "limit_reached", "{end}");
        let error = end["error"].as_str().unwrap();
        assert!(
            error.contains("Read") && error.contains("5 times"),
            "{error}"
        );
        // The session log says why the turn ended.
        let id = evs[0]["session_id"].as_str().unwrap();
        let log =
            std::fs::read_to_string(h.data_dir().join("sessions").join(format!("{id}.jsonl")))
                .unwrap();
        let turn_end: Value = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|r| r["type"] == "turn_end")
            .unwrap();
        assert!(
            turn_end["reason"]
                .as_str()
                .unwrap_or("")
                .contains("5 times"),
            "{turn_end}"
        );
    }
}

#[tokio::test]
async fn repeated_calls_that_fail_differently_or_succeed_in_between_are_not_stopped() {
    // The same call five times, but a different one in between: no streak.
    let same = "      - tool_calls: [{ name: Read, input: { file_path: \"missing.txt\" } }]\n";
    let other = "      - tool_calls: [{ name: Read, input: { file_path: \"present.txt\" } }]\n";
    let script = format!(
        "rules:\n  - name: main\n    replies:\n{same}{same}{other}{same}{same}{other}{same}      - text: \"done\"\n"
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write("present.txt", "here\n");
    let out = cadre_bounded(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 8);
    assert!(
        records
            .iter()
            .all(|r| !common::user_texts(&r.body).contains("same arguments")),
        "no streak of three"
    );
}
