//! Claude Code's run flags through the binary: sessions (`-c`, `-r`,
//! `--fork-session`, `--session-id`, `--no-session-persistence`), the
//! system prompt, `--max-turns`, `--json-schema`, the tool flags,
//! `--settings`, `--permission-prompt-tool`, `--max-budget-usd` and
//! `--fallback-model`.

use crate::common;

use common::{Harness, Wire, mcp_fixture, stderr, stdout, system_text, tool_results, user_texts};
use serde_json::{Value, json};

/// The one `result` object of a `--output-format json` run.
fn result(out: &std::process::Output) -> Value {
    let text = stdout(out);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}\n{}", stderr(out)))
}

/// The top-level session logs in the data dir.
fn session_logs(h: &Harness) -> Vec<std::path::PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(h.data_dir().join("sessions"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// The names of the tools a request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn continue_goes_on_in_this_folders_last_session_and_fork_leaves_it_as_it_was() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"one\"\n      - text: \"two\"\n      - text: \"three\"\n      - text: \"four\"\n",
        Wire::Anthropic,
    )
    .await;
    let first = h
        .cadre(&["-p", "first question", "--output-format", "json"])
        .await;
    assert!(first.status.success(), "{}", stderr(&first));
    let id = result(&first)["session_id"].as_str().unwrap().to_string();

    let second = h
        .cadre(&["-p", "-c", "second question", "--output-format", "json"])
        .await;
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(result(&second)["session_id"], id.as_str());
    assert_eq!(result(&second)["result"], "two");
    let body = &h.records()[1].body;
    assert!(user_texts(body).contains("first question"), "{body}");
    assert_eq!(session_logs(&h).len(), 1);

    let original = session_logs(&h)[0].clone();
    let before = std::fs::read(&original).unwrap();
    let forked = h
        .cadre(&[
            "-p",
            "--continue",
            "--fork-session",
            "third question",
            "--output-format",
            "json",
        ])
        .await;
    assert!(forked.status.success(), "{}", stderr(&forked));
    let fork_id = result(&forked)["session_id"].as_str().unwrap().to_string();
    assert_ne!(fork_id, id);
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "the original is untouched"
    );
    let body = &h.records()[2].body;
    assert!(user_texts(body).contains("second question"), "{body}");
    assert_eq!(session_logs(&h).len(), 2);

    // `-r ID` resumes by id; the fork resumes too, with its whole history.
    let resumed = h
        .cadre(&["-p", "-r", &fork_id, "fourth", "--output-format", "json"])
        .await;
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let body = &h.records()[3].body;
    let texts = user_texts(body);
    assert!(
        texts.contains("first question") && texts.contains("third question"),
        "{texts}"
    );

    // Misuse is refused before any request.
    let n = h.records().len();
    for args in [
        &["-p", "--fork-session", "x"][..],
        &["-p", "-r", "-c", "x"][..],
        &[
            "-p",
            "-r",
            &id,
            "--session-id",
            "0190a0a0-0000-7000-8000-000000000000",
            "x",
        ][..],
    ] {
        let out = h.cadre(args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(h.records().len(), n);
}

#[tokio::test]
async fn continue_without_an_earlier_session_here_is_a_usage_error() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"x\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h.cadre(&["-p", "-c", "go on"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no earlier session"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn session_id_names_the_new_session_and_no_persistence_keeps_nothing() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"done\"\n",
        Wire::Anthropic,
    )
    .await;
    let id = "0190b2c3-d4e5-7f00-8123-456789abcdef";
    let out = h
        .cadre(&["-p", "hi", "--session-id", id, "--output-format", "json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result(&out)["session_id"], id);
    assert!(h.data_dir().join(format!("sessions/{id}.jsonl")).is_file());
    let again = h.cadre(&["-p", "hi", "--session-id", id]).await;
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("exists already"),
        "{}",
        stderr(&again)
    );
    let bad = h.cadre(&["-p", "hi", "--session-id", "not-a-uuid"]).await;
    assert_eq!(bad.status.code(), Some(2));

    let out = h
        .cadre(&[
            "-p",
            "hi",
            "--no-session-persistence",
            "--output-format",
            "json",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let gone = result(&out)["session_id"].as_str().unwrap().to_string();
    assert!(!h.data_dir().join(format!("sessions/{gone}.jsonl")).exists());
    assert_eq!(session_logs(&h).len(), 1);
}

#[tokio::test]
async fn max_turns_stops_the_run_with_error_max_turns() {
    let globs = "      - tool_calls: [{ name: Glob, input: { pattern: \"*.txt\" } }]\n".repeat(6);
    let script = format!("rules:\n  - replies:\n{globs}");
    let h = Harness::new(&script, Wire::Anthropic).await;
    let out = h
        .cadre(&["-p", "look", "--max-turns", "2", "--output-format", "json"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = result(&out);
    assert_eq!(r["subtype"], "error_max_turns", "{r}");
    assert_eq!(r["is_error"], true);
    assert_eq!(h.records().len(), 2);
    let zero = h.cadre(&["-p", "look", "--max-turns", "0"]).await;
    assert_eq!(zero.status.code(), Some(2));
}

#[tokio::test]
async fn json_schema_sends_bad_answers_back_and_returns_the_valid_one() {
    let script = r#"
rules:
  - replies:
      - text: "Sure, three."
      - text: "{\"n\": \"three\"}"
      - text: "```json\n{\"n\": 3}\n```"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    let out = h
        .cadre(&[
            "-p",
            "count",
            "--json-schema",
            schema,
            "--output-format",
            "json",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let r = result(&out);
    assert_eq!(r["structured_output"], json!({"n": 3}), "{r}");
    let records = h.records();
    assert_eq!(records.len(), 3);
    assert!(system_text(&records[0].body).contains("JSON Schema"));
    assert!(user_texts(&records[1].body).contains("not JSON"));
    assert!(
        user_texts(&records[2].body).contains("/n"),
        "{}",
        user_texts(&records[2].body)
    );

    // A schema the run cannot use is refused before any request.
    let bad = h
        .cadre(&["-p", "x", "--json-schema", "{\"type\": 5}"])
        .await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert_eq!(h.records().len(), 3);
}

#[tokio::test]
async fn json_schema_gives_up_after_its_retries_with_a_clear_result() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"no\"\n      - text: \"no\"\n      - text: \"no\"\n      - text: \"no\"\n      - text: \"no\"\n",
        Wire::OpenAi,
    )
    .await;
    let out = h
        .cadre(&[
            "-p",
            "x",
            "--json-schema",
            "{\"type\":\"object\"}",
            "--output-format",
            "json",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["subtype"], "error_max_structured_output_retries", "{r}");
    assert!(r["errors"][0].as_str().unwrap().contains("did not match"));
    assert_eq!(h.records().len(), 4);
}

#[tokio::test]
async fn system_prompt_flags_replace_or_extend_the_default() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"ok\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write("extra.txt", "FROM A FILE");
    let out = h
        .cadre(&["-p", "hi", "--system-prompt", "You are TESTBOT."])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = system_text(&h.records()[0].body);
    assert!(system.starts_with("You are TESTBOT."), "{system}");
    assert!(!system.contains("You are cadre"), "{system}");

    let out = h
        .cadre(&[
            "exec",
            "hi",
            "--append-system-prompt",
            "ALWAYS RHYME.",
            "--append-system-prompt-file",
            "extra.txt",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let system = system_text(&h.records()[1].body);
    assert!(system.contains("You are cadre"), "{system}");
    assert!(
        system.contains("ALWAYS RHYME.") && system.contains("FROM A FILE"),
        "{system}"
    );

    let both = h
        .cadre(&[
            "-p",
            "hi",
            "--system-prompt",
            "a",
            "--system-prompt-file",
            "extra.txt",
        ])
        .await;
    assert_eq!(both.status.code(), Some(2));
    let missing = h
        .cadre(&["-p", "hi", "--system-prompt-file", "nope.txt"])
        .await;
    assert_eq!(missing.status.code(), Some(2));
}

#[tokio::test]
async fn tool_flags_take_claude_codes_meanings() {
    let script = r#"
rules:
  - name: allowed
    when: { first_user: "echo please" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo ran-it" } }
      - text: "echoed"
  - replies:
      - text: "ok"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h
        .cadre(&["-p", "hi", "--disallowedTools", "Bash", "Edit"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = offered(&h.records()[0].body);
    assert!(
        !tools.contains(&"Bash".to_string()) && !tools.contains(&"Edit".to_string()),
        "{tools:?}"
    );
    assert!(tools.contains(&"Read".to_string()));

    let out = h.cadre(&["-p", "hi", "--tools", "Read,Glob"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let mut tools = offered(&h.records()[1].body);
    tools.sort();
    assert_eq!(tools, ["Glob", "Read"]);

    // In the default mode a headless run cannot ask: the allow rule lets it run.
    let out = h
        .cadre(&["-p", "echo please", "--allowed-tools", "Bash(echo:*) Read"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[3].body);
    assert!(
        !results[0].1 && results[0].0.contains("ran-it"),
        "{results:?}"
    );

    // Without it the call is denied.
    let out = h.cadre(&["-p", "echo please"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[5].body);
    assert!(results[0].1, "{results:?}");

    // A scoped deny denies only what it matches, and beats the mode.
    let out = h
        .cadre(&[
            "-p",
            "echo please",
            "--dangerously-skip-permissions",
            "--disallowedTools",
            "Bash(echo:*)",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(offered(&records[6].body).contains(&"Bash".to_string()));
    assert!(tool_results(&records[7].body)[0].1);
    let clash = h
        .cadre(&[
            "-p",
            "x",
            "--dangerously-skip-permissions",
            "--permission-mode",
            "plan",
        ])
        .await;
    assert_eq!(clash.status.code(), Some(2));
}

#[tokio::test]
async fn settings_flag_adds_a_layer_and_setting_sources_pick_the_files() {
    let script = r#"
rules:
  - replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo via-settings" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let inline = r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#;
    let out = h.cadre(&["-p", "go", "--settings", inline]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert!(!results[0].1, "{results:?}");

    // From a file, with the user's settings denying it: the run's layer is
    // above the user's, and a deny anywhere still wins.
    h.write("run-settings.json", inline);
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("settings.json"),
        r#"{"permissions": {"deny": ["Bash(echo:*)"]}}"#,
    )
    .unwrap();
    let out = h
        .cadre(&["-p", "go", "--settings", "run-settings.json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tool_results(&h.records()[3].body)[0].1);
    // Without the user's files, the deny is gone.
    let out = h
        .cadre(&[
            "-p",
            "go",
            "--settings",
            "run-settings.json",
            "--setting-sources",
            "project,local",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!tool_results(&h.records()[5].body)[0].1);

    for bad in [
        &["-p", "go", "--setting-sources", "user,galaxy"][..],
        &["-p", "go", "--settings", "{not json"][..],
        &["-p", "go", "--settings", "missing.json"][..],
    ] {
        let out = h.cadre(bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}

#[tokio::test]
async fn a_permission_prompt_tool_answers_the_questions() {
    let script = r#"
rules:
  - replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo allowed-one" } }
      - tool_calls:
          - { name: Bash, input: { command: "echo other-one" } }
      - text: "finished"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let servers = json!({"mcpServers": {"fixture": {
        "command": mcp_fixture().display().to_string(),
        "args": ["--approver", "--no-extras"],
    }}});
    h.write("servers.json", &servers.to_string());
    let out = h
        .cadre(&[
            "-p",
            "go",
            "--mcp-config",
            "servers.json",
            "--permission-prompt-tool",
            "mcp__fixture__approve",
            "--output-format",
            "json",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let first = tool_results(&records[1].body);
    assert!(
        !first[0].1 && first[0].0.contains("allowed-one"),
        "{first:?}"
    );
    let second = tool_results(&records[2].body);
    assert!(
        second[1].1 && second[1].0.contains("the approve tool said no"),
        "{second:?}"
    );
    let r = result(&out);
    assert_eq!(r["permission_denials"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["permission_denials"][0]["tool_name"], "Bash");

    // A tool no server offers is refused before any request.
    let n = h.records().len();
    let out = h
        .cadre(&[
            "-p",
            "go",
            "--permission-prompt-tool",
            "mcp__nobody__approve",
        ])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = h
        .cadre(&["-p", "go", "--permission-prompt-tool", "approve"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(h.records().len(), n);
}

#[tokio::test]
async fn the_budget_cap_stops_the_run_children_counted() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "spend some" }
    replies:
      - tool_calls: [{ name: Glob, input: { pattern: "*" } }]
        usage: { input_tokens: 400, output_tokens: 10 }
      - tool_calls: [{ name: Glob, input: { pattern: "*" } }]
        usage: { input_tokens: 400, output_tokens: 10 }
      - text: "child done"
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "spend", prompt: "spend some", subagent_type: Explore, model: "mock-model" } }
        usage: { input_tokens: 100, output_tokens: 10 }
      - text: "never"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    // One dollar per thousand input tokens.
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[models.anthropic.mock-model]\ninput_price = 1000\noutput_price = 0\n",
    )
    .unwrap();
    let out = h
        .cadre(&[
            "-p",
            "go",
            "--max-budget-usd",
            "0.45",
            "--output-format",
            "json",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = result(&out);
    assert_eq!(r["subtype"], "error_max_budget_usd", "{r}");
    // The main request (0.10) and the child's first (0.40) spent it: the
    // child stopped before its second, and the main agent before its next.
    assert_eq!(h.records().len(), 2, "{r}");
    assert!(r["total_cost_usd"].as_f64().unwrap() >= 0.45, "{r}");
    let bad = h.cadre(&["-p", "go", "--max-budget-usd", "-1"]).await;
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test]
async fn the_fallback_model_takes_over_when_the_main_one_is_overloaded() {
    let script = r#"
rules:
  - name: overloaded
    when: { model: "mock-model" }
    replies:
      - fail: { status: 529, message: "Overloaded" }
  - name: backup
    when: { model: "backup-model" }
    replies:
      - text: "from the backup"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h
        .cadre(&[
            "-p",
            "hi",
            "--fallback-model",
            "backup-model",
            "--output-format",
            "json",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let r = result(&out);
    assert_eq!(r["result"], "from the backup", "{r}");
    let last = h.records().last().unwrap().body.clone();
    assert_eq!(last["model"], "backup-model");
    assert!(
        stderr(&out).contains("falling back to backup-model"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn sigterm_exits_143_and_leaves_the_session_resumable() {
    let script = r#"
rules:
  - name: slow
    when: { model: "mock-model" }
    replies:
      - latency_ms: 20000
        text: "too late"
  - replies:
      - text: "picked up again"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let id = "0190c3d4-e5f6-7a00-8b12-3456789abcde";
    let child = h
        .command(&["-p", "take long", "--session-id", id], &[])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = h.data_dir().join(format!("sessions/{id}.jsonl"));
    common::wait_until("the prompt is logged", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("take long"))
    })
    .await;
    // The request is on its way (the reply takes 20 s).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling the cadre process this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    // (Another model: the first one's replies are the slow ones.)
    let out = h
        .cadre(&["-p", "-r", id, "go on", "--model", "fresh-model"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "picked up again");
    let body = h.records().last().unwrap().body.clone();
    assert!(user_texts(&body).contains("take long"), "{body}");
}
