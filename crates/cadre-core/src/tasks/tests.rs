use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Barrier};

use super::*;

fn new_task(desc: &str) -> NewTask {
    NewTask {
        kind: TaskKind::Subagent,
        session_id: "s-1".into(),
        parent_agent: "main".into(),
        description: desc.into(),
        agent_type: Some("Explore".into()),
        name: None,
        background: true,
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!process_alive(pid));
    pid
}

#[test]
fn opens_an_empty_v0_database_and_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    // An empty SQLite database: user_version 0, no tables.
    {
        let conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 0);
    }
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("kept")).unwrap();
    drop(t);
    // Current version: opens again without re-running anything, rows intact.
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    assert_eq!(t.get(&row.id).unwrap().description, "kept");
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    let journal: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let err = BlockingTaskTable::open(dir.path()).unwrap_err();
    assert!(matches!(err, TaskError::Schema(_)), "{err}");
}

#[test]
fn files_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("x")).unwrap();
    assert_eq!(mode(t.path()), 0o600);
    assert_eq!(mode(&dir.path().join("tasks")), 0o700);
    assert_eq!(mode(row.output_path.parent().unwrap()), 0o700);
    assert_eq!(mode(&row.output_path), 0o600);
    assert_eq!(
        row.output_path,
        dir.path().join("tasks").join(&row.id).join("output.log")
    );
    assert_eq!(std::fs::metadata(&row.output_path).unwrap().len(), 0);
}

#[tokio::test]
async fn started_rows_have_their_files_before_the_next_call_and_files_beside() {
    let dir = tempfile::tempdir().unwrap();
    let t = TaskTable::open(dir.path()).await.unwrap();
    let rows = t
        .start_many(vec![new_task("a"), new_task("b")])
        .await
        .unwrap();
    // The rows come back first; their folders are made before the table's
    // next call runs, so whatever asks next finds them.
    let beside: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.output_path.with_file_name("agent.json"),
                r.id.clone().into_bytes(),
            )
        })
        .collect();
    t.write_beside(beside).await;
    for row in &rows {
        assert_eq!(
            row.output_path,
            dir.path().join("tasks").join(&row.id).join("output.log")
        );
        assert_eq!(mode(row.output_path.parent().unwrap()), 0o700);
        assert_eq!(mode(&row.output_path), 0o600);
        let saved = row.output_path.with_file_name("agent.json");
        assert_eq!(mode(&saved), 0o600);
        assert_eq!(std::fs::read(&saved).unwrap(), row.id.as_bytes());
        t.append_output(&row.id, "out\n").await.unwrap();
        let (text, _, _) = t.read_output(&row.id, 0, 100).await.unwrap();
        assert_eq!(text, "out\n");
    }
}

#[test]
fn create_get_and_list_newest_first_with_filters() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let a = t.create(new_task("a")).unwrap();
    let b = t
        .create(NewTask {
            kind: TaskKind::Bash,
            session_id: "s-2".into(),
            parent_agent: "worker".into(),
            agent_type: None,
            name: Some("build".into()),
            background: false,
            ..new_task("b")
        })
        .unwrap();
    let c = t.create(new_task("c")).unwrap();

    assert!(a.id.starts_with("t-") && a.id.len() == 14, "{}", a.id);
    assert!(a.id[2..].chars().all(|ch| ch.is_ascii_hexdigit()));
    assert_ne!(a.id, b.id);
    assert_eq!(a.status, TaskStatus::Queued);
    assert_eq!(a.owner_pid, std::process::id());

    let got = t.get(&b.id).unwrap();
    assert_eq!(got.kind, TaskKind::Bash);
    assert_eq!(got.name.as_deref(), Some("build"));
    assert_eq!(got.agent_type, None);
    assert!(!got.background);
    assert!(!got.notified);
    assert!(matches!(t.get("t-nope"), Err(TaskError::NotFound(_))));

    let ids =
        |f: &TaskFilter| -> Vec<String> { t.list(f).unwrap().into_iter().map(|r| r.id).collect() };
    assert_eq!(
        ids(&TaskFilter::default()),
        [c.id.clone(), b.id.clone(), a.id.clone()]
    );
    let f = TaskFilter {
        session_id: Some("s-1".into()),
        ..Default::default()
    };
    assert_eq!(ids(&f), [c.id.clone(), a.id.clone()]);
    let f = TaskFilter {
        parent_agent: Some("worker".into()),
        ..Default::default()
    };
    assert_eq!(ids(&f), vec![b.id.clone()]);
    let f = TaskFilter {
        limit: Some(2),
        ..Default::default()
    };
    assert_eq!(ids(&f), [c.id.clone(), b.id.clone()]);

    t.set_status(&a.id, TaskStatus::Running, None, None)
        .unwrap();
    t.set_status(&c.id, TaskStatus::Cancelled, Some("stopped"), None)
        .unwrap();
    let f = TaskFilter {
        status: Some(TaskStatus::Running),
        ..Default::default()
    };
    assert_eq!(ids(&f), vec![a.id.clone()]);
    let f = TaskFilter {
        active_only: true,
        ..Default::default()
    };
    assert_eq!(ids(&f), [b.id.clone(), a.id.clone()]);

    t.progress(&a.id, 3, 1200).unwrap();
    t.mark_notified(std::slice::from_ref(&c.id)).unwrap();
    let a2 = t.get(&a.id).unwrap();
    assert_eq!((a2.tool_calls, a2.tokens), (3, 1200));
    assert!(a2.last_activity_ms.is_some());
    assert!(t.get(&c.id).unwrap().notified);
    assert!(matches!(
        t.progress("t-nope", 1, 1),
        Err(TaskError::NotFound(_))
    ));
    // A foreground task moved to the background says so from then on.
    assert!(!t.get(&b.id).unwrap().background);
    t.set_background(&b.id).unwrap();
    assert!(t.get(&b.id).unwrap().background);
    assert!(matches!(
        t.set_background("t-nope"),
        Err(TaskError::NotFound(_))
    ));
}

