//! MCP beyond tools, against the `cadre-mcp-fixture` server: its
//! `instructions` in the main agent's system prompt, its resources through
//! `ListMcpResourcesTool` and `ReadMcpResourceTool` (decided on by the
//! permission policy, following list changes), and, at the hub, its prompts
//! as `/mcp__<server>__<prompt>` commands and resources read as text.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use cadre_core::mcp::{McpConfig, McpHub, McpTimeouts, ServerConfig, ServerScope, ServerTransport};
use cadre_core::protocol::EventSink;
use common::mcp_fixture as fixture;
use common::{Harness, Wire, stderr, system_text, tool_results};
use serde_json::{Value, json};

/// `{"mcpServers": {name: {"command": <fixture>, "args": args}, …}}`.
fn servers(entries: &[(&str, &[&str])]) -> String {
    let map: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(name, args)| {
            (
                name.to_string(),
                json!({"command": fixture().display().to_string(), "args": args}),
            )
        })
        .collect();
    json!({ "mcpServers": map }).to_string()
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

/// A model that makes `calls` (one reply each), then ends.
fn calls_script(replies: &[&[Value]]) -> String {
    let mut script = String::from("rules:\n  - name: main\n    replies:\n");
    for calls in replies {
        script.push_str("      - tool_calls:\n");
        for c in *calls {
            script.push_str(&format!("          - {c}\n"));
        }
    }
    script.push_str("      - text: \"done\"\n");
    script
}

fn call(name: &str, input: Value) -> Value {
    json!({"name": name, "input": input})
}

fn read_note() -> Value {
    call(
        "ReadMcpResourceTool",
        json!({"server": "fixture", "uri": "mem://note"}),
    )
}

