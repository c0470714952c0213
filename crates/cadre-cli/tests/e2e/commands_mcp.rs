//! MCP prompts and resources in messages, through the binary: a server's
//! prompt runs as `/mcp__<server>__<prompt> args` (its messages are what is
//! sent), and `@<server>:<uri>` attaches a resource, under the MCP
//! permission rules.

use crate::common;

use common::{Harness, Wire, events, mcp_fixture, stderr, user_texts};
use serde_json::json;

fn with_fixture(h: &Harness) {
    let servers = json!({"mcpServers": {"fixture": {
        "command": mcp_fixture().display().to_string(),
        "args": [],
    }}});
    h.write(".mcp.json", &servers.to_string());
}

#[tokio::test]
async fn an_mcp_prompt_runs_as_a_command_with_its_arguments() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Hello sent.\"\n",
        Wire::Anthropic,
    )
    .await;
    with_fixture(&h);
    let out = h
        .cadre(&["exec", "--trust", "/mcp__fixture__greet Ann"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 1);
    let text = user_texts(&records[0].body);
    assert!(text.contains("/mcp__fixture__greet Ann"), "{text}");
    assert!(text.contains("Say hello to Ann."), "{text}");

    // A prompt that does not exist is named, and nothing is sent.
    let out = h.cadre(&["exec", "--trust", "/mcp__fixture__nope"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("mcp__fixture__nope"),
        "{}",
        stderr(&out)
    );
    assert_eq!(h.records().len(), 1);
}

#[tokio::test]
async fn a_resource_mention_attaches_it_unless_a_rule_denies_it() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Read it.\"\n",
        Wire::Anthropic,
    )
    .await;
    with_fixture(&h);
    let out = h
        .cadre(&["exec", "--trust", "What does @fixture:mem://note say?"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = user_texts(&h.records()[0].body);
    assert!(text.contains("The note says 42."), "{text}");

    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--trust",
            "--deny",
            "ReadMcpResourceTool",
            "What does @fixture:mem://note say?",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warned = events(&out).into_iter().any(|e| {
        e["type"] == "warning"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("@fixture:mem://note was not attached")
    });
    assert!(warned);
    let text = user_texts(&h.records()[1].body);
    assert!(!text.contains("The note says 42."), "{text}");

    // A deny rule on the whole server covers its resources too.
    let out = h
        .cadre(&[
            "exec",
            "--trust",
            "--deny",
            "mcp__fixture",
            "Say @fixture:mem://note",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = user_texts(&h.records()[2].body);
    assert!(!text.contains("The note says 42."), "{text}");
}
