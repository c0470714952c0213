//! Agent teams through the binary: a lead and teammates sharing a task
//! board and a mailbox, headless (`exec`), with plan approval, shutdown,
//! hooks and a resume after SIGKILL.

use crate::common;

use common::{Harness, Wire, events, rule_records, stderr, tool_results, user_plain_text};
use serde_json::Value;

/// `cadre exec --json --teams --permission-mode acceptEdits [extra…] PROMPT`,
/// which must succeed; its events.
async fn team_exec(h: &Harness, extra: &[&str], prompt: &str) -> Vec<Value> {
    let mut args = vec![
        "exec",
        "--json",
        "--teams",
        "--permission-mode",
        "acceptEdits",
    ];
    args.extend_from_slice(extra);
    args.push(prompt);
    let out = h.cadre(&args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    events(&out)
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
    let evs = team_exec(&h, &[], "build the feature with a team").await;

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
        .map(|r| user_plain_text(&r.body))
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

    // The board outlives the session: `cadre tasks board` shows it.
    let id = evs
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .unwrap()
        .to_string();
    let out = h.cadre(&["tasks", "board", &id, "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let team: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let owners: Vec<(&str, &str, &str)> = team["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
                t["owner"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        owners,
        [
            ("1", "completed", "alice"),
            ("2", "completed", "bob"),
            ("3", "completed", "bob"),
            ("4", "completed", "alice")
        ]
    );
    let names: Vec<&str> = team["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    let out = h.cadre(&["tasks", "board", &id]).await;
    let table = common::stdout(&out);
    assert!(
        table.contains("#4") && table.contains("Write the migration"),
        "{table}"
    );
    let out = h.cadre(&["tasks", "board", "no-such-session"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no team"), "{}", stderr(&out));
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
    let held = user_plain_text(&alice[3].body);
    assert!(held.contains("check the board once more"), "{held}");
    // ...and goes idle once, at the end.
    let seen = lead
        .last()
        .map(|r| user_plain_text(&r.body))
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

/// The lead files `n` tasks and starts alice and bob, who each try to claim
/// every one of them, one per reply, in the same order, at the same time.
fn race_script(n: usize) -> String {
    let creates: String = (1..=n)
        .map(|i| {
            format!("          - {{ name: TaskCreate, input: {{ subject: \"Task {i}\", description: \"d\" }} }}\n")
        })
        .collect();
    let claims: String = (1..=n)
        .map(|i| {
            format!("      - tool_calls: [ {{ name: TaskUpdate, input: {{ taskId: \"{i}\", status: in_progress }} }} ]\n")
        })
        .collect();
    format!(
        r#"
rules:
  - name: alice
    when: {{ system: "You are 'alice'" }}
    replies:
{claims}      - text: "alice claimed"
  - name: bob
    when: {{ system: "You are 'bob'" }}
    replies:
{claims}      - text: "bob claimed"
  - name: lead
    when: {{ system: "You are cadre" }}
    replies:
      - tool_calls:
{creates}      - tool_calls:
          - {{ name: Agent, input: {{ description: "a", prompt: "alice: claim everything", name: alice }} }}
          - {{ name: Agent, input: {{ description: "b", prompt: "bob: claim everything", name: bob }} }}
      - text: "started"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#
    )
}

#[tokio::test]
async fn two_teammates_racing_for_fifty_tasks_never_both_own_one() {
    const N: usize = 50;
    let h = Harness::new(&race_script(N), Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "--teams", "claim race"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let records = h.records();
    // Claim i's result is the last of the teammate's request i.
    let results = |rule: &str| -> Vec<(String, bool)> {
        rule_records(&records, rule)
            .iter()
            .skip(1)
            .map(|r| tool_results(&r.body).pop().unwrap())
            .collect()
    };
    let (alice, bob) = (results("alice"), results("bob"));
    assert_eq!((alice.len(), bob.len()), (N, N), "{alice:?} {bob:?}");
    for i in 1..=N {
        let id = i.to_string();
        // Exactly one claim of each task held, and the board says whose.
        let won: Vec<&str> = [("alice", &alice[i - 1]), ("bob", &bob[i - 1])]
            .into_iter()
            .filter(|(_, (_, is_error))| !is_error)
            .map(|(name, _)| name)
            .collect();
        assert_eq!(won.len(), 1, "task {id}: {alice:?} {bob:?}");
        let claims: Vec<_> = board_states(&evs, &id)
            .into_iter()
            .filter(|s| s.0 == "in_progress")
            .collect();
        assert_eq!(
            claims,
            vec![st("in_progress", Some(won[0]), &[])],
            "task {id}"
        );
        let lost = if won[0] == "alice" {
            &bob[i - 1]
        } else {
            &alice[i - 1]
        };
        assert!(lost.0.contains("owned by"), "task {id}: {}", lost.0);
    }
}

/// alice claims the task and starts a long command; the lead's message to
/// her arrives while it runs; the session is killed there. After the resume
/// alice completes the task and reports.
const TEAM_CRASH: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: in_progress } } ]
      - tool_calls: [ { name: Bash, input: { command: "echo $$ >> runs.txt; sleep 30", description: "long job" } } ]
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: completed } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "alice finished after the crash", summary: "alice finished" } } ]
      - text: "alice done"
  - name: lead
    when: { system: "You are cadre" }
    replies:
      - tool_calls: [ { name: TaskCreate, input: { subject: "Long job", description: "runs a while" } } ]
      - tool_calls: [ { name: Agent, input: { description: "worker", prompt: "alice: do task 1", name: alice } } ]
      - latency_ms: 1500
        tool_calls: [ { name: SendMessage, input: { to: alice, message: "use the fast path", summary: "a hint" } } ]
      - text: "waiting for alice"
      - text: "carrying on"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;

#[tokio::test]
async fn a_team_killed_mid_call_with_mail_queued_resumes_with_each_message_once() {
    let h = Harness::new(TEAM_CRASH, Wire::Anthropic).await;
    let mut run = h.spawn_json(&[
        "exec",
        "--json",
        "--teams",
        "--permission-mode",
        "acceptEdits",
        "start the team",
    ]);
    let started = run.wait_for("session_started", 1).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    // The lead's message is filed while alice's command runs.
    let sent = run.wait_for("team_message_sent", 1).await;
    assert_eq!(sent["to"], "alice");
    assert!(
        std::fs::read_to_string(h.path("runs.txt")).is_ok_and(|t| t.ends_with('\n')),
        "alice's command runs"
    );
    run.kill().await;
    let pid: i32 = h.read("runs.txt").trim().parse().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };

    let evs = team_exec(&h, &["--resume", &id, "--accept-unknown"], "carry on").await;
    let records = h.records();
    let alice = rule_records(&records, "alice");
    assert_eq!(alice.len(), 5, "no reply of alice's was asked for twice");
    // Her command's result is unknown; nothing ran it again.
    let after = &alice[2].body;
    let results = tool_results(after);
    let last = results.last().unwrap();
    assert!(last.1 && last.0.starts_with("unknown"), "{results:?}");
    assert_eq!(h.read("runs.txt").lines().count(), 1, "nothing was re-run");
    // She was told she was resumed, and the lead's message reached her once.
    let seen = user_plain_text(&alice[4].body);
    assert!(seen.contains("The session was resumed"), "{seen}");
    assert_eq!(seen.matches("use the fast path").count(), 1, "{seen}");
    assert!(seen.contains("<teammate-message teammate_id=\"team-lead\" summary=\"a hint\">"));
    // Queued when the session died, delivered after the resume.
    assert!(
        evs.iter()
            .any(|e| e["type"] == "team_messages_delivered" && e["to"] == "alice"),
        "{evs:?}"
    );
    // The task she claimed before the crash she completed after it.
    assert_eq!(
        board_states(&evs, "1"),
        vec![st("completed", Some("alice"), &[])]
    );
    // The lead heard from her once, and her idle notice once.
    let lead = rule_records(&records, "lead");
    let heard = user_plain_text(&lead.last().unwrap().body);
    assert_eq!(
        heard.matches("alice finished after the crash").count(),
        1,
        "{heard}"
    );
    let notice = "{\"type\":\"idle_notification\",\"from\":\"alice\"";
    assert_eq!(heard.matches(notice).count(), 1, "{heard}");
}

