//! `cadre mcp serve` driven by an rmcp client, as Claude Code or Codex would
//! drive it: the tools it lists, a `Read`, an `Agent` call running `Explore`
//! against the mock model, and the permission policy refusing what would
//! need a question (`Bash` without a rule, a `Write` outside the project).

use crate::common;

use common::{Harness, Wire};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The child `Explore` gets the task as its first message and reports at once.
const SCRIPT: &str = r#"rules:
  - name: explore
    when: { first_user: "Where is the answer kept?" }
    replies:
      - text: "EXPLORE-REPORT: the answer is kept in notes.txt."
"#;

/// `cadre mcp serve <args>` in the harness's project, with an rmcp client on it.
async fn serve(h: &Harness, args: &[&str]) -> RunningService<RoleClient, ()> {
    let mut full = vec!["mcp", "serve"];
    full.extend_from_slice(args);
    let transport = TokioChildProcess::new(h.command(&full, &[])).expect("cadre starts");
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool} call fails at the protocol level: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

#[tokio::test]
async fn a_client_lists_the_tools_reads_a_file_and_runs_explore() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    h.write("notes.txt", "the answer is 42\n");
    let client = serve(&h, &[]).await;

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "Agent"]
    );
    // The schemas are the model's own: Read takes a file_path, Agent a subagent_type.
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object((*tool.input_schema).clone())
    };
    assert!(schema("Read")["properties"]["file_path"].is_object());
    assert!(schema("Agent")["properties"]["subagent_type"].is_object());
    let agent = tools.iter().find(|t| t.name == "Agent").unwrap();
    let description = agent.description.as_deref().unwrap_or_default();
    assert!(description.contains("- Explore:"), "{description}");
    assert!(!description.contains("<system-reminder>"), "{description}");

    let read = call(
        &client,
        "Read",
        json!({"file_path": h.path("notes.txt").display().to_string()}),
    )
    .await;
    assert!(!is_error(&read), "{}", text(&read));
    assert!(text(&read).contains("the answer is 42"), "{}", text(&read));

    let report = call(
        &client,
        "Agent",
        json!({
            "description": "find the answer",
            "prompt": "Where is the answer kept?",
            "subagent_type": "Explore",
        }),
    )
    .await;
    assert!(!is_error(&report), "{}", text(&report));
    assert!(
        text(&report).contains("EXPLORE-REPORT: the answer is kept in notes.txt."),
        "{}",
        text(&report)
    );
    // The child ran as Explore, on the mock.
    let records = h.records();
    assert_eq!(records.len(), 1, "one request, the child's");
    let system = records[0].body["system"].to_string();
    assert!(
        system.contains("You are Explore"),
        "the child's system prompt: {system}"
    );

    // A tool cadre does not serve is a protocol error, not a result.
    let unknown = client
        .call_tool(CallToolRequestParams::new("TodoWrite").with_arguments(Default::default()))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    client.cancel().await.expect("the server closes");
}

#[tokio::test]
async fn calls_that_would_need_a_question_are_refused_with_the_rule_to_allow() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let outside = tempfile::tempdir().unwrap();
    let client = serve(&h, &[]).await;

    let bash = call(&client, "Bash", json!({"command": "echo served"})).await;
    assert!(is_error(&bash), "{}", text(&bash));
    let why = text(&bash);
    assert!(
        why.contains("cadre refused Bash: needs approval under permission mode default"),
        "{why}"
    );
    assert!(why.contains("--allow 'Bash(echo served:*)'"), "{why}");

    let target = outside.path().join("planted.txt");
    let write = call(
        &client,
        "Write",
        json!({"file_path": target.display().to_string(), "content": "x"}),
    )
    .await;
    assert!(is_error(&write), "{}", text(&write));
    assert!(
        text(&write).contains("it writes outside the project"),
        "{}",
        text(&write)
    );
    assert!(!target.exists(), "nothing was written outside the project");
    client.cancel().await.expect("the server closes");
}

#[tokio::test]
async fn an_allow_rule_lets_the_command_run_and_a_deny_rule_refuses_it() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let client = serve(&h, &["--allow", "Bash(echo:*)", "--deny", "Bash(rm:*)"]).await;

    let echo = call(&client, "Bash", json!({"command": "echo served"})).await;
    assert!(!is_error(&echo), "{}", text(&echo));
    assert!(text(&echo).contains("served"), "{}", text(&echo));

    h.write("keep.txt", "kept");
    let rm = call(&client, "Bash", json!({"command": "rm keep.txt"})).await;
    assert!(is_error(&rm), "{}", text(&rm));
    assert!(
        text(&rm).contains("denied by the rule Bash(rm:*)"),
        "{}",
        text(&rm)
    );
    assert_eq!(h.read("keep.txt"), "kept");
    client.cancel().await.expect("the server closes");
}
