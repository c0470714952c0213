//! Worktrees under stress and attack: many sibling worktree children in
//! parallel, confinement when the project lies inside a writable temp dir,
//! and what a crash leaves behind.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Harness, Wire, events, rule_records, stderr, stdout, tool_results};

/// Runs git in `dir`; its stdout, or a panic with its stderr.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `h`'s project a git repository with `src/lib.rs` committed.
fn init_repository(h: &Harness) {
    let top = h.project.path();
    git(top, &["init", "-q", "-b", "main"]);
    git(top, &["config", "user.name", "Test"]);
    git(top, &["config", "user.email", "test@example.com"]);
    h.write("src/lib.rs", "pub fn f() {}\n");
    git(top, &["add", "."]);
    git(top, &["commit", "-q", "-m", "first"]);
}

/// A harness on a git repository outside the temp dirs.
async fn repository(script: &str) -> Harness {
    let mock = cadre_mock::MockServer::start(script, None).await.unwrap();
    let h = Harness::from_parts(
        tempfile::tempdir_in(common::non_temp_base()).unwrap(),
        tempfile::tempdir_in(common::non_temp_base()).unwrap(),
        mock,
        Wire::Anthropic,
    );
    init_repository(&h);
    h
}

/// A harness on a git repository in `project`, with the script `script`
/// made from the project's real path.
async fn repository_at(project: tempfile::TempDir, script: impl Fn(&Path) -> String) -> Harness {
    let top = project.path().canonicalize().unwrap();
    let mock = cadre_mock::MockServer::start(&script(&top), None)
        .await
        .unwrap();
    let h = Harness::from_parts(
        project,
        tempfile::tempdir_in(common::non_temp_base()).unwrap(),
        mock,
        Wire::Anthropic,
    );
    init_repository(&h);
    h
}

/// A project folder in a temp dir (`/tmp`), where `Harness::new` makes it.
fn temp_project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    assert!(
        project.path().canonicalize().unwrap().starts_with("/tmp"),
        "the harness's project is under /tmp"
    );
    project
}

/// `exec --json` with edits and `Bash` allowed, on the task `go`.
const ACCEPTING: [&str; 7] = [
    "exec",
    "--json",
    "--permission-mode",
    "acceptEdits",
    "--allow",
    "Bash",
    "go",
];

