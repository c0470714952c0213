//! MCP servers through the binary: `.mcp.json` and `--mcp-config` servers
//! (the `cadre-mcp-fixture` rmcp server) started with the session, their
//! tools offered as `mcp__<server>__<tool>`, called through the permission
//! policy, their results and failures in the next request, and `cadre mcp`.

use crate::common;

use common::mcp_fixture as fixture;

use common::{Harness, Wire, events, rule_records, stderr, stdout, tool_results};
use serde_json::{Value, json};

/// `{"mcpServers": {"fixture": {"command": <fixture>, "args": args}}}`.
fn servers(args: &[&str]) -> String {
    json!({"mcpServers": {"fixture": {
        "command": fixture().display().to_string(),
        "args": args,
    }}})
    .to_string()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn tool_spec<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", tool_names(body)))
}

/// A model that makes `calls` (JSON tool calls) in one reply, then ends.
fn calls_script(calls: &[Value]) -> String {
    let calls: Vec<String> = calls.iter().map(|c| format!("          - {c}")).collect();
    format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n{}\n      - text: \"done\"\n",
        calls.join("\n")
    )
}

fn call(name: &str, input: Value) -> Value {
    json!({"name": name, "input": input})
}

fn status_events(out: &std::process::Output) -> Vec<Value> {
    events(out)
        .into_iter()
        .filter(|e| e["type"] == "mcp_server_status")
        .collect()
}

#[tokio::test]
async fn a_trusted_projects_server_offers_its_tools_and_their_results_reach_the_model() {
    let script = calls_script(&[
        call("mcp__fixture__echo", json!({"text": "hi there"})),
        call("mcp__fixture__add", json!({"a": 2, "b": 3.5})),
        call("mcp__fixture__tiny_image", json!({})),
        call("mcp__fixture__resource", json!({})),
    ]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[]));
    let out = h
        .cadre(&["exec", "--json", "--trust", "--allow", "mcp__fixture", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));

    let statuses = status_events(&out);
    assert_eq!(statuses[0]["status"], "starting", "{statuses:?}");
    let ready = statuses.iter().find(|e| e["status"] == "ready").unwrap();
    assert_eq!(ready["server"], "fixture");
    assert!(ready["tools"].as_u64().unwrap() >= 9, "{ready}");

    let records = h.records();
    assert_eq!(records.len(), 2);
    let first = &records[0].body;
    let echo = tool_spec(first, "mcp__fixture__echo");
    assert!(
        echo["description"]
            .as_str()
            .unwrap()
            .contains("Echo the text back"),
        "{echo}"
    );
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");
    assert!(tool_names(first).contains(&"Read".to_string()));

    let results = tool_results(&records[1].body);
    assert_eq!(results[0], ("echo: hi there".to_string(), false));
    assert_eq!(results[1], ("5.5".to_string(), false));
    assert!(
        results[2].0.contains("[image image/png"),
        "{:?}",
        results[2]
    );
    assert!(!results[2].1);
    // Anthropic takes images in tool results: the image itself goes beside the text.
    let image_result = records[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .nth(2)
        .unwrap();
    let parts = image_result["content"].as_array().expect("blocks");
    assert_eq!(parts[1]["type"], "image", "{image_result}");
    assert_eq!(parts[1]["source"]["type"], "base64");
    assert_eq!(parts[1]["source"]["media_type"], "image/png");
    assert!(
        parts[1]["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBOR")
    );
    assert!(
        results[3]
            .0
            .contains("[resource file:///fixture/notes.txt]\nnotes body")
            && results[3]
                .0
                .contains("[resource link] https://example.com/doc"),
        "{:?}",
        results[3]
    );
}

