//! Attacks on processes, locks and sessions through the binary: what a user
//! (or a script) can do to a session another cadre is using.

use crate::common;

use common::{Harness, Wire, events, stderr};

const SLOW_SECOND: &str = r#"
rules:
  - name: main
    replies:
      - text: "first answer"
      - latency_ms: 15000
        text: "slow second answer"
      - text: "third answer"
"#;

/// `cadre sessions rm` of a session another process is using is refused,
/// naming that process: deleting it would unlink the log the run still writes
/// (its work silently lost) and the lock file, after which a second process
/// could lock a fresh file and use the same session at once.
#[tokio::test]
async fn a_session_in_use_cannot_be_removed() {
    let h = Harness::new(SLOW_SECOND, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let lock = h.data_dir().join("locks").join(format!("{id}.lock"));

    let mut first = h.spawn_json(&["exec", "--json", "--resume", &id, "again"]);
    first.wait_for("session_resumed", 1).await;
    let rm = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    let log_kept = log.exists();
    let lock_kept = lock.exists();
    let pid = first.pid();
    first.signal(libc::SIGTERM);
    let (status, _) = first.finish().await;
    assert_eq!(status.code(), Some(143));

    assert!(!rm.status.success(), "removed a session in use");
    let msg = stderr(&rm);
    assert!(
        msg.contains(&format!("in use by cadre process {pid}")),
        "{msg}"
    );
    assert!(log_kept, "the log of a running session was deleted");
    assert!(lock_kept, "the lock of a running session was deleted");

    // Once nobody uses it, it can be removed, lock file included.
    let rm = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    assert!(rm.status.success(), "{}", stderr(&rm));
    assert!(!log.exists());
    assert!(!lock.exists());
}

const ONE_BACKGROUND_TASK: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo finished-output", run_in_background: true, description: "quick job" } }
      - text: "started"
      - text: "noted"
      - text: "resumed answer"
"#;

/// A notice is written to the session log before its task is marked
/// announced, so a crash between the two cannot lose it; the state such a
/// crash leaves (notice in the log, row not yet marked) must not announce the
/// task a second time after `--resume`.
#[tokio::test]
async fn a_notice_in_the_log_is_not_announced_again_when_its_row_was_not_marked() {
    let h = Harness::new(ONE_BACKGROUND_TASK, Wire::Anthropic).await;
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
    let evs = events(&out);
    let id = evs[0]["session_id"].as_str().unwrap().to_string();
    let notified: Vec<_> = evs
        .iter()
        .filter(|e| e["type"] == "tasks_notified")
        .collect();
    assert_eq!(notified.len(), 1, "{evs:?}");
    let task = notified[0]["task_ids"][0].as_str().unwrap().to_string();

    // What a SIGKILL between the log write and the mark leaves behind.
    let db = rusqlite::Connection::open(h.data_dir().join("tasks.db")).unwrap();
    db.execute("UPDATE tasks SET notified = 0 WHERE id = ?1", [&task])
        .unwrap();
    drop(db);

    let out = h.cadre(&["exec", "--json", "--resume", &id, "again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(
        !evs.iter().any(|e| e["type"] == "tasks_notified"),
        "announced twice: {evs:?}"
    );
    let last = common::last_body(&h).to_string();
    assert_eq!(
        last.matches(&format!("<task id=\\\"{task}\\\"")).count(),
        1,
        "{last}"
    );
}

/// A child whose log has no readable record left is not "resumed" with an
/// empty history (a fresh agent passed off as the old one, its earlier work
/// gone): SendMessage says the log cannot be read.
#[tokio::test]
async fn send_message_to_a_child_whose_log_is_unreadable_is_an_error() {
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "FIRST-ANSWER from the scout"
      - text: "SECOND-ANSWER from nowhere"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scouting", prompt: "scout-task", subagent_type: "helper", name: "scout" } }
      - text: "scout said FIRST-ANSWER"
      - tool_calls:
          - { name: SendMessage, input: { to: "scout", message: "FOLLOW-UP question" } }
      - text: "done"
      - text: "done again"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/helper.md",
        "---\nname: helper\ndescription: Answers.\ntools: Read\n---\nYou are HELPER.\n",
    );
    let out = h.cadre(&["exec", "--json", "first run"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let agents = h.data_dir().join("sessions").join(format!("{id}.agents"));
    let mut logs = 0;
    for e in std::fs::read_dir(&agents).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        let torn: String = text.lines().map(|l| format!("#{l}\n")).collect();
        std::fs::write(e.path(), torn).unwrap();
        logs += 1;
    }
    assert_eq!(logs, 1);

    let out = h
        .cadre(&["exec", "--json", "--resume", &id, "ask again"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(
        common::rule_records(&records, "child").len(),
        1,
        "the child ran again with no history"
    );
    let parent = common::rule_records(&records, "parent");
    let results = common::tool_results(&parent[3].body);
    let (sent, is_error) = results.last().unwrap();
    assert!(*is_error, "{sent}");
    assert!(sent.contains("cannot resume"), "{sent}");
}

/// A terminal that closes sends SIGHUP more than once (the kernel to the
/// foreground group, the shell again to its jobs): a repeated hangup is not
/// the impatient second Ctrl+C that leaves at once, so the run still winds
/// down like the first signal asked: tasks `cancelled`, their ends on stdout.
#[tokio::test]
async fn a_repeated_sighup_still_winds_the_run_down() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "trap 'echo > got-term' TERM; echo $$ > bg.pid; while :; do sleep 1; done", run_in_background: true, description: "stubborn shell" } }
      - text: "waiting"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut run = h.spawn_json(&["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    run.wait_for("turn_ended", 1).await;
    let bg = {
        let path = h.path("bg.pid");
        let mut pid = None;
        for _ in 0..400 {
            if let Some(p) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                pid = Some(p);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        pid.expect("bg.pid written")
    };
    run.signal(libc::SIGHUP);
    // The shell outlives SIGTERM, so winding down takes the kill grace
    // period; the second hangup comes once the first has started it.
    common::wait_until("the shell got SIGTERM", || h.path("got-term").exists()).await;
    run.signal(libc::SIGHUP);
    let (status, evs) = run.finish().await;
    // SAFETY: ending the process group this test's run started.
    unsafe { libc::kill(-bg, libc::SIGKILL) };
    assert_eq!(status.code(), Some(129), "{status:?}");
    let ended: Vec<_> = evs.iter().filter(|e| e["type"] == "task_ended").collect();
    assert_eq!(ended.len(), 1, "{evs:?}");
    assert_eq!(ended[0]["status"], "cancelled");
    let rows = common::tasks(&h);
    assert_eq!(
        rows[0].status,
        cadre_core::tasks::TaskStatus::Cancelled,
        "{rows:?}"
    );
}

/// A cadre killed by SIGKILL whose parent has not reaped it yet (a
/// supervisor that waits late, a container whose PID 1 never reaps) is a
/// zombie: its pid and start time still read back from `/proc`, but it runs
/// nothing. Its rows are `lost`, not `running` forever.
#[tokio::test]
async fn rows_of_a_killed_cadre_not_yet_reaped_are_lost() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "sleep 300", run_in_background: true, description: "long" } }
      - text: "waiting"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut run = h.spawn_json(&["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    run.wait_for("turn_ended", 1).await;
    let pid = run.pid();
    // Killed, and deliberately not waited for yet: it stays a zombie.
    run.signal(libc::SIGKILL);
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim().to_string()))
            .and_then(|r| r.split_whitespace().next().map(str::to_string))
    };
    for _ in 0..400 {
        if state().as_deref() == Some("Z") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(state().as_deref(), Some("Z"));
    let out = h.cadre(&["tasks"]).await;
    let rows = common::tasks(&h);
    run.kill().await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        rows[0].status,
        cadre_core::tasks::TaskStatus::Lost,
        "{rows:?}"
    );
}