/// alice must have her plan approved: the lead rejects the first, approves
/// the second; she implements; she refuses the first shutdown request and
/// accepts the second.
const PLAN_AND_SHUTDOWN: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: Write, input: { file_path: "early.txt", content: "too soon" } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: { type: plan_approval_request, plan: "PLAN-ONE: just do it" } } } ]
      - text: "waiting for approval"
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: { type: plan_approval_request, plan: "PLAN-TWO: tests, then code" } } } ]
      - text: "waiting again"
      - tool_calls: [ { name: Write, input: { file_path: "impl.txt", content: "done" } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "alice: implemented", summary: "implemented" } } ]
      - text: "implemented"
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: { type: shutdown_response, approve: false, reason: "still verifying" } } } ]
      - text: "refused"
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: { type: shutdown_response, approve: true } } } ]
      - text: "bye"
  - name: lead-reject
    when: { system: "You are cadre", last_user: "PLAN-ONE" }
    step_by: requests
    replies:
      - tool_calls: [ { name: SendMessage, input: { to: alice, message: { type: plan_approval_response, approve: false, feedback: "add tests first" } } } ]
  - name: lead-approve
    when: { system: "You are cadre", last_user: "PLAN-TWO" }
    step_by: requests
    replies:
      - tool_calls: [ { name: SendMessage, input: { to: alice, message: { type: plan_approval_response, approve: true } } } ]
  - name: lead-shutdown
    when: { system: "You are cadre", last_user: "alice: implemented" }
    step_by: requests
    replies:
      - tool_calls: [ { name: SendMessage, input: { to: alice, message: { type: shutdown_request, reason: "wrap up" } } } ]
  - name: lead-shutdown-again
    when: { system: "You are cadre", last_user: "shutdown_rejected" }
    step_by: requests
    replies:
      - tool_calls: [ { name: SendMessage, input: { to: alice, message: { type: shutdown_request, reason: "really, wrap up" } } } ]
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "planner", prompt: "alice: plan, then build", name: alice, plan_mode_required: true } } ]
      - text: "started"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;