#[tokio::test]
async fn the_openai_wire_carries_mcp_tools_and_results_too() {
    let script = calls_script(&[
        call("mcp__fixture__echo", json!({"text": "wire"})),
        call("mcp__fixture__tiny_image", json!({})),
    ]);
    let h = Harness::new(&script, Wire::OpenAi).await;
    let config = h.path("servers.json");
    std::fs::write(&config, servers(&[])).unwrap();
    let out = h
        .cadre(&[
            "exec",
            "--mcp-config",
            "servers.json",
            "--allow",
            "mcp__fixture",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("MCP server fixture: ready"),
        "{}",
        stderr(&out)
    );
    let records = h.records();
    let names: Vec<String> = records[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"mcp__fixture__echo".to_string()),
        "{names:?}"
    );
    let results = tool_results(&records[1].body);
    assert_eq!(results[0].0, "echo: wire");
    assert!(results[1].0.contains("[image image/png"), "{results:?}");
    // A tool message holds text only: the image follows in a user message.
    let messages = records[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    let url = last["content"][0]["image_url"]["url"]
        .as_str()
        .unwrap_or("");
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{last}");
}

#[tokio::test]
async fn an_untrusted_projects_servers_do_not_start_and_the_warning_names_them() {
    let pid = std::env::temp_dir().join(format!("cadre-mcp-untrusted-{}", std::process::id()));
    let _ = std::fs::remove_file(&pid);
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: done\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".mcp.json",
        &servers(&["--pid-file", pid.to_str().unwrap()]),
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warned = events(&out).into_iter().any(|e| {
        e["type"] == "warning"
            && e["message"].as_str().unwrap().contains("MCP servers of")
            && e["message"].as_str().unwrap().contains("fixture")
    });
    assert!(warned, "{}", stdout(&out));
    assert!(status_events(&out).is_empty());
    assert!(!pid.exists(), "the server never started");
    let names = tool_names(&h.records()[0].body);
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
}

#[tokio::test]
async fn calls_go_through_the_permission_policy() {
    // No rule and no one to ask: denied; a deny rule: denied; plan mode:
    // the tool not marked read-only is denied, the read-only one runs.
    let calls = calls_script(&[
        call("mcp__fixture__echo", json!({"text": "a"})),
        call("mcp__fixture__peek", json!({})),
    ]);
    for (args, echo_ok, peek_ok, why) in [
        (vec![], false, false, "no one can approve"),
        (
            vec!["--allow", "mcp__fixture__*", "--deny", "mcp__fixture__echo"],
            false,
            true,
            "denied by the rule",
        ),
        (
            vec!["--permission-mode", "plan", "--allow", "mcp__fixture"],
            false,
            true,
            "read-only",
        ),
    ] {
        let h = Harness::new(&calls, Wire::Anthropic).await;
        h.write(".mcp.json", &servers(&[]));
        let mut full = vec!["exec", "--trust"];
        full.extend(args.iter().copied());
        full.push("go");
        let out = h.cadre(&full).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let results = tool_results(&h.records()[1].body);
        assert_eq!(!results[0].1, echo_ok, "{args:?}: {results:?}");
        assert_eq!(!results[1].1, peek_ok, "{args:?}: {results:?}");
        if !echo_ok {
            assert!(results[0].0.contains(why), "{args:?}: {}", results[0].0);
        }
        if peek_ok {
            assert_eq!(results[1].0, "peeked");
        }
    }
}

#[tokio::test]
async fn error_results_timeouts_and_a_server_that_dies_are_tool_errors_and_it_restarts_once() {
    let pid = std::env::temp_dir().join(format!("cadre-mcp-die-{}", std::process::id()));
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: mcp__fixture__fail, input: { message: "the disk is on fire" } }
          - { name: mcp__fixture__slow, input: { ms: 5000 } }
      - tool_calls:
          - { name: mcp__fixture__die, input: {} }
      - tool_calls:
          - { name: mcp__fixture__echo, input: { text: "back" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &servers(&["--pid-file", pid.to_str().unwrap()]),
    );
    let out = h
        .cadre_env(
            &["exec", "--trust", "--allow", "mcp__fixture", "go"],
            &[("MCP_TOOL_TIMEOUT", "700")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 4);
    let first = tool_results(&records[1].body);
    assert_eq!(first[0], ("the disk is on fire".to_string(), true));
    assert!(
        first[1].1 && first[1].0.contains("did not answer within 0.7 s"),
        "{first:?}"
    );
    // Each request carries every result so far: the newest is last.
    let died = tool_results(&records[2].body).pop().unwrap();
    assert!(
        died.1 && died.0.contains("exited during the call"),
        "{died:?}"
    );
    let back = tool_results(&records[3].body).pop().unwrap();
    assert_eq!(back, ("echo: back".to_string(), false), "restarted");
    let _ = std::fs::remove_file(&pid);
}

#[tokio::test]
async fn a_server_that_never_answers_or_lists_too_much_is_reported_and_the_session_goes_on() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: done\n",
        Wire::Anthropic,
    )
    .await;
    let f = fixture().display().to_string();
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "stuck": {"command": f, "args": ["--never-initialize"]},
            "huge": {"command": f, "args": ["--many-tools", "3000", "--long-description", "100000"]},
            "missing": {"command": "/nonexistent/server"},
        }})
        .to_string(),
    );
    let out = h
        .cadre_env(
            &["exec", "--json", "--trust", "go"],
            &[("MCP_TIMEOUT", "1500")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let statuses = status_events(&out);
    let of = |name: &str| {
        statuses
            .iter()
            .find(|e| e["server"] == name && e["status"] != "starting")
            .unwrap_or_else(|| panic!("{name}: {statuses:?}"))
            .clone()
    };
    let failed_with = |name: &str, why: &str| {
        let e = of(name);
        assert_eq!(e["status"], "failed", "{e}");
        assert!(e["message"].as_str().unwrap().contains(why), "{e}");
    };
    failed_with("stuck", "start-up timeout");
    failed_with("missing", "could not start");
    let huge = of("huge");
    assert_eq!(huge["status"], "ready");
    assert_eq!(huge["tools"], 256, "capped");
    let body = &h.records()[0].body;
    let echo = tool_spec(body, "mcp__huge__echo");
    assert!(
        echo["description"].as_str().unwrap().len() < 3000,
        "description capped"
    );
    assert!(!tool_names(body).iter().any(|n| n.starts_with("mcp__stuck")));
}

#[tokio::test]
async fn a_servers_stderr_goes_to_its_private_log_and_keys_stay_out_of_its_environment() {
    let env_file = std::env::temp_dir().join(format!("cadre-mcp-env-{}", std::process::id()));
    let script = calls_script(&[call("mcp__fixture__echo", json!({"text": "x"}))]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    let keyed_env = std::env::temp_dir().join(format!("cadre-mcp-keyed-{}", std::process::id()));
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "fixture": {"command": fixture().display().to_string(), "args": [
                "--stderr", "secret-diagnostics-line", "--env-file", env_file.to_str().unwrap(),
            ]},
            // An entry that names the key gets it (and only then).
            "keyed": {"command": fixture().display().to_string(),
                "args": ["--env-file", keyed_env.to_str().unwrap()],
                "env": {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}"}},
        }})
        .to_string(),
    );
    let out = h
        .cadre_env(
            &["exec", "--trust", "--allow", "mcp__fixture", "go"],
            &[("ANTHROPIC_API_KEY", "sk-ant-test-key-123456")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let log = h.data_dir().join("mcp-logs").join("fixture.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("secret-diagnostics-line"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for r in h.records() {
        assert!(!r.body.to_string().contains("secret-diagnostics-line"));
    }
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_file).unwrap()).unwrap();
    assert!(env.get("ANTHROPIC_API_KEY").is_none(), "{env}");
    assert!(!env.to_string().contains("sk-ant-test-key-123456"));
    let keyed: Value = serde_json::from_str(&std::fs::read_to_string(&keyed_env).unwrap()).unwrap();
    assert_eq!(keyed["ANTHROPIC_API_KEY"], "sk-ant-test-key-123456");
    let _ = std::fs::remove_file(&env_file);
    let _ = std::fs::remove_file(&keyed_env);
}