/// The `cadre/*` branches of the repository at `top`.
fn cadre_branches(top: &Path) -> Vec<String> {
    git(
        top,
        &["branch", "--list", "--format=%(refname:short)", "cadre/*"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

const BATCHES: usize = 20;

/// A parent that sends one batch of three worktree children: one commits,
/// one writes a file, one changes nothing.
const STRESS: &str = r#"
rules:
  - name: committer
    when: { first_user: "task-commit" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo one > a.txt && echo wrote" } }
      - tool_calls:
          - { name: Bash, input: { command: "git add a.txt && git commit -q -m A && echo committed" } }
      - text: "committed"
  - name: writer
    when: { first_user: "task-write" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo two > b.txt && echo wrote" } }
      - text: "wrote"
  - name: idle
    when: { first_user: "task-idle" }
    replies:
      - text: "nothing to change"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "commit", prompt: "task-commit", isolation: "worktree" } }
          - { name: Agent, input: { description: "write", prompt: "task-write", isolation: "worktree" } }
          - { name: Agent, input: { description: "idle", prompt: "task-idle", isolation: "worktree" } }
      - text: "parent done"
"#;

#[tokio::test]
async fn twenty_batches_of_parallel_worktree_children_never_fail() {
    let h = repository(STRESS).await;
    let top = h.project.path().canonicalize().unwrap();
    let mut failures = Vec::new();
    for batch in 0..BATCHES {
        let out = h.cadre(&ACCEPTING).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let records = h.records();
        let parent = rule_records(&records, "parent");
        let reports = tool_results(&parent.last().unwrap().body);
        assert_eq!(reports.len(), 3, "{reports:?}");
        let (commit, write, idle) = (&reports[0].0, &reports[1].0, &reports[2].0);
        if !(commit.contains("(kept: 1 commit;") && commit.contains("worktrees merge")) {
            failures.push(format!("batch {batch}: the committing child: {commit}"));
        }
        if !write.contains("(kept: 1 changed file not committed;") {
            failures.push(format!("batch {batch}: the writing child: {write}"));
        }
        if !idle.contains("worktree: removed: it had no changes") {
            failures.push(format!("batch {batch}: the unchanged child: {idle}"));
        }
    }
    // Every command of every child ran.
    let records = h.records();
    for rule in ["committer", "writer"] {
        for r in rule_records(&records, rule) {
            for (text, is_error) in tool_results(&r.body) {
                if is_error || text.contains("cannot run command") {
                    failures.push(format!("a {rule} command failed: {text}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures in {BATCHES} batches:\n{}\nbranches:\n{}",
        failures.len(),
        failures.join("\n"),
        git(&top, &["log", "--all", "--format=%D %s"]),
    );

    // Two worktrees and branches kept per batch, and nothing else left.
    assert_eq!(cadre_branches(&top).len(), 2 * BATCHES);
    let out = h.cadre(&["worktrees", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    let kept: Vec<String> = std::fs::read_dir(top.join(".cadre/worktrees"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept.len(), 2 * BATCHES, "{kept:?}");
    for name in &kept {
        assert!(
            listed.contains(name.as_str()),
            "{name} missing from:\n{listed}"
        );
    }
    let registered = git(&top, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        registered.matches("worktree ").count(),
        1 + 2 * BATCHES,
        "{registered}"
    );
}

/// The commands a worktree child (or a `--worktree` session) tries against
/// the main checkout at `top`, and one commit in its own worktree.
fn escape_commands(top: &Path) -> Vec<String> {
    let top = top.display();
    vec![
        format!("echo pwned > {top}/src/lib.rs; echo src=$?"),
        format!("git rev-parse HEAD > {top}/.git/refs/heads/x; echo ref=$?"),
        format!("echo pwned > {top}/src/new.rs; echo new=$?"),
        format!("echo '[core]' >> {top}/.git/config; echo config=$?"),
        "echo inside > inside.txt && git add inside.txt && git commit -q -m inside && echo committed"
            .to_string(),
    ]
}

/// The Bash calls of `commands`, as YAML flow items.
fn bash_calls(commands: &[String]) -> String {
    commands
        .iter()
        .map(|c| {
            format!(
                "          - {{ name: Bash, input: {{ command: '{}' }} }}\n",
                c.replace('\'', "''")
            )
        })
        .collect()
}

/// Asserts the main checkout at `top` is as committed: `src/` unchanged,
/// no new branch, the config as it was.
fn assert_main_checkout_untouched(top: &Path, config: &str, results: &[(String, bool)]) {
    assert_eq!(
        std::fs::read_to_string(top.join("src/lib.rs")).unwrap(),
        "pub fn f() {}\n",
        "{results:?}"
    );
    assert!(!top.join("src/new.rs").exists(), "{results:?}");
    assert!(!top.join(".git/refs/heads/x").exists(), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(top.join(".git/config")).unwrap(),
        config,
        "{results:?}"
    );
    for probe in ["src=0", "ref=0", "new=0", "config=0"] {
        assert!(
            !results.iter().any(|(t, _)| t.contains(probe)),
            "{probe}: {results:?}"
        );
    }
    assert!(
        results.last().unwrap().0.contains("committed"),
        "a commit in the worktree still works: {results:?}"
    );
}

#[tokio::test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
async fn a_worktree_child_cannot_write_a_main_checkout_that_lies_in_a_temp_dir() {
    let h = repository_at(temp_project(), |top| {
        format!(
            r#"
rules:
  - name: child
    when: {{ first_user: "escape-task" }}
    replies:
      - tool_calls:
{}      - text: "tried"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "escape", prompt: "escape-task", isolation: "worktree" }} }}
      - text: "parent done"
"#,
            bash_calls(&escape_commands(top))
        )
    })
    .await;
    let top = h.project.path().canonicalize().unwrap();
    let commands = escape_commands(&top);
    let config = h.read(".git/config");
    let out = h.cadre(&ACCEPTING).await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    let results = tool_results(&child.last().unwrap().body);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    assert_main_checkout_untouched(&top, &config, &results);
}

#[tokio::test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
async fn a_worktree_session_cannot_write_a_main_checkout_that_lies_in_a_temp_dir() {
    let h = repository_at(temp_project(), |top| {
        format!(
            "rules:\n  - name: main\n    replies:\n      - tool_calls:\n{}      - text: \"tried\"\n",
            bash_calls(&escape_commands(top))
        )
    })
    .await;
    let top = h.project.path().canonicalize().unwrap();
    let commands = escape_commands(&top);
    let config = h.read(".git/config");
    let mut args = vec!["--worktree", "session-1"];
    args.extend(ACCEPTING);
    let out = h.cadre(&args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let records = h.records();
    let results = tool_results(&records.last().unwrap().body);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    assert_main_checkout_untouched(&top, &config, &results);
}

#[tokio::test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
async fn a_session_in_a_temp_dir_cannot_replace_its_git_hooks_or_config() {
    // A temp dir is writable: a command could move the project away and put
    // a copy with its own hooks and config in its place.
    let commands = vec![
        "echo x > .git/hooks/pre-commit; echo hook=$?".to_string(),
        "git config core.fsmonitor evil; echo config=$?".to_string(),
        "P=$(pwd); cd /; mv \"$P\" \"$P.moved\"; echo moved=$?".to_string(),
        "P=$(pwd); cd /; cp -a \"$P\" \"$P.copy\" && echo evil > \"$P.copy/.git/hooks/pre-commit\" && \
         mv \"$P/.git\" \"$P/.git.old\"; echo moved-git=$?"
            .to_string(),
        "P=$(pwd); mv .git/hooks .git/hooks.old; echo moved-hooks=$?; cd ..; mv \"$P\" \"$P.2\"; echo moved-up=$?"
            .to_string(),
    ];
    let script = format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n{}      - text: \"tried\"\n",
        bash_calls(&commands)
    );
    let h = repository_at(temp_project(), |_| script.clone()).await;
    let top = h.project.path().canonicalize().unwrap();
    let config = h.read(".git/config");
    let out = h.cadre(&ACCEPTING).await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let results = tool_results(&h.records().last().unwrap().body);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    for probe in [
        "hook=0",
        "config=0",
        "moved=0",
        "moved-git=0",
        "moved-hooks=0",
        "moved-up=0",
    ] {
        assert!(
            !results.iter().any(|(t, _)| t.contains(probe)),
            "{probe}: {results:?}"
        );
    }
    assert!(top.join(".git/hooks").is_dir());
    assert!(!top.join(".git/hooks/pre-commit").exists());
    assert_eq!(h.read(".git/config"), config);
    let _ = std::fs::remove_dir_all(format!("{}.copy", top.display()));
}

#[tokio::test]
async fn after_a_crash_the_next_start_removes_a_lost_childs_unchanged_worktree() {
    // The child's command says it runs in a folder outside its worktree.
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("running");
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "slow-task" }}
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: "touch {} && sleep 60" }} }}
      - text: "slept"
  - name: later
    when: {{ first_user: "hello again" }}
    replies:
      - text: "hello"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "slow", prompt: "slow-task", isolation: "worktree" }} }}
      - text: "parent done"