#[tokio::test]
async fn plan_approval_rejected_then_approved_and_shutdown_refused_then_accepted() {
    let h = Harness::new(PLAN_AND_SHUTDOWN, Wire::Anthropic).await;
    let evs = team_exec(&h, &[], "plan and build with a team").await;
    let records = h.records();
    let alice = rule_records(&records, "alice");

    // In plan mode until approved: her early write was refused.
    let early = tool_results(&alice[1].body).pop().unwrap();
    assert!(early.1, "{early:?}");
    assert!(!h.path("early.txt").exists());
    // The rejection's feedback reached her, and she stayed in plan mode.
    let rejected = user_plain_text(&alice[3].body);
    assert!(rejected.contains("add tests first"), "{rejected}");
    assert!(rejected.contains("\"approve\":false"), "{rejected}");
    // Approved: she wrote the file.
    let wrote = tool_results(&alice[6].body).pop().unwrap();
    assert!(!wrote.1, "{wrote:?}");
    assert_eq!(h.read("impl.txt"), "done");

    // Shutdown: refused with a reason the lead read, then accepted.
    let lead_saw: String = rule_records(&records, "lead-shutdown-again")
        .iter()
        .map(|r| user_plain_text(&r.body))
        .collect();
    assert!(lead_saw.contains("still verifying"), "{lead_saw}");
    let after_first: Vec<_> = alice.iter().skip(8).collect();
    assert!(
        user_plain_text(&after_first[0].body).contains("\"type\":\"shutdown_request\""),
        "the request woke her"
    );
    assert_eq!(alice.len(), 11, "she ended right after agreeing");
    let last = evs
        .iter()
        .rev()
        .find(|e| e["type"] == "teammate_changed" && e["name"] == "alice")
        .unwrap();
    assert_eq!(last["state"], "ended");
    // Each lead rule answered exactly once.
    for rule in [
        "lead-reject",
        "lead-approve",
        "lead-shutdown",
        "lead-shutdown-again",
    ] {
        assert_eq!(rule_records(&records, rule).len(), 1, "{rule}");
    }
    // She ended before the session did (the accepted shutdown stopped her).
    let ended = evs
        .iter()
        .position(|e| {
            e["type"] == "teammate_changed" && e["name"] == "alice" && e["state"] == "ended"
        })
        .unwrap();
    let approved = evs
        .iter()
        .position(|e| {
            e["type"] == "team_message_sent"
                && e["from"] == "alice"
                && e["summary"] == "shutdown_response"
        })
        .unwrap();
    assert!(approved < ended);
}