#[test]
fn set_status_sets_times_and_keeps_final_final() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("x")).unwrap();
    assert!(row.started_ms.is_none() && row.ended_ms.is_none());

    let r = t
        .set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();
    let started = r.started_ms.unwrap();
    assert!(started >= row.created_ms);
    assert!(r.ended_ms.is_none());
    // Running again keeps the first start time.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let r = t
        .set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();
    assert_eq!(r.started_ms, Some(started));

    let r = t
        .set_status(&row.id, TaskStatus::Succeeded, None, Some("found 3 files"))
        .unwrap();
    assert_eq!(r.status, TaskStatus::Succeeded);
    assert!(r.ended_ms.unwrap() >= started);
    assert_eq!(r.result_summary.as_deref(), Some("found 3 files"));
    assert_eq!(r.error, None);

    let err = t
        .set_status(&row.id, TaskStatus::Cancelled, Some("late"), None)
        .unwrap_err();
    assert!(
        matches!(&err, TaskError::FinalStatus { id, from: TaskStatus::Succeeded, to: TaskStatus::Cancelled } if *id == row.id),
        "{err}"
    );
    assert!(err.to_string().contains(&row.id), "{err}");
    let r = t.get(&row.id).unwrap();
    assert_eq!(r.status, TaskStatus::Succeeded);
    assert_eq!(r.error, None);

    let q = t.create(new_task("y")).unwrap();
    assert!(matches!(
        t.set_status(&q.id, TaskStatus::Succeeded, None, None),
        Err(TaskError::BadTransition { .. })
    ));
    assert!(matches!(
        t.set_status("t-nope", TaskStatus::Running, None, None),
        Err(TaskError::NotFound(_))
    ));
}

#[test]
fn a_late_result_goes_to_the_log_and_the_status_stays() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("x")).unwrap();
    t.set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap();
    t.append_output(&row.id, "working\n").unwrap();
    t.set_status(&row.id, TaskStatus::Stopping, None, None)
        .unwrap();
    // A stopped task that finishes anyway may not succeed.
    assert!(
        t.set_status(&row.id, TaskStatus::Succeeded, None, Some("done"))
            .is_err()
    );
    t.set_status(
        &row.id,
        TaskStatus::Cancelled,
        Some("stopped by the user"),
        None,
    )
    .unwrap();
    t.record_late_result(&row.id, "the answer is 42").unwrap();
    let log = std::fs::read_to_string(&row.output_path).unwrap();
    assert_eq!(
        log,
        "working\n\n[warning: a result arrived after the task ended as cancelled; recorded here only]\nthe answer is 42\n"
    );
    let r = t.get(&row.id).unwrap();
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert_eq!(r.result_summary, None);
    assert_eq!(r.error.as_deref(), Some("stopped by the user"));
}

