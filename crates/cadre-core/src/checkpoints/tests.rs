use super::*;

fn store(dir: &Path, keep: usize) -> CheckpointStore {
    CheckpointStore::open_keeping(dir.join("s.checkpoints"), keep).unwrap()
}

/// A tool's write, as the file tools report it.
fn tool_write(s: &CheckpointStore, path: &Path, content: &str) {
    s.before_change(path, path);
    std::fs::write(path, content).unwrap();
    s.after_change(path);
}

#[test]
fn contents_are_stored_once_by_their_hash_in_private_files() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), KEEP);
    let (a, b) = (d.path().join("a.txt"), d.path().join("b.txt"));
    std::fs::write(&a, "same").unwrap();
    std::fs::write(&b, "same").unwrap();
    s.begin("one").unwrap();
    tool_write(&s, &a, "A1");
    tool_write(&s, &b, "B1");
    let objects: Vec<_> = std::fs::read_dir(s.dir().join("objects"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(objects, [content_hash(b"same")]);
    assert_eq!(
        content_hash(b"same"),
        "0967115f2813a3541eaef77de9d9d5773f1c0c04314b0bbfe4ff3b3b1c55b5d5"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(s.dir()), 0o700);
    assert_eq!(mode(&s.dir().join("objects").join(&objects[0])), 0o600);
    assert_eq!(mode(&s.dir().join("index.json")), 0o600);
}

#[test]
fn only_the_last_checkpoints_are_kept_and_unused_contents_go() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), 3);
    let f = d.path().join("f.txt");
    for i in 0..5 {
        std::fs::write(&f, format!("outside {i}")).unwrap();
        s.begin(&format!("p{i}")).unwrap();
        tool_write(&s, &f, &format!("tool {i}"));
    }
    let numbers: Vec<u64> = s.checkpoints().iter().map(|c| c.number).collect();
    assert_eq!(numbers, [3, 4, 5]);
    let objects = std::fs::read_dir(s.dir().join("objects")).unwrap().count();
    assert_eq!(objects, 3, "the contents of pruned checkpoints are removed");
    assert!(matches!(
        s.restore(1, true),
        Err(CheckpointError::NotFound(1))
    ));
    // A hundred by default.
    let s = store(&d.path().join("other"), KEEP);
    for i in 0..(KEEP + 5) {
        s.begin(&format!("m{i}")).unwrap();
    }
    let kept = s.checkpoints();
    assert_eq!(kept.len(), KEEP);
    assert_eq!(kept[0].number, 6);
}

#[test]
fn restore_brings_files_back_removes_created_ones_and_survives_reopening() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), KEEP);
    let (a, new) = (d.path().join("a.txt"), d.path().join("sub/new.txt"));
    std::fs::write(&a, b"orig\xff\n").unwrap();
    s.begin("one").unwrap();
    tool_write(&s, &a, "first");
    s.begin("two").unwrap();
    std::fs::create_dir_all(new.parent().unwrap()).unwrap();
    tool_write(&s, &new, "created");
    tool_write(&s, &a, "second");
    s.note_bash("rm -rf build");
    drop(s);
    let s = store(d.path(), KEEP);
    let list = s.list();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].files.len(), 2);
    assert_eq!(s.find("one", 0), Some(1));
    let done = s.restore(1, false).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"orig\xff\n");
    assert!(!new.exists());
    assert_eq!(done.restored, std::slice::from_ref(&a));
    assert_eq!(done.removed, std::slice::from_ref(&new));
    assert_eq!(done.bash_commands, ["rm -rf build"]);
}

#[test]
fn outside_changes_are_asked_about_and_links_are_skipped() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), KEEP);
    let a = d.path().join("a.txt");
    std::fs::write(&a, "orig").unwrap();
    let target = d.path().join("target.txt");
    std::fs::write(&target, "t").unwrap();
    let link = d.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let hard = d.path().join("hard.txt");
    std::fs::hard_link(&a, d.path().join("a2.txt")).unwrap();
    std::fs::write(&hard, "h").unwrap();
    std::fs::hard_link(&hard, d.path().join("hard2.txt")).unwrap();
    s.begin("one").unwrap();
    // a.txt is hard-linked now too: break the link first.
    std::fs::remove_file(d.path().join("a2.txt")).unwrap();
    tool_write(&s, &a, "tool");
    s.before_change(&link, &target);
    s.before_change(&hard, &hard);
    std::fs::write(&a, "user").unwrap();
    match s.restore(1, false) {
        Err(CheckpointError::ChangedOutside(files)) => assert_eq!(files, std::slice::from_ref(&a)),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "user");
    assert_eq!(s.changed_outside(1).unwrap(), std::slice::from_ref(&a));
    let done = s.restore(1, true).unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "orig");
    let reasons: Vec<SkipReason> = done.skipped.iter().map(|k| k.reason).collect();
    assert_eq!(reasons, [SkipReason::Symlink, SkipReason::HardLink]);
    // Restored: cadre's last word is the restored content.
    assert!(s.changed_outside(1).unwrap().is_empty());
}

#[test]
fn going_back_in_the_conversation_alone_hands_changes_to_the_checkpoint_before() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), KEEP);
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::write(&a, "a0").unwrap();
    s.begin("one").unwrap();
    tool_write(&s, &a, "a1");
    s.begin("two").unwrap();
    tool_write(&s, &b, "b2");
    s.fold_into_previous(2).unwrap();
    assert_eq!(s.checkpoints().len(), 1);
    s.restore(1, false).unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "a0");
    assert!(!b.exists());
    s.forget_from(1).unwrap();
    assert!(s.checkpoints().is_empty());
}