#[tokio::test]
async fn the_servers_instructions_join_the_system_prompt_before_the_first_request() {
    let h = Harness::new(&calls_script(&[&[read_note()]]), Wire::Anthropic).await;
    let long = "y".repeat(3000);
    h.write(
        ".mcp.json",
        &servers(&[
            ("fixture", &[]),
            ("quiet", &["--instructions", ""]),
            ("long", &["--instructions", &long]),
        ]),
    );
    let out = h
        .cadre(&["exec", "--trust", "--allow", "ReadMcpResourceTool", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 2);
    let system = system_text(&records[0].body);
    let section = system
        .find("# MCP server instructions")
        .map(|i| &system[i..])
        .unwrap_or_else(|| panic!("no MCP section in {system}"));
    assert!(
        section.contains("## fixture\n\nFixture instructions: always greet politely."),
        "{section}"
    );
    assert!(!section.contains("## quiet"), "{section}");
    // Cut at 2 KiB, marked.
    assert!(section.contains("## long\n\n"), "{section}");
    assert!(section.contains(&format!("{}… [instructions cut]", "y".repeat(2048))));
    assert!(!section.contains(&"y".repeat(2049)));
    // The same bytes in every request: the prompt cache holds.
    assert_eq!(system, system_text(&records[1].body));
}

#[tokio::test]
async fn a_server_without_resources_or_instructions_adds_neither_tools_nor_a_section() {
    let h = Harness::new(&calls_script(&[]), Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[("fixture", &["--no-extras"])]));
    let out = h.cadre(&["exec", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &h.records()[0].body;
    let names = tool_names(body);
    assert!(
        names.contains(&"mcp__fixture__echo".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("McpResource")),
        "{names:?}"
    );
    assert!(!system_text(body).contains("# MCP server instructions"));
}

#[tokio::test]
async fn the_model_lists_and_reads_resources_through_the_two_tools() {
    for wire in common::BOTH_WIRES {
        let script = calls_script(&[&[
            call("ListMcpResourcesTool", json!({})),
            read_note(),
            call(
                "ReadMcpResourceTool",
                json!({"server": "fixture", "uri": "mem://logo"}),
            ),
            call(
                "ReadMcpResourceTool",
                json!({"server": "fixture", "uri": "mem://missing"}),
            ),
            call(
                "ReadMcpResourceTool",
                json!({"server": "nowhere", "uri": "mem://note"}),
            ),
        ]]);
        let h = Harness::new(&script, wire).await;
        h.write(".mcp.json", &servers(&[("fixture", &[])]));
        let out = h
            .cadre(&[
                "exec",
                "--trust",
                "--allow",
                "ListMcpResourcesTool",
                "--allow",
                "ReadMcpResourceTool",
                "go",
            ])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        assert_eq!(records.len(), 2, "{wire:?}");
        if matches!(wire, Wire::Anthropic) {
            let names = tool_names(&records[0].body);
            assert!(
                names.contains(&"ListMcpResourcesTool".to_string())
                    && names.contains(&"ReadMcpResourceTool".to_string()),
                "{names:?}"
            );
        }
        let results = tool_results(&records[1].body);
        let listed: Value = serde_json::from_str(&results[0].0).unwrap();
        assert!(!results[0].1);
        assert!(
            listed
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["server"] == "fixture"
                    && r["uri"] == "mem://note"
                    && r["name"] == "note"
                    && r["mimeType"] == "text/plain"
                    && r["description"] == "A short note."),
            "{listed}"
        );
        assert_eq!(
            results[1],
            ("The note says 42.".to_string(), false),
            "{wire:?}"
        );
        assert!(
            !results[2].1
                && results[2].0.contains("image/png data")
                && !results[2].0.contains("iVBOR"),
            "{:?}",
            results[2]
        );
        assert!(
            results[3].1 && results[3].0.contains("no resource mem://missing"),
            "{:?}",
            results[3]
        );
        assert!(
            results[4].1
                && results[4]
                    .0
                    .contains("no connected MCP server named nowhere"),
            "{:?}",
            results[4]
        );
    }
}

#[tokio::test]
async fn resource_reads_pass_the_permission_policy() {
    let script = calls_script(&[&[read_note()]]);
    for (args, ok, why) in [
        (vec![], false, "no one can approve"),
        (
            vec!["--allow", "mcp__fixture", "--deny", "ReadMcpResourceTool"],
            false,
            "denied by the rule ReadMcpResourceTool",
        ),
        // A rule denying the whole server covers its resources.
        (
            vec!["--allow", "ReadMcpResourceTool", "--deny", "mcp__fixture"],
            false,
            "denied by the rule mcp__fixture",
        ),
        // Reading is read-only: plan mode lets an allowed read run.
        (
            vec![
                "--permission-mode",
                "plan",
                "--allow",
                "ReadMcpResourceTool",
            ],
            true,
            "",
        ),
    ] {
        let h = Harness::new(&script, Wire::Anthropic).await;
        h.write(".mcp.json", &servers(&[("fixture", &[])]));
        let mut full = vec!["exec", "--trust"];
        full.extend(args.iter().copied());
        full.push("go");
        let out = h.cadre(&full).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let result = tool_results(&h.records()[1].body).remove(0);
        assert_eq!(!result.1, ok, "{args:?}: {result:?}");
        if ok {
            assert_eq!(result.0, "The note says 42.");
        } else {
            assert!(result.0.contains(why), "{args:?}: {}", result.0);
            assert!(!result.0.contains("42"), "{args:?}");
        }
    }
}

#[tokio::test]
async fn a_resource_list_change_reaches_the_next_listing() {
    let script = calls_script(&[
        &[call("ListMcpResourcesTool", json!({"server": "fixture"}))],
        &[call(
            "mcp__fixture__add_resource",
            json!({"uri": "mem://fresh", "text": "fresh text"}),
        )],
        &[call("ListMcpResourcesTool", json!({"server": "fixture"}))],
    ]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[("fixture", &[])]));
    let out = h
        .cadre(&[
            "exec",
            "--trust",
            "--allow",
            "mcp__fixture",
            "--allow",
            "ListMcpResourcesTool",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 4);
    let before = tool_results(&records[1].body).pop().unwrap();
    assert!(!before.0.contains("mem://fresh"), "{before:?}");
    let after = tool_results(&records[3].body).pop().unwrap();
    assert!(
        after.0.contains("mem://fresh") && after.0.contains("mem://note"),
        "{after:?}"
    );
}

#[tokio::test]
async fn a_child_gets_the_resource_tools_its_definition_lists() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "task" }
    replies:
      - tool_calls:
          - { name: ReadMcpResourceTool, input: { server: fixture, uri: "mem://note" } }
      - text: "child done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "r", prompt: "task", subagent_type: "reader" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[("fixture", &[])]));
    h.write(
        ".claude/agents/reader.md",
        "---\nname: reader\ndescription: reads resources\ntools: Read, ReadMcpResourceTool\n---\nRead.\n",
    );
    let out = h
        .cadre(&["exec", "--trust", "--allow", "ReadMcpResourceTool", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = common::rule_records(&records, "child");
    assert_eq!(
        tool_names(&child[0].body),
        vec!["Read".to_string(), "ReadMcpResourceTool".to_string()]
    );
    assert_eq!(
        tool_results(&child[1].body)[0],
        ("The note says 42.".to_string(), false)
    );
}

/// A hub over stdio servers (name, command), started, not waited for.
fn started_hub(dir: &std::path::Path, servers: &[(&str, String)]) -> McpHub {
    let mut config = McpConfig::default();
    for (name, command) in servers {
        config.servers.insert(
            name.to_string(),
            ServerConfig {
                name: name.to_string(),
                transport: ServerTransport::Stdio {
                    command: command.clone(),
                    args: Vec::new(),
                    env: BTreeMap::new(),
                },
                scope: ServerScope::Flag,
                path: dir.join("servers.json"),
            },
        );
    }
    let hub = McpHub::new(&config, dir, &dir.join("logs"), McpTimeouts::default());
    hub.start_all(&EventSink::discard());
    hub
}

/// A hub over one fixture server named `fx`, started and settled.
async fn fixture_hub(dir: &std::path::Path) -> McpHub {
    let hub = started_hub(dir, &[("fx", fixture().display().to_string())]);
    hub.settled().await;
    hub
}

#[tokio::test]
async fn prompt_commands_and_resource_reads_wait_for_starting_servers_and_name_failed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let hub = started_hub(
        dir.path(),
        &[
            ("fx", fixture().display().to_string()),
            ("gone", "/nonexistent/server".to_string()),
        ],
    );
    // At once, as `cadre exec "/mcp__fx__greet Bob"` would: the server is still starting.
    assert_eq!(
        hub.run_prompt_command("mcp__fx__greet", "Bob").await,
        Some(Ok("Say hello to Bob.".to_string()))
    );
    let failed = hub
        .run_prompt_command("mcp__gone__greet", "Bob")
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        failed.contains("MCP server gone is not connected") && failed.contains("could not start"),
        "{failed}"
    );
    let failed = hub
        .read_resource_text("gone", "mem://note")
        .await
        .unwrap_err();
    assert!(
        failed.contains("MCP server gone is not connected"),
        "{failed}"
    );
    assert_eq!(hub.run_prompt_command("mcp__nobody__greet", "").await, None);
    hub.close_all().await;
}