#[test]
fn lost_on_startup_only_for_dead_owners() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let dead = dead_pid();
    let orphan = t.create(new_task("orphan")).unwrap();
    t.set_status(&orphan.id, TaskStatus::Running, None, None)
        .unwrap();
    t.set_owner_pid(&orphan.id, dead).unwrap();
    let orphan_queued = t.create(new_task("orphan queued")).unwrap();
    t.set_owner_pid(&orphan_queued.id, dead).unwrap();
    let finished = t.create(new_task("finished")).unwrap();
    t.set_status(&finished.id, TaskStatus::Failed, Some("boom"), None)
        .unwrap();
    t.set_owner_pid(&finished.id, dead).unwrap();
    let mine = t.create(new_task("mine")).unwrap();
    t.set_status(&mine.id, TaskStatus::Running, None, None)
        .unwrap();
    // pid 1 is alive (and not ours to signal: EPERM still means alive).
    let other_live = t.create(new_task("other live")).unwrap();
    t.set_owner_pid(&other_live.id, 1).unwrap();

    let mut lost = t.mark_lost_on_startup().unwrap();
    lost.sort();
    let mut want = vec![orphan.id.clone(), orphan_queued.id.clone()];
    want.sort();
    assert_eq!(lost, want);

    let r = t.get(&orphan.id).unwrap();
    assert_eq!(r.status, TaskStatus::Lost);
    assert_eq!(r.error.as_deref(), Some(TASK_LOST_ON_STARTUP));
    assert!(r.ended_ms.is_some());
    assert_eq!(t.get(&finished.id).unwrap().status, TaskStatus::Failed);
    assert_eq!(t.get(&finished.id).unwrap().error.as_deref(), Some("boom"));
    assert_eq!(t.get(&mine.id).unwrap().status, TaskStatus::Running);
    assert_eq!(t.get(&other_live.id).unwrap().status, TaskStatus::Queued);
    assert!(t.mark_lost_on_startup().unwrap().is_empty());
}

#[test]
fn read_output_by_offset_never_splits_a_char() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("x")).unwrap();
    assert_eq!(
        t.read_output(&row.id, 0, 10).unwrap(),
        (String::new(), 0, 0)
    );
    // "ab" + "é" (2 bytes) + "€" (3 bytes) + "cd" = 9 bytes.
    t.append_output(&row.id, "abé").unwrap();
    t.append_output(&row.id, "€cd").unwrap();
    let read = |off, max| t.read_output(&row.id, off, max).unwrap();

    assert_eq!(read(0, 100), ("abé€cd".into(), 9, 9));
    assert_eq!(read(0, 2), ("ab".into(), 2, 9));
    // A cut inside "é" backs off to its start.
    assert_eq!(read(0, 3), ("ab".into(), 2, 9));
    assert_eq!(read(0, 4), ("abé".into(), 4, 9));
    // Cuts inside "€" back off too.
    assert_eq!(read(2, 3), ("é".into(), 4, 9));
    assert_eq!(read(2, 4), ("é".into(), 4, 9));
    assert_eq!(read(2, 5), ("é€".into(), 7, 9));
    // An offset inside a character moves forward to the next one.
    assert_eq!(read(3, 100), ("€cd".into(), 9, 9));
    assert_eq!(read(5, 100), ("cd".into(), 9, 9));
    assert_eq!(read(6, 1), ("c".into(), 8, 9));
    // Too small for the character at the offset: the whole character, to progress.
    assert_eq!(read(4, 1), ("€".into(), 7, 9));
    // At or past the end.
    assert_eq!(read(9, 10), (String::new(), 9, 9));
    assert_eq!(read(50, 10), (String::new(), 9, 9));

    // Reading in small chunks reassembles the log exactly.
    let mut off = 0;
    let mut all = String::new();
    loop {
        let (text, next, total) = read(off, 2);
        all.push_str(&text);
        if next >= total {
            break;
        }
        assert!(next > off);
        off = next;
    }
    assert_eq!(all, "abé€cd");
    assert!(matches!(
        t.read_output("t-nope", 0, 1),
        Err(TaskError::NotFound(_))
    ));
}

