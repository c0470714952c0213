//! `isolation: worktree` (DESIGN 7.11): children in git worktrees of their
//! own, what is kept at their end, the sandbox around them, and the
//! `cadre worktrees` commands and `cadre --worktree`.

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

/// A harness whose project is a git repository with `shared.txt` committed,
/// outside the temp dirs (so the sandbox's writable temp dirs do not cover it).
async fn repository(script: &str) -> Harness {
    repository_in(
        tempfile::tempdir_in(common::non_temp_base()).unwrap(),
        script,
    )
    .await
}

/// [`repository`] in `project`, a folder the test made (to name it in the script).
async fn repository_in(project: tempfile::TempDir, script: &str) -> Harness {
    let mock = cadre_mock::MockServer::start(script, None).await.unwrap();
    let home = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let h = Harness::from_parts(project, home, mock, Wire::Anthropic);
    let top = h.project.path();
    git(top, &["init", "-q", "-b", "main"]);
    git(top, &["config", "user.name", "Test"]);
    git(top, &["config", "user.email", "test@example.com"]);
    h.write("shared.txt", "base\n");
    h.write(
        ".claude/agents/isolated.md",
        "---\nname: isolated\ndescription: Works apart.\nisolation: worktree\n---\nYou work apart.\n",
    );
    git(top, &["add", "."]);
    git(top, &["commit", "-q", "-m", "first"]);
    h
}

/// `cadre [before] exec --json` with edits and `Bash` allowed, on the task `go`.
fn accepting<'a>(before: &[&'a str]) -> Vec<&'a str> {
    let mut args = before.to_vec();
    args.extend([
        "exec",
        "--json",
        "--permission-mode",
        "acceptEdits",
        "--allow",
        "Bash",
        "go",
    ]);
    args
}

/// `(name, path)` of every `worktree:` line of a report that kept one.
fn kept_worktrees(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("worktree: "))
        .filter_map(|rest| {
            let (path, after) = rest.split_once(" on branch cadre/")?;
            let name = after.split_whitespace().next()?.to_string();
            Some((name, path.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn parallel_children_edit_the_same_file_in_their_own_worktrees() {
    let script = r#"
rules:
  - name: committer
    when: { first_user: "task-A" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "printf 'from A\\n' > shared.txt && git add shared.txt && git commit -q -m A && echo committed in $(pwd)" } }
      - text: "A done"
  - name: editor
    when: { first_user: "task-B" }
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "shared.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "shared.txt", old_string: "base", new_string: "from B" } }
      - text: "B done"
  - name: idle
    when: { first_user: "task-idle" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "cat shared.txt; pwd" } }
      - text: "nothing to change"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "task-A", subagent_type: "general-purpose", isolation: "worktree" } }
          - { name: Agent, input: { description: "b", prompt: "task-B", subagent_type: "isolated" } }
          - { name: Agent, input: { description: "idle", prompt: "task-idle", isolation: "worktree" } }
      - text: "parent done"
"#;
    let h = repository(script).await;
    let top = h.project.path().canonicalize().unwrap();
    let out = h.cadre(&accepting(&[])).await;
    assert!(out.status.success(), "{}", stderr(&out));

    // Each child's end event says what became of its worktree.
    let ended: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "subagent_ended")
        .filter_map(|e| e["worktree"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ended.len(), 3, "{ended:?}");
    assert_eq!(
        ended.iter().filter(|w| w.contains("(kept:")).count(),
        2,
        "{ended:?}"
    );

    // The main checkout is untouched, and its worktrees are not changes of it.
    assert_eq!(h.read("shared.txt"), "base\n");
    assert_eq!(git(&top, &["status", "--porcelain"]), "");

    let records = h.records();
    let parent = rule_records(&records, "parent");
    let results = tool_results(&parent.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    let (a, b, idle) = (&results[0].0, &results[1].0, &results[2].0);
    assert!(
        !results[0].1 && !results[1].1 && !results[2].1,
        "{results:?}"
    );

    // Each report names its own worktree and branch, with what it holds.
    let a_kept = kept_worktrees(a);
    let b_kept = kept_worktrees(b);
    assert_eq!(a_kept.len(), 1, "{a}");
    assert_eq!(b_kept.len(), 1, "{b}");
    let (a_name, a_path) = &a_kept[0];
    let (b_name, b_path) = &b_kept[0];
    assert_ne!(a_name, b_name);
    assert!(a.contains("1 commit"), "{a}");
    assert!(b.contains("1 changed file not committed"), "{b}");
    assert_eq!(Path::new(a_path), top.join(".cadre/worktrees").join(a_name));

    // Both branches hold their own change.
    assert_eq!(
        git(&top, &["show", &format!("cadre/{a_name}:shared.txt")]),
        "from A\n"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(b_path).join("shared.txt")).unwrap(),
        "from B\n"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(a_path).join("shared.txt")).unwrap(),
        "from A\n"
    );

    // The child that changed nothing left neither worktree nor branch.
    assert!(
        idle.contains("worktree: removed: it had no changes"),
        "{idle}"
    );
    let branches = git(
        &top,
        &["branch", "--list", "--format=%(refname:short)", "cadre/*"],
    );
    assert_eq!(branches.lines().count(), 2, "{branches}");
    let idle_run = rule_records(&records, "idle");
    let idle_bash = tool_results(&idle_run.last().unwrap().body);
    assert!(
        idle_bash[0].0.contains("/.cadre/worktrees/"),
        "{idle_bash:?}"
    );
    // Each child's prompt says where it works.
    let committer = rule_records(&records, "committer");
    let system = common::system_text(&committer[0].body);
    assert!(system.contains(a_path.as_str()), "{system}");
    let commit_out = tool_results(&committer.last().unwrap().body);
    assert!(
        commit_out[0].0.contains(&format!("committed in {a_path}")),
        "{commit_out:?}"
    );

    // `cadre worktrees list` shows both; `merge` brings one branch in.
    let out = h.cadre(&["worktrees", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(
        listed.contains(a_name.as_str()) && listed.contains(b_name.as_str()),
        "{listed}"
    );
    let out = h.cadre(&["worktrees", "diff", b_name]).await;
    assert!(stdout(&out).contains("+from B"), "{}", stdout(&out));
    let out = h.cadre(&["worktrees", "merge", a_name]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(h.read("shared.txt"), "from A\n");
    // B's branch now conflicts with main: a dirty main checkout refuses it.
    h.write("shared.txt", "dirty\n");
    let out = h.cadre(&["worktrees", "merge", b_name]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("uncommitted changes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(h.read("shared.txt"), "dirty\n");
    let out = h.cadre(&["worktrees", "rm", b_name]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!Path::new(b_path).exists());
}

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn a_worktree_child_cannot_write_the_main_checkout_but_can_commit() {
    let project = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let top = project.path().canonicalize().unwrap();
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "escape-task" }}
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: "echo x > {top}/escaped.txt; echo wrote-main=$?" }} }}
          - {{ name: Write, input: {{ file_path: "{top}/escaped-by-write.txt", content: "x" }} }}
          - {{ name: Bash, input: {{ command: "echo inside > inside.txt && git add inside.txt && git commit -q -m inside && echo committed" }} }}
      - text: "tried"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "escape", prompt: "escape-task", isolation: "worktree" }} }}
      - text: "parent done"
