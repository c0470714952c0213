use super::*;
use std::fs;

/// A repository with one commit and a committer identity of its own; `None`
/// where git cannot run.
fn repository() -> Option<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir().ok()?;
    let top = dir.path().canonicalize().ok()?;
    let run = |args: &[&str]| {
        Command::new("git")
            .current_dir(&top)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    run(&["init", "-q", "-b", "main"])?;
    run(&["config", "user.name", "Test"])?;
    run(&["config", "user.email", "test@example.com"])?;
    fs::write(top.join("a.txt"), "one\n").ok()?;
    fs::create_dir(top.join("src")).ok()?;
    fs::write(top.join("src/b.txt"), "two\n").ok()?;
    run(&["add", "."])?;
    run(&["commit", "-q", "-m", "first"])?;
    Some((dir, top))
}

macro_rules! repository_or_skip {
    () => {
        match repository() {
            Some(r) => r,
            None => {
                eprintln!("skipping: git is not available");
                return;
            }
        }
    };
}

#[test]
fn a_worktree_without_changes_is_removed_with_its_branch() {
    let (_dir, top) = repository_or_skip!();
    let repo = Repository::discover(&top.join("src")).unwrap();
    assert_eq!(repo.top, top);
    let wt = repo.add("abc").unwrap();
    assert_eq!(wt.path, top.join(".cadre/worktrees/abc"));
    assert_eq!(wt.branch, "cadre/abc");
    assert!(wt.path.join("a.txt").is_file());
    assert_eq!(wt.counterpart(&top.join("src")), wt.path.join("src"));
    // The main checkout does not see the worktree as a change.
    assert!(!repo.has_uncommitted().unwrap());
    assert_eq!(repo.list().unwrap().len(), 1);
    assert_eq!(wt.finish(), Ending::Removed);
    assert!(!wt.path.exists());
    assert!(git(&top, ["rev-parse", "--verify", "cadre/abc"]).is_err());
    assert!(repo.list().unwrap().is_empty());
}

#[test]
fn a_worktree_with_changes_is_kept_and_merges_into_the_main_checkout() {
    let (_dir, top) = repository_or_skip!();
    let repo = Repository::discover(&top).unwrap();
    let wt = repo.add("w1").unwrap();
    fs::write(wt.path.join("a.txt"), "changed\n").unwrap();
    fs::write(wt.path.join("new.txt"), "new\n").unwrap();
    let ending = wt.finish();
    assert_eq!(
        ending,
        Ending::Kept(Changes {
            commits: 0,
            uncommitted: 2
        })
    );
    assert!(wt.describe(&ending).contains("cadre/w1"));
    let diff = repo.open("w1").unwrap().diff().unwrap();
    assert!(diff.contains("+changed"), "{diff}");
    assert!(diff.contains("untracked: new.txt"), "{diff}");
    // The main checkout is untouched until the merge.
    assert_eq!(fs::read_to_string(top.join("a.txt")).unwrap(), "one\n");
    repo.open("w1").unwrap().merge().unwrap();
    assert_eq!(fs::read_to_string(top.join("a.txt")).unwrap(), "changed\n");
    assert_eq!(fs::read_to_string(top.join("new.txt")).unwrap(), "new\n");
}

#[test]
fn a_merge_is_refused_while_the_main_checkout_is_dirty() {
    let (_dir, top) = repository_or_skip!();
    let repo = Repository::discover(&top).unwrap();
    let wt = repo.add("w2").unwrap();
    fs::write(wt.path.join("a.txt"), "theirs\n").unwrap();
    fs::write(top.join("a.txt"), "mine\n").unwrap();
    let err = wt.merge().unwrap_err();
    assert!(err.to_string().contains("uncommitted changes"), "{err}");
    assert_eq!(fs::read_to_string(top.join("a.txt")).unwrap(), "mine\n");
}

#[test]
fn uncommitted_changes_of_the_main_checkout_are_not_carried_and_said() {
    let (_dir, top) = repository_or_skip!();
    fs::write(top.join("a.txt"), "dirty\n").unwrap();
    let repo = Repository::discover(&top).unwrap();
    let wt = repo.add("w3").unwrap();
    assert_eq!(fs::read_to_string(wt.path.join("a.txt")).unwrap(), "one\n");
    assert!(wt.left_uncommitted);
    assert!(
        wt.describe(&Ending::Removed)
            .contains("were not in this worktree")
    );
}

#[test]
fn outside_a_repository_and_bad_names_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    match Repository::discover(dir.path()) {
        Err(WorktreeError::NotARepository(_)) | Err(WorktreeError::NoGit(_)) => {}
        other => panic!("{other:?}"),
    }
    for bad in ["", "../x", "-x", "a/b", ".hidden", "x.lock"] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
    assert!(check_name("0123abcd-feature_1.2").is_ok());
}

#[test]
fn concurrent_adds_all_succeed() {
    let (_dir, top) = repository_or_skip!();
    let repo = Repository::discover(&top).unwrap();
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let repo = repo.clone();
            std::thread::spawn(move || repo.add(&format!("c{i}")).map(|w| w.branch))
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    assert_eq!(repo.list().unwrap().len(), 6);
}
