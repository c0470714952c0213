//! A child's run through the binary: a resumed child (`SendMessage` to a
//! finished one) reports the way a first run does, holds a running slot
//! while it runs, and a child is announced only once its log exists.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr, tool_results, user_texts};

/// A parent that starts `agent_input` in the foreground, then messages
/// `name`, waits, and answers the resumed child's notice.
fn resume_script(child_rule: &str, agent_input: &str, name: &str) -> String {
    format!(
        r#"
rules:
{child_rule}
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {agent_input} }}
      - tool_calls:
          - {{ name: SendMessage, input: {{ to: "{name}", message: "one more thing" }} }}
      - text: "waiting"
      - text: "parent done"
"#
    )
}

#[tokio::test]
async fn a_resumed_child_cut_off_by_an_api_error_keeps_its_partial_text() {
    let child = r#"
  - name: child
    when: { first_user: "cut-task" }
    replies:
      - text: "first answer"
      - text: "PARTIAL-PROGRESS so far"
        tool_calls:
          - { name: Glob, input: { pattern: "*.none" } }
      - fail: { status: 400, message: "scripted refusal" }
"#;
    let script = resume_script(
        child,
        r#"{ description: "c", prompt: "cut-task", subagent_type: "general-purpose", name: "cutter" }"#,
        "cutter",
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let notice = user_texts(&parent.last().unwrap().body);
    assert!(notice.contains("<task-notification>"), "{notice}");
    assert!(notice.contains("failed"), "{notice}");
    assert!(notice.contains("PARTIAL-PROGRESS so far"), "{notice}");
    assert!(
        notice.contains("[cut off: the model API failed before the subagent finished"),
        "{notice}"
    );
    assert!(notice.contains("cut off by an API error"), "{notice}");
}

#[tokio::test]
async fn a_resumed_child_reports_the_files_it_changed() {
    let child = r#"
  - name: child
    when: { first_user: "write-task" }
    replies:
      - text: "first answer"
      - tool_calls:
          - { name: Write, input: { file_path: "made-on-resume.txt", content: "x\n" } }
      - text: "WROTE IT"
"#;
    let script = resume_script(
        child,
        r#"{ description: "w", prompt: "write-task", subagent_type: "general-purpose", name: "writer" }"#,
        "writer",
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let out = h
        .cadre(&["exec", "--json", "--permission-mode", "acceptEdits", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(h.read("made-on-resume.txt"), "x\n");
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let notice = user_texts(&parent.last().unwrap().body);
    assert!(notice.contains("WROTE IT"), "{notice}");
    assert!(
        notice.contains("changed files: made-on-resume.txt"),
        "{notice}"
    );
}

#[tokio::test]
async fn a_resumed_verification_child_reports_its_verdict() {
    let script = r#"
rules:
  - name: checker
    when: { first_user: "verify-task" }
    replies:
      - text: "Looks fine.\nVERDICT: PASS"
      - text: "Broke it this time.\nVERDICT: FAIL"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "v", prompt: "verify-task", subagent_type: "Verification", name: "checker" } }
      - text: "waiting for the verdict"
      - tool_calls:
          - { name: SendMessage, input: { to: "checker", message: "try harder" } }
      - text: "waiting again"
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nenable_verification = true\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let checker = rule_records(&records, "checker");
    assert_eq!(checker.len(), 2, "first run and resumed run");
    let parent = rule_records(&records, "parent");
    // The first run's notice, then the resumed run's.
    let first = user_texts(&parent[2].body);
    assert!(first.contains("verdict: pass"), "{first}");
    let resumed = user_texts(&parent.last().unwrap().body);
    assert!(resumed.contains("verdict: fail"), "{resumed}");
}

#[tokio::test]
async fn a_resumed_child_holds_a_running_slot_while_it_runs() {
    let script = r#"
rules:
  - name: slow
    when: { first_user: "slow-task" }
    replies:
      - text: "first answer"
      - latency_ms: 1500
        text: "resumed answer"
  - name: other
    when: { first_user: "other-task" }
    replies:
      - text: "should not run"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "s", prompt: "slow-task", subagent_type: "general-purpose", name: "slow" } }
      - tool_calls:
          - { name: SendMessage, input: { to: "slow", message: "again" } }
      - tool_calls:
          - { name: Agent, input: { description: "o", prompt: "other-task", subagent_type: "general-purpose" } }
      - text: "waiting"
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nmax_running_subagents = 1\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let resumed = tool_results(&parent[2].body);
    assert!(
        resumed.last().unwrap().0.starts_with("resumed agent "),
        "{resumed:?}"
    );
    let refused = tool_results(&parent[3].body);
    let last = refused.last().unwrap();
    assert!(
        last.1 && last.0.contains("concurrent subagent limit reached"),
        "the resumed child holds the only slot: {refused:?}"
    );
    assert!(rule_records(&records, "other").is_empty());
    assert!(user_texts(&parent.last().unwrap().body).contains("resumed answer"));
}

#[tokio::test]
async fn a_child_is_announced_only_once_its_log_exists() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "logged-task" }
    replies:
      - text: "child done"
  - name: parent
    replies:
      - text: "first turn, no children"
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "logged-task", subagent_type: "general-purpose" } }
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "logged-task", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let session = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let agents_dir = h
        .data_dir()
        .join("sessions")
        .join(format!("{session}.agents"));

    // A plain file where the children's logs must go: the child's log cannot
    // be created, so it is never announced as started.
    std::fs::write(&agents_dir, "not a directory").unwrap();
    let out = h
        .cadre(&["exec", "--json", "--resume", &session, "now spawn"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let evs = events(&out);
    assert!(
        !evs.iter().any(|e| e["type"] == "subagent_started"),
        "{evs:?}"
    );
    assert!(rule_records(&h.records(), "child").is_empty());

    // With the folder back, the announced child's log is there.
    std::fs::remove_file(&agents_dir).unwrap();
    let out = h
        .cadre(&["exec", "--json", "--resume", &session, "spawn again"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let started: Vec<_> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "subagent_started")
        .collect();
    assert_eq!(started.len(), 1, "{started:?}");
    let id = started[0]["agent_id"].as_str().unwrap();
    assert!(agents_dir.join(format!("{id}.jsonl")).is_file());
}

#[tokio::test]
async fn a_first_run_cut_off_by_an_api_error_reports_the_same_way() {
    let script = r#"
rules:
  - name: early
    when: { first_user: "early-task" }
    replies:
      - fail: { status: 400, message: "scripted refusal" }
  - name: partial
    when: { first_user: "partial-task" }
    replies:
      - text: "HALF-DONE so far"
        tool_calls:
          - { name: Glob, input: { pattern: "*.none" } }
      - fail: { status: 400, message: "scripted refusal" }
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "e", prompt: "early-task", subagent_type: "general-purpose" } }
          - { name: Agent, input: { description: "p", prompt: "partial-task", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    let results = tool_results(&parent[1].body);
    assert_eq!(results.len(), 2, "{results:?}");
    let (early, partial) = (&results[0], &results[1]);
    assert!(early.1, "{early:?}");
    assert!(
        early
            .0
            .contains("failed: terminated early due to an API error"),
        "{early:?}"
    );
    assert!(partial.1, "{partial:?}");
    assert!(partial.0.contains("HALF-DONE so far"), "{partial:?}");
    assert!(
        partial
            .0
            .contains("[cut off: the model API failed before the subagent finished"),
        "{partial:?}"
    );
}
