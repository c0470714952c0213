//! A real third-party MCP server, the reference `server-everything` from the
//! npm registry (pinned; `./scripts/test` installs it and names it in
//! `CADRE_TEST_MCP_EVERYTHING`), started over stdio from a project's
//! `.mcp.json` and called through a scripted model.

use crate::common;

use common::{Harness, Wire, stderr, tool_results};
use serde_json::json;

/// The server's program, or `None` (with a note) where it was not installed;
/// under CI its absence is a failure, not a skip.
fn everything() -> Option<String> {
    match std::env::var("CADRE_TEST_MCP_EVERYTHING") {
        Ok(path) if std::path::Path::new(&path).exists() => Some(path),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "CADRE_TEST_MCP_EVERYTHING names no installed server-everything (./scripts/test installs it)"
            )
        }
        _ => {
            eprintln!("SKIPPED: server-everything is not installed (run ./scripts/test)");
            None
        }
    }
}

#[tokio::test]
async fn server_everythings_echo_sum_and_image_reach_the_next_request() {
    let Some(program) = everything() else { return };
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: mcp__everything__echo, input: { message: "hello from cadre" } }
          - { name: mcp__everything__get-sum, input: { a: 2, b: 40 } }
          - { name: mcp__everything__get-tiny-image, input: {} }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {"everything": {"command": program, "args": ["stdio"]}}}).to_string(),
    );
    let out = h
        .cadre_env(
            &["exec", "--trust", "--allow", "mcp__everything", "go"],
            &[("MCP_TIMEOUT", "60000")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 2, "{}", stderr(&out));
    let names: Vec<&str> = records[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
    ] {
        assert!(names.contains(&tool), "{tool} in {names:?}");
    }
    let results = tool_results(&records[1].body);
    assert_eq!(results[0], ("Echo: hello from cadre".to_string(), false));
    assert!(
        !results[1].1 && results[1].0.contains("42"),
        "{:?}",
        results[1]
    );
    assert!(
        !results[2].1 && results[2].0.contains("[image image/png"),
        "{:?}",
        results[2]
    );
}