#[tokio::test]
async fn the_hub_runs_prompts_as_commands_and_reads_resources_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let hub = fixture_hub(dir.path()).await;
    assert_eq!(
        hub.instructions(),
        vec![(
            "fx".to_string(),
            "Fixture instructions: always greet politely.".to_string()
        )]
    );
    let commands = hub.prompt_commands();
    let greet = commands
        .iter()
        .find(|c| c.command == "mcp__fx__greet")
        .unwrap_or_else(|| panic!("{commands:?}"));
    assert_eq!(greet.description, "Ask for a greeting.");
    assert_eq!(greet.arguments, vec!["name", "style"]);
    assert!(
        commands
            .iter()
            .any(|c| c.command == "mcp__fx__daily_report"),
        "{commands:?}"
    );

    let run = |args: &'static str| hub.run_prompt_command("mcp__fx__greet", args);
    assert_eq!(run("Bob").await, Some(Ok("Say hello to Bob.".to_string())));
    assert_eq!(
        run("'Ann Lee' style=warm").await,
        Some(Ok("Say hello to Ann Lee. Make it warm.".to_string()))
    );
    let missing = run("").await.unwrap().unwrap_err();
    assert!(
        missing.contains("`name`") && missing.contains("/mcp__fx__greet <name> [style]"),
        "{missing}"
    );
    assert_eq!(
        hub.run_prompt_command("mcp__fx__daily_report", "").await,
        Some(Ok("Report on today.".to_string()))
    );
    let mixed = hub
        .run_prompt_command("mcp__fx__mixed", "")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        mixed,
        "Read the note.\n\n[resource mem://note]\nThe note says 42.\n\n[image image/png: 69 bytes]\n\nNoted."
    );
    assert_eq!(hub.run_prompt_command("mcp__fx__nope", "").await, None);
    assert_eq!(hub.run_prompt_command("mcp__other__greet", "x").await, None);

    assert_eq!(
        hub.read_resource_text("fx", "mem://note").await,
        Ok("The note says 42.".to_string())
    );
    let logo = hub.read_resource_text("fx", "mem://logo").await.unwrap();
    assert!(
        logo.contains("[resource mem://logo: image/png data"),
        "{logo}"
    );
    let missing = hub
        .read_resource_text("fx", "mem://none")
        .await
        .unwrap_err();
    assert!(missing.contains("no resource mem://none"), "{missing}");
    let nowhere = hub
        .read_resource_text("nope", "mem://note")
        .await
        .unwrap_err();
    assert!(nowhere.contains("no MCP server named nope"), "{nowhere}");

    let resources = hub.resources();
    let uris: Vec<&str> = resources.iter().map(|(_, r)| r.uri.as_str()).collect();
    assert_eq!(uris, vec!["mem://note", "mem://logo"]);
    assert!(resources.iter().all(|(s, _)| s == "fx"));
    assert_eq!(resources[0].1.mime_type.as_deref(), Some("text/plain"));
    hub.close_all().await;
}

