//! Session logs against what goes wrong on disk and after a compaction: a
//! line torn by a full disk is moved aside on resume, and a resumed session
//! sends what the live one would have sent next.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr};
use serde_json::Value;

/// The session id of a run's `session_started` event.
fn session_id(evs: &[Value]) -> String {
    evs.iter().find(|e| e["type"] == "session_started").unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The messages of every `warning` event.
fn warnings(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_torn_last_line_is_moved_to_a_recovery_file_on_resume() {
    let script = "rules:\n  - replies:\n      - text: \"one\"\n      - text: \"two\"\n      - text: \"three\"\n";
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = session_id(&events(&out));
    let sessions = h.data_dir().join("sessions");
    let log = sessions.join(format!("{id}.jsonl"));
    // A full disk cut the last record short.
    let torn = br#"{"v":1,"time_ms":1,"type":"user","text":"cut sho"#;
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(torn).unwrap();
    }

    let out = h.cadre(&["exec", "--json", "--resume", &id, "again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = warnings(&events(&out));
    let recovery: Vec<std::path::PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != &log && p.file_name().unwrap().to_string_lossy().starts_with(&id))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(
        recovery.len(),
        1,
        "one recovery file beside the log: {recovery:?}"
    );
    assert_eq!(std::fs::read(&recovery[0]).unwrap(), torn.to_vec());
    let named = recovery[0].display().to_string();
    assert!(
        said.iter().any(|w| w.contains(&named)),
        "the warning names the recovery file {named}: {said:?}"
    );
    // Every line of the log is a record now, the resumed turn's included.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    }
    assert!(text.contains("\"again\""), "{text}");

    // Healed: the next resume has nothing to say about it.
    let out = h
        .cadre(&["exec", "--json", "--resume", &id, "and again"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = warnings(&events(&out));
    assert!(
        !said.iter().any(|w| w.contains("line")),
        "a second resume still warns: {said:?}"
    );
    assert_eq!(std::fs::read(&recovery[0]).unwrap(), torn.to_vec());
}

/// A request body without its cache breakpoints (they move to the newest
/// message every request).
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

/// The first request is answered with a call; the second is refused as too
/// long once (the session compacts, with a trimmed summary request, and
/// retries); a resumed run gets the third reply. The server counts few
/// tokens, far fewer than cadre's estimate of the small window.
const REFUSED_ONCE: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-A: the user asked to read a.txt; it was read."
        usage: { input_tokens: 40, output_tokens: 10 }
      - text: "SUMMARY-B: a second summary the live session never asked for."
        usage: { input_tokens: 40, output_tokens: 10 }
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 50, output_tokens: 5 }
      - text: "first answer"
        usage: { input_tokens: 60, output_tokens: 5 }
        fail_once: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" }
      - text: "second answer"
        usage: { input_tokens: 70, output_tokens: 5 }
"#;

#[tokio::test]
async fn a_session_resumed_after_a_compaction_sends_the_live_sessions_messages() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let h = Harness::new(REFUSED_ONCE, wire).await;
        h.write("a.txt", "alpha\n");
        // A small window: cadre's own estimate of the compacted conversation
        // (system prompt and tools included) is past its threshold, while
        // the server's count after the compaction is far below it.
        let provider = match wire {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        };
        std::fs::create_dir_all(h.data_dir()).unwrap();
        std::fs::write(
            h.data_dir().join("config.toml"),
            format!("[models.{provider}.\"mock-model\"]\ncontext_window = 1024\n"),
        )
        .unwrap();
        let out = h.cadre(&["exec", "--json", "read a.txt"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let id = session_id(&evs);
        assert!(
            evs.iter()
                .any(|e| e["type"] == "compaction_ended" && e.get("error").is_none()),
            "{wire:?}: the live session compacted"
        );

        let out = h
            .cadre(&["exec", "--json", "--resume", &id, "and now?"])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        assert_eq!(
            rule_records(&records, "summary").len(),
            1,
            "{wire:?}: the resumed session asked for a summary the live one would not have"
        );
        let main = rule_records(&records, "main");
        assert_eq!(main.len(), 4, "{wire:?}: call, refused, retried, resumed");
        let (live, resumed) = (
            without_cache_marks(&main[2].body),
            without_cache_marks(&main[3].body),
        );
        let (lm, rm) = (
            live["messages"].as_array().unwrap(),
            resumed["messages"].as_array().unwrap(),
        );
        assert_eq!(rm.len(), lm.len() + 2, "{wire:?}: {rm:#?}");
        for (i, (l, r)) in lm.iter().zip(rm).enumerate() {
            assert_eq!(
                serde_json::to_string(l).unwrap(),
                serde_json::to_string(r).unwrap(),
                "{wire:?}: message {i} differs"
            );
        }
        assert!(rm[lm.len()].to_string().contains("first answer"));
        assert!(rm[lm.len() + 1].to_string().contains("and now?"));
        assert!(
            !serde_json::to_string(rm)
                .unwrap()
                .contains("were dropped from this summary request"),
            "{wire:?}"
        );
    }
}
