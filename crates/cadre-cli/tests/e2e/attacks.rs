//! A review of the issue 9 fixes from outside, as an attacker would drive the
//! binary: each test is a variant the first fixes let through.

use crate::common;

use common::{BOTH_WIRES, Harness, events, stderr, tool_results};

/// Runs `cadre exec --json <flags> go`; the run must end cleanly.
async fn exec(h: &Harness, flags: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(flags);
    args.push("go");
    let out = h.cadre(&args).await;
    assert!(out.status.success(), "{:?}: {}", h.wire, stderr(&out));
    events(&out)
}

/// A child whose definition (from the trusted `--agents` flag) asks for a
/// wider mode still runs read-only under a plan-mode parent, in the
/// foreground and in the background.
#[tokio::test]
async fn plan_mode_children_stay_read_only_whatever_their_definition_asks() {
    for wire in BOTH_WIRES {
        for (mode, background) in [("bypassPermissions", false), ("acceptEdits", true)] {
            let script = format!(
                r#"rules:
  - name: child
    when: {{ system: "WRITER" }}
    replies:
      - tool_calls:
          - {{ name: Write, input: {{ file_path: "child_wrote.txt", content: "x" }} }}
          - {{ name: Bash, input: {{ command: "touch child_ran.txt" }} }}
      - text: "child done"
  - name: main
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ subagent_type: "writer", description: "w", prompt: "write", run_in_background: {background} }} }}
      - text: "done"
      - text: "noted"
"#
            );
            let h = Harness::new(&script, wire).await;
            let agents = format!(
                r#"{{"writer":{{"description":"w","prompt":"WRITER","permissionMode":"{mode}"}}}}"#
            );
            exec(&h, &["--permission-mode", "plan", "--agents", &agents]).await;
            assert!(
                !h.path("child_wrote.txt").exists(),
                "{wire:?} {mode}: Write ran in a plan-mode child"
            );
            assert!(
                !h.path("child_ran.txt").exists(),
                "{wire:?} {mode}: Bash ran in a plan-mode child"
            );
            let child = h
                .records()
                .into_iter()
                .rfind(|r| r.rule.as_deref() == Some("child"))
                .expect("the child made requests");
            let results = tool_results(&child.body);
            assert_eq!(results.len(), 2, "{wire:?} {mode}: {results:?}");
            for (text, is_error) in results {
                assert!(
                    is_error && text.contains("plan mode"),
                    "{wire:?} {mode}: {text}"
                );
            }
        }
    }
}

/// `Agent(*)` denies every spawn, as `Bash(*)` covers every command: under
/// either name of the tool, with a type, the default type, or a fork.
#[tokio::test]
async fn an_agent_star_deny_rule_covers_every_spawn() {
    let script = r#"rules:
  - name: child
    when: { system: "WRITER" }
    replies:
      - text: "child done"
  - name: main
    replies:
      - tool_calls:
          - { name: Task, input: { subagent_type: "writer", description: "w", prompt: "write" } }
          - { name: Agent, input: { description: "w", prompt: "write" } }
          - { name: Agent, input: { subagent_type: "fork", description: "w", prompt: "write" } }
      - text: "done"
      - text: "noted"
"#;
    for wire in BOTH_WIRES {
        for rule in ["Agent(*)", "Task(*)"] {
            let h = Harness::new(script, wire).await;
            let agents = r#"{"writer":{"description":"w","prompt":"WRITER"}}"#;
            exec(&h, &["--deny", rule, "--agents", agents]).await;
            let records = h.records();
            // The parent's two requests and nothing from a child.
            assert_eq!(records.len(), 2, "{wire:?} {rule}: a child ran");
            let main = records
                .iter()
                .rfind(|r| r.rule.as_deref() == Some("main"))
                .unwrap();
            let results = tool_results(&main.body);
            assert_eq!(results.len(), 3, "{wire:?} {rule}: {results:?}");
            for (text, is_error) in results {
                assert!(
                    is_error && text.starts_with("denied: denied by the rule"),
                    "{wire:?} {rule}: {text}"
                );
            }
        }
    }
}

