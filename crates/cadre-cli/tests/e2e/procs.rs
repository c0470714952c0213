//! Signals and processes through the binary: SIGTERM and SIGHUP end a run
//! like Ctrl+C, SIGKILL of cadre leaves no shell behind, a locked task table
//! never hangs `exec`, and one session is used by one process at a time.

use crate::common;

use std::time::Duration;

use cadre_core::tasks::{BlockingTaskTable, TaskStatus};
use common::{Harness, Wire, events, stderr, tasks};
use serde_json::Value;

const HELPER: &str = "---
name: helper
description: Runs a long command.
tools: Bash
---
You are HELPER.
";

/// The live processes (not zombies) whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // Fields after the name: state (3), ppid (4), pgrp (5).
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded) until group `pgid` has no live process; returns what is left.
async fn group_gone(pgid: i32) -> Vec<i32> {
    for _ in 0..200 {
        let left = group_members(pgid);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    group_members(pgid)
}

/// Waits (bounded) for a file the test's commands write, and reads the pid in it.
async fn pid_in(h: &Harness, rel: &str) -> i32 {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(text) = std::fs::read_to_string(h.path(rel))
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{rel} was not written"))
}

fn kill_group(pgid: i32) {
    // SAFETY: ending a process group this test's run started.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// A run with a background shell and a background subagent running its own
/// shell gets `signal`: it ends with `code`, everything cancelled, no shell left.
async fn a_signal_ends_the_run_like_ctrl_c(signal: i32, code: i32) {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > bg.pid; sleep 300 & sleep 300", run_in_background: true, description: "long shell" } }
          - { name: Agent, input: { description: "long child", prompt: "run it", subagent_type: "helper", run_in_background: true } }
      - text: "waiting"
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > child.pid; sleep 300" } }
      - text: "child done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let mut run = h.spawn_json(&["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    run.wait_for("turn_ended", 1).await;
    let bg = pid_in(&h, "bg.pid").await;
    let child = pid_in(&h, "child.pid").await;
    run.signal(signal);
    let finished = tokio::time::timeout(Duration::from_secs(60), run.finish()).await;
    let left: Vec<i32> = [bg, child].into_iter().flat_map(group_members).collect();
    kill_group(bg);
    kill_group(child);
    let (status, evs) = finished.expect("cadre ends after the signal");
    assert_eq!(status.code(), Some(code), "{status:?}");
    assert!(left.is_empty(), "still running: {left:?}");
    let rows = tasks(&h);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.status == TaskStatus::Cancelled),
        "{rows:?}"
    );
    // The events were flushed: each task's end is on stdout.
    let ended: Vec<&Value> = evs.iter().filter(|e| e["type"] == "task_ended").collect();
    assert_eq!(ended.len(), 2, "{evs:?}");
    assert!(
        ended.iter().all(|e| e["status"] == "cancelled"),
        "{ended:?}"
    );
}

#[tokio::test]
async fn sigterm_cancels_every_task_and_exits_143() {
    a_signal_ends_the_run_like_ctrl_c(libc::SIGTERM, 143).await;
}

#[tokio::test]
async fn sighup_cancels_every_task_and_exits_129() {
    a_signal_ends_the_run_like_ctrl_c(libc::SIGHUP, 129).await;
}

