//! The team board: shapes, dependencies, owner rules and races between two
//! connections (as two processes would have).

use std::sync::{Arc, Barrier};

use serde_json::json;

use super::*;

const TEAM: &str = "team-1";

fn open() -> (tempfile::TempDir, BlockingTaskTable) {
    let dir = tempfile::tempdir().unwrap();
    let t = BlockingTaskTable::open(dir.path()).unwrap();
    (dir, t)
}

fn create(t: &BlockingTaskTable, subject: &str) -> BoardTask {
    t.board_create(TEAM, subject, &format!("do {subject}"), None, None)
        .unwrap()
}

fn status(s: BoardUpdateStatus) -> BoardUpdate {
    BoardUpdate {
        status: Some(s),
        ..Default::default()
    }
}

fn claim_as(who: &str) -> BoardUpdate {
    BoardUpdate {
        status: Some(BoardUpdateStatus::InProgress),
        owner: Some(who.into()),
        ..Default::default()
    }
}

fn refusal(r: Result<BoardChange, TaskError>) -> String {
    match r {
        Err(TaskError::Board(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn create_get_and_list_shapes() {
    let (_dir, t) = open();
    let a = t
        .board_create(
            TEAM,
            "Write tests",
            "for the board",
            Some("Writing tests".into()),
            Some(json!({"area": "tasks"})),
        )
        .unwrap();
    assert_eq!(a.id, "1");
    assert_eq!(a.status, BoardStatus::Pending);
    assert_eq!(a.active_form.as_deref(), Some("Writing tests"));
    assert_eq!(a.owner, None);
    assert_eq!(a.metadata, Some(json!({"area": "tasks"})));
    assert!(a.blocks.is_empty() && a.blocked_by.is_empty());
    let b = create(&t, "second");
    assert_eq!(b.id, "2");
    // Another team numbers from 1 and sees nothing of this one.
    let other = t.board_create("team-2", "x", "y", None, None).unwrap();
    assert_eq!(other.id, "1");
    assert_eq!(t.board_list("team-2").unwrap().len(), 1);

    assert_eq!(t.board_get(TEAM, "1").unwrap(), Some(a.clone()));
    assert_eq!(t.board_get(TEAM, "#2").unwrap().unwrap().subject, "second");
    assert_eq!(t.board_get(TEAM, "9").unwrap(), None);
    assert_eq!(t.board_get(TEAM, "nope").unwrap(), None);
    let ids: Vec<String> = t
        .board_list(TEAM)
        .unwrap()
        .into_iter()
        .map(|x| x.id)
        .collect();
    assert_eq!(ids, ["1", "2"]);

    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["id"], "1");
    assert_eq!(v["activeForm"], "Writing tests");
    assert_eq!(v["status"], "pending");
    assert_eq!(v["blockedBy"], json!([]));
    assert!(v.get("owner").is_none());

    for s in [
        BoardStatus::Pending,
        BoardStatus::InProgress,
        BoardStatus::Completed,
    ] {
        assert_eq!(BoardStatus::parse(s.as_str()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
}

#[test]
fn update_reports_only_changed_fields() {
    let (_dir, t) = open();
    create(&t, "a");
    let change = t
        .board_update(
            TEAM,
            "1",
            "lead",
            true,
            BoardUpdate {
                subject: Some("a".into()),
                description: Some("new words".into()),
                metadata: Some(json!({"k": 1})),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(change.updated_fields, ["description", "metadata"]);
    assert_eq!(change.status_change, None);
    // Metadata merges; null removes a key.
    let change = t
        .board_update(
            TEAM,
            "1",
            "lead",
            true,
            BoardUpdate {
                metadata: Some(json!({"k": null, "j": 2})),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(change.task.unwrap().metadata, Some(json!({"j": 2})));

    let change = t
        .board_update(TEAM, "1", "a", false, claim_as("a"))
        .unwrap();
    assert_eq!(change.updated_fields, ["status", "owner"]);
    assert_eq!(
        change.status_change,
        Some(("pending".into(), "in_progress".into()))
    );
    let v = serde_json::to_value(&change).unwrap();
    assert_eq!(v["taskId"], "1");
    assert_eq!(
        v["statusChange"],
        json!({"from": "pending", "to": "in_progress"})
    );
    assert_eq!(v["updatedFields"], json!(["status", "owner"]));

    let err = refusal(t.board_update(TEAM, "7", "a", false, BoardUpdate::default()));
    assert_eq!(err, "task 7 does not exist");
}

#[test]
fn a_dependency_blocks_the_claim_until_its_blocker_completes() {
    let (_dir, t) = open();
    create(&t, "build");
    create(&t, "test");
    create(&t, "ship");
    let change = t
        .board_update(
            TEAM,
            "3",
            "lead",
            true,
            BoardUpdate {
                add_blocked_by: vec!["1".into(), "2".into()],
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(change.updated_fields, ["blockedBy"]);
    let ship = change.task.unwrap();
    assert_eq!(ship.blocked_by, ["1", "2"]);
    assert_eq!(t.board_get(TEAM, "1").unwrap().unwrap().blocks, ["3"]);

    let err = refusal(t.board_update(TEAM, "3", "a", false, status(BoardUpdateStatus::InProgress)));
    assert_eq!(
        err,
        "task 3 is blocked by #1, #2; it can be claimed once they are completed"
    );

    let done1 = t
        .board_update(TEAM, "1", "a", false, status(BoardUpdateStatus::Completed))
        .unwrap();
    assert!(done1.unblocked.is_empty(), "2 still blocks 3");
    assert_eq!(
        t.board_get(TEAM, "3").unwrap().unwrap().blocked_by,
        ["2"],
        "only open blockers are listed"
    );
    let done2 = t
        .board_update(TEAM, "2", "b", false, status(BoardUpdateStatus::Completed))
        .unwrap();
    assert_eq!(done2.unblocked, ["3"]);
    assert_eq!(
        done2.status_change,
        Some(("pending".into(), "completed".into()))
    );
    let ship = t.board_get(TEAM, "3").unwrap().unwrap();
    assert!(ship.blocked_by.is_empty());

    let claimed = t
        .board_update(TEAM, "3", "a", false, status(BoardUpdateStatus::InProgress))
        .unwrap();
    let task = claimed.task.unwrap();
    assert_eq!(task.status, BoardStatus::InProgress);
    assert_eq!(
        task.owner.as_deref(),
        Some("a"),
        "a self-claim sets the owner"
    );

    // Completed is final for claims until it is reopened.
    t.board_update(TEAM, "3", "a", false, status(BoardUpdateStatus::Completed))
        .unwrap();
    let err = refusal(t.board_update(TEAM, "3", "a", false, status(BoardUpdateStatus::InProgress)));
    assert!(err.starts_with("task 3 is completed"), "{err}");
    let reopened = t
        .board_update(TEAM, "3", "a", false, status(BoardUpdateStatus::Pending))
        .unwrap();
    let task = reopened.task.unwrap();
    assert_eq!(task.status, BoardStatus::Pending);
    assert_eq!(
        task.owner.as_deref(),
        Some("a"),
        "reopening keeps the owner"
    );
}

#[test]
fn cycles_self_dependencies_and_unknown_ids_are_refused() {
    let (_dir, t) = open();
    for s in ["a", "b", "c"] {
        create(&t, s);
    }
    let blocks = |id: &str, other: &str| {
        t.board_update(
            TEAM,
            id,
            "lead",
            true,
            BoardUpdate {
                add_blocks: vec![other.into()],
                ..Default::default()
            },
        )
    };
    let err = refusal(blocks("1", "1"));
    assert!(err.contains("cannot depend on itself"), "{err}");
    blocks("1", "2").unwrap();
    blocks("2", "3").unwrap();
    let err = refusal(blocks("3", "1"));
    assert!(err.contains("cycle"), "{err}");
    let err = refusal(blocks("2", "1"));
    assert!(err.contains("cycle"), "{err}");
    let err = refusal(blocks("1", "9"));
    assert_eq!(err, "task 9 does not exist");
    // Adding one that exists again changes nothing.
    let again = blocks("1", "2").unwrap();
    assert!(again.updated_fields.is_empty());
    // A refused update leaves nothing of itself behind.
    let err = refusal(t.board_update(
        TEAM,
        "3",
        "lead",
        true,
        BoardUpdate {
            subject: Some("renamed".into()),
            add_blocks: vec!["1".into()],
            ..Default::default()
        },
    ));
    assert!(err.contains("cycle"), "{err}");
    let c = t.board_get(TEAM, "3").unwrap().unwrap();
    assert_eq!(c.subject, "c");
    assert!(c.blocks.is_empty());
}

#[test]
fn deleting_removes_the_task_and_its_dependencies() {
    let (_dir, t) = open();
    for s in ["a", "b", "c"] {
        create(&t, s);
    }
    t.board_update(
        TEAM,
        "2",
        "lead",
        true,
        BoardUpdate {
            add_blocked_by: vec!["1".into()],
            add_blocks: vec!["3".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let change = t
        .board_update(TEAM, "2", "lead", true, status(BoardUpdateStatus::Deleted))
        .unwrap();
    assert_eq!(change.task, None);
    assert_eq!(
        change.status_change,
        Some(("pending".into(), "deleted".into()))
    );
    assert_eq!(change.unblocked, ["3"]);
    assert_eq!(t.board_get(TEAM, "2").unwrap(), None);
    assert!(t.board_get(TEAM, "1").unwrap().unwrap().blocks.is_empty());
    assert!(
        t.board_get(TEAM, "3")
            .unwrap()
            .unwrap()
            .blocked_by
            .is_empty()
    );
    let rows: i64 = rusqlite::Connection::open(t.path())
        .unwrap()
        .query_row("SELECT COUNT(*) FROM team_task_deps", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    let err = refusal(t.board_update(TEAM, "2", "lead", true, BoardUpdate::default()));
    assert_eq!(err, "task 2 does not exist");
}

#[test]
fn a_teammate_cannot_take_a_task_but_the_lead_can_reassign() {
    let (_dir, t) = open();
    create(&t, "a");
    t.board_update(TEAM, "1", "alice", false, claim_as("alice"))
        .unwrap();
    let err = refusal(t.board_update(TEAM, "1", "bob", false, claim_as("bob")));
    assert_eq!(err, "task 1 is owned by alice");
    let err = refusal(t.board_update(
        TEAM,
        "1",
        "bob",
        false,
        status(BoardUpdateStatus::InProgress),
    ));
    assert_eq!(err, "task 1 is owned by alice");
    let clear = BoardUpdate {
        owner: Some(String::new()),
        ..Default::default()
    };
    let err = refusal(t.board_update(TEAM, "1", "bob", false, clear.clone()));
    assert_eq!(err, "task 1 is owned by alice");

    let change = t
        .board_update(
            TEAM,
            "1",
            "lead",
            true,
            BoardUpdate {
                owner: Some("bob".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(change.updated_fields, ["owner"]);
    assert_eq!(change.task.unwrap().owner.as_deref(), Some("bob"));
    // The owner may let it go; then anyone may claim it.
    let change = t.board_update(TEAM, "1", "bob", false, clear).unwrap();
    assert_eq!(change.task.unwrap().owner, None);
    t.board_update(TEAM, "1", "carol", false, claim_as("carol"))
        .unwrap();
}

#[test]
fn claim_next_skips_blocked_and_owned_tasks() {
    let (_dir, t) = open();
    for s in ["blocker", "blocked", "owned", "free", "later"] {
        create(&t, s);
    }
    t.board_update(
        TEAM,
        "2",
        "lead",
        true,
        BoardUpdate {
            add_blocked_by: vec!["1".into()],
            ..Default::default()
        },
    )
    .unwrap();
    t.board_update(
        TEAM,
        "3",
        "lead",
        true,
        BoardUpdate {
            owner: Some("zed".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let first = t.board_claim_next(TEAM, "a").unwrap().unwrap();
    assert_eq!(first.id, "1");
    assert_eq!(first.status, BoardStatus::InProgress);
    assert_eq!(first.owner.as_deref(), Some("a"));
    let second = t.board_claim_next(TEAM, "b").unwrap().unwrap();
    assert_eq!(second.id, "4", "2 is blocked by 1 and 3 is zed's");
    assert_eq!(t.board_claim_next(TEAM, "c").unwrap().unwrap().id, "5");
    assert_eq!(t.board_claim_next(TEAM, "c").unwrap(), None);
    let done = t
        .board_update(TEAM, "1", "a", false, status(BoardUpdateStatus::Completed))
        .unwrap();
    assert_eq!(done.unblocked, ["2"]);
    assert_eq!(t.board_claim_next(TEAM, "c").unwrap().unwrap().id, "2");
    assert_eq!(t.board_claim_next("other-team", "c").unwrap(), None);
}

/// Two handles on one directory: two connections, as two processes have.
fn two_handles() -> (tempfile::TempDir, BlockingTaskTable, BlockingTaskTable) {
    let dir = tempfile::tempdir().unwrap();
    let a = BlockingTaskTable::open(dir.path()).unwrap();
    let b = BlockingTaskTable::open(dir.path()).unwrap();
    (dir, a, b)
}

const ROUNDS: usize = 50;

#[test]
fn racing_claims_have_exactly_one_winner() {
    let (_dir, ta, tb) = two_handles();
    let start = Arc::new(Barrier::new(2));
    let ids: Vec<String> = (0..ROUNDS)
        .map(|i| create(&ta, &format!("race {i}")).id)
        .collect();
    let racer = |t: BlockingTaskTable, me: &'static str| {
        let (start, ids) = (start.clone(), ids.clone());
        std::thread::spawn(move || {
            ids.iter()
                .map(|id| {
                    start.wait();
                    match t.board_update(TEAM, id, me, false, claim_as(me)) {
                        Ok(_) => true,
                        Err(TaskError::Board(text)) => {
                            assert!(text.contains("is owned by"), "{text}");
                            false
                        }
                        Err(e) => panic!("{me} on {id}: {e}"),
                    }
                })
                .collect::<Vec<bool>>()
        })
    };
    let a = racer(ta.clone(), "a");
    let b = racer(tb, "b");
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for (i, id) in ids.iter().enumerate() {
        assert!(a[i] != b[i], "round {i}: a won {}, b won {}", a[i], b[i]);
        let winner = if a[i] { "a" } else { "b" };
        let task = ta.board_get(TEAM, id).unwrap().unwrap();
        assert_eq!(task.owner.as_deref(), Some(winner), "round {i}");
        assert_eq!(task.status, BoardStatus::InProgress);
    }
}

#[test]
fn racing_claim_next_never_hands_a_task_out_twice() {
    let (_dir, ta, tb) = two_handles();
    let start = Arc::new(Barrier::new(2));
    let racer = |t: BlockingTaskTable, me: &'static str, creates: bool| {
        let start = start.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            for round in 0..ROUNDS {
                // One fresh task a round, made before both race for it.
                if creates {
                    create(&t, &format!("round {round}"));
                }
                start.wait();
                got.push(t.board_claim_next(TEAM, me).unwrap().map(|x| x.id));
                start.wait();
            }
            got
        })
    };
    let a = racer(ta.clone(), "a", true);
    let b = racer(tb, "b", false);
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for round in 0..ROUNDS {
        let want = (round + 1).to_string();
        let (ga, gb) = (&a[round], &b[round]);
        assert!(
            ga.is_some() != gb.is_some(),
            "round {round}: a got {ga:?}, b got {gb:?}"
        );
        let (id, winner) = match (ga, gb) {
            (Some(id), None) => (id, "a"),
            (None, Some(id)) => (id, "b"),
            _ => unreachable!(),
        };
        assert_eq!(id, &want);
        let task = ta.board_get(TEAM, id).unwrap().unwrap();
        assert_eq!(task.owner.as_deref(), Some(winner));
    }
}
