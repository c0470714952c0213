//! The tools a child's requests really carry, through the binary: a child
//! gets the parent's own tools the filter allows (foreground and
//! background), the task tools among them work, and nothing it is offered
//! points to a tool it lacks.

use crate::common;

use common::{Harness, Wire, rule_records, stderr, tool_results};
use serde_json::Value;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_foreground_child_gets_the_task_tools_the_filter_allows_and_they_work() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "child-task" }
    replies:
      - tool_calls:
          - { name: TaskList, input: {} }
          - { name: SendMessage, input: { to: "nobody", message: "hello" } }
          - { name: Bash, input: { command: "echo from-the-background", run_in_background: true } }
      - text: "child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "work", prompt: "child-task", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
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
    let parent = rule_records(&records, "parent");
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 2, "{child:?}");

    // The parent's own tools, in its order, less what no child gets at depth 1.
    let parents = tool_names(&parent[0].body);
    let expected: Vec<String> = parents
        .iter()
        .filter(|t| *t != "Agent" && *t != "TaskOutput")
        .cloned()
        .collect();
    for request in &child {
        assert_eq!(tool_names(&request.body), expected);
    }
    assert_eq!(
        expected,
        strings(&[
            "Read",
            "Write",
            "Edit",
            "NotebookEdit",
            "Glob",
            "Grep",
            "Bash",
            "TodoWrite",
            "WebFetch",
            "TaskList",
            "TaskStop",
            "SendMessage"
        ])
    );

    // Each reached the child and did its work there.
    let results = tool_results(&child[1].body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].1, "TaskList runs: {results:?}");
    assert!(
        results[1]
            .0
            .contains("no subagent 'nobody' started by this agent"),
        "SendMessage reaches the runtime: {results:?}"
    );
    assert!(
        results[2].0.starts_with("launched in background: task "),
        "{results:?}"
    );
    // Nothing the child was offered or told points to TaskOutput.
    for request in &child {
        let tools = request.body["tools"].to_string();
        assert!(!tools.contains("TaskOutput"), "{tools}");
    }
    for (text, _) in &results {
        assert!(!text.contains("TaskOutput"), "{text}");
    }
}

#[tokio::test]
async fn a_background_child_keeps_task_stop_and_send_message_only() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "bg-task" }
    replies:
      - text: "background child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "work", prompt: "bg-task", subagent_type: "general-purpose", run_in_background: true } }
      - text: "waiting"
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 1, "{child:?}");
    assert_eq!(
        tool_names(&child[0].body),
        strings(&[
            "Read",
            "Write",
            "Edit",
            "NotebookEdit",
            "Glob",
            "Grep",
            "Bash",
            "TodoWrite",
            "WebFetch",
            "TaskStop",
            "SendMessage"
        ])
    );
    let tools = child[0].body["tools"].to_string();
    assert!(!tools.contains("TaskOutput"), "{tools}");
    assert!(!tools.contains("TaskList"), "{tools}");
}

#[tokio::test]
async fn agent_flag_without_send_message_is_not_told_to_use_it() {
    let script = r#"
rules:
  - name: main
    when: { system: "MARKER-LEAD" }
    replies:
      - text: "lead done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/lead.md",
        "---\nname: lead\ndescription: Leads.\ntools: Read, Agent\n---\nMARKER-LEAD You lead.\n",
    );
    let out = h.cadre(&["exec", "--json", "--agent", "lead", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let main = rule_records(&records, "main");
    assert_eq!(tool_names(&main[0].body), strings(&["Read", "Agent"]));
    let tools = main[0].body["tools"].to_string();
    assert!(!tools.contains("SendMessage"), "{tools}");
}

#[tokio::test]
async fn unresolved_and_doubly_listed_entries_are_warned_about_once() {
    let script = r#"
rules:
  - name: child
    when: { system: "MARKER-ODD" }
    replies:
      - text: "odd child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "first", subagent_type: "odd" } }
          - { name: Agent, input: { description: "b", prompt: "second", subagent_type: "odd" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/odd.md",
        "---\nname: odd\ndescription: Odd lists.\ntools: Read, Grep, NoSuchTool\ndisallowedTools: Grep\n---\nMARKER-ODD You are odd.\n",
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = common::events(&out)
        .into_iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    let unresolved: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("NoSuchTool"))
        .collect();
    assert_eq!(unresolved.len(), 1, "{warnings:?}");
    assert!(unresolved[0].starts_with("odd: "), "{warnings:?}");
    let both: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("disallowedTools") && w.contains("Grep"))
        .collect();
    assert_eq!(both.len(), 1, "{warnings:?}");
    // Both children ran, with what resolved.
    let records = h.records();
    let children = rule_records(&records, "child");
    assert_eq!(children.len(), 2);
    for c in children {
        assert_eq!(tool_names(&c.body), strings(&["Read"]));
    }
}