#[tokio::test]
async fn a_tool_list_change_reaches_the_next_request() {
    let script = calls_script(&[call("mcp__fixture__add_tool", json!({"name": "fresh"}))]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[]));
    let out = h
        .cadre(&["exec", "--trust", "--allow", "mcp__fixture", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(!tool_names(&records[0].body).contains(&"mcp__fixture__fresh".to_string()));
    assert!(
        tool_names(&records[1].body).contains(&"mcp__fixture__fresh".to_string()),
        "{:?}",
        tool_names(&records[1].body)
    );
}

#[tokio::test]
async fn children_share_the_sessions_server_and_their_tool_filter_applies() {
    let pid = std::env::temp_dir().join(format!("cadre-mcp-shared-{}", std::process::id()));
    let calls = std::env::temp_dir().join(format!("cadre-mcp-calls-{}", std::process::id()));
    let _ = std::fs::remove_file(&calls);
    let script = r#"
rules:
  - name: child-a
    when: { first_user: "task-a" }
    replies:
      - tool_calls:
          - { name: mcp__fixture__echo, input: { text: "from a" } }
      - text: "a done"
  - name: child-b
    when: { first_user: "task-b" }
    replies:
      - tool_calls:
          - { name: mcp__fixture__echo, input: { text: "from b" } }
      - text: "b done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "task-a", subagent_type: "mcp-user" } }
          - { name: Agent, input: { description: "b", prompt: "task-b", subagent_type: "mcp-user" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &servers(&[
            "--pid-file",
            pid.to_str().unwrap(),
            "--calls-file",
            calls.to_str().unwrap(),
        ]),
    );
    h.write(
        ".claude/agents/mcp-user.md",
        "---\nname: mcp-user\ndescription: uses the fixture\ntools: Read, mcp__fixture__echo\n---\nUse the tools.\n",
    );
    let out = h
        .cadre(&["exec", "--trust", "--allow", "mcp__fixture", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    for (rule, text) in [("child-a", "echo: from a"), ("child-b", "echo: from b")] {
        let child = rule_records(&records, rule);
        assert_eq!(child.len(), 2, "{rule}");
        assert_eq!(
            tool_names(&child[0].body),
            vec!["Read".to_string(), "mcp__fixture__echo".to_string()],
            "{rule}: the filter keeps only the tools listed"
        );
        assert_eq!(tool_results(&child[1].body)[0].0, text, "{rule}");
    }
    // One process served both children.
    let calls_seen = std::fs::read_to_string(&calls).unwrap();
    let pids: Vec<u64> = calls_seen
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["pid"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(pids.len(), 2, "{calls_seen}");
    assert_eq!(pids[0], pids[1], "{calls_seen}");
    let _ = std::fs::remove_file(&calls);
    let _ = std::fs::remove_file(&pid);
}

#[tokio::test]
async fn cadre_mcp_adds_lists_gets_and_removes_servers() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let f = fixture().display().to_string();
    let out = h
        .cadre(&[
            "mcp",
            "add",
            "fx",
            "-e",
            "TOKEN=abc",
            "--",
            &f,
            "--name",
            "fx",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let file = h.data_dir().join("mcp.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["mcpServers"]["fx"]["command"], f);
    assert_eq!(json["mcpServers"]["fx"]["args"], json!(["--name", "fx"]));
    assert_eq!(json["mcpServers"]["fx"]["env"]["TOKEN"], "abc");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let again = h.cadre(&["mcp", "add", "fx", "--", &f]).await;
    assert_eq!(again.status.code(), Some(2), "a name is added once");

    let out = h
        .cadre(&[
            "mcp",
            "add",
            "--transport",
            "http",
            "remote",
            "http://127.0.0.1:9/mcp",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));

    let list = h
        .cadre_env(&["mcp", "list"], &[("MCP_TIMEOUT", "3000")])
        .await;
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(text.contains("fx: ") && text.contains("ready"), "{text}");
    assert!(text.contains("mcp__fx__echo"), "{text}");
    assert!(
        text.contains("remote: http://127.0.0.1:9/mcp (http) · failed"),
        "{text}"
    );

    let get = h.cadre(&["mcp", "get", "fx"]).await;
    let text = stdout(&get);
    assert!(
        text.contains("scope: user") && text.contains("env: TOKEN"),
        "{text}"
    );
    assert!(!text.contains("abc"), "values stay hidden: {text}");

    let out = h.cadre(&["mcp", "remove", "fx"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(json["mcpServers"].get("fx").is_none());
    let gone = h.cadre(&["mcp", "get", "fx"]).await;
    assert_eq!(gone.status.code(), Some(2));
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// When process `pid` started (`/proc/<pid>/stat` field 22), so a waiter can
/// tell the process it saw from a later one that got the same pid.
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: state is field 3.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// A Bash command that waits until the test creates `file`.
fn wait_command(file: &std::path::Path) -> String {
    format!("while [ ! -e {} ]; do sleep 0.05; done", file.display())
}

/// A temp dir (kept while the returned guard lives) with the paths an
/// inline-server test uses: the server's pid file, the file the child
/// waits for, and the file the parent waits for.
fn wait_files() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let (pid, gate, after) = (path("pid"), path("go-on"), path("parent-goes-on"));
    (dir, pid, gate, after)
}

/// Writes the `with-own` definition (an inline server that records its pid
/// in `pid_file`), starts `exec` and waits until that server runs; returns
/// the run and the server's pid.
async fn run_with_own_server(h: &Harness, pid_file: &std::path::Path) -> (common::LiveRun, u32) {
    h.write(
        ".claude/agents/with-own.md",
        &format!(
            "---\nname: with-own\ndescription: has its own server\nmcpServers:\n  - own:\n      command: {}\n      args: [\"--pid-file\", \"{}\"]\n---\nUse it.\n",
            fixture().display(),
            pid_file.display()
        ),
    );
    let run = h.spawn_json(&[
        "exec", "--json", "--trust", "--allow", "mcp__own", "--allow", "Bash", "go",
    ]);
    common::wait_until("the child's server writes its pid", || pid_file.exists()).await;
    let pid = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (run, pid)
}

#[tokio::test]
async fn an_inline_server_runs_only_while_its_child_runs_whichever_way_the_child_ends() {
    // The child calls `peek`, then a command that waits for a file the test
    // writes once it has seen the server's process alive.
    for (ending, child_replies) in [
        ("completes", "      - text: \"child done\"\n"),
        ("fails", "      - fail: { status: 400 }\n"),
    ] {
        let (_dir, pid_file, gate, after) = wait_files();
        let script = format!(
            r#"
rules:
  - name: child
    when: {{ first_user: "own-task" }}
    replies:
      - tool_calls:
          - {{ name: mcp__own__peek, input: {{}} }}
          - {{ name: Bash, input: {{ command: "{gate}", description: "wait" }} }}
{child_replies}  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "own", prompt: "own-task", subagent_type: "with-own" }} }}
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{after}", description: "wait" }} }}
      - text: "parent done"
"#,
            gate = wait_command(&gate),
            after = wait_command(&after),
        );
        let h = Harness::new(&script, Wire::Anthropic).await;
        let (run, pid) = run_with_own_server(&h, &pid_file).await;
        assert!(alive(pid), "{ending}: the server runs while the child does");
        std::fs::write(&gate, "").unwrap();
        // The parent still runs (its command waits for the test): the
        // server went with the child, not with cadre.
        common::wait_until("the child's server is gone", || !alive(pid)).await;
        std::fs::write(&after, "").unwrap();
        let (status, _) = run.finish().await;
        assert!(status.success(), "{ending}");
        let records = h.records();
        let child = rule_records(&records, "child");
        assert!(tool_names(&child[0].body).contains(&"mcp__own__echo".to_string()));
        assert_eq!(tool_results(&child[1].body)[0].0, "peeked", "{ending}");
        let parent = rule_records(&records, "parent");
        assert!(
            !tool_names(&parent[0].body)
                .iter()
                .any(|n| n.starts_with("mcp__own")),
            "{ending}: the parent never gets the child's own server"
        );
    }
}

#[tokio::test]
async fn a_ten_megabyte_result_is_cut_to_the_output_cap_and_a_noisy_server_still_works() {
    let script = calls_script(&[
        call("mcp__fixture__big", json!({"bytes": 10 * 1024 * 1024})),
        call("mcp__noisy__echo", json!({"text": "through the noise"})),
    ]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    let f = fixture().display().to_string();
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "fixture": {"command": f},
            "noisy": {"command": f, "args": ["--garbage-stdout"]},
        }})
        .to_string(),
    );
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--trust",
            "--allow",
            "mcp__fixture",
            "--allow",
            "mcp__noisy",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert!(!results[0].1);
    assert!(results[0].0.len() < 70 * 1024, "{}", results[0].0.len());
    assert!(results[0].0.contains("[truncated"), "marked as cut");
    assert_eq!(
        results[1],
        ("echo: through the noise".to_string(), false),
        "{:?}",
        status_events(&out)
    );
}

#[tokio::test]
async fn the_line_front_end_reports_the_server_and_slash_mcp_lists_its_tools() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Answer one.\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(".mcp.json", &servers(&[]));
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &["--no-tui", "--trust"]);
    // Status lines that come while the prompt waits are shown with the next turn.
    pty.type_line("hello");
    cadre.wait_for_stdout("Answer one.").await;
    cadre
        .wait_for_stderr("MCP server fixture: ready (", 1)
        .await;
    pty.type_line("/mcp");
    cadre.wait_for_stderr("  mcp__fixture__echo", 1).await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let err = cadre.stderr();
    assert!(
        err.lines()
            .any(|l| l.starts_with("fixture: ") && l.contains(" · ready · ")),
        "{err}"
    );
    let records = h.records();
    assert_eq!(records.len(), 1, "/mcp never reaches the model");
    assert!(!records[0].body.to_string().contains("/mcp"));
}

