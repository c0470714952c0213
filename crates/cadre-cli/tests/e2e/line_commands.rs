//! The line front end's slash commands through a real pseudo-terminal
//! (answered in cadre, never sent to the model), `/clear` and `/resume ID`
//! going on in another session in the same process, `/tasks` with a
//! background child, `cadre tasks show ID --transcript`, and `exec`'s
//! progress lines with each call's argument and the children's nesting.

use crate::common;

use cadre_core::tasks::{TaskKind, TaskStatus};
use std::time::Duration;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, events, rule_records, stderr, stdout, tasks, wait_until};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

/// The last user text of a request, as the mock reads it.
fn last_user(r: &cadre_mock::Record) -> String {
    cadre_mock::request_info(r.wire, &r.body).last_user
}

const CHAT: &str = r#"
rules:
  - name: chat
    step_by: requests
    replies:
      - text: "Answer one."
      - text: "Answer two."
      - text: "Answer three."
      - text: "Answer four."
"#;

const HELPER: &str = "---
name: helper
description: Does a background job.
tools: Read, Bash
---
You are HELPER.
";

#[tokio::test]
async fn slash_commands_answer_in_cadre_and_never_reach_the_model() {
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[permissions]\ndeny = [\"Bash(rm:*)\"]\n",
    )
    .unwrap();
    h.write(
        ".cadre/config.toml",
        "[permissions]\nask = [\"Bash(git push:*)\"]\n",
    );
    let pty = Pty::open();
    let mut cadre = Interactive::start(
        &h,
        &pty,
        &[
            "--permission-mode",
            "acceptEdits",
            "--allow",
            "Bash(cargo test:*)",
        ],
    );
    let commands = [
        "/help",
        "/agents",
        "/agents helper",
        "/agents nobody",
        "/tasks",
        "/tasks stop t-000000000000",
        "/tasks kill",
        "/sessions",
        "/resume",
        "/model",
        "/model other-model",
        "/model",
        "/permissions",
        "/clear now",
        "/foo bar",
    ];
    for line in commands {
        pty.type_line(line);
    }
    pty.type_line("hello");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());

    // Only the message reached the model, and none of the commands with it.
    let records = h.records();
    assert_eq!(records.len(), 1, "{:?}", records);
    let body = records[0].body.to_string();
    for word in [
        "/help",
        "/agents",
        "/tasks",
        "/sessions",
        "/resume",
        "/model",
        "/permissions",
        "/clear",
        "/foo",
    ] {
        assert!(!body.contains(word), "{word} was sent: {body}");
    }
    // `/model other-model` switched the running session: its next request goes there.
    assert_eq!(records[0].body["model"], "other-model", "{body}");
    assert!(last_user(&records[0]).ends_with("hello"));

    let err = cadre.stderr();
    let [session] = cadre.sessions().try_into().unwrap();
    let shows = |what: &str| assert!(err.contains(what), "missing {what:?} in:\n{err}");
    // /help
    shows("/permissions          the permission mode and the rules in force");
    // /agents: the project's definition with its file, and the built-ins.
    let helper_line = err
        .lines()
        .find(|l| l.starts_with("helper "))
        .unwrap_or_else(|| panic!("no helper row: {err}"));
    assert!(helper_line.contains("project"), "{helper_line}");
    assert!(helper_line.contains("helper.md"), "{helper_line}");
    assert!(err.lines().any(|l| l.starts_with("Explore ")), "{err}");
    // /agents helper: the definition as a child gets it.
    shows("name:        helper");
    shows("tools:       Read, Bash");
    shows("no agent definition named 'nobody'; known: ");
    // /tasks, and their mistakes.
    shows("no tasks in this session");
    shows("no task t-000000000000 in this session (see /tasks)");
    shows("usage: /tasks, or /tasks stop TASK_ID");
    // /sessions lists this one; /resume has no other.
    assert!(
        err.lines()
            .any(|l| l.starts_with(&format!("{session} · ")) && l.ends_with(" · this session")),
        "/sessions lists {session}: {err}"
    );
    shows("no other sessions to resume");
    // /model, before and after switching: the switch is the session's from the next turn.
    shows("model: mock-model (anthropic)");
    shows(
        "model: other-model from the next turn on (was mock-model); sessions /clear or /resume start from here use it too",
    );
    shows("model: other-model (anthropic) · chosen with /model; started with mock-model");
    // /permissions: the mode and each rule with its source.
    shows("permission mode: acceptEdits (from --permission-mode)");
    let rule = |kind: &str, text: &str, source: &str| {
        assert!(
            err.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.len() >= 3 && words[0] == kind && words[1] == text && l.contains(source)
            }),
            "no {kind} {text} from {source}: {err}"
        );
    };
    rule("allow", "Bash(cargo", "--allow");
    rule("deny", "Bash(rm:*)", "user config (");
    rule("ask", "Bash(git", "project config (");
    // Arguments a command does not take, and a command that does not exist.
    shows("usage: /clear (it takes no arguments)");
    shows("unknown command /foo (try /help)");
}

