//! Hardening, round 3, for MCP servers and tool output: one cap and one
//! right marker for a cut result, a result over the stdio line limit
//! reported at once, bounded task output and server logs, and a server that
//! fails to start explained from its own log.

use crate::common;

use common::mcp_fixture as fixture;

use common::{Harness, Wire, events, stderr, tool_results};
use serde_json::{Value, json};

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

/// The number in the one `[truncated N bytes]` marker at the end of `text`,
/// and the text before it; fails if there is none or more than one.
fn marker(text: &str) -> (u64, &str) {
    assert_eq!(text.matches("[truncated ").count(), 1, "one marker: {text}");
    let at = text.rfind("[truncated ").unwrap();
    let n = text[at..]
        .strip_prefix("[truncated ")
        .and_then(|t| t.strip_suffix(" bytes]"))
        .unwrap_or_else(|| panic!("the marker ends the text: {}", &text[at..]));
    (n.parse().unwrap(), &text[..at])
}

#[tokio::test]
async fn an_mcp_result_over_the_cap_is_cut_once_and_its_marker_counts_what_was_dropped() {
    let script = calls_script(&[call("mcp__fixture__big", json!({"bytes": 205_000}))]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {"fixture": {"command": fixture().display().to_string()}}})
            .to_string(),
    );
    let out = h
        .cadre(&["exec", "--trust", "--allow", "mcp__fixture", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = tool_results(&h.records()[1].body).remove(0);
    assert!(!is_error, "{text}");
    assert!(text.len() <= 64 * 1024, "{}", text.len());
    let (dropped, kept) = marker(&text);
    let kept_x = kept.bytes().filter(|b| *b == b'x').count() as u64;
    assert_eq!(dropped + kept_x, 205_000, "the marker counts what was cut");
    assert!(dropped > 139_000, "{dropped}");
}

#[tokio::test]
async fn a_glob_listing_over_the_cap_is_cut_once_and_its_marker_counts_what_was_dropped() {
    let script = calls_script(&[call("Glob", json!({"pattern": "files/*.txt"}))]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[tools]\noutput_cap_bytes = 4096\n",
    )
    .unwrap();
    let mut full = 0u64;
    for i in 0..400 {
        let rel = format!("files/a-file-with-a-fairly-long-name-{i:04}.txt");
        h.write(&rel, "");
        full += rel.len() as u64 + 1;
    }
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = tool_results(&h.records()[1].body).remove(0);
    assert!(!is_error, "{text}");
    assert!(text.len() <= 4096, "{}", text.len());
    let (dropped, kept) = marker(&text);
    // The marker sits on a line of its own: a cut inside a line adds a newline.
    let kept = kept.len() as u64;
    assert!(
        dropped == full - kept || dropped == full - (kept - 1),
        "dropped {dropped}, kept {kept} of {full}"
    );
}

#[tokio::test]
async fn a_result_over_the_stdio_line_limit_is_reported_too_large_instead_of_waiting() {
    let script = calls_script(&[call(
        "mcp__fixture__big",
        json!({"bytes": 17 * 1024 * 1024}),
    )]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {"fixture": {"command": fixture().display().to_string()}}})
            .to_string(),
    );
    let out = h
        .cadre_env(
            &["exec", "--trust", "--allow", "mcp__fixture", "go"],
            &[("MCP_TOOL_TIMEOUT", "30000")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = tool_results(&h.records()[1].body).remove(0);
    assert!(is_error, "{text}");
    assert!(text.contains("too large (over 16 MiB)"), "{text}");
    assert!(!text.contains("did not answer"), "{text}");
}

/// `sh -c <script>` as a server entry named `name`.
fn shell_server(name: &str, script: &str) -> String {
    json!({"mcpServers": {name: {"command": "sh", "args": ["-c", script]}}}).to_string()
}

#[tokio::test]
async fn a_servers_stderr_log_stops_at_its_cap_with_a_marker_and_the_server_still_works() {
    let script = calls_script(&[call("mcp__noisy__echo", json!({"text": "heard"}))]);
    let h = Harness::new(&script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[limits]\nmcp_log_max_bytes = 100000\n",
    )
    .unwrap();
    h.write(
        ".mcp.json",
        &shell_server(
            "noisy",
            &format!(
                "head -c 3000000 /dev/zero | tr '\\0' e >&2; exec {}",
                fixture().display()
            ),
        ),
    );
    let out = h
        .cadre(&["exec", "--trust", "--allow", "mcp__noisy", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        tool_results(&h.records()[1].body)[0],
        ("echo: heard".to_string(), false)
    );
    let log = std::fs::read(h.data_dir().join("mcp-logs").join("noisy.log")).unwrap();
    assert!(log.len() <= 100_000 + 200, "{} bytes kept", log.len());
    let text = String::from_utf8_lossy(&log);
    let last = text.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("[cadre:") && last.contains("100000"),
        "the log says where it stopped: {last}"
    );
    assert!(text.starts_with("eeee"), "the start is kept");
}

#[tokio::test]
async fn a_background_commands_output_file_stops_at_its_cap_with_a_marker() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "head -c 3000000 /dev/zero | tr '\\0' o; echo; echo the-end", run_in_background: true, description: "flood" } }
      - text: "started"
      - text: "done"
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[limits]\ntask_output_max_bytes = 100000\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let ended: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_ended")
        .collect();
    assert_eq!(ended.len(), 1, "the command ran to its end");
    let rows = common::tasks(&h);
    let log = std::fs::read(&rows[0].output_path).unwrap();
    assert!(log.len() <= 100_000 + 200, "{} bytes kept", log.len());
    let text = String::from_utf8_lossy(&log);
    let last = text.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("[cadre:") && last.contains("100000"),
        "the output says where it stopped: {last}"
    );
    assert!(!text.contains("the-end"), "nothing after the cap is kept");
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_explained_from_its_log_which_is_named() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: done\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".mcp.json",
        &shell_server(
            "broken",
            "echo 'starting up' >&2; echo 'fatal: cannot read settings.json: no such file' >&2; exit 1",
        ),
    );
    let out = h.cadre(&["exec", "--json", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let failed = events(&out)
        .into_iter()
        .find(|e| e["type"] == "mcp_server_status" && e["status"] == "failed")
        .expect("a failed status");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("fatal: cannot read settings.json: no such file"),
        "the reason from its log: {message}"
    );
    let log = h.data_dir().join("mcp-logs").join("broken.log");
    assert!(
        message.contains(&log.display().to_string()),
        "the log is named: {message}"
    );
    assert!(!message.contains("initialize response"), "{message}");
}
