//! Compaction through the binary against `cadre-mock`: the log keeps a
//! `compact_boundary` and everything before it, `--resume` after a
//! compaction sends what the live session would have sent, and a child that
//! compacts inside a batch says so in its report, its event and its own log
//! while its parent is unaffected.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr, tool_results, user_texts};
use serde_json::Value;

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

/// The records of a log file, parsed.
fn log_records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first request is answered with a call; the second is refused as too
/// long once (the session compacts and retries); a resumed run gets the third reply.
const REFUSED_ONCE: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-A: the user asked to read a.txt; it was read."
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - text: "first answer"
        fail_once: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" }
      - text: "second answer"
"#;

#[tokio::test]
async fn resume_after_a_compaction_sends_what_the_live_session_would() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let h = Harness::new(REFUSED_ONCE, wire).await;
        h.write("a.txt", "alpha\n");
        let out = h.cadre(&["exec", "--json", "read a.txt"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let session = evs.iter().find(|e| e["type"] == "session_started").unwrap()["session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let started = evs
            .iter()
            .find(|e| e["type"] == "compaction_started")
            .expect("a compaction");
        assert_eq!(started["trigger"], "length_error");
        let ended = evs
            .iter()
            .find(|e| e["type"] == "compaction_ended")
            .unwrap();
        assert!(ended.get("error").is_none(), "{ended}");

        // The log keeps every record and adds the boundary with the summary.
        let log = h
            .data_dir()
            .join("sessions")
            .join(format!("{session}.jsonl"));
        let records = log_records(&log);
        let kinds: Vec<&str> = records
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        let boundary = kinds.iter().position(|k| *k == "compact_boundary").unwrap();
        assert!(
            kinds[..boundary].contains(&"tool_result") && kinds[..boundary].contains(&"user"),
            "{wire:?}: {kinds:?}"
        );
        assert!(
            records[boundary]["summary"]
                .as_str()
                .unwrap()
                .contains("SUMMARY-A")
        );
        assert_eq!(records[boundary]["trigger"], "length_error");

        let out = h
            .cadre(&["exec", "--json", "--resume", &session, "and now?"])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let reqs = h.records();
        let main = rule_records(&reqs, "main");
        assert_eq!(main.len(), 4, "{wire:?}: call, refused, retried, resumed");
        let (live, resumed) = (&main[2].body, &main[3].body);
        assert!(
            user_texts(live).contains("<compaction-summary>"),
            "{wire:?}: the retry goes out compacted"
        );
        // The resumed request is the live one, then the reply it got, then
        // the new message: same system prompt, tools and messages.
        let strip = |b: &Value| without_cache_marks(b);
        for key in ["system", "tools", "model"] {
            assert_eq!(strip(&live[key]), strip(&resumed[key]), "{wire:?}: {key}");
        }
        let (lm, rm) = (strip(&live["messages"]), strip(&resumed["messages"]));
        let (lm, rm) = (lm.as_array().unwrap(), rm.as_array().unwrap());
        assert_eq!(rm.len(), lm.len() + 2, "{wire:?}: {rm:#?}");
        assert_eq!(lm[..], rm[..lm.len()], "{wire:?}");
        assert!(rm[lm.len()].to_string().contains("first answer"));
        assert!(rm[lm.len() + 1].to_string().contains("and now?"));
        let resumed_results = tool_results(resumed);
        assert_eq!(resumed_results.len(), 1, "{wire:?}: the kept call's result");
    }
}

#[tokio::test]
async fn a_child_compacts_inside_a_batch_and_says_so_while_its_parent_is_unaffected() {
    let script = r#"
rules:
  - name: child-summary
    when: { system: "general-purpose agent", last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "CHILD-SUMMARY: b.txt was read for the child task."
  - name: child
    when: { system: "general-purpose agent" }
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
      - text: "CHILD-REPORT: b holds beta."
        fail_once: { status: 400, message: "prompt is too long: 201000 tokens > 200000 maximum" }
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "read b", prompt: "read b.txt", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("b.txt", "beta\n");
    let out = h.cadre(&["exec", "--json", "delegate it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let ended = evs.iter().find(|e| e["type"] == "subagent_ended").unwrap();
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["compactions"], 1, "{ended}");
    let child_id = ended["agent_id"].as_str().unwrap().to_string();
    // The child's compaction reaches the front end under its own id; the
    // parent never compacts.
    let compactions: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "compaction_ended")
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    assert_eq!(compactions, [child_id.as_str()]);

    let reqs = h.records();
    let parent = rule_records(&reqs, "parent");
    assert_eq!(parent.len(), 2);
    let report = &tool_results(&parent[1].body)[0].0;
    assert!(report.contains("CHILD-REPORT: b holds beta."), "{report}");
    assert!(report.contains("context: compacted 1 time"), "{report}");
    let parent_text = parent[1].body.to_string();
    assert!(
        !parent_text.contains("CHILD-SUMMARY"),
        "the parent never sees the child's summary"
    );
    assert!(!parent_text.contains("<compaction-summary>"));

    // The child's own log holds the boundary.
    let session = evs.iter().find(|e| e["type"] == "session_started").unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child_log = h
        .data_dir()
        .join("sessions")
        .join(format!("{session}.agents"))
        .join(format!("{child_id}.jsonl"));
    let kinds: Vec<String> = log_records(&child_log)
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.contains(&"compact_boundary".to_string()), "{kinds:?}");
    let main_log = h
        .data_dir()
        .join("sessions")
        .join(format!("{session}.jsonl"));
    assert!(
        !log_records(&main_log)
            .iter()
            .any(|r| r["type"] == "compact_boundary"),
        "the parent's log has no boundary"
    );
}

/// Replies report growing usage; with `context_window = 8000` configured
/// the session compacts before the fourth request (85%: 6800 tokens). The
/// window leaves room for the system prompt and the tool list, which every
/// request carries whatever is compacted.
const GROWING: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-G: a, b and c were read; d is next."
  - name: main
    step_by: requests
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
        usage: { input_tokens: 2000, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
        usage: { input_tokens: 4000, output_tokens: 20 }
      - tool_calls: [{ name: Read, input: { file_path: "c.txt" } }]
        usage: { input_tokens: 6800, output_tokens: 20 }
      - text: "done"
        usage: { input_tokens: 2400, output_tokens: 20 }
"#;

#[tokio::test]
async fn a_configured_window_compacts_at_85_percent_and_the_next_request_is_smaller() {
    for (wire, provider) in [(Wire::Anthropic, "anthropic"), (Wire::OpenAi, "openai")] {
        let h = Harness::new(GROWING, wire).await;
        h.write(
            ".cadre/config.toml",
            &format!("[models.{provider}.mock-model]\ncontext_window = 8000\n"),
        );
        for f in ["a", "b", "c"] {
            h.write(&format!("{f}.txt"), &format!("{f}{}\n", "z".repeat(2000)));
        }
        let out = h.cadre(&["exec", "--json", "read the files"]).await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let windows: Vec<u64> = evs
            .iter()
            .filter(|e| e["type"] == "context_usage")
            .map(|e| e["window"].as_u64().unwrap())
            .collect();
        assert!(
            !windows.is_empty() && windows.iter().all(|w| *w == 8000),
            "{windows:?}"
        );
        let started = evs
            .iter()
            .find(|e| e["type"] == "compaction_started")
            .expect("compacted");
        assert_eq!(started["trigger"], "auto");

        let reqs = h.records();
        let rules: Vec<&str> = reqs.iter().map(|r| r.rule.as_deref().unwrap()).collect();
        assert_eq!(
            rules,
            ["main", "main", "main", "summary", "main"],
            "{wire:?}"
        );
        let summary = &reqs[3].body;
        let system = match wire {
            Wire::Anthropic => summary["system"].to_string(),
            Wire::OpenAi => summary["messages"][0].to_string(),
        };
        assert!(
            system.contains("cadre"),
            "{wire:?}: the session's own system prompt"
        );
        assert!(user_texts(summary).contains("<compaction-request>"));
        let next = &reqs[4].body;
        assert!(user_texts(next).contains("SUMMARY-G"));
        assert!(next.to_string().len() < reqs[2].body.to_string().len());
        let session = evs.iter().find(|e| e["type"] == "session_started").unwrap()["session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let log = h
            .data_dir()
            .join("sessions")
            .join(format!("{session}.jsonl"));
        let boundary = log_records(&log)
            .into_iter()
            .find(|r| r["type"] == "compact_boundary")
            .expect("a boundary in the log");
        assert_eq!(boundary["trigger"], "auto");
        assert!(boundary["tokens_after"].as_u64() < boundary["tokens_before"].as_u64());
    }
}

#[tokio::test]
async fn the_skills_reminder_is_still_there_after_a_compaction() {
    let h = Harness::new(REFUSED_ONCE, Wire::Anthropic).await;
    h.write("a.txt", "alpha\n");
    h.write(
        ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write a changelog entry\n---\nUse headings.\n",
    );
    let out = h.cadre(&["exec", "--json", "read a.txt"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let reqs = h.records();
    let main = rule_records(&reqs, "main");
    let retried = user_texts(&main[2].body);
    assert!(retried.contains("<compaction-summary>"), "{retried}");
    assert_eq!(
        retried
            .matches("- changelog: Write a changelog entry")
            .count(),
        1,
        "{retried}"
    );
}