"#,
        mark.display()
    );
    let h = repository(&script).await;
    let top = h.project.path().canonicalize().unwrap();
    let mut run = h.spawn_json(&ACCEPTING);
    let started = run.wait_for("subagent_started", 1).await;
    let agent_id = started["agent_id"].as_str().unwrap().to_string();
    let worktree = top.join(".cadre/worktrees").join(&agent_id);
    common::wait_until("the child's command runs", || mark.exists()).await;
    assert!(worktree.is_dir(), "{}", worktree.display());
    run.kill().await;
    assert!(worktree.is_dir(), "SIGKILL left the worktree");

    let out = h.cadre(&["exec", "--json", "hello again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("was lost") && w.contains(&agent_id) && w.contains("removed")),
        "{warnings:?}"
    );
    assert!(!worktree.exists(), "the lost child's worktree is gone");
    assert!(
        cadre_branches(&top).is_empty(),
        "{:?}",
        cadre_branches(&top)
    );
    let rows = common::tasks(&h);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].status.to_string(), "lost");
}

#[tokio::test]
async fn after_a_crash_a_lost_childs_worktree_with_changes_is_kept_and_listed() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "slow-task" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo work > work.txt && sleep 60" } }
      - text: "slept"
  - name: later
    when: { first_user: "hello again" }
    replies:
      - text: "hello"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "slow", prompt: "slow-task", isolation: "worktree" } }
      - text: "parent done"
"#;
    let h = repository(script).await;
    let top = h.project.path().canonicalize().unwrap();
    let mut run = h.spawn_json(&ACCEPTING);
    let started = run.wait_for("subagent_started", 1).await;
    let agent_id = started["agent_id"].as_str().unwrap().to_string();
    let worktree = top.join(".cadre/worktrees").join(&agent_id);
    common::wait_until("the child wrote its file", || {
        worktree.join("work.txt").is_file()
    })
    .await;
    run.kill().await;

    let out = h.cadre(&["exec", "--json", "hello again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("was lost") && w.contains("kept") && w.contains(&agent_id)),
        "{warnings:?}"
    );
    assert!(worktree.join("work.txt").is_file());
    let out = h.cadre(&["worktrees", "list"]).await;
    assert!(stdout(&out).contains(&agent_id), "{}", stdout(&out));
}