/// A user-level definition asking for bypassPermissions.
const YOLO: &str = "---\nname: yolo\ndescription: does anything\npermissionMode: bypassPermissions\n---\nYou are YOLO.\n";

#[tokio::test]
async fn a_teammate_runs_at_the_leads_mode_and_its_question_reaches_the_lead_under_its_name() {
    let script = r#"
rules:
  - name: carol
    when: { system: "You are 'carol'" }
    replies:
      - tool_calls: [ { name: Bash, input: { command: "echo carol > c.txt", description: "write c" } } ]
      - text: "carol done"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "writer", prompt: "carol: write c.txt", name: carol, subagent_type: yolo } } ]
      - text: "started"
      - text: "noted"
      - text: "noted"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let agents = h.home.path().join(".claude").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("yolo.md"), YOLO).unwrap();
    let out = h
        .cadre_tty(
            &["exec", "--json", "--teams", "write it with a team"],
            &["y"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    // Not bypassPermissions: the command was asked about, under carol's name.
    let asked: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 1, "{evs:?}");
    let label = asked[0]["question"]["label"].as_str().unwrap();
    assert_eq!(label, "Teammate carol (yolo)");
    assert_eq!(h.read("c.txt").trim(), "carol");
    // The reason it runs at the lead's mode was said.
    assert!(
        evs.iter().any(|e| e["type"] == "warning"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .contains("at the lead's default at most")),
        "{evs:?}"
    );
}

#[tokio::test]
async fn print_mode_runs_a_team_and_the_stream_marks_each_teammates_messages() {
    let h = Harness::new(TEAM_OF_TWO, Wire::OpenAi).await;
    let out = h
        .cadre(&[
            "-p",
            "--teams",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "build the feature with a team",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = common::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Each teammate's messages carry its name; the lead's none.
    for name in ["alice", "bob"] {
        let theirs: Vec<&Value> = lines
            .iter()
            .filter(|l| l["type"] == "assistant" && l["teammate"] == name)
            .collect();
        assert_eq!(theirs.len(), 6, "{name}: {lines:?}");
        let text = theirs.last().unwrap()["message"]["content"][0]["text"].as_str();
        assert_eq!(text, Some(format!("{name} idle").as_str()));
    }
    let lead_final = lines
        .iter()
        .filter(|l| l["type"] == "assistant" && l.get("teammate").is_none())
        .count();
    assert!(lead_final >= 5, "{lead_final}");
    // Team events are system lines; the run ends with its result after the
    // teammates ended.
    let ended = lines
        .iter()
        .filter(|l| l["subtype"] == "teammate_changed" && l["state"] == "ended")
        .count();
    assert_eq!(ended, 2);
    assert!(lines.iter().any(|l| l["subtype"] == "board_task_changed"));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result", "{last}");
    assert_eq!(last["subtype"], "success", "{last}");
}

#[tokio::test]
async fn the_budget_cap_counts_and_stops_the_whole_team() {
    let script = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [{ name: Glob, input: { pattern: "*" } }]
        usage: { input_tokens: 400, output_tokens: 10 }
      - tool_calls: [{ name: Glob, input: { pattern: "*" } }]
        usage: { input_tokens: 400, output_tokens: 10 }
      - text: "alice done"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "spender", prompt: "alice: spend", name: alice } } ]
        usage: { input_tokens: 100, output_tokens: 10 }
      - text: "started"
        usage: { input_tokens: 0, output_tokens: 0 }
      - text: "never"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    // One dollar per thousand input tokens.
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[models.anthropic.mock-model]\ninput_price = 1000\noutput_price = 0\n",
    )
    .unwrap();
    let out = h
        .cadre(&[
            "-p",
            "--teams",
            "spend as a team",
            "--max-budget-usd",
            "0.45",
            "--output-format",
            "json",
        ])
        .await;
    let r: Value = serde_json::from_str(common::stdout(&out).trim()).unwrap();
    assert_eq!(r["subtype"], "error_max_budget_usd", "{r}");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The lead's first request (0.10) and alice's first (0.40) spent it:
    // neither sent another to the model.
    let records = h.records();
    assert_eq!(rule_records(&records, "alice").len(), 1);
    assert!(rule_records(&records, "lead").len() <= 2);
    assert!(r["total_cost_usd"].as_f64().unwrap() >= 0.45, "{r}");
}

