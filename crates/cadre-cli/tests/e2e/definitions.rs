//! Agent definitions end to end: behaviours that belong to a definition, not
//! to its name.

use crate::common;

use common::*;

#[tokio::test]
async fn user_files_named_plan_or_verification_get_no_built_in_behaviour() {
    let script = r#"
rules:
  - name: plan
    when: { first_user: "plan-task" }
    replies:
      - text: "PLAN-FIRST\nVERDICT: PASS"
      - text: "PLAN-SECOND"
  - name: verify
    when: { first_user: "verify-task" }
    replies:
      - text: "CHECKED\nVERDICT: FAIL"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "plan", prompt: "plan-task", subagent_type: "Plan", name: "planner" } }
          - { name: Agent, input: { description: "verify", prompt: "verify-task", subagent_type: "Verification", name: "checker" } }
      - tool_calls:
          - { name: SendMessage, input: { to: "planner", message: "follow-up question" } }
      - text: "waiting for planner"
      - text: "planner answered PLAN-SECOND"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/Plan.md",
        "---\nname: Plan\ndescription: My own planner.\n---\nYou are MY-PLAN.\n",
    );
    h.write(
        ".claude/agents/Verification.md",
        "---\nname: Verification\ndescription: My own checker.\n---\nYou are MY-CHECKER.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let plan = rule_records(&records, "plan");
    assert!(
        plan[0].body["system"].to_string().contains("MY-PLAN"),
        "the user's Plan ran: {}",
        plan[0].body["system"]
    );
    let verify = rule_records(&records, "verify");
    assert!(verify[0].body["system"].to_string().contains("MY-CHECKER"));

    let parent = rule_records(&records, "parent");
    let reports = tool_results(&parent[1].body);
    let plan_report = reports.iter().find(|r| r.0.contains("PLAN-FIRST")).unwrap();
    let check_report = reports.iter().find(|r| r.0.contains("CHECKED")).unwrap();
    for report in [plan_report, check_report] {
        assert!(
            !report.0.contains("verdict:"),
            "a user definition's report has no verdict line: {}",
            report.0
        );
    }

    // The user's Plan is not one-shot: SendMessage resumes it with its history.
    let sent = tool_results(&parent[2].body);
    let resumed = sent.last().unwrap();
    assert!(
        !resumed.1 && resumed.0.starts_with("resumed agent "),
        "{resumed:?}"
    );
    assert_eq!(plan.len(), 2);
    let history = plan[1].body["messages"].to_string();
    for part in ["plan-task", "PLAN-FIRST", "follow-up question"] {
        assert!(history.contains(part), "{part} in {history}");
    }
    assert!(user_texts(&parent.last().unwrap().body).contains("PLAN-SECOND"));
}

#[tokio::test]
async fn built_in_plan_stays_one_shot_and_built_in_verification_reports_its_verdict() {
    let script = r#"
rules:
  - name: plan
    when: { first_user: "plan-task" }
    replies:
      - text: "PLAN-FIRST"
  - name: verify
    when: { first_user: "verify-task" }
    replies:
      - text: "ran the tests\nVERDICT: PASS"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "plan", prompt: "plan-task", subagent_type: "Plan", name: "planner" } }
          - { name: Agent, input: { description: "verify", prompt: "verify-task", subagent_type: "Verification", name: "checker" } }
      - tool_calls:
          - { name: SendMessage, input: { to: "planner", message: "more please" } }
      - text: "waiting for the checker"
      - text: "the checker passed"
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
    let verify = rule_records(&records, "verify");
    assert!(
        verify[0].body["system"].to_string().contains("VERDICT"),
        "the built-in Verification ran"
    );
    let parent = rule_records(&records, "parent");
    let refused = tool_results(&parent[2].body)
        .into_iter()
        .find(|r| r.0.contains("one-shot"))
        .unwrap();
    assert!(
        refused.1 && refused.0.contains("one-shot Plan"),
        "{refused:?}"
    );
    assert_eq!(rule_records(&records, "plan").len(), 1);
    // Verification runs in the background: its report reaches the parent as a notice.
    let delivered = parent
        .iter()
        .any(|r| user_texts(&r.body).contains("verdict: pass"));
    assert!(delivered, "{}", user_texts(&parent.last().unwrap().body));
}

#[tokio::test]
async fn an_alias_names_the_same_tool_in_a_call_and_in_a_rule() {
    let script = r#"
rules:
  - name: parent
    replies:
      - tool_calls:
          - { name: Glob, input: { pattern: "*.txt" } }
          - { name: edit_file, input: { file_path: "a.txt", old_string: "one", new_string: "two" } }
          - { name: read_file, input: { file_path: "a.txt" } }
          - { name: LS, input: { pattern: "*.txt" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("a.txt", "one\n");
    let out = h
        .cadre(&[
            "exec",
            "--permission-mode",
            "acceptEdits",
            "--deny",
            "LS",
            "--deny",
            "MultiEdit",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&rule_records(&h.records(), "parent")[1].body);
    assert_eq!(results.len(), 4, "{results:?}");
    // `LS` in a rule is Glob, `MultiEdit` is Edit, and a call named by an alias is that tool.
    assert!(results[0].0.starts_with("denied"), "{:?}", results[0]);
    assert!(results[1].0.starts_with("denied"), "{:?}", results[1]);
    assert!(
        !results[2].1 && results[2].0.contains("one"),
        "{:?}",
        results[2]
    );
    assert!(results[3].0.starts_with("denied"), "{:?}", results[3]);
    assert_eq!(h.read("a.txt"), "one\n");
}

#[tokio::test]
async fn a_definition_edited_mid_session_changes_the_next_spawn() {
    let script = r#"
rules:
  - name: first
    when: { first_user: "task-1" }
    replies:
      - text: "first done"
  - name: second
    when: { first_user: "task-2" }
    replies:
      - text: "second done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "one", prompt: "task-1", subagent_type: "helper" } }
      - tool_calls:
          - { name: Read, input: { file_path: ".claude/agents/helper.md" } }
      - tool_calls:
          - { name: Write, input: { file_path: ".claude/agents/helper.md", content: "---\nname: helper\ndescription: Helps.\n---\nYou are HELPER-TWO.\n" } }
      - tool_calls:
          - { name: Agent, input: { description: "two", prompt: "task-2", subagent_type: "helper" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/helper.md",
        "---\nname: helper\ndescription: Helps.\n---\nYou are HELPER-ONE.\n",
    );
    // Not just written, so the first load is cached and only the edit's new stamp re-reads it.
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for rel in [".claude/agents/helper.md", ".claude/agents"] {
        let file = std::fs::File::open(h.path(rel)).unwrap();
        file.set_modified(past).unwrap();
    }
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "bypassPermissions",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let first = rule_records(&records, "first");
    let second = rule_records(&records, "second");
    let system = |r: &cadre_mock::Record| r.body["system"].to_string();
    assert!(
        system(first[0]).contains("HELPER-ONE"),
        "{}",
        system(first[0])
    );
    assert!(
        system(second[0]).contains("HELPER-TWO"),
        "the edited file is read for the next spawn: {}",
        system(second[0])
    );
}