#[tokio::test]
async fn sigkill_of_cadre_leaves_no_shell_running() {
    let script = r#"
rules:
  - name: parent
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > bg.pid; sleep 300 & sleep 300", run_in_background: true, description: "two sleeps" } }
      - text: "waiting"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut run = h.spawn_json(&["exec", "--json", "--permission-mode", "acceptEdits", "go"]);
    run.wait_for("turn_ended", 1).await;
    let pgid = pid_in(&h, "bg.pid").await;
    // Both sleeps and the shell are up before cadre goes.
    for _ in 0..200 {
        if group_members(pgid).len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(group_members(pgid).len() >= 3, "{:?}", group_members(pgid));
    run.kill().await;
    let left = group_gone(pgid).await;
    kill_group(pgid);
    assert!(left.is_empty(), "still running after SIGKILL: {left:?}");
    // The row records the group it ran in.
    let row = &tasks(&h)[0];
    assert_eq!(row.pgid, Some(pgid as u32));
    assert!(row.pgid_start.is_some());
}

#[tokio::test]
async fn a_locked_task_table_fails_the_task_and_exec_still_ends() {
    // The job ends only once the test holds the lock.
    let script = r#"
rules:
  - name: parent
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > job.pid; while [ ! -e go ]; do sleep 0.05; done; echo finished", run_in_background: true, description: "short job" } }
      - text: "waiting"
      - text: "noted"
      - text: "noted again"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let run = h
        .command(
            &["exec", "--json", "--permission-mode", "acceptEdits", "go"],
            &[],
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    pid_in(&h, "job.pid").await;
    // Another process holds the write lock from before the job ends until after exec has.
    let db = h.data_dir().join("tasks.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    h.write("go", "");
    let finished = tokio::time::timeout(Duration::from_secs(300), run.wait_with_output()).await;
    conn.execute_batch("ROLLBACK").unwrap();
    let out = finished
        .expect("exec ends although tasks.db stays locked")
        .unwrap();
    let evs = events(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warning = evs
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .find(|m| m.contains("could not record"))
        .unwrap_or_else(|| panic!("no warning about the task table: {evs:?}"));
    assert!(warning.contains(&db.display().to_string()), "{warning}");
    let ended: Vec<&Value> = evs.iter().filter(|e| e["type"] == "task_ended").collect();
    assert_eq!(ended.len(), 1, "{evs:?}");
    assert_eq!(ended[0]["status"], "failed");
    // The model was told, in a notice.
    let notices: String = h.records().iter().map(|r| r.body.to_string()).collect();
    assert!(
        notices.contains("could not record the end of task"),
        "{notices}"
    );
}

const RESUMED: &str = r#"
rules:
  - name: main
    replies:
      - text: "first answer"
      - latency_ms: 15000
        text: "slow second answer"
      - text: "third answer"
"#;

#[tokio::test]
async fn a_session_in_use_cannot_be_resumed_by_a_second_process() {
    let h = Harness::new(RESUMED, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));

    let mut first = h.spawn_json(&["exec", "--json", "--resume", &id, "again"]);
    // Its turn has started, so its message is logged; it now waits on the
    // model and writes nothing more.
    first.wait_for("turn_started", 1).await;
    let requests = h.records().len();
    let before = std::fs::read(&log).unwrap();
    let second = h
        .cadre(&["exec", "--json", "--resume", &id, "at once"])
        .await;
    let after = std::fs::read(&log).unwrap();
    assert!(!second.status.success());
    let msg = stderr(&second);
    assert!(
        msg.contains(&format!("in use by cadre process {}", first.pid())),
        "{msg}"
    );
    assert_eq!(before, after, "the second process wrote to the log");
    assert_eq!(
        h.records().len(),
        requests,
        "the second process asked the model"
    );

    // The first run, still waiting on the model, is stopped; that frees the session.
    first.signal(libc::SIGTERM);
    let (status, _) = first.finish().await;
    assert_eq!(status.code(), Some(143));
    // Once the first has ended, the session can be resumed again.
    let third = h.cadre(&["exec", "--json", "--resume", &id, "later"]).await;
    assert!(third.status.success(), "{}", stderr(&third));
}

#[tokio::test]
async fn sigterm_ends_an_interactive_session_like_leaving_it() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > bg.pid; sleep 300 & sleep 300", run_in_background: true, description: "long shell" } }
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ > fg.pid; sleep 300" } }
      - text: "never reached"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut child = h
        .command(&["--permission-mode", "acceptEdits"], &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"start the work\n")
        .await
        .unwrap();
    let bg = pid_in(&h, "bg.pid").await;
    let fg = pid_in(&h, "fg.pid").await;
    // SAFETY: signalling the cadre process this test started.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
    let left: Vec<i32> = [bg, fg].into_iter().flat_map(group_members).collect();
    kill_group(bg);
    kill_group(fg);
    drop(stdin);
    let status = status.expect("cadre ends after SIGTERM").unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(left.is_empty(), "still running: {left:?}");
    let rows = tasks(&h);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].status, TaskStatus::Cancelled, "{rows:?}");
}

#[tokio::test]
async fn a_later_cadre_stops_the_group_of_a_lost_task_only_if_it_is_still_that_group() {
    use std::os::unix::process::CommandExt;
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    // A shell whose cadre died (and whose watchdog was killed too), and a
    // group whose leader's start time does not match the row: someone else's.
    let spawn_group = || {
        std::process::Command::new("sh")
            .args(["-c", "sleep 300 & sleep 300"])
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let mut orphan = spawn_group();
    let mut other = spawn_group();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let table = BlockingTaskTable::open(&h.data_dir()).unwrap();
    let start_of = |pid: u32| cadre_core::tasks::ProcessId::of(pid).start.unwrap();
    for (leader, start) in [
        (orphan.id(), start_of(orphan.id())),
        (other.id(), start_of(other.id()) + 1),
    ] {
        let row = table
            .create(cadre_core::tasks::NewTask {
                kind: cadre_core::tasks::TaskKind::Bash,
                session_id: "s".into(),
                parent_agent: "main".into(),
                description: "left behind".into(),
                agent_type: None,
                name: None,
                background: true,
            })
            .unwrap();
        table
            .set_status(&row.id, TaskStatus::Running, None, None)
            .unwrap();
        table.set_group(&row.id, leader, Some(start)).unwrap();
        table.set_owner_pid(&row.id, dead_pid).unwrap();
    }
    drop(table);
    let (orphan_pgid, other_pgid) = (orphan.id() as i32, other.id() as i32);
    for _ in 0..200 {
        if group_members(orphan_pgid).len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = h.cadre(&["tasks"]).await;
    let left = group_gone(orphan_pgid).await;
    let others = group_members(other_pgid);
    kill_group(orphan_pgid);
    kill_group(other_pgid);
    let _ = orphan.wait();
    let _ = other.wait();
    assert!(
        left.is_empty(),
        "the lost task's group still runs: {left:?}"
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(others.len() >= 3, "another group was stopped: {others:?}");
    assert!(tasks(&h).iter().all(|r| r.status == TaskStatus::Lost));
}

/// The size of a process's descriptor table (`FDSize` in its status).
fn descriptor_table_size(pid: i32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .expect("FDSize in status")
        .trim()
        .parse()
        .unwrap()
}

/// Linux grows the descriptor table of a process with more than one thread
/// only after an RCU grace period, which every thread opening a file or a
/// socket waits out (measured: 12-18 ms in one `socket()` and two `openat()`s
/// as a batch of 32 children passed 64 descriptors). cadre grows it while
/// it has one thread: a run holds a table for 1024 before any request.
#[tokio::test]
async fn the_descriptor_table_is_grown_before_any_thread_starts() {
    let script =
        "rules:\n  - name: slow\n    replies:\n      - latency_ms: 3000\n        text: \"done\"\n";
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut run = h.spawn_json(&["exec", "--json", "go"]);
    run.wait_for("turn_started", 1).await;
    let size = descriptor_table_size(run.pid());
    assert!(size >= 1024, "FDSize {size}: the table was not grown");
    run.kill().await;
}
