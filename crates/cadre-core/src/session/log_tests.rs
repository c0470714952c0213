use super::*;
use crate::session::rebuild;

fn assistant_with_call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text { text: "t".into() },
            ContentBlock::ToolUse {
                id: id.into(),
                name: "Bash".into(),
                input: r#"{"command":"sleep 9"}"#.into(),
            },
        ]
        .into(),
    }
}

#[test]
fn log_is_private_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let log = SessionLog::create(&path).unwrap();
    log.append_now(RecordBody::User { text: "hi".into() })
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let loaded = read_log(&path).unwrap();
    assert_eq!(loaded.records.len(), 1);
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.records[0].v, LOG_VERSION);
}

#[test]
fn images_are_stored_once_beside_the_log_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let log = SessionLog::create(&path).unwrap();
    let image = ToolImage {
        media_type: "image/png".into(),
        data: crate::media::base64_encode(b"\x89PNG not really"),
    };
    log.append_now(RecordBody::UserImage {
        image: image.clone(),
    })
    .unwrap();
    log.append_now(RecordBody::ToolResult {
        call_id: "c".into(),
        content: "seen".into(),
        is_error: false,
        status: CallStatus::Ok,
        images: vec![image.clone()],
    })
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(&image.data), "{text}");
    assert_eq!(text.matches("sha256:").count(), 2);
    let stored: Vec<_> = std::fs::read_dir(images_dir(&path)).unwrap().collect();
    assert_eq!(stored.len(), 1);
    let loaded = read_log(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.records[0].body,
        RecordBody::UserImage {
            image: image.clone()
        }
    );
    let rebuilt = rebuild(&loaded.records);
    assert_eq!(
        rebuilt.messages[0].content[0],
        ContentBlock::Image(image.clone())
    );
    // A subagent's log shares its session's folder.
    assert_eq!(
        images_dir(&dir.path().join("s.agents").join("c1.jsonl")),
        dir.path().join("s.images")
    );
    // A copy gone: the image is left out, with a warning.
    std::fs::remove_dir_all(images_dir(&path)).unwrap();
    let loaded = read_log(&path).unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(matches!(&loaded.records[0].body, RecordBody::User { .. }));
    assert!(matches!(
        &loaded.records[1].body,
        RecordBody::ToolResult { images, .. } if images.is_empty()
    ));
}

#[test]
fn torn_last_line_is_ignored_with_a_warning_and_reopen_heals_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let log = SessionLog::create(&path).unwrap();
    log.append_now(RecordBody::User { text: "hi".into() })
        .unwrap();
    drop(log);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"v":1,"time_ms":1,"type":"user","te"#)
        .unwrap();
    let loaded = read_log(&path).unwrap();
    assert_eq!(loaded.records.len(), 1);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("cut off"));
    let log = SessionLog::reopen(&path).unwrap();
    log.append_now(RecordBody::User {
        text: "again".into(),
    })
    .unwrap();
    let loaded = read_log(&path).unwrap();
    assert_eq!(loaded.records.len(), 2);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        std::fs::read(recovery_path(&path)).unwrap(),
        br#"{"v":1,"time_ms":1,"type":"user","te"#
    );
}

#[test]
fn a_whole_last_record_without_its_newline_stays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, br#"{"v":1,"time_ms":1,"type":"user","text":"hi"}"#).unwrap();
    assert_eq!(recover_torn_tail(&path).unwrap(), None);
    assert_eq!(read_log(&path).unwrap().records.len(), 1);
    assert!(std::fs::read(&path).unwrap().ends_with(b"}\n"));
    assert!(!recovery_path(&path).exists());
}

