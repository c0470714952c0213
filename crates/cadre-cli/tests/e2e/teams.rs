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

/// A lead whose second task a TaskCreated hook refuses, and alice, whose
/// first completion a TaskCompleted hook refuses and whose first idle a
/// TeammateIdle hook refuses.
const TEAM_HOOKS: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: in_progress } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: completed } } ]
      - text: "alice pauses"
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: completed } } ]
      - text: "alice done"
  - name: lead
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: TaskCreate, input: { subject: "Fix the bug", description: "the off-by-one" } }
          - { name: TaskCreate, input: { subject: "Forbidden thing", description: "not allowed" } }
      - tool_calls:
          - { name: Agent, input: { description: "fixer", prompt: "alice: fix task 1", name: alice } }
      - text: "Team started."
      - text: "noted"
      - text: "noted"
"#;

/// A hook that saves its input and, the first time only, refuses with `why`
/// (or, with `always_if`, refuses whenever its input holds that text).
fn counting_hook(
    h: &Harness,
    name: &str,
    why: &str,
    always_if: Option<&str>,
) -> std::path::PathBuf {
    let log = crate::hooks::stdin_log(h, name);
    let count = log.with_extension("count");
    let refuse = match always_if {
        Some(text) => format!("echo \"$input\" | grep -q '{text}'"),
        None => "[ \"$n\" -eq 0 ]".to_string(),
    };
    crate::hooks::script(
        h,
        name,
        &format!(
            "input=$(cat)\necho \"$input\" >> '{log}'\nn=$(cat '{count}' 2>/dev/null || echo 0)\necho $((n+1)) > '{count}'\nif {refuse}; then echo '{why}' >&2; exit 2; fi\nexit 0",
            log = log.display(),
            count = count.display(),
        ),
    )
}

#[tokio::test]
async fn task_created_task_completed_and_teammate_idle_hooks_hold_as_in_claude_code() {
    let h = Harness::new(TEAM_HOOKS, Wire::Anthropic).await;
    let created = counting_hook(&h, "created", "no forbidden tasks", Some("Forbidden"));
    let completed = counting_hook(&h, "completed", "tests are not green", None);
    let idle = counting_hook(&h, "idle", "check the board once more", None);
    crate::hooks::user_settings(
        &h,
        &crate::hooks::hooks_json(&[
            ("TaskCreated", "", &created),
            ("TaskCompleted", "", &completed),
            ("TeammateIdle", "", &idle),
        ]),
    );
    let out = h
        .cadre(&["exec", "--json", "--teams", "fix it with a team"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let records = h.records();

    // TaskCreated exit 2: the task is deleted and the stderr is the tool error.
    let lead = rule_records(&records, "lead");
    let creations = tool_results(&lead[1].body);
    assert!(!creations[0].1, "{creations:?}");
    assert!(creations[1].1, "{creations:?}");
    assert!(
        creations[1].0.contains("no forbidden tasks"),
        "{creations:?}"
    );
    assert_eq!(
        board_states(&evs, "2"),
        vec![st("pending", None, &[]), st("deleted", None, &[])]
    );

    // TaskCompleted exit 2: the task stays in progress, the model hears why.
    let alice = rule_records(&records, "alice");
    let refused = tool_results(&alice[2].body).into_iter().last().unwrap();
    assert!(refused.1, "{refused:?}");
    assert!(refused.0.contains("tests are not green"), "{refused:?}");
    assert_eq!(
        board_states(&evs, "1"),
        vec![
            st("pending", None, &[]),
            st("in_progress", Some("alice"), &[]),
            st("completed", Some("alice"), &[]),
        ]
    );
    // TeammateIdle exit 2: alice keeps working on the hook's words.
    let held = plain_user_text(&alice[3].body);
    assert!(held.contains("check the board once more"), "{held}");
    // ...and goes idle once, at the end.
    let seen = lead
        .last()
        .map(|r| plain_user_text(&r.body))
        .unwrap_or_default();
    let notice = "{\"type\":\"idle_notification\",\"from\":\"alice\"";
    assert_eq!(seen.matches(notice).count(), 1, "{seen}");

    // Claude Code's inputs.
    let inputs = crate::hooks::read_inputs(&crate::hooks::stdin_log(&h, "created"));
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[1]["hook_event_name"], "TaskCreated");
    assert_eq!(inputs[1]["task_id"], "2");
    assert_eq!(inputs[1]["task_subject"], "Forbidden thing");
    assert_eq!(inputs[1]["task_description"], "not allowed");
    assert!(
        inputs[1]["team_name"]
            .as_str()
            .unwrap()
            .starts_with("session-")
    );
    assert!(
        inputs[1].get("teammate_name").is_none(),
        "the lead created it"
    );
    let inputs = crate::hooks::read_inputs(&crate::hooks::stdin_log(&h, "completed"));
    // The refused completion, the check as alice's turn ended with the task
    // in progress, then the completion that held.
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert!(
        inputs
            .iter()
            .all(|i| i["teammate_name"] == "alice" && i["task_id"] == "1")
    );
    let inputs = crate::hooks::read_inputs(&crate::hooks::stdin_log(&h, "idle"));
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert_eq!(inputs[0]["hook_event_name"], "TeammateIdle");
    assert_eq!(inputs[0]["teammate_name"], "alice");
}
