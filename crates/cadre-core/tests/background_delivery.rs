//! Delivery of background-task notices through the public API: finished
//! tasks join the owner's next request as one notice, announced once; a
//! delivery the model service fails is sent again with the notice once;
//! `settle` batches a burst of endings and `NoticeThrottle` allows three
//! notice turns a minute. The settle and throttle timings run on tokio's
//! paused clock, so they are exact and never depend on the machine's speed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use cadre_core::background::{
    BackgroundWork, NOTICE_SETTLE, NOTICE_SETTLE_MAX, NoticeThrottle, TaskSpec,
};
use cadre_core::model::Provider;
use cadre_core::protocol::{Event, EventSink, TaskKind, TaskStatus, TurnStatus};
use cadre_core::tasks::TaskTable;
use support::{World, drain, user_texts};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The background work of a session whose task table lives in `data`.
async fn work(data: &std::path::Path) -> Arc<BackgroundWork> {
    BackgroundWork::new(
        TaskTable::open(data).await.unwrap(),
        "session-1".into(),
        EventSink::discard(),
    )
}

/// Starts a background shell task for `owner`; returns its id.
async fn start(work: &BackgroundWork, owner: &str, description: &str) -> String {
    let (row, _cancel) = work
        .start(
            TaskSpec {
                owner,
                kind: TaskKind::Bash,
                description,
                agent_type: None,
                name: None,
                background: true,
            },
            None,
        )
        .await
        .unwrap();
    row.id
}

async fn finish(work: &BackgroundWork, id: &str, report: &str) {
    work.finish(id, TaskStatus::Succeeded, report, None, true)
        .await;
}

/// [`finish`] under a paused clock: the task table answers from its own
/// thread, and a paused clock would jump to the next timer while it waits
/// (the runtime looks idle); a blocking task holds the clock still meanwhile.
async fn finish_at_this_instant(work: &Arc<BackgroundWork>, id: &str, report: &str) {
    let (work, id, report) = (work.clone(), id.to_string(), report.to_string());
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || runtime.block_on(finish(&work, &id, &report)))
        .await
        .unwrap();
}

/// How many notices a request carries, and the text of them all.
fn notices(body: &serde_json::Value) -> (usize, String) {
    let text = user_texts(body).join("\n");
    (text.matches("<task-notification>").count(), text)
}

