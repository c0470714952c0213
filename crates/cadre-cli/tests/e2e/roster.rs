//! The roster of agent types the model is told of follows the definition
//! files: a definition written mid-session reaches the next request.

use crate::common;

use common::{Harness, Wire, rule_records, tool_results, user_texts};

const SCRIPT: &str = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "sleep 2", description: "wait" } }
      - tool_calls:
          - { name: Agent, input: { description: "late", prompt: "late-task", subagent_type: "latecomer" } }
      - text: "Parent done."
  - name: child
    when: { first_user: "late-task" }
    replies:
      - text: "late report"
"#;

#[tokio::test]
async fn a_definition_written_mid_session_reaches_the_roster_of_the_next_request() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let mut run = h.spawn_json(&["exec", "--json", "--allow", "Bash", "go"]);
    // While the first call runs, a new definition appears.
    run.wait_for("tool_call_started", 1).await;
    let agents = h.data_dir().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("latecomer.md"),
        "---\nname: latecomer\ndescription: Arrives during the session.\n---\nYou are late.\n",
    )
    .unwrap();
    let (status, _) = run.finish().await;
    assert!(status.success());

    let records = h.records();
    let parent = rule_records(&records, "parent");
    assert_eq!(parent.len(), 3);
    let first = user_texts(&parent[0].body);
    assert!(!first.contains("latecomer"), "{first}");
    let second = user_texts(&parent[1].body);
    assert!(
        second.contains("The agent types changed")
            && second.contains("- latecomer: Arrives during the session."),
        "{second}"
    );
    // Told once: the third request has no second copy.
    let third = user_texts(&parent[2].body);
    assert_eq!(third.matches("The agent types changed").count(), 1);
    let (report, is_error) = tool_results(&parent[2].body).pop().unwrap();
    assert!(!is_error && report.contains("late report"), "{report}");
}