#[tokio::test]
async fn clear_starts_a_new_session_and_resume_goes_back_to_the_old_one() {
    let h = Harness::new(CHAT, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--permission-mode", "acceptEdits"]);

    pty.type_line("remember PARSNIP");
    cadre.wait_for_stdout("Answer one.").await;
    // The model chosen for the next session is the new session's.
    pty.type_line("/model other-model");
    pty.type_line("/clear");
    cadre.wait_for_stderr("cadre · ", 2).await;
    pty.type_line("a fresh start");
    cadre.wait_for_stdout("Answer two.").await;
    let ids = cadre.sessions();
    let [old, new] = ids.as_slice() else {
        panic!("two sessions: {ids:?}");
    };
    assert_ne!(old, new);
    pty.type_line(&format!("/resume {old}"));
    cadre.wait_for_stderr("cadre · ", 3).await;
    pty.type_line("what was the word");
    cadre.wait_for_stdout("Answer three.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());

    let err = cadre.stderr();
    assert!(
        err.contains(&format!(
            "session {old} ends here (it stays resumable: /resume {old}, or cadre --resume {old}); starting a new session"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("session {new} ends here"))
            && err.contains(&format!("resuming session {old}")),
        "{err}"
    );
    assert_eq!(
        cadre.sessions()[2],
        *old,
        "the third banner is the old session's"
    );

    let records = h.records();
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].body["model"], "mock-model");
    assert_eq!(records[1].body["model"], "other-model");
    // The new session starts empty.
    let fresh = records[1].body.to_string();
    assert!(fresh.contains("a fresh start"));
    assert!(!fresh.contains("PARSNIP"), "{fresh}");
    // The resumed one carries the old conversation, not the new session's.
    let resumed = records[2].body.to_string();
    assert!(resumed.contains("remember PARSNIP"), "{resumed}");
    assert!(resumed.contains("Answer one."), "{resumed}");
    assert!(!resumed.contains("a fresh start"), "{resumed}");
    assert!(last_user(&records[2]).ends_with("what was the word"));

    // Both stay resumable from a later process too.
    let out = h.cadre(&["exec", "--resume", new, "and then"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let last = h.records().last().unwrap().body.to_string();
    assert!(
        last.contains("a fresh start") && !last.contains("PARSNIP"),
        "{last}"
    );
}

#[tokio::test]
async fn tasks_lists_a_background_child_and_stops_it() {
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - latency_ms: 60000
        text: "never seen"
  - name: parent
    step_by: requests
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "slow survey", prompt: "survey slowly", subagent_type: "helper", run_in_background: true } }
      - text: "Started it."
      - text: "Noted the stop."
      - text: "Noted the stop."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--permission-mode", "acceptEdits"]);
    pty.type_line("start the survey");
    cadre.wait_for_stdout("Started it.").await;
    let row = tasks(&h).into_iter().next().expect("the child's task");
    assert_eq!(row.kind, TaskKind::Subagent);
    assert_eq!(row.status, TaskStatus::Running);

    pty.type_line("/tasks");
    cadre.wait_for_stderr("/tasks stop ID stops one", 1).await;
    let err = cadre.stderr();
    let listed = err
        .lines()
        .find(|l| l.starts_with(&row.id))
        .unwrap_or_else(|| panic!("{} is not listed: {err}", row.id));
    let columns: Vec<&str> = listed.split_whitespace().collect();
    assert_eq!(
        &columns[..5],
        [row.id.as_str(), "subagent", "running", "slow", "survey"],
        "{listed}"
    );
    assert!(columns.contains(&"helper"), "{listed}");

    pty.type_line(&format!("/tasks stop {}", row.id));
    wait_until("the child's task is cancelled", || {
        tasks(&h)[0].status == TaskStatus::Cancelled
    })
    .await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    assert!(
        cadre
            .stderr()
            .contains(&format!("stopping task {} (slow survey)", row.id)),
        "{}",
        cadre.stderr()
    );
    // Neither command reached the model.
    for r in h.records() {
        let body = r.body.to_string();
        assert!(!body.contains("/tasks"), "{body}");
    }
}

/// A scout that searches, then hands two reads to leaf children of its own.
const NESTED: &str = r#"
rules:
  - name: leaf-a
    when: { system: "You are LEAF", first_user: "leaf-a" }
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - text: "LEAF-A: alpha"
  - name: leaf-b
    when: { system: "You are LEAF", first_user: "leaf-b" }
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "b.txt" } }]
      - text: "LEAF-B: beta"
  - name: scout
    when: { system: "You are SCOUT" }
    replies:
      - tool_calls: [{ name: Grep, input: { pattern: "parse_config", path: "src" } }]
      - tool_calls:
          - { name: Agent, input: { description: "read a", prompt: "leaf-a: read a.txt", subagent_type: "leaf" } }
          - { name: Agent, input: { description: "read b", prompt: "leaf-b: read b.txt", subagent_type: "leaf" } }
      - text: "SCOUT-REPORT: parse_config is in src/config.rs; a is alpha, b is beta."
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scout it", prompt: "find parse_config", subagent_type: "scout" } }
      - text: "All done."