/// The texts of a log's records, each of which must be a user's.
fn user_texts(path: &Path) -> Vec<String> {
    read_log(path)
        .unwrap()
        .records
        .into_iter()
        .map(|r| match r.body {
            RecordBody::User { text } => text,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn unawaited_records_land_in_order_before_the_next_awaited_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = SessionLog::create(&dir.path().join("s.jsonl")).unwrap();
    for n in 0..50 {
        log.append_unawaited(RecordBody::User {
            text: format!("{n}"),
        })
        .unwrap();
    }
    log.written().await.unwrap();
    assert_eq!(
        user_texts(log.path()),
        (0..50).map(|n| n.to_string()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_failed_unawaited_record_is_reported_by_the_next_append() {
    // A full disk: every write fails with ENOSPC.
    let Ok(full) = OpenOptions::new().append(true).open("/dev/full") else {
        return;
    };
    let log = SessionLog {
        path: PathBuf::from("/dev/full"),
        file: Arc::new(LogFile::opened(Path::new("/dev/full"), full)),
        counted: None,
        unawaited_failure: Arc::default(),
    };
    // Handing over succeeds; the write itself fails on the writer's thread.
    log.append_unawaited(RecordBody::User { text: "a".into() })
        .unwrap();
    let err = log.written().await.unwrap_err().to_string();
    assert!(err.contains("/dev/full"), "{err}");
    // And every later record is refused: nothing is written past a hole.
    let later = log.append_unawaited(RecordBody::User { text: "b".into() });
    assert!(later.is_err());
    assert!(
        log.append(RecordBody::User { text: "c".into() })
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_log_made_on_first_write_is_created_by_it_or_reports_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.jsonl");
    let log = SessionLog::create_on_first_write(&path);
    assert!(!path.exists(), "nothing is created before the first write");
    log.append(RecordBody::User { text: "a".into() })
        .await
        .unwrap();
    log.append_unawaited(RecordBody::User { text: "b".into() })
        .unwrap();
    log.written().await.unwrap();
    assert_eq!(user_texts(&path), ["a", "b"]);
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions())
            & 0o777,
        0o600
    );
    // A file already there is not taken over, as with `create`.
    let again = SessionLog::create_on_first_write(&path);
    let err = again
        .append(RecordBody::User { text: "c".into() })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("child.jsonl"), "{err}");
    assert_eq!(user_texts(&path), ["a", "b"]);
    // Nor is a folder that does not exist made.
    let missing = dir.path().join("gone").join("child.jsonl");
    let err = SessionLog::create_on_first_write(&missing)
        .append(RecordBody::User { text: "d".into() })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("gone"), "{err}");
    assert!(!dir.path().join("gone").exists());
}

#[tokio::test]
async fn a_child_start_handed_over_unawaited_makes_the_file_or_fails_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.jsonl");
    let log = SessionLog::create_on_first_write(&path);
    let prompt = Message {
        role: Role::User,
        content: vec![ContentBlock::Text {
            text: "the prompt".into(),
        }]
        .into(),
    };
    let start = |id: &str| RecordBody::SessionStart {
        session_id: id.into(),
        cwd: "/".into(),
        provider: "anthropic".into(),
        model: "m".into(),
    };
    // Handed over, not waited for: the file is the writer's to make.
    log.append_with_messages_unawaited(start("c1"), std::slice::from_ref(&prompt))
        .unwrap();
    log.append_unawaited(RecordBody::User {
        text: "next".into(),
    })
    .unwrap();
    log.written().await.unwrap();
    let records = read_log(&path).unwrap().records;
    assert!(
        matches!(&records[0].body, RecordBody::SessionStart { session_id, .. } if session_id == "c1"),
        "{records:?}"
    );
    let rest: Vec<&RecordBody> = records[1..].iter().map(|r| &r.body).collect();
    let user = |text: &str| RecordBody::User { text: text.into() };
    assert_eq!(rest, [&user("the prompt"), &user("next")]);

    // A file that cannot be made (its folder is gone): handing over still
    // succeeds, the next append says why, and nothing is written after it.
    let missing = dir.path().join("gone").join("child.jsonl");
    let broken = SessionLog::create_on_first_write(&missing);
    broken
        .append_with_messages_unawaited(start("c2"), std::slice::from_ref(&prompt))
        .unwrap();
    let err = broken
        .append(RecordBody::User {
            text: "after".into(),
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("gone"), "{err}");
    assert!(!dir.path().join("gone").exists());
}

#[tokio::test]
async fn an_awaited_append_is_in_the_file_and_each_logs_order_holds() {
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<SessionLog> = (0..8)
        .map(|i| SessionLog::create(&dir.path().join(format!("{i}.jsonl"))).unwrap())
        .collect();
    // Every log's agent appends at once on this one thread; each waits
    // for its own record, which is then in its file.
    let agents = logs.iter().map(|log| async move {
        for n in 0..20 {
            log.append(RecordBody::User {
                text: format!("{n}"),
            })
            .await
            .unwrap();
            let records = read_log(log.path()).unwrap().records;
            assert_eq!(
                records.len(),
                n + 1,
                "record {n} is in the file once awaited"
            );
        }
    });
    futures::future::join_all(agents).await;
    for log in &logs {
        let texts = user_texts(log.path());
        let want: Vec<String> = (0..20).map(|n| n.to_string()).collect();
        assert_eq!(texts, want);
    }
}

#[tokio::test]
async fn a_queued_record_lands_before_a_later_append() {
    let dir = tempfile::tempdir().unwrap();
    let log = SessionLog::create(&dir.path().join("s.jsonl")).unwrap();
    log.queue(RecordBody::Retry {
        attempt: 2,
        reason: "overloaded".into(),
        discarded_text: false,
    });
    log.append_messages(&[Message::user_text("after".to_string())])
        .await
        .unwrap();
    let records = read_log(log.path()).unwrap().records;
    assert!(matches!(
        records[0].body,
        RecordBody::Retry { attempt: 2, .. }
    ));
    assert_eq!(
        records[1].body,
        RecordBody::User {
            text: "after".into()
        }
    );
}

#[test]
fn rebuild_marks_started_calls_unknown_and_unstarted_not_run() {
    let rec = |body| LogRecord {
        v: 1,
        time_ms: 0,
        body,
    };
    let mut msg = assistant_with_call("a");
    msg.content.push(ContentBlock::ToolUse {
        id: "b".into(),
        name: "Read".into(),
        input: "{}".into(),
    });
    let records = vec![
        rec(RecordBody::User { text: "go".into() }),
        rec(RecordBody::Assistant {
            message: msg,
            usage: None,
            cost_nanodollars: None,
        }),
        rec(RecordBody::ToolStart {
            call_id: "a".into(),
            tool: "Bash".into(),
            input: "{}".into(),
        }),
    ];
    let r = rebuild(&records);
    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.unfinished.len(), 2);
    assert!(r.unfinished[0].started);
    assert!(!r.unfinished[1].started);
    let ContentBlock::ToolResult { content, .. } = &r.messages[2].content[0] else {
        panic!("result block expected");
    };
    assert!(content.starts_with("unknown"));
}