#[tokio::test]
async fn finished_tasks_join_the_next_request_as_one_notice_announced_once() {
    let script = "rules:\n  - replies:\n      - text: \"started them\"\n      - text: \"read the notice\"\n      - text: \"next\"\n";
    for wire in [Provider::Anthropic, Provider::OpenAI] {
        let w = World::new(script, wire).await;
        let work = work(w.data.path()).await;
        let (mut agent, mut rx) = w.agent(10, Some(work.clone()));
        let outcome = agent
            .run_turn("start".into(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed);

        let mut mine: Vec<String> = Vec::new();
        for i in 0..3 {
            mine.push(start(&work, "main", &format!("job {i}")).await);
        }
        let other = start(&work, "someone-else", "not yours").await;
        assert_eq!(agent.active_tasks(), 3);
        for (i, id) in mine.iter().enumerate() {
            finish(&work, id, &format!("REPORT-{i}")).await;
        }
        finish(&work, &other, "OTHER-REPORT").await;
        assert!(agent.has_notices() && agent.active_tasks() == 0);

        // An empty text: a turn on the notices alone.
        let outcome = agent
            .run_turn(String::new(), CancellationToken::new())
            .await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(outcome.final_text, "read the notice");
        assert!(!agent.has_notices());
        let records = w.records();
        let (count, text) = notices(&records[1].body);
        assert_eq!(count, 1, "{wire:?}: {text}");
        for (i, id) in mine.iter().enumerate() {
            assert!(text.contains(id.as_str()) && text.contains(&format!("REPORT-{i}")));
        }
        assert!(!text.contains(&other) && !text.contains("OTHER-REPORT"));
        let notified: Vec<Vec<String>> = drain(&mut rx)
            .into_iter()
            .filter_map(|e| match e {
                Event::TasksNotified { task_ids, .. } => Some(task_ids),
                _ => None,
            })
            .collect();
        assert_eq!(notified, vec![mine.clone()], "{wire:?}");

        // The next turn carries the same notice once: not announced again.
        agent
            .run_turn("more".into(), CancellationToken::new())
            .await;
        let (count, _) = notices(&w.records()[2].body);
        assert_eq!(count, 1, "{wire:?}");
    }
}

#[tokio::test]
async fn a_failed_delivery_is_sent_again_with_its_notice_once() {
    let script = r#"
rules:
  - replies:
      - text: "started"
      - fail_once: { status: 500, message: "overloaded" }
        text: "got it"
"#;
    for wire in [Provider::Anthropic, Provider::OpenAI] {
        let w = World::new(script, wire).await;
        let work = work(w.data.path()).await;
        let (mut agent, _rx) = w.agent(10, Some(work.clone()));
        agent
            .run_turn("start".into(), CancellationToken::new())
            .await;
        let id = start(&work, "main", "the job").await;
        finish(&work, &id, "JOB-REPORT").await;

        // What a front end does: deliver, and on a model failure try again.
        let failed = agent
            .run_turn(String::new(), CancellationToken::new())
            .await;
        assert_eq!(failed.status, TurnStatus::Failed, "{wire:?}");
        assert!(failed.model_error.is_some());
        let retried = agent
            .run_turn(String::new(), CancellationToken::new())
            .await;
        assert_eq!(retried.status, TurnStatus::Completed, "{wire:?}");
        assert_eq!(retried.final_text, "got it");

        let records = w.records();
        assert_eq!(records.len(), 3);
        for r in &records[1..] {
            let (count, text) = notices(&r.body);
            assert_eq!(count, 1, "{wire:?}: {text}");
            assert!(text.contains(&id) && text.contains("JOB-REPORT"));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn settle_waits_out_a_burst_of_endings_but_no_longer_than_its_limit() {
    let data = tempfile::tempdir().unwrap();
    let work = work(data.path()).await;
    // The values the front ends use: 25 ms of quiet, 1 s at most.
    let (quiet, limit) = (NOTICE_SETTLE, NOTICE_SETTLE_MAX);
    assert_eq!(
        (quiet, limit),
        (Duration::from_millis(25), Duration::from_secs(1))
    );

    // Nothing running: nothing to wait for.
    let t0 = Instant::now();
    work.settle("main", quiet, limit).await;
    assert_eq!(t0.elapsed(), Duration::ZERO);

    // Two endings 20 ms apart while a third task runs on: settle returns
    // one quiet period after the last ending, with both waiting.
    let mut ids: Vec<String> = Vec::new();
    for i in 0..3 {
        ids.push(start(&work, "main", &format!("t{i}")).await);
    }
    let t0 = Instant::now();
    let ender = {
        let work = work.clone();
        let ids = ids.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            finish_at_this_instant(&work, &ids[0], "first").await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            finish_at_this_instant(&work, &ids[1], "second").await;
        })
    };
    work.settle("main", quiet, limit).await;
    ender.await.unwrap();
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(30) + quiet, "{waited:?}");
    assert!(waited < limit, "{waited:?}");
    assert_eq!(work.take_finished("main").await.len(), 2);

    // Endings that never pause: settle gives up at its limit.
    let mut more: Vec<String> = Vec::new();
    for i in 0..60 {
        more.push(start(&work, "main", &format!("b{i}")).await);
    }
    let t0 = Instant::now();
    let ender = {
        let work = work.clone();
        tokio::spawn(async move {
            for id in more {
                tokio::time::sleep(Duration::from_millis(20)).await;
                finish_at_this_instant(&work, &id, "burst").await;
            }
        })
    };
    work.settle("main", quiet, limit).await;
    assert_eq!(t0.elapsed(), limit);
    ender.abort();
}

#[tokio::test(start_paused = true)]
async fn the_throttle_allows_three_notice_turns_a_minute() {
    let mut throttle = NoticeThrottle::default();
    let t0 = Instant::now();
    let mut at = Vec::new();
    for _ in 0..7 {
        throttle.wait().await;
        at.push(t0.elapsed().as_secs());
    }
    // Three at once; the fourth a window after the first, when the first
    // three have aged out, so the fifth and sixth go with it; the seventh
    // waits for the next window.
    assert_eq!(at, [0, 0, 0, 60, 60, 60, 120]);
}