#[test]
fn two_processes_racing_to_finish_a_task_one_final_status_wins() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10 {
        // Two handles are two connections, as two cadre processes would have.
        let a = BlockingTaskTable::open(dir.path()).unwrap();
        let b = BlockingTaskTable::open(dir.path()).unwrap();
        let row = a.create(new_task(&format!("race {round}"))).unwrap();
        a.set_status(&row.id, TaskStatus::Running, None, None)
            .unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let spawn = |t: BlockingTaskTable, to: TaskStatus| {
            let barrier = barrier.clone();
            let id = row.id.clone();
            std::thread::spawn(move || {
                barrier.wait();
                t.set_status(&id, to, None, None)
            })
        };
        let ha = spawn(a.clone(), TaskStatus::Succeeded);
        let hb = spawn(b.clone(), TaskStatus::Cancelled);
        let ra = ha.join().unwrap();
        let rb = hb.join().unwrap();
        let winners: Vec<TaskStatus> = [&ra, &rb]
            .into_iter()
            .filter_map(|r| r.as_ref().ok().map(|row| row.status))
            .collect();
        assert_eq!(winners.len(), 1, "{ra:?} / {rb:?}");
        let loser = if ra.is_ok() { &rb } else { &ra };
        assert!(
            matches!(loser, Err(TaskError::FinalStatus { .. })),
            "{loser:?}"
        );
        assert_eq!(a.get(&row.id).unwrap().status, winners[0]);
        assert_eq!(b.get(&row.id).unwrap().status, winners[0]);
    }
}

#[test]
fn a_handle_is_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<TaskTable>();
    check::<BlockingTaskTable>();
}

#[test]
fn a_row_of_a_reused_pid_is_lost() {
    // The owner pid is alive (this test process) but its start time is not
    // the recorded one: the pid belongs to someone else now.
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let reused = t.create(new_task("reused pid")).unwrap();
    t.set_status(&reused.id, TaskStatus::Running, None, None)
        .unwrap();
    let mine = t.create(new_task("mine")).unwrap();
    let me = super::ProcessId::current();
    let wrong = me.start.unwrap() + 1;
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    conn.execute(
        "UPDATE tasks SET owner_pid = ?2, owner_start = ?3 WHERE id = ?1",
        rusqlite::params![reused.id, i64::from(me.pid), wrong as i64],
    )
    .unwrap();
    // Another boot: the same pid and start time are someone else's too.
    let other_boot = t.create(new_task("other boot")).unwrap();
    conn.execute(
        "UPDATE tasks SET owner_boot = 'not-this-boot' WHERE id = ?1",
        [&other_boot.id],
    )
    .unwrap();
    let mut lost = t.mark_lost_on_startup().unwrap();
    lost.sort();
    let mut want = vec![reused.id.clone(), other_boot.id.clone()];
    want.sort();
    assert_eq!(lost, want);
    assert_eq!(t.get(&reused.id).unwrap().status, TaskStatus::Lost);
    assert_eq!(t.get(&mine.id).unwrap().status, TaskStatus::Queued);
    let row = t.get(&mine.id).unwrap();
    assert_eq!((row.owner_start, row.owner_boot), (me.start, me.boot));
}

#[test]
fn a_version_1_database_is_migrated_and_its_rows_kept() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    {
        let mut conn = rusqlite::Connection::open(dir.path().join("tasks.db")).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        // Build version 1 by hand (what cadre wrote before version 2).
        let tx = conn.transaction().unwrap();
        tx.execute_batch(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL,
             session_id TEXT NOT NULL, parent_agent TEXT NOT NULL, description TEXT NOT NULL,
             agent_type TEXT, name TEXT, status TEXT NOT NULL, background INTEGER NOT NULL,
             created_ms INTEGER NOT NULL, started_ms INTEGER, ended_ms INTEGER,
             output_path TEXT NOT NULL, result_summary TEXT, error TEXT,
             owner_pid INTEGER NOT NULL, tool_calls INTEGER NOT NULL DEFAULT 0,
             tokens INTEGER NOT NULL DEFAULT 0, last_activity_ms INTEGER,
             notified INTEGER NOT NULL DEFAULT 0);",
        )
        .unwrap();
        tx.execute(
            "INSERT INTO tasks (id, kind, session_id, parent_agent, description, status, \
             background, created_ms, output_path, owner_pid) \
             VALUES ('t-old', 'bash', 's', 'main', 'old', 'running', 1, 1, '/x', ?1)",
            [i64::from(dead)],
        )
        .unwrap();
        tx.pragma_update(None, "user_version", 1).unwrap();
        tx.commit().unwrap();
    }
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let old = t.get("t-old").unwrap();
    assert_eq!((old.owner_start, old.pgid), (None, None));
    // A row without a start time falls back to the pid alone.
    assert_eq!(t.mark_lost_on_startup().unwrap(), vec!["t-old".to_string()]);
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
}

