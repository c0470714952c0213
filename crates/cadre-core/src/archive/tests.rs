use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::session::SessionLog;
use crate::tasks::{NewTask, TaskKind};

fn make_session(home: &Path, id: &str, text: &str) {
    let dir = sessions_dir(home);
    std::fs::create_dir_all(&dir).unwrap();
    let log = SessionLog::create(&dir.join(format!("{id}.jsonl"))).unwrap();
    log.append_now(RecordBody::SessionStart {
        session_id: id.into(),
        cwd: "/nowhere/project".into(),
        provider: "anthropic".into(),
        model: "m".into(),
    })
    .unwrap();
    log.append_now(RecordBody::User { text: text.into() })
        .unwrap();
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A tar (not compressed) of `entries` as given, names written raw into
/// the header so the tar crate's own checks do not stop a hostile name.
fn raw_tar(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        let field = &mut h.as_gnu_mut().unwrap().name;
        field[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o600);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

#[test]
fn names_are_known_shapes_or_refused() {
    assert_eq!(classify("manifest.json"), Ok(Entry::Manifest));
    assert_eq!(classify("sessions/s1.jsonl"), Ok(Entry::Log("s1".into())));
    assert_eq!(
        classify("sessions/s1.agents/c-2.jsonl"),
        Ok(Entry::ChildLog("s1".into(), "c-2".into()))
    );
    assert_eq!(
        classify("tasks/t-0123456789ab/output.log"),
        Ok(Entry::TaskFile(
            "t-0123456789ab".into(),
            "output.log".into()
        ))
    );
    for bad in [
        "../evil",
        "/etc/passwd",
        "sessions/../x.jsonl",
        "sessions//s1.jsonl",
        "sessions/s1.jsonl/",
        "./manifest.json",
        "sessions\\s1.jsonl",
        "tasks/t-1/worktree",
        "tasks/x/output.log",
        "sessions/s1.txt",
        "config.toml",
        "",
    ] {
        assert!(classify(bad).is_err(), "{bad:?} should be refused");
    }
}

#[test]
fn a_session_with_a_child_and_a_task_round_trips_private_and_redacted() {
    let secret = "sk-archive-unit-SECRET-42424242";
    crate::secrets::register(secret);
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    make_session(a.path(), "s1", &format!("my key is {secret}"));
    let agents = sessions_dir(a.path()).join("s1.agents");
    std::fs::create_dir_all(&agents).unwrap();
    let child = SessionLog::create(&agents.join("c1.jsonl")).unwrap();
    child
        .append_now(RecordBody::User {
            text: "child".into(),
        })
        .unwrap();
    let table = BlockingTaskTable::open(a.path()).unwrap();
    let row = table
        .create(NewTask {
            kind: TaskKind::Bash,
            session_id: "s1".into(),
            parent_agent: "main".into(),
            description: "job".into(),
            agent_type: None,
            name: None,
            background: true,
        })
        .unwrap();
    table.append_output(&row.id, "some output\n").unwrap();
    // Another session's task stays behind.
    table
        .create(NewTask {
            kind: TaskKind::Bash,
            session_id: "other".into(),
            parent_agent: "main".into(),
            description: "not ours".into(),
            agent_type: None,
            name: None,
            background: false,
        })
        .unwrap();
    drop(table);

    let file = out.path().join("s1.tar.gz");
    let exported = export(a.path(), "s1", &file, out.path()).unwrap();
    assert_eq!(mode(&file), 0o600);
    let paths: Vec<&str> = exported
        .manifest
        .entries
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "sessions/s1.jsonl".to_string(),
            "sessions/s1.agents/c1.jsonl".to_string(),
            TASK_ROWS.to_string(),
            format!("tasks/{}/output.log", row.id),
        ]
    );
    // Nothing beside the archive is left over.
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(File::open(&file).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.contains(secret), "the key left in the archive");
    assert!(text.contains("my key is [redacted]"));
    assert!(
        !text.contains(&a.path().display().to_string()),
        "no machine path"
    );
    assert!(matches!(
        export(a.path(), "s1", &file, out.path()),
        Err(ArchiveError::OutputExists(_))
    ));

    let imported = import(b.path(), &file, out.path(), false).unwrap();
    assert_eq!(imported.manifest.session_id, "s1");
    assert!(imported.tasks_lost.contains(&row.id), "it was queued");
    let log = sessions_dir(b.path()).join("s1.jsonl");
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&sessions_dir(b.path()).join("s1.agents")), 0o700);
    assert_eq!(read_log(&log).unwrap().records.len(), 2);
    let rows = BlockingTaskTable::open(b.path())
        .unwrap()
        .list(&TaskFilter::default())
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, TaskStatus::Lost);
    assert_eq!(rows[0].owner_pid, 0);
    assert_eq!(
        rows[0].output_path,
        b.path().join("tasks").join(&row.id).join("output.log")
    );
    assert_eq!(
        std::fs::read_to_string(&rows[0].output_path).unwrap(),
        "some output\n"
    );
    assert_eq!(mode(&rows[0].output_path), 0o600);
    // No staging folder is left.
    assert!(
        std::fs::read_dir(b.path())
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".import-"))
    );

    // Again: refused without --force, replaced with it.
    assert!(matches!(
        import(b.path(), &file, out.path(), false),
        Err(ArchiveError::Exists(_))
    ));
    import(b.path(), &file, out.path(), true).unwrap();
    assert_eq!(read_log(&log).unwrap().records.len(), 2);
}

#[test]
fn hostile_entries_are_refused_and_nothing_is_written() {
    let manifest = serde_json::to_vec(&Manifest {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
        session_id: "s1".into(),
        cwd: String::new(),
        cadre_version: "0".into(),
        created_ms: 0,
        entries: Vec::new(),
        branches: Vec::new(),
        notes: Vec::new(),
    })
    .unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            raw_tar(&[
                (MANIFEST, tar::EntryType::Regular, &manifest),
                ("../evil", tar::EntryType::Regular, b"x"),
            ]),
            "\"../evil\" is not a plain relative path",
        ),
        (
            raw_tar(&[
                (MANIFEST, tar::EntryType::Regular, &manifest),
                ("/tmp/evil", tar::EntryType::Regular, b"x"),
            ]),
            "not a plain relative path",
        ),
        (
            raw_tar(&[
                (MANIFEST, tar::EntryType::Regular, &manifest),
                ("sessions/s1.jsonl", tar::EntryType::Symlink, b""),
            ]),
            "is a symbolic link",
        ),
        (
            raw_tar(&[
                (MANIFEST, tar::EntryType::Regular, &manifest),
                ("sessions/s1.jsonl", tar::EntryType::Link, b""),
            ]),
            "is a hard link",
        ),
        (
            raw_tar(&[
                (MANIFEST, tar::EntryType::Regular, &manifest),
                (MANIFEST, tar::EntryType::Regular, &manifest),
            ]),
            "appears twice",
        ),
        (
            raw_tar(&[(MANIFEST, tar::EntryType::Regular, &manifest)]),
            "has no log of session s1",
        ),
        (b"not a tar at all".to_vec(), "refused"),
    ];
    for (bytes, want) in cases {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.tar");
        std::fs::write(&file, bytes).unwrap();
        let err = import(&home.path().join("cadre"), &file, dir.path(), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err} should say {want}");
        assert!(err.contains("nothing was imported"), "{err}");
        assert!(!dir.path().join("evil").exists());
        assert!(!home.path().join("evil").exists());
        // Only the (empty) data directory itself is there.
        let left: Vec<_> = std::fs::read_dir(home.path().join("cadre"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