"#;

#[tokio::test]
async fn exec_progress_lines_show_each_calls_argument_and_the_nesting() {
    let h = Harness::new(NESTED, Wire::Anthropic).await;
    common::scout_and_leaf_files(&h);

    let out = h.cadre(&["exec", "find it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "All done.");
    let err = stderr(&out);
    for line in [
        "  [subagent 1/1 scout] Grep \"parse_config\" in src: completed",
        "  [subagent 1/1 scout > 1/2 leaf] Read a.txt: completed",
        "  [subagent 1/1 scout > 2/2 leaf] Read b.txt: completed",
        "  [subagent 1/1 scout] Agent read a: completed",
        "  [subagent 1/1 scout] Agent read b: completed",
    ] {
        assert!(err.lines().any(|l| l == line), "no {line:?} in:\n{err}");
    }
    // The leaves' ends carry their place too, the scout's its own.
    for prefix in [
        "  [subagent 1/1 scout > 1/2 leaf] completed · ",
        "  [subagent 1/1 scout > 2/2 leaf] completed · ",
        "  [subagent 1/1 scout] completed · ",
    ] {
        assert!(
            err.lines().any(|l| l.starts_with(prefix)),
            "no {prefix:?} in:\n{err}"
        );
    }
    // Delegated for real: each leaf asked the model twice.
    let records = h.records();
    assert_eq!(rule_records(&records, "leaf-a").len(), 2);
    assert_eq!(rule_records(&records, "leaf-b").len(), 2);

    // `--json` carries the same as new fields.
    let out = h.cadre(&["exec", "--json", "find it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let path_of = |e: &Value| -> Vec<String> {
        e["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{}/{} {}",
                    t["index"],
                    t["total"],
                    t["agent_type"].as_str().unwrap()
                )
            })
            .collect()
    };
    let progress: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "subagent_progress")
        .collect();
    let grep = progress.iter().find(|e| e["tool"] == "Grep").unwrap();
    assert_eq!(grep["summary"], "\"parse_config\" in src");
    assert_eq!(path_of(grep), ["1/1 scout"]);
    let read_b = progress
        .iter()
        .find(|e| e["summary"] == "b.txt")
        .unwrap_or_else(|| panic!("{progress:?}"));
    assert_eq!(read_b["agent_type"], "leaf");
    assert_eq!(read_b["index"], 2);
    assert_eq!(path_of(read_b), ["1/1 scout", "2/2 leaf"]);
    // The leaf's start names its parent in its path.
    let leaf_started = evs
        .iter()
        .find(|e| e["type"] == "subagent_started" && e["agent_id"] == read_b["agent_id"])
        .unwrap();
    assert_eq!(path_of(leaf_started), ["1/1 scout", "2/2 leaf"]);
    assert_eq!(
        leaf_started["path"][0]["agent_id"], grep["agent_id"],
        "the scout is the leaf's parent"
    );
    // A main-agent call ends with its summary as well.
    let main_ended = evs
        .iter()
        .find(|e| e["type"] == "tool_call_ended" && e["agent"] == "main")
        .unwrap();
    assert_eq!(main_ended["summary"], "scout it");
}