#[test]
fn the_sweep_stops_a_dead_owners_group_only_if_it_is_still_its_group() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let dead = dead_pid();
    let spawn_group = || {
        std::process::Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .unwrap()
    };
    // Its group, verified by the leader's start time: stopped.
    let mut ours = spawn_group();
    let ours_start = super::proc_id::start_time(ours.id()).unwrap();
    // A group whose leader started at another time: someone else's, kept.
    let mut theirs = spawn_group();
    let theirs_start = super::proc_id::start_time(theirs.id()).unwrap();
    for (leader, start) in [(ours.id(), ours_start), (theirs.id(), theirs_start + 1)] {
        let row = t.create(new_task("shell")).unwrap();
        t.set_status(&row.id, TaskStatus::Running, None, None)
            .unwrap();
        t.set_group(&row.id, leader, Some(start)).unwrap();
        t.set_owner_pid(&row.id, dead).unwrap();
    }
    assert_eq!(t.mark_lost_on_startup().unwrap().len(), 2);
    let status = ours.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert!(
        theirs.try_wait().unwrap().is_none(),
        "another group was killed"
    );
    theirs.kill().unwrap();
    theirs.wait().unwrap();
}

#[test]
fn a_write_refused_by_a_locked_table_names_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("x")).unwrap();
    let other = rusqlite::Connection::open(t.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = t
        .set_status(&row.id, TaskStatus::Running, None, None)
        .unwrap_err();
    other.execute_batch("ROLLBACK").unwrap();
    let text = err.to_string();
    assert!(text.contains(&t.path().display().to_string()), "{text}");
    assert!(text.contains("locked"), "{text}");
}

#[tokio::test]
async fn concurrent_callers_each_get_their_own_rows_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let t = TaskTable::open(dir.path()).await.unwrap();
    // Many callers at once on one runtime thread; each makes its calls in
    // order and must see its own writes.
    let callers = (0..24).map(|i| {
        let t = t.clone();
        async move {
            let row = t.create(new_task(&format!("caller {i}"))).await.unwrap();
            t.set_status(&row.id, TaskStatus::Running, None, None)
                .await
                .unwrap();
            t.append_output(&row.id, &format!("out {i}\n"))
                .await
                .unwrap();
            t.progress(&row.id, i, 10 * i).await.unwrap();
            let done = t
                .set_status(&row.id, TaskStatus::Succeeded, None, Some("ok"))
                .await
                .unwrap();
            (i, done)
        }
    });
    let batches = (0..4).map(|b| {
        let t = t.clone();
        async move {
            let news = (0..8)
                .map(|i| new_task(&format!("batch {b} child {i}")))
                .collect();
            t.start_many(news).await.unwrap()
        }
    });
    let (singles, batches) = tokio::join!(
        futures::future::join_all(callers),
        futures::future::join_all(batches)
    );
    for (i, row) in &singles {
        assert_eq!(row.status, TaskStatus::Succeeded);
        assert_eq!((row.tool_calls, row.tokens), (*i, 10 * i));
        let (text, _, _) = t.read_output(&row.id, 0, 100).await.unwrap();
        assert_eq!(text, format!("out {i}\n"));
    }
    for (b, rows) in batches.iter().enumerate() {
        let names: Vec<String> = rows.iter().map(|r| r.description.clone()).collect();
        let want: Vec<String> = (0..8).map(|i| format!("batch {b} child {i}")).collect();
        assert_eq!(names, want, "a batch comes back in the order asked");
        for r in rows {
            let stored = t.get(&r.id).await.unwrap();
            assert_eq!(stored.status, TaskStatus::Running);
            assert_eq!(stored.started_ms, Some(stored.created_ms));
        }
    }
    let all = t.list(&TaskFilter::default()).await.unwrap();
    let mut ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 24 + 4 * 8);
}