#[tokio::test]
async fn an_inline_server_goes_with_a_background_child_that_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let stop_now = dir.path().join("stop-now");
    let after = dir.path().join("after");
    let never = dir.path().join("never");
    let wait = wait_command;
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "own-task" }}
    replies:
      - tool_calls:
          - {{ name: mcp__own__peek, input: {{}} }}
          - {{ name: Bash, input: {{ command: "{never}", description: "wait forever" }} }}
      - text: "child done"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "own", prompt: "own-task", subagent_type: "with-own", run_in_background: true }} }}
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{stop_now}", description: "wait" }} }}
      - tool_calls:
          - {{ name: TaskStop, input: {{ task_id: "{{{{task_id}}}}" }} }}
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{after}", description: "wait" }} }}
      - text: "parent done"
      # The stopped task's notice may come after that reply, in a turn of its own.
      - text: "noted"
"#,
        never = wait(&never),
        stop_now = wait(&stop_now),
        after = wait(&after),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let (run, pid) = run_with_own_server(&h, &pid_file).await;
    assert!(alive(pid));
    std::fs::write(&stop_now, "").unwrap();
    // The parent stops the child and then waits: the server went with the child.
    common::wait_until("the stopped child's server is gone", || !alive(pid)).await;
    std::fs::write(&after, "").unwrap();
    let (status, events) = run.finish().await;
    assert!(status.success());
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "task_ended" && e["status"] == "cancelled"),
        "the child was stopped"
    );
}