#[tokio::test]
async fn tasks_show_transcript_prints_a_finished_childs_log() {
    let h = Harness::new(NESTED, Wire::Anthropic).await;
    common::scout_and_leaf_files(&h);
    let out = h.cadre(&["exec", "find it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let rows = tasks(&h);
    let scout = rows
        .iter()
        .find(|r| r.agent_type.as_deref() == Some("scout"))
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(scout.status, TaskStatus::Succeeded);
    let out = h.cadre(&["tasks", "show", &scout.id, "--transcript"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "transcript of task {} (scout: scout it), succeeded",
            scout.id
        )),
        "{text}"
    );
    let at = |want: &str| {
        lines
            .iter()
            .position(|l| *l == want)
            .unwrap_or_else(|| panic!("no line {want:?} in:\n{text}"))
    };
    let asked = lines
        .iter()
        .position(|l| l.starts_with("user: "))
        .unwrap_or_else(|| panic!("no task line in:\n{text}"));
    assert!(text.contains("find parse_config"), "{text}");
    let grep = at("  → Grep \"parse_config\" in src");
    let found = lines
        .iter()
        .position(|l| l.starts_with("    ← ") && l.contains("config.rs"))
        .unwrap_or_else(|| panic!("no Grep result in:\n{text}"));
    let delegated = at("  → Agent read a");
    let report = lines
        .iter()
        .position(|l| l.starts_with("assistant: SCOUT-REPORT: parse_config is in src/config.rs"))
        .unwrap_or_else(|| panic!("no report in:\n{text}"));
    assert!(
        asked < grep && grep < found && found < delegated && delegated < report,
        "{text}"
    );
    // The leaves' own calls are in their own transcripts, not the scout's.
    assert!(!text.contains("→ Read a.txt"), "{text}");
    let leaf = rows
        .iter()
        .find(|r| r.description == "read b")
        .unwrap_or_else(|| panic!("{rows:?}"));
    let out = h
        .cadre(&["tasks", "show", &leaf.id, "--transcript", "--follow"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("\n  → Read b.txt\n    ← "), "{text}");
    assert!(text.contains("\nassistant: LEAF-B: beta\n"), "{text}");
    assert!(
        text.trim_end()
            .ends_with(&format!("--- task {} ended: succeeded ---", leaf.id)),
        "--follow of an ended child ends: {text}"
    );
    // --follow needs --transcript; an unknown task is a usage error.
    let out = h.cadre(&["tasks", "show", &leaf.id, "--follow"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = h
        .cadre(&["tasks", "show", "t-000000000000", "--transcript"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[tokio::test]
async fn tasks_show_transcript_follow_prints_a_running_childs_lines_until_it_ends() {
    // The child's command waits for a file the test writes once the
    // follower has shown the call: the rest comes while it follows.
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "while [ ! -f go ]; do sleep 0.05; done; echo released" } }
      - text: "CHILD-DONE: released."
  - name: parent
    step_by: requests
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "waits", prompt: "wait for go", subagent_type: "helper", run_in_background: true } }
      - text: "Started."
      - text: "It finished."
      - text: "It finished."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let run = h.spawn_json(&[
        "exec",
        "--json",
        "--permission-mode",
        "acceptEdits",
        "--allow",
        "Bash",
        "start it",
    ]);
    wait_until("the child runs", || {
        tasks(&h)
            .first()
            .is_some_and(|r| r.status == TaskStatus::Running)
    })
    .await;
    let id = tasks(&h)[0].id.clone();
    let mut follower = h
        .command(&["tasks", "show", &id, "--transcript", "--follow"], &[])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let read_until =
        async |lines: &mut Lines<BufReader<ChildStdout>>, seen: &mut Vec<String>, want: &str| {
            tokio::time::timeout(Duration::from_secs(20), async {
                while let Some(line) = lines.next_line().await.unwrap() {
                    let found = line.contains(want);
                    seen.push(line);
                    if found {
                        return;
                    }
                }
                panic!("the follower ended before {want:?}: {seen:?}");
            })
            .await
            .unwrap_or_else(|_| panic!("no {want:?} within 20 s: {seen:?}"));
        };
    read_until(&mut lines, &mut seen, "  → Bash while [ ! -f go ]").await;
    assert_eq!(
        tasks(&h)[0].status,
        TaskStatus::Running,
        "the child still runs: it waits for the file"
    );
    h.write("go", "");
    read_until(&mut lines, &mut seen, "assistant: CHILD-DONE: released.").await;
    read_until(
        &mut lines,
        &mut seen,
        &format!("--- task {id} ended: succeeded ---"),
    )
    .await;
    assert!(seen.iter().any(|l| l == "    ← released"), "{seen:?}");
    assert!(seen[0].starts_with(&format!("transcript of task {id} (helper: waits), running")));
    let status = tokio::time::timeout(Duration::from_secs(20), follower.wait())
        .await
        .expect("the follower leaves once the task ended")
        .unwrap();
    assert!(status.success());
    let (status, _) = run.finish().await;
    assert!(status.success());
}

#[tokio::test]
async fn a_nested_childs_question_names_its_place() {
    let script = r#"
rules:
  - name: leaf
    when: { system: "You are LEAF" }
    replies:
      - tool_calls: [{ name: Write, input: { file_path: "c.txt", content: "gamma" } }]
      - text: "LEAF: it was refused."
  - name: scout
    when: { system: "You are SCOUT" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "write c", prompt: "leaf-c: write c.txt", subagent_type: "leaf" } }
      - text: "SCOUT: done."
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "scout it", prompt: "scout around", subagent_type: "scout" } }
      - text: "All done."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    common::scout_and_leaf_files(&h);
    // A child gets no tool its parent lacks: the scout has Write to pass on.
    h.write(
        ".cadre/agents/scout.md",
        "---\nname: scout\ndescription: Delegates writes.\ntools: Read, Write, Agent\n---\nYou are SCOUT.\n",
    );
    h.write(
        ".cadre/agents/leaf.md",
        "---\nname: leaf\ndescription: Writes one file.\ntools: Read, Write\n---\nYou are LEAF.\n",
    );
    let pty = Pty::open();
    let mut run = h.spawn_json_tty(&["exec", "--json", "go"], &pty);
    let asked = run.wait_for("approval_requested", 1).await;
    assert_eq!(
        asked["question"]["label"], "Subagent: 1/1 scout > 1/1 leaf: \"leaf-c: write c.txt\"",
        "{asked}"
    );
    assert_eq!(asked["question"]["tool"], "Write");
    pty.type_line("n");
    let (status, evs) = run.finish().await;
    assert!(status.success());
    assert!(!h.path("c.txt").exists(), "the write was refused");
    let denied = evs
        .iter()
        .find(|e| e["type"] == "subagent_progress" && e["tool"] == "Write")
        .unwrap();
    assert_eq!(denied["outcome"], "denied");
    assert_eq!(denied["summary"], "c.txt");
}