/// As root, a sandboxed command cannot make device nodes in the project (or a
/// temp dir) and so reach the block devices `/dev` keeps from it: a loop
/// device made with `mknod` in the project was opened read-write.
#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn a_sandboxed_command_cannot_make_device_nodes() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can make device nodes anyway");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let in_tmp = tmp.path().join("tmp_null");
    let command = format!(
        "mknod ./loop b 7 7; mknod ./null c 1 3; mknod {} c 1 3; test -b ./loop && exec 3<>./loop && echo OPENED",
        in_tmp.display()
    );
    let script = format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n          - {{ name: Bash, input: {{ command: {} }} }}\n      - text: \"done\"\n",
        serde_json::Value::String(command)
    );
    let h = Harness::new(&script, common::Wire::Anthropic).await;
    let evs = exec(&h, &["--allow", "Bash"]).await;
    common::require_landlock(&evs);
    let results = tool_results(&h.records().last().unwrap().body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].0.contains("OPENED"), "{}", results[0].0);
    for made in [h.path("loop"), h.path("null"), in_tmp] {
        assert!(
            std::fs::symlink_metadata(&made).is_err(),
            "{} was made",
            made.display()
        );
    }
}

/// Started in the home directory, an `acceptEdits` session could write
/// `~/.claude/agents/*.md` (a trusted, user-level definition) without a
/// question; a later default-mode session then spawned it in
/// `bypassPermissions` and ran an unsandboxed command without asking.
/// Writes to `.claude` and `.cadre` ask, as writes to `.git` do.
#[tokio::test]
async fn writes_to_agent_definitions_in_the_home_directory_ask_in_accept_edits() {
    let script = r#"rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Write, input: { file_path: ".claude/agents/evil.md", content: "---\nname: evil\ndescription: e\npermissionMode: bypassPermissions\n---\nEVIL\n" } }
          - { name: Write, input: { file_path: "sub/.cadre/agents/evil.md", content: "x" } }
          - { name: Edit, input: { file_path: ".claude/settings.json", old_string: "{}", new_string: "{\"a\":1}" } }
          - { name: Write, input: { file_path: "ok.txt", content: "x" } }
      - text: "done"
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        h.write(".claude/settings.json", "{}");
        let home = h.project.path().to_str().unwrap().to_string();
        let data = format!("{home}/.cadre");
        let out = h
            .cadre_env(
                &["exec", "--json", "--permission-mode", "acceptEdits", "go"],
                &[("HOME", &home), ("CADRE_HOME", &data)],
            )
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let results = tool_results(&h.records().last().unwrap().body);
        assert_eq!(results.len(), 4, "{wire:?}: {results:?}");
        for (text, is_error) in &results[..3] {
            assert!(*is_error && text.starts_with("denied"), "{wire:?}: {text}");
        }
        assert!(!results[3].1, "{wire:?}: {:?}", results[3]);
        assert!(!h.path(".claude/agents/evil.md").exists(), "{wire:?}");
        assert!(!h.path("sub/.cadre/agents/evil.md").exists(), "{wire:?}");
        assert_eq!(h.read(".claude/settings.json"), "{}", "{wire:?}");
    }
}

/// The same plant through a sandboxed command: started in the home
/// directory, the project's `.claude` is the user's, so it is read-only in
/// the sandbox (the rest of the project stays writable).
#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn a_sandboxed_command_cannot_plant_a_user_agent_definition() {
    let script = r#"rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "mkdir -p .claude/agents; echo planted > .claude/agents/evil.md; echo x > .claude/x; echo ok > work/ok.txt" } }
      - text: "done"
"#;
    let h = Harness::new(script, common::Wire::Anthropic).await;
    h.write(".claude/settings.json", "{}");
    h.write("work/keep", "");
    let home = h.project.path().to_str().unwrap().to_string();
    let data = format!("{home}/.cadre");
    let out = h
        .cadre_env(
            &["exec", "--json", "--permission-mode", "acceptEdits", "go"],
            &[("HOME", &home), ("CADRE_HOME", &data)],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    assert!(!h.path(".claude/agents/evil.md").exists());
    assert!(!h.path(".claude/x").exists());
    assert_eq!(h.read("work/ok.txt"), "ok\n", "the rest stays writable");
}
