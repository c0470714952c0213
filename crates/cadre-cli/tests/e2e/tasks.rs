//! `cadre tasks` through the binary: listing newest first, showing a task with
//! its log, stopping, unknown ids, and the start-up sweep of dead owners' rows.

use std::path::Path;
use std::process::{Command, Output};

use cadre_core::tasks::{BlockingTaskTable, NewTask, TASK_LOST_ON_STARTUP, TaskKind, TaskStatus};

fn cadre(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cadre"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CADRE_HOME", home.join("cadre"))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn task(kind: TaskKind, desc: &str, agent_type: Option<&str>) -> NewTask {
    NewTask {
        kind,
        session_id: "s-test".into(),
        parent_agent: "main".into(),
        description: desc.into(),
        agent_type: agent_type.map(String::from),
        name: None,
        background: true,
    }
}

#[test]
fn lists_newest_first_with_id_kind_status_description_agent_type_and_age() {
    let home = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(&home.path().join("cadre")).unwrap();
    let first = t
        .create(task(
            TaskKind::Subagent,
            "find the config loader",
            Some("Explore"),
        ))
        .unwrap();
    t.set_status(&first.id, TaskStatus::Running, None, None)
        .unwrap();
    t.set_status(&first.id, TaskStatus::Succeeded, None, Some("found it"))
        .unwrap();
    let second = t
        .create(task(TaskKind::Bash, "cargo test --workspace", None))
        .unwrap();
    t.set_status(&second.id, TaskStatus::Running, None, None)
        .unwrap();

    let out = cadre(home.path(), &["tasks"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for col in ["ID", "KIND", "STATUS", "DESCRIPTION", "AGENT TYPE", "AGE"] {
        assert!(lines[0].contains(col), "{text}");
    }
    let cols = |l: &str| {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        cols(lines[1]),
        [
            &second.id,
            "bash",
            "running",
            "cargo test --workspace",
            "-",
            "0s"
        ]
    );
    assert_eq!(
        cols(lines[2]),
        [
            &first.id,
            "subagent",
            "succeeded",
            "find the config loader",
            "Explore",
            "0s"
        ]
    );
    // Our own pid owns these rows and we are alive: nothing is lost.
    assert_eq!(t.get(&second.id).unwrap().status, TaskStatus::Running);

    let out = cadre(home.path(), &["tasks", "list", "--active"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&second.id) && !text.contains(&first.id),
        "{text}"
    );

    let out = cadre(home.path(), &["tasks", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["id"], second.id.as_str());
    assert_eq!(rows[1]["status"], "succeeded");
}

#[test]
fn show_prints_status_times_result_and_the_log() {
    let home = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(&home.path().join("cadre")).unwrap();
    let row = t
        .create(task(
            TaskKind::Subagent,
            "summarise the README",
            Some("general"),
        ))
        .unwrap();
    t.set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();
    t.append_output(&row.id, "reading README.md\nline two é\n")
        .unwrap();
    t.set_status(
        &row.id,
        TaskStatus::Failed,
        Some("model error: 529"),
        Some("partial"),
    )
    .unwrap();

    let out = cadre(home.path(), &["tasks", "show", &row.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        row.id.as_str(),
        "failed",
        "summarise the README",
        "model error: 529",
        "partial",
        "started",
        "ended",
        "reading README.md\nline two é\n",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

#[test]
fn stop_of_a_running_task_whose_process_is_gone_cancels_it() {
    let home = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(&home.path().join("cadre")).unwrap();
    let row = t.create(task(TaskKind::Bash, "sleep 100", None)).unwrap();
    t.set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();
    t.set_owner_pid(&row.id, dead_pid()).unwrap();

    let out = cadre(home.path(), &["tasks", "stop", &row.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cancelled"), "{}", stdout(&out));
    let r = t.get(&row.id).unwrap();
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert!(r.ended_ms.is_some());

    // Stopping it again says so and changes nothing.
    let out = cadre(home.path(), &["tasks", "stop", &row.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("already ended as cancelled"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn stop_of_a_task_whose_process_lives_marks_it_stopping() {
    let home = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(&home.path().join("cadre")).unwrap();
    // This test process owns the row and stays alive.
    let row = t
        .create(task(TaskKind::Subagent, "long review", Some("reviewer")))
        .unwrap();
    t.set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();

    let out = cadre(home.path(), &["tasks", "stop", &row.id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("stopping"), "{}", stdout(&out));
    assert_eq!(t.get(&row.id).unwrap().status, TaskStatus::Stopping);
    // The owner finishes the stop.
    t.set_status(&row.id, TaskStatus::Cancelled, None, None)
        .unwrap();
}

#[test]
fn unknown_id_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    for sub in ["show", "stop"] {
        let out = cadre(home.path(), &["tasks", sub, "t-000000000000"]);
        assert_eq!(out.status.code(), Some(2), "{sub}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no task with id \"t-000000000000\""),
            "{sub}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn rows_of_dead_owners_become_lost_at_start_up() {
    let home = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(&home.path().join("cadre")).unwrap();
    let orphan = t
        .create(task(TaskKind::Subagent, "orphaned work", Some("Explore")))
        .unwrap();
    t.set_status(&orphan.id, TaskStatus::Running, None, None)
        .unwrap();
    t.set_owner_pid(&orphan.id, dead_pid()).unwrap();
    let alive = t.create(task(TaskKind::Bash, "still mine", None)).unwrap();

    let out = cadre(home.path(), &["tasks"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&orphan.id), "{}", stderr(&out));
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with(&orphan.id))
        .map(String::from)
        .unwrap();
    assert!(line.contains(" lost "), "{line}");

    let r = t.get(&orphan.id).unwrap();
    assert_eq!(r.status, TaskStatus::Lost);
    assert_eq!(r.error.as_deref(), Some(TASK_LOST_ON_STARTUP));
    assert!(r.error.unwrap().starts_with("TASK_LOST_ON_STARTUP"));
    assert_eq!(t.get(&alive.id).unwrap().status, TaskStatus::Queued);

    let out = cadre(home.path(), &["tasks", "show", &orphan.id]);
    assert!(
        stdout(&out).contains("TASK_LOST_ON_STARTUP"),
        "{}",
        stdout(&out)
    );
}