#[tokio::test]
async fn the_hub_reads_prompts_and_resources_again_when_the_server_says_they_changed() {
    let dir = tempfile::tempdir().unwrap();
    let hub = fixture_hub(dir.path()).await;
    let server = hub.server("fx").unwrap().clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let before = hub.generation();
    for (tool, args) in [
        ("add_prompt", json!({"name": "late"})),
        (
            "add_resource",
            json!({"uri": "mem://late", "text": "late text"}),
        ),
    ] {
        let r = server
            .call(tool, args.as_object().unwrap().clone(), &cancel)
            .await;
        assert!(!r.is_error, "{}", r.text);
    }
    // The notifications come on their own; each refresh takes what came.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        hub.refresh().await;
        let prompts = hub.prompt_commands();
        let has_prompt = prompts.iter().any(|c| c.command == "mcp__fx__late");
        let has_resource = hub.resources().iter().any(|(_, r)| r.uri == "mem://late");
        if has_prompt && has_resource {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not re-read: {prompts:?} {:?}",
            hub.resources()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(hub.generation() > before, "the agents' lists follow");
    assert_eq!(
        hub.run_prompt_command("mcp__fx__late", "").await,
        Some(Ok("Prompt late added at run time.".to_string()))
    );
    assert_eq!(
        hub.read_resource_text("fx", "mem://late").await,
        Ok("late text".to_string())
    );
    hub.close_all().await;
}

#[tokio::test]
async fn cadre_mcp_list_shows_prompt_commands_and_resources() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(".mcp.json", &servers(&[("fixture", &[])]));
    let out = h.cadre(&["--trust", "mcp", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = common::stdout(&out);
    assert!(text.contains("· 3 prompts · 2 resources"), "{text}");
    assert!(
        text.contains("  /mcp__fixture__greet <name> [style]"),
        "{text}"
    );
    assert!(text.contains("  /mcp__fixture__daily_report"), "{text}");
    assert!(text.contains("  @fixture:mem://note"), "{text}");
}