#[tokio::test]
async fn a_batch_is_filed_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let t = TaskTable::open(dir.path()).await.unwrap();
    let kept = t.create(new_task("before")).await.unwrap();
    // The database refuses one row of the batch, after others were inserted.
    let conn = rusqlite::Connection::open(t.path()).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON tasks WHEN NEW.description = 'poison' \
         BEGIN SELECT RAISE(ABORT, 'poison refused'); END;",
    )
    .unwrap();
    let news = vec![
        new_task("first"),
        new_task("second"),
        new_task("poison"),
        new_task("fourth"),
    ];
    let err = t.start_many(news).await.unwrap_err();
    assert!(err.to_string().contains("poison refused"), "{err}");
    let rows = t.list(&TaskFilter::default()).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        vec![kept.id.as_str()],
        "no row of the refused batch is left"
    );
    // Nor any of the output directories made for it.
    let dirs: Vec<String> = std::fs::read_dir(dir.path().join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs, vec![kept.id.clone()]);
    // The table still works, and a batch without the poison is filed whole.
    let filed = t
        .create_many(vec![new_task("a"), new_task("b")])
        .await
        .unwrap();
    assert_eq!(filed.len(), 2);
    assert!(filed.iter().all(|r| r.status == TaskStatus::Queued));
    assert_eq!(t.list(&TaskFilter::default()).await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_call_waiting_on_the_database_leaves_the_runtime_free() {
    // Another process holds the write lock; only a task on this same
    // (single) runtime thread releases it. Were the call blocking this
    // thread, the release could not run and the write would time out locked.
    let dir = tempfile::tempdir().unwrap();
    let t = TaskTable::open(dir.path()).await.unwrap();
    let row = t.create(new_task("x")).await.unwrap();
    let other = rusqlite::Connection::open(t.path()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (written, ()) = tokio::join!(
        t.set_status(&row.id, TaskStatus::Running, None, None),
        async {
            tokio::task::yield_now().await;
            other.execute_batch("ROLLBACK").unwrap();
        }
    );
    assert_eq!(written.unwrap().status, TaskStatus::Running);
}

#[tokio::test]
async fn queued_output_lands_in_order_before_later_calls() {
    let dir = tempfile::tempdir().unwrap();
    let t = TaskTable::open(dir.path()).await.unwrap();
    let row = t.create(new_task("x")).await.unwrap();
    for i in 0..50 {
        t.queue_output(&row.id, format!("{i},"));
    }
    t.queue_group(&row.id, 4242, Some(7));
    // Not waited for, but a call made after them sees them all.
    let (text, _, _) = t.read_output(&row.id, 0, 4096).await.unwrap();
    let want: String = (0..50).map(|i| format!("{i},")).collect();
    assert_eq!(text, want);
    let stored = t.get(&row.id).await.unwrap();
    assert_eq!((stored.pgid, stored.pgid_start), (Some(4242), Some(7)));
}

#[test]
fn output_stops_at_the_limit_with_a_marker_line_and_the_default_is_64_mib() {
    assert_eq!(DEFAULT_OUTPUT_LIMIT, 64 * 1024 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    let row = t.create(new_task("noisy")).unwrap();
    t.set_output_limit(10);
    t.append_output(&row.id, "12345").unwrap();
    t.append_output(&row.id, "67890abc").unwrap();
    t.append_output(&row.id, "more").unwrap();
    let log = std::fs::read_to_string(&row.output_path).unwrap();
    assert_eq!(
        log,
        "1234567890\n[cadre: output stopped at 10 bytes; the rest was not kept]\n"
    );
}

#[tokio::test]
async fn a_new_table_for_a_session_is_not_waited_for_and_serves_calls_made_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let table = TaskTable::open_for_session(dir.path()).await.unwrap();
    assert!(table.is_new());
    // The first call queues behind the creation on the table's thread.
    let rows = table.list(&TaskFilter::default()).await.unwrap();
    assert!(rows.is_empty());
    assert_eq!(mode(&dir.path().join("tasks.db")), 0o600);
    drop(table);
    let again = TaskTable::open_for_session(dir.path()).await.unwrap();
    assert!(
        !again.is_new(),
        "an existing table is opened and waited for"
    );
}

#[tokio::test]
async fn a_table_that_cannot_be_created_says_why_on_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    // `tasks` is a file, so the private folder beside the database cannot be made.
    std::fs::write(dir.path().join("tasks"), "not a folder").unwrap();
    let table = TaskTable::open_for_session(dir.path()).await.unwrap();
    let err = table.list(&TaskFilter::default()).await.unwrap_err();
    assert!(!matches!(err, TaskError::Stopped), "{err}");
    assert!(err.to_string().contains("tasks"), "{err}");
}
