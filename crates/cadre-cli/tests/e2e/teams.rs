//! Agent teams through the binary: a lead and teammates sharing a task
//! board and a mailbox, headless (`exec`), with plan approval, shutdown,
//! hooks and a resume after SIGKILL.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr, tool_results};
use serde_json::Value;

/// The plain text of every user message of a request, joined.
fn plain_user_text(body: &Value) -> String {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    out.join("\n")
}

/// The board events of task `id`, as (status, owner, blocked_by) in order.
fn board_states(evs: &[Value], id: &str) -> Vec<(String, Option<String>, Vec<String>)> {
    evs.iter()
        .filter(|e| e["type"] == "board_task_changed" && e["task_id"] == id)
        .map(|e| {
            (
                e["status"].as_str().unwrap_or_default().to_string(),
                e["owner"].as_str().map(str::to_string),
                e["blocked_by"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            )
        })
        .collect()
}

fn st(
    status: &str,
    owner: Option<&str>,
    blocked: &[&str],
) -> (String, Option<String>, Vec<String>) {
    (
        status.to_string(),
        owner.map(str::to_string),
        blocked.iter().map(|s| s.to_string()).collect(),
    )
}

/// The script of a lead that plans four tasks (the fourth waits for the
/// first), tries to claim the blocked one itself, spawns alice and bob,
/// and then only acknowledges what reaches it.
const TEAM_OF_TWO: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: in_progress } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: completed } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "4", status: in_progress } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "4", status: completed } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "alice: schema and migration done", summary: "alice done" } } ]
      - text: "alice idle"
  - name: bob
    when: { system: "You are 'bob'" }
    replies:
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "2", status: in_progress } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "2", status: completed } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "3", status: in_progress } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "3", status: completed } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "bob: api and docs done", summary: "bob done" } } ]
      - text: "bob idle"
  - name: lead
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: TaskCreate, input: { subject: "Write the schema", description: "tables" } }
          - { name: TaskCreate, input: { subject: "Write the API", description: "handlers" } }
          - { name: TaskCreate, input: { subject: "Write the docs", description: "docs" } }
          - { name: TaskCreate, input: { subject: "Write the migration", description: "needs the schema" } }
      - tool_calls:
          - { name: TaskUpdate, input: { taskId: "4", addBlockedBy: ["1"] } }
      - tool_calls:
          - { name: TaskUpdate, input: { taskId: "4", status: in_progress } }
      - tool_calls:
          - { name: Agent, input: { description: "schema side", prompt: "alice: take tasks 1 and 4", name: alice } }
          - { name: Agent, input: { description: "api side", prompt: "bob: take tasks 2 and 3", name: bob } }
      - text: "Team started; waiting for alice and bob."
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;

#[tokio::test]
async fn a_lead_and_two_teammates_divide_a_board_with_a_dependency() {
    let h = Harness::new(TEAM_OF_TWO, Wire::Anthropic).await;
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--teams",
            "--permission-mode",
            "acceptEdits",
            "build the feature with a team",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);

    // Each task's states, in order.
    assert_eq!(
        board_states(&evs, "1"),
        vec![
            st("pending", None, &[]),
            st("in_progress", Some("alice"), &[]),
            st("completed", Some("alice"), &[]),
        ]
    );
    assert_eq!(
        board_states(&evs, "4"),
        vec![
            st("pending", None, &[]),
            st("pending", None, &["1"]),
            // Unblocked when its blocker completed, then claimed.
            st("pending", None, &[]),
            st("in_progress", Some("alice"), &[]),
            st("completed", Some("alice"), &[]),
        ]
    );
    for id in ["2", "3"] {
        assert_eq!(
            board_states(&evs, id),
            vec![
                st("pending", None, &[]),
                st("in_progress", Some("bob"), &[]),
                st("completed", Some("bob"), &[]),
            ],
            "task {id}"
        );
    }
    // The blocked task was claimed only after its blocker completed.
    let pos = |id: &str, status: &str| {
        evs.iter()
            .position(|e| {
                e["type"] == "board_task_changed" && e["task_id"] == id && e["status"] == status
            })
            .unwrap()
    };
    assert!(pos("1", "completed") < pos("4", "in_progress"));

    let records = h.records();
    let lead = rule_records(&records, "lead");
    // The lead's own claim of the blocked task was refused, naming the blocker.
    let refused = tool_results(&lead[3].body).into_iter().last().unwrap();
    assert!(refused.1, "{refused:?}");
    assert!(refused.0.contains("blocked by #1"), "{}", refused.0);
    // The spawns answered with the teammates' names.
    let spawned: Vec<(String, bool)> = tool_results(&lead[4].body)
        .into_iter()
        .rev()
        .take(2)
        .collect();
    assert!(
        spawned
            .iter()
            .all(|(t, err)| !err && t.contains("spawned teammate")),
        "{spawned:?}"
    );
    // Each teammate's message and its idle notification reached the lead.
    let seen = lead
        .last()
        .map(|r| plain_user_text(&r.body))
        .unwrap_or_default();
    for (name, summary) in [("alice", "alice done"), ("bob", "bob done")] {
        assert!(
            seen.contains(&format!(
                "<teammate-message teammate_id=\"{name}\" summary=\"{summary}\">"
            )),
            "{seen}"
        );
        let idle = format!("{{\"type\":\"idle_notification\",\"from\":\"{name}\"");
        assert_eq!(seen.matches(&idle).count(), 1, "{seen}");
    }
    // Told it comes from agents, not the user.
    assert!(seen.contains("not from the user"));
    // Every message was delivered once.
    let delivered: usize = evs
        .iter()
        .filter(|e| e["type"] == "team_messages_delivered")
        .map(|e| e["count"].as_u64().unwrap() as usize)
        .sum();
    let sent = evs
        .iter()
        .filter(|e| e["type"] == "team_message_sent")
        .count();
    assert_eq!(sent, 4, "two messages and two idle notifications");
    assert_eq!(delivered, sent);
    // The teammates ended with the session.
    for name in ["alice", "bob"] {
        let last = evs
            .iter()
            .rev()
            .find(|e| e["type"] == "teammate_changed" && e["name"] == name)
            .unwrap();
        assert_eq!(last["state"], "ended", "{last}");
    }
}
