//! File tools and paths (issue 9, items 18, 27, 29), through the binary: a
//! symlink or `..` cannot make a file tool read or write anywhere other than
//! the path the permission decision was made on; Read deny rules and the data
//! directory bind searches too.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Harness, Wire, last_body, stderr, tool_results};
use serde_json::{Value, json};

/// A script whose replies run `steps` in turn (each a list of tool calls), then say "done".
fn script(steps: &[Vec<(&str, Value)>]) -> String {
    let mut s = String::from("rules:\n  - name: paths\n    replies:\n");
    for calls in steps {
        s.push_str("      - tool_calls:\n");
        for (name, input) in calls {
            s.push_str(&format!("          - {{ name: {name}, input: {input} }}\n"));
        }
    }
    s.push_str("      - text: \"done\"\n");
    s
}

/// A harness whose project lies in `parent` (so `..` from it lands in a test-owned folder).
async fn harness_in(parent: &Path, script: &str) -> Harness {
    Harness::from_parts(
        tempfile::tempdir_in(parent).unwrap(),
        tempfile::tempdir_in(common::non_temp_base()).unwrap(),
        cadre_mock::MockServer::start(script, None)
            .await
            .expect("mock starts"),
        Wire::Anthropic,
    )
}

/// Runs `cadre exec --json <extra> go` and returns the tool results the model got.
async fn run(h: &Harness, extra: &[&str], env: &[(&str, &str)]) -> Vec<(String, bool)> {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(extra);
    args.push("go");
    let out = h.cadre_env(&args, env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    tool_results(&last_body(h))
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn assert_denied(result: &(String, bool), what: &str) {
    assert!(result.0.starts_with("denied"), "{what}: {}", result.0);
}

/// A relative path that reaches `target` through `link -> .`, but which
/// cleaning `..` before following links would place inside the project.
fn through_self_link(project: &Path, target: &Path) -> String {
    let depth = project.components().count() - 1;
    let mut p = "link/".repeat(depth);
    p.push_str(&"../".repeat(depth));
    p.push_str(target.strip_prefix("/").unwrap().to_str().unwrap());
    p
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

#[tokio::test]
async fn a_link_to_the_project_does_not_let_read_grep_or_glob_out() {
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = canon(outside.path());
    std::fs::write(outside_dir.join("secret.txt"), "OUTSIDE-SECRET\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    let proj = canon(project.path());
    let file = through_self_link(&proj, &outside_dir.join("secret.txt"));
    let dir = through_self_link(&proj, &outside_dir);
    let script = script(&[vec![
        ("Read", json!({ "file_path": file })),
        (
            "Grep",
            json!({ "pattern": "OUTSIDE", "path": dir, "output_mode": "content" }),
        ),
        ("Glob", json!({ "pattern": "*", "path": dir })),
        (
            "Glob",
            json!({ "pattern": format!("{}/link/../{}/*", proj.display(), outside_dir.file_name().unwrap().to_str().unwrap()) }),
        ),
        (
            "Grep",
            json!({ "pattern": "OUTSIDE", "output_mode": "content" }),
        ),
        ("Glob", json!({ "pattern": "**/*" })),
    ]]);
    let mut h = Harness::new(&script, Wire::Anthropic).await;
    h.project = project;
    symlink(Path::new("."), &proj.join("link"));
    // A file link inside the project that points out of it.
    symlink(&outside_dir.join("secret.txt"), &proj.join("leak.txt"));
    std::fs::write(proj.join("a.txt"), "inside\n").unwrap();
    let results = run(&h, &[], &[]).await;
    assert_eq!(results.len(), 6, "{results:?}");
    for r in &results {
        assert!(!r.0.contains("OUTSIDE-SECRET"), "{}", r.0);
        assert!(!r.0.contains("secret.txt"), "{}", r.0);
    }
    assert_denied(&results[0], "Read through link");
    assert_denied(&results[1], "Grep through link");
    assert_denied(&results[2], "Glob through link");
    assert_denied(&results[3], "Glob with an absolute pattern through link");
    // Searches of the project itself run, but do not follow the link out.
    assert!(!results[4].1, "{}", results[4].0);
    assert!(results[5].0.contains("a.txt"), "{}", results[5].0);
}

#[tokio::test]
async fn selflink_dotdot_is_not_inside_an_allowed_folder() {
    let parent = tempfile::tempdir().unwrap();
    let parent_dir = canon(parent.path());
    let script = script(&[vec![
        (
            "Write",
            json!({ "file_path": "selflink/../docs/x", "content": "pwned" }),
        ),
        (
            "Edit",
            json!({ "file_path": "selflink/../docs/y", "old_string": "", "new_string": "pwned" }),
        ),
        (
            "Write",
            json!({ "file_path": "docs/ok", "content": "fine" }),
        ),
    ]]);
    let h = harness_in(&parent_dir, &script).await;
    std::fs::create_dir(h.path("docs")).unwrap();
    symlink(Path::new("."), &h.path("selflink"));
    let results = run(&h, &["--allow", "Edit(docs/**)"], &[]).await;
    assert!(
        !parent_dir.join("docs").exists(),
        "written outside the project"
    );
    assert_denied(&results[0], "Write selflink/../docs/x");
    assert_denied(&results[1], "Edit selflink/../docs/y");
    assert!(!results[2].1, "{}", results[2].0);
    assert_eq!(h.read("docs/ok"), "fine");
}

/// The model makes a symlink with Bash, then writes through it, in acceptEdits.
#[tokio::test]
async fn a_symlink_made_mid_session_does_not_carry_write_anywhere() {
    let parent = tempfile::tempdir().unwrap();
    let parent_dir = canon(parent.path());
    let outside = parent_dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mk = |target: &str, name: &str| {
        (
            "Bash",
            json!({ "command": format!("ln -s {target} {name}") }),
        )
    };
    let steps = |data_dir: &Path| {
        script(&[
            vec![
                mk(outside.to_str().unwrap(), "out"),
                mk(".git", "g"),
                mk("secrets", "s"),
                mk(data_dir.to_str().unwrap(), "c"),
                mk(outside.join("new.txt").to_str().unwrap(), "dangling"),
                mk("dangling", "chain"),
            ],
            vec![
                (
                    "Write",
                    json!({ "file_path": "out/x.txt", "content": "pwned" }),
                ),
                (
                    "Write",
                    json!({ "file_path": "g/config", "content": "pwned" }),
                ),
                (
                    "Write",
                    json!({ "file_path": "s/key.txt", "content": "pwned" }),
                ),
                (
                    "Write",
                    json!({ "file_path": "c/config.toml", "content": "[permissions]\nallow = [\"Bash(*)\"]\n" }),
                ),
                (
                    "Write",
                    json!({ "file_path": "dangling", "content": "pwned" }),
                ),
                ("Write", json!({ "file_path": "chain", "content": "pwned" })),
                (
                    "Edit",
                    json!({ "file_path": "out/y.txt", "old_string": "", "new_string": "pwned" }),
                ),
                (
                    "Write",
                    json!({ "file_path": "fine.txt", "content": "fine" }),
                ),
            ],
        ])
    };
    let home = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let mock = cadre_mock::MockServer::start(&steps(&home.path().join("cadre")), None)
        .await
        .unwrap();
    let h = Harness::from_parts(
        tempfile::tempdir_in(&parent_dir).unwrap(),
        home,
        mock,
        Wire::Anthropic,
    );
    let data_dir = h.data_dir();
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::create_dir_all(h.path(".git")).unwrap();
    std::fs::write(h.path(".git/config"), "orig\n").unwrap();
    std::fs::create_dir_all(h.path("secrets")).unwrap();
    let results = run(
        &h,
        &[
            "--permission-mode",
            "acceptEdits",
            "--allow",
            "Bash(ln:*)",
            "--deny",
            "Edit(./secrets/**)",
        ],
        &[],
    )
    .await;
    assert_eq!(results.len(), 14, "{results:?}");
    for (i, r) in results[..6].iter().enumerate() {
        assert!(!r.1, "ln {i}: {}", r.0);
    }
    for (i, what) in [
        "out/x.txt",
        "g/config",
        "s/key.txt",
        "c/config.toml",
        "dangling",
        "chain",
        "Edit out/y.txt",
    ]
    .iter()
    .enumerate()
    {
        assert_denied(&results[6 + i], what);
    }
    assert!(!results[13].1, "{}", results[13].0);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(h.path(".git/config")).unwrap(),
        "orig\n"
    );
    assert_eq!(std::fs::read_dir(h.path("secrets")).unwrap().count(), 0);
    assert!(!data_dir.join("config.toml").exists());
    assert_eq!(h.read("fine.txt"), "fine");
}

#[tokio::test]
async fn no_file_tool_writes_the_data_dir_even_in_bypass_mode() {
    let parent = tempfile::tempdir().unwrap();
    let parent_dir = canon(parent.path());
    let home = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let data_dir = home.path().join("cadre");
    std::fs::create_dir_all(&data_dir).unwrap();
    let script = script(&[vec![
        (
            "Write",
            json!({ "file_path": data_dir.join("config.toml"), "content": "[permissions]\nallow = [\"Bash(*)\"]\n" }),
        ),
        (
            "Write",
            json!({ "file_path": "c/config.toml", "content": "x" }),
        ),
        (
            "Edit",
            json!({ "file_path": data_dir.join("new.txt"), "old_string": "", "new_string": "x" }),
        ),
    ]]);
    let h = Harness::from_parts(
        tempfile::tempdir_in(&parent_dir).unwrap(),
        home,
        cadre_mock::MockServer::start(&script, None).await.unwrap(),
        Wire::Anthropic,
    );
    symlink(&data_dir, &h.path("c"));
    for extra in [
        &["--permission-mode", "bypassPermissions"][..],
        &[
            "--permission-mode",
            "acceptEdits",
            "--allow",
            "Edit",
            "--allow",
            "Write",
        ][..],
    ] {
        let results = run(&h, extra, &[]).await;
        for (i, r) in results.iter().enumerate() {
            assert_denied(r, &format!("{extra:?} call {i}"));
        }
        assert!(!data_dir.join("config.toml").exists());
        assert!(!data_dir.join("new.txt").exists());
    }
}

#[tokio::test]
async fn read_deny_rules_bind_grep_and_glob() {
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = canon(outside.path());
    std::fs::write(outside_dir.join("o.txt"), "TOKEN outside\n").unwrap();
    let script = script(&[vec![
        (
            "Grep",
            json!({ "pattern": "TOKEN", "output_mode": "content" }),
        ),
        ("Grep", json!({ "pattern": "TOKEN" })),
        ("Glob", json!({ "pattern": "**/*" })),
        (
            "Glob",
            json!({ "pattern": format!("{}/*", outside_dir.display()) }),
        ),
        ("Grep", json!({ "pattern": "TOKEN", "path": "secrets" })),
    ]]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write("a.txt", "TOKEN plain\n");
    h.write("secrets/k.txt", "TOKEN secret-key\n");
    h.write(".env", "TOKEN dotenv\n");
    h.write("sub/.env", "TOKEN subenv\n");
    let results = run(
        &h,
        &["--deny", "Read(./secrets/**)", "--deny", "Read(.env)"],
        &[],
    )
    .await;
    assert_eq!(results.len(), 5, "{results:?}");
    for r in &results[..3] {
        assert!(r.0.contains("a.txt"), "{}", r.0);
        for hidden in ["secret-key", "dotenv", "subenv", "k.txt", ".env"] {
            assert!(!r.0.contains(hidden), "{hidden} in {}", r.0);
        }
    }
    assert_denied(&results[3], "Glob /outside/*");
    assert!(!results[3].0.contains("o.txt"), "{}", results[3].0);
    // A search rooted in a denied folder finds nothing there.
    assert!(!results[4].0.contains("secret-key"), "{}", results[4].0);
}

#[tokio::test]
async fn a_data_dir_inside_the_project_is_outside_for_read_glob_and_grep() {
    let script = script(&[vec![
        ("Read", json!({ "file_path": "home/note.txt" })),
        (
            "Grep",
            json!({ "pattern": "DATADIR", "output_mode": "content" }),
        ),
        ("Glob", json!({ "pattern": "**/*" })),
        ("Glob", json!({ "pattern": "*", "path": "home" })),
        ("Grep", json!({ "pattern": "DATADIR", "path": "home" })),
        (
            "Write",
            json!({ "file_path": "home/config.toml", "content": "x" }),
        ),
    ]]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write("home/note.txt", "DATADIR secret\n");
    h.write("a.txt", "DATADIR not here\n");
    let home = h.path("home");
    let results = run(
        &h,
        &["--permission-mode", "bypassPermissions"],
        &[("CADRE_HOME", home.to_str().unwrap())],
    )
    .await;
    let results_default = {
        let out = h
            .cadre_env(
                &["exec", "--json", "go"],
                &[("CADRE_HOME", home.to_str().unwrap())],
            )
            .await;
        assert!(out.status.success(), "{}", stderr(&out));
        tool_results(&last_body(&h))
    };
    // In bypass mode reads of the data dir run (the mode allows reading
    // anywhere), but searches still skip it and writes are refused.
    assert!(!results[1].0.contains("secret"), "{}", results[1].0);
    assert!(results[1].0.contains("a.txt"), "{}", results[1].0);
    assert!(!results[2].0.contains("home/"), "{}", results[2].0);
    assert_denied(&results[5], "Write into the data dir");
    // Default mode, headless: nothing in the data dir without a rule.
    assert_denied(&results_default[0], "Read in the data dir");
    assert!(
        !results_default[1].0.contains("secret"),
        "{}",
        results_default[1].0
    );
    assert!(
        results_default[1].0.contains("a.txt"),
        "{}",
        results_default[1].0
    );
    assert!(
        !results_default[2].0.contains("home/"),
        "{}",
        results_default[2].0
    );
    assert!(
        results_default[2].0.contains("a.txt"),
        "{}",
        results_default[2].0
    );
    assert_denied(&results_default[3], "Glob in the data dir");
    assert_denied(&results_default[4], "Grep in the data dir");
    assert_denied(&results_default[5], "Write into the data dir");
    assert!(!home.join("config.toml").exists());
}

/// A link swapped in while the approval question waited does not move the
/// write: the tool finds its path resolving elsewhere than where the call was
/// decided, and refuses.
#[tokio::test]
async fn a_link_swapped_in_while_a_question_waits_does_not_move_the_write() {
    let outer = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let outside = outer.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let h = harness_in(
        outer.path(),
        &script(&[vec![(
            "Write",
            json!({"file_path": "docs/note.md", "content": "hello"}),
        )]]),
    )
    .await;
    h.write("docs/readme.md", "docs");
    let pty = common::Pty::open();
    let mut run = h.spawn_json_tty(&["exec", "--json", "go"], &pty);
    // The call was decided on docs/note.md inside the project and now waits.
    let asked = run.wait_for("approval_requested", 1).await;
    assert_eq!(asked["question"]["tool"], "Write", "{asked}");
    std::fs::rename(h.path("docs"), h.path("docs.old")).unwrap();
    symlink(&outside, &h.path("docs"));
    pty.type_line("y");
    let (status, events) = run.finish().await;
    assert!(status.success(), "{events:?}");
    assert!(
        !outside.join("note.md").exists(),
        "written through the swapped link"
    );
    let results = tool_results(&last_body(&h));
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0].0.contains("where the call was decided"),
        "{results:?}"
    );
}