#[tokio::test]
async fn a_streamable_http_server_is_reached_by_its_url_with_variables_expanded() {
    let dir = tempfile::tempdir().unwrap();
    let url_file = dir.path().join("url");
    let _server = tokio::process::Command::new(fixture())
        .args(["--http", url_file.to_str().unwrap()])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    common::wait_until("the HTTP server listens", || url_file.exists()).await;
    let url = std::fs::read_to_string(&url_file).unwrap();
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_string();
    let script = calls_script(&[
        call("mcp__remote__echo", json!({"text": "over http"})),
        call("mcp__remote__add", json!({"a": 1, "b": 2})),
    ]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {"remote": {
            "type": "http",
            "url": "http://127.0.0.1:${REMOTE_PORT}/mcp",
            "headers": {"Authorization": "Bearer ${REMOTE_TOKEN:-none}"},
        }}})
        .to_string(),
    );
    let out = h
        .cadre_env(
            &["exec", "--json", "--trust", "--allow", "mcp__remote", "go"],
            &[("REMOTE_PORT", port.as_str())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let ready = status_events(&out)
        .into_iter()
        .find(|e| e["status"] != "starting")
        .unwrap();
    assert_eq!(ready["status"], "ready", "{ready}");
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0], ("echo: over http".to_string(), false));
    assert_eq!(results[1], ("3".to_string(), false));
}