#[tokio::test]
async fn after_a_normal_exit_resume_brings_the_team_back_with_its_conversations() {
    let script = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - text: "alice ready"
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "alice remembers her first prompt", summary: "alice back" } } ]
      - text: "alice idle again"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "helper", prompt: "alice: FIRST-PROMPT wait for work", name: alice } } ]
      - text: "started"
      - text: "noted"
      - tool_calls: [ { name: SendMessage, input: { to: alice, message: "SECOND-ROUND: are you there?" } } ]
      - text: "asked alice"
      - text: "noted"
      - text: "noted"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "--teams", "start"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .unwrap()
        .to_string();
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--teams",
            "--resume",
            &id,
            "ask alice again",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let alice = rule_records(&records, "alice");
    assert_eq!(alice.len(), 3, "alice came back for the second round");
    // Her own conversation from the first run, then the new message.
    let body = user_plain_text(&alice[1].body);
    assert!(body.contains("FIRST-PROMPT"), "{body}");
    assert!(body.contains("SECOND-ROUND"), "{body}");
    let lead = rule_records(&records, "lead");
    let heard = user_plain_text(&lead.last().unwrap().body);
    assert!(
        heard.contains("alice remembers her first prompt"),
        "{heard}"
    );
}

#[tokio::test]
async fn a_shutdown_request_cancels_the_teammates_running_call() {
    let script = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: Bash, input: { command: "sleep 120", description: "a long job" } } ]
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: { type: shutdown_response, approve: true } } } ]
      - text: "bye"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: Agent, input: { description: "worker", prompt: "alice: run the long job", name: alice } } ]
      - latency_ms: 500
        tool_calls: [ { name: SendMessage, input: { to: alice, message: { type: shutdown_request, reason: "stop now" } } } ]
      - text: "asked"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let evs = team_exec(&h, &["--allow", "Bash"], "start").await;
    let records = h.records();
    let alice = rule_records(&records, "alice");
    assert!(alice.len() >= 2, "{}", alice.len());
    // Her long call was cut short, and the request reached her with it.
    let next = &alice[1].body;
    let result = tool_results(next).pop().unwrap();
    assert!(result.1, "{result:?}");
    assert!(
        result.0.contains("interrupt") || result.0.contains("cancel"),
        "{result:?}"
    );
    assert!(user_plain_text(next).contains("\"type\":\"shutdown_request\""));
    let last = evs
        .iter()
        .rev()
        .find(|e| e["type"] == "teammate_changed" && e["name"] == "alice")
        .unwrap();
    assert_eq!(last["state"], "ended");
}