"#,
        top = top.display()
    );
    let h = repository_in(project, &script).await;
    let out = h.cadre(&accepting(&[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    let results = tool_results(&child.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].0.contains("wrote-main=0"), "{results:?}");
    assert!(
        results[1].1,
        "the Write into the main checkout ran: {results:?}"
    );
    assert!(results[2].0.contains("committed"), "{results:?}");
    assert!(!top.join("escaped.txt").exists());
    assert!(!top.join("escaped-by-write.txt").exists());
    // The commit is on the child's branch, in the main repository.
    let parent = rule_records(&records, "parent");
    let report = &tool_results(&parent.last().unwrap().body)[0].0;
    let kept = kept_worktrees(report);
    assert_eq!(kept.len(), 1, "{report}");
    let log = git(
        &top,
        &["log", "--format=%s", &format!("cadre/{}", kept[0].0)],
    );
    assert_eq!(log.lines().next(), Some("inside"), "{log}");
}

#[tokio::test]
async fn outside_a_repository_isolation_is_an_error_and_nothing_starts() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "never-task" }
    replies:
      - text: "should not run"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "x", prompt: "never-task", isolation: "worktree" } }
          - { name: Agent, input: { description: "y", prompt: "never-task", isolation: "remote" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(rule_records(&records, "child").is_empty());
    assert!(
        !events(&out).iter().any(|e| e["type"] == "subagent_started"),
        "a child started"
    );
    let results = tool_results(&rule_records(&records, "parent").last().unwrap().body);
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0].0.contains("is not inside a git repository"),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].0.contains("only isolation"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_main_session_can_start_in_a_worktree_of_its_own() {
    let script = r#"
rules:
  - name: empty
    when: { first_user: "hello" }
    replies:
      - text: "nothing"
  - replies:
      - tool_calls:
          - { name: Bash, input: { command: "pwd && git branch --show-current" } }
          - { name: Write, input: { file_path: "made-in-worktree.txt", content: "hello\n" } }
      - text: "done"
"#;
    let h = repository(script).await;
    let top = h.project.path().canonicalize().unwrap();
    let out = h.cadre(&accepting(&["--worktree", "feature-1"])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let wt = top.join(".cadre/worktrees/feature-1");
    let records = h.records();
    let results = tool_results(&records.last().unwrap().body);
    assert!(
        results[0].0.contains(&wt.display().to_string())
            && results[0].0.contains("cadre/feature-1"),
        "{results:?}"
    );
    assert!(wt.join("made-in-worktree.txt").is_file());
    assert!(!top.join("made-in-worktree.txt").exists());
    assert!(stderr(&out).contains("kept"), "{}", stderr(&out));

    // Without changes, the worktree goes at the end of the session.
    let out = h
        .cadre(&["--worktree", "empty-1", "exec", "--json", "hello"])
        .await;
    assert!(stderr(&out).contains("removed"), "{}", stderr(&out));
    assert!(!top.join(".cadre/worktrees/empty-1").exists());
    let branches = git(
        &top,
        &["branch", "--list", "--format=%(refname:short)", "cadre/*"],
    );
    assert_eq!(branches.trim(), "cadre/feature-1");
}

#[tokio::test]
async fn a_worktree_childs_own_children_and_a_forks_work_stay_in_their_worktree() {
    let script = r#"
rules:
  - name: fork
    when: { any_user: "<fork_boilerplate>" }
    replies:
      - tool_calls:
          - { name: Write, input: { file_path: "forked.txt", content: "fork\n" } }
      - text: "Scope: fork. Result: wrote forked.txt"
  - name: grandchild
    when: { first_user: "grandchild-task" }
    replies:
      - tool_calls:
          - { name: Write, input: { file_path: "nested.txt", content: "nested\n" } }
      - text: "grandchild done"
  - name: child
    when: { first_user: "child-task" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "g", prompt: "grandchild-task", subagent_type: "general-purpose" } }
      - text: "child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "c", prompt: "child-task", isolation: "worktree" } }
          - { name: Agent, input: { description: "f", prompt: "fork-task", subagent_type: "fork", isolation: "worktree" } }
      - text: "waiting"
      - text: "parent done"
"#;
    let h = repository(script).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nmax_depth = 2\n",
    )
    .unwrap();
    let top = h.project.path().canonicalize().unwrap();
    let out = h
        .cadre(&["exec", "--json", "--permission-mode", "acceptEdits", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Neither file reached the main checkout.
    assert!(!top.join("nested.txt").exists());
    assert!(!top.join("forked.txt").exists());
    let records = h.records();
    // The grandchild, started without isolation, worked in its parent's worktree.
    let parent = rule_records(&records, "parent");
    let reports = tool_results(&parent[1].body);
    let child_kept = kept_worktrees(&reports[0].0);
    assert_eq!(child_kept.len(), 1, "{reports:?}");
    let child_path = Path::new(&child_kept[0].1);
    assert_eq!(
        std::fs::read_to_string(child_path.join("nested.txt")).unwrap(),
        "nested\n"
    );
    // The fork was told where it works now, and its file is in its own worktree.
    let fork = rule_records(&records, "fork");
    let directive = common::user_texts(&fork[0].body);
    assert!(directive.contains("# Worktree"), "{directive}");
    let forked: Vec<_> = std::fs::read_dir(top.join(".cadre/worktrees"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("forked.txt"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(forked.len(), 1, "the fork's worktree holds its file");
    assert_ne!(forked[0].parent().unwrap(), child_path);
}

#[tokio::test]
async fn a_resumed_worktree_child_gets_its_worktree_back() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "iso-task" }
    replies:
      - text: "first answer, nothing changed"
      - tool_calls:
          - { name: Write, input: { file_path: "made-on-resume.txt", content: "x\n" } }
      - text: "WROTE IT"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "i", prompt: "iso-task", isolation: "worktree", name: "iso" } }
      - tool_calls:
          - { name: SendMessage, input: { to: "iso", message: "one more thing" } }
      - text: "waiting"
      - text: "parent done"
"#;
    let h = repository(script).await;
    let top = h.project.path().canonicalize().unwrap();
    let out = h
        .cadre(&["exec", "--json", "--permission-mode", "acceptEdits", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let parent = rule_records(&records, "parent");
    // The first run changed nothing: its worktree went.
    let first = tool_results(&parent[1].body);
    assert!(first[0].0.contains("worktree: removed"), "{first:?}");
    // Resumed, it works in a worktree of the same name again, kept now.
    let notice = common::user_texts(&parent.last().unwrap().body);
    let kept = kept_worktrees(&notice.replace("\\n", "\n"));
    assert_eq!(kept.len(), 1, "{notice}");
    assert!(
        Path::new(&kept[0].1).join("made-on-resume.txt").is_file(),
        "{notice}"
    );
    assert!(!top.join("made-on-resume.txt").exists());
}

#[tokio::test]
async fn the_tui_in_a_worktree_shows_its_branch_and_removes_it_unchanged() {
    if !common::tmux::tmux_available() {
        return;
    }
    let h = repository("rules:\n  - replies:\n      - text: \"Hello from the worktree.\"\n").await;
    let top = h.project.path().canonicalize().unwrap();
    let pane = common::tmux::Pane::start(&h, &["--worktree", "tui-1"]);
    // The status line names the worktree's branch.
    pane.wait_text("cadre/tui-1").await;
    assert!(top.join(".cadre/worktrees/tui-1").is_dir());
    pane.type_text("hello");
    // Enter only once the prompt holds the text (a loaded machine may still
    // be drawing the first frame).
    pane.wait_text("› hello").await;
    pane.keys(&["Enter"]);
    pane.wait_text("Hello from the worktree.").await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    assert!(!top.join(".cadre/worktrees/tui-1").exists());
    let branches = git(
        &top,
        &["branch", "--list", "--format=%(refname:short)", "cadre/*"],
    );
    assert_eq!(branches.trim(), "");
}

#[tokio::test]
async fn a_teammate_works_on_its_own_branch_and_another_starts_a_background_subagent() {
    let script = r#"
rules:
  - name: scout
    when: { first_user: "scout-task" }
    replies:
      - latency_ms: 300
        text: "SCOUT-FOUND: the config is in etc/"
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "printf 'alice\\n' > alice.txt && git add alice.txt && git commit -q -m alice" } }
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "alice committed", summary: "alice committed" } } ]
      - text: "alice idle"
  - name: bob
    when: { system: "You are 'bob'" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scout", prompt: "scout-task: find the config", name: scout, run_in_background: true } }
      - text: "bob waits for his scout"
      - tool_calls: [ { name: SendMessage, input: { to: team-lead, message: "bob: the scout says SCOUT-FOUND", summary: "bob's scout" } } ]
      - text: "bob idle"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "brancher", prompt: "alice: commit on your branch", name: alice, isolation: "worktree" } }
          - { name: Agent, input: { description: "delegator", prompt: "bob: send a scout", name: bob } }
      - text: "started"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;
    let h = repository(script).await;
    let top = h.project.path().canonicalize().unwrap();
    let mut args = vec!["--teams"];
    args.extend(accepting(&[]));
    let out = h.cadre(&args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);

    // Only the lead's named spawns are teammates: bob's scout is a subagent.
    let mates: std::collections::BTreeSet<&str> = evs
        .iter()
        .filter(|e| e["type"] == "teammate_changed")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(mates.into_iter().collect::<Vec<_>>(), ["alice", "bob"]);
    // Bob rested while his scout ran, woke for its notice, and reported.
    let records = h.records();
    let bob = rule_records(&records, "bob");
    assert_eq!(bob.len(), 4, "bob's turns");
    assert!(bob[2].body.to_string().contains("SCOUT-FOUND"));
    let lead = rule_records(&records, "lead");
    let heard: String = lead.iter().map(|r| r.body.to_string()).collect();
    assert!(heard.contains("bob: the scout says SCOUT-FOUND"));
    assert!(heard.contains("alice committed"));

    // Alice's worktree is kept with her commit; the lead merges her branch.
    let alice_end = evs
        .iter()
        .find(|e| {
            e["type"] == "subagent_ended"
                && e["worktree"].as_str().is_some_and(|w| w.contains("kept"))
        })
        .unwrap_or_else(|| panic!("{evs:?}"));
    let kept = alice_end["worktree"].as_str().unwrap();
    assert!(kept.contains("1 commit"), "{kept}");
    assert!(!h.path("alice.txt").exists(), "not in the main checkout");
    let branches = git(
        &top,
        &["branch", "--list", "--format=%(refname:short)", "cadre/*"],
    );
    let branch = branches.lines().next().unwrap().trim().to_string();
    let name = branch.trim_start_matches("cadre/");
    let out = h.cadre(&["worktrees", "merge", name]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(h.read("alice.txt"), "alice\n");
}