#[tokio::test]
async fn the_tui_shows_the_servers_status_and_slash_mcp_lists_its_tools() {
    if !common::tmux::tmux_available() {
        return;
    }
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Answer one.\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(".mcp.json", &servers(&[]));
    let pane = common::tmux::Pane::start(&h, &["--trust"]);
    pane.wait_text("MCP server fixture: ready (").await;
    pane.type_text("/mcp");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("mcp__fixture__echo").await;
    assert!(screen.contains("fixture"), "{screen}");
    assert!(h.records().is_empty(), "/mcp never reaches the model");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn a_resumed_childs_inline_server_goes_when_the_resumed_run_ends() {
    let (_dir, pid_file, gate, after) = wait_files();
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "own-task" }}
    replies:
      - text: "first run done"
      - tool_calls:
          - {{ name: mcp__own__peek, input: {{}} }}
          - {{ name: Bash, input: {{ command: "{gate}", description: "wait" }} }}
      - text: "second run done"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "own", prompt: "own-task", subagent_type: "with-own", name: "own" }} }}
      - tool_calls:
          - {{ name: SendMessage, input: {{ to: "own", message: "once more" }} }}
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{after}", description: "wait" }} }}
      - text: "waiting"
      - text: "parent done"
"#,
        gate = wait_command(&gate),
        after = wait_command(&after),
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let (run, first) = run_with_own_server(&h, &pid_file).await;
    let first_started = started(first);
    // The first run ends, and its server with it (a busy machine may give
    // its pid to another process by the time this looks).
    common::wait_until("the first run's server is gone", || {
        !alive(first) || started(first) != first_started
    })
    .await;
    // Resumed, the child starts its server again on use.
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
    };
    common::wait_until("the resumed run's server writes its pid", || {
        read_pid().is_some_and(|p| p != first)
    })
    .await;
    let second = read_pid().unwrap();
    assert!(
        alive(second),
        "the server runs while the resumed child does"
    );
    std::fs::write(&gate, "").unwrap();
    // The parent still waits: the server went with the resumed run.
    common::wait_until("the resumed run's server is gone", || !alive(second)).await;
    std::fs::write(&after, "").unwrap();
    let (status, _) = run.finish().await;
    assert!(status.success());
    let records = h.records();
    let child = rule_records(&records, "child");
    let results = tool_results(&child.last().unwrap().body);
    assert!(results.iter().any(|(t, _)| t == "peeked"), "{results:?}");
}
