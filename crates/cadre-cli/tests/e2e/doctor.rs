//! `cadre doctor` and `/doctor` through the binary: a settings file that
//! does not parse, a key that does not apply, an MCP server that fails, a
//! command that shadows a built-in and a hook that timed out are each
//! named; `/init` and `/review` are built-in commands a project's own file
//! of the same name replaces.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, stderr, stdout, user_texts};
use serde_json::{Value, json};

const DONE: &str = "rules:\n  - replies:\n      - text: \"done\"\n";

fn area<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["area"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:?}"))
}

#[tokio::test]
async fn doctor_names_a_broken_settings_file_and_a_failing_mcp_server_and_exits_1() {
    let h = Harness::new(DONE, Wire::Anthropic).await;
    h.write(".claude/settings.json", "{ \"permissions\": ");
    let servers = json!({"mcpServers": {"broken": {"command": "sh", "args": ["-c", "exit 3"]}}});
    h.write(".mcp.json", &servers.to_string());
    let out = h.cadre(&["--trust", "doctor"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let settings_line = text
        .lines()
        .position(|l| l.starts_with("✗ settings:"))
        .unwrap_or_else(|| panic!("{text}"));
    let detail = text.lines().nth(settings_line + 1).unwrap_or_default();
    assert!(detail.contains(".claude/settings.json"), "{text}");
    assert!(text.contains("✗ mcp: 0 ready, 1 failed"), "{text}");
    assert!(text.contains("    broken: failed"), "{text}");
    assert!(text.contains("sandbox:"), "{text}");
    // No request: the doctor never talks to the model.
    assert!(h.records().is_empty());

    let out = h.cadre(&["--trust", "doctor", "--json"]).await;
    assert_eq!(out.status.code(), Some(1));
    let checks: Vec<Value> = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(area(&checks, "settings")["status"], "fail");
    assert_eq!(area(&checks, "mcp")["status"], "fail");
}

#[tokio::test]
async fn doctor_lists_ignored_keys_untrusted_servers_and_shadowed_commands() {
    let h = Harness::new(DONE, Wire::Anthropic).await;
    h.write(".claude/settings.json", r#"{"fooBar": 1}"#);
    let servers = json!({"mcpServers": {"held": {"command": "sh", "args": ["-c", "exit 3"]}}});
    h.write(".mcp.json", &servers.to_string());
    h.write(
        ".claude/commands/review.md",
        "---\ndescription: our review\n---\nReview the way we do.\n",
    );
    let out = h.cadre(&["doctor", "--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let checks: Vec<Value> = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(area(&checks, "settings")["status"], "ok");
    let ignored = area(&checks, "ignored keys");
    assert!(
        ignored["details"].to_string().contains("fooBar"),
        "{ignored}"
    );
    // The untrusted project's server is not started, only named.
    let mcp = area(&checks, "mcp");
    assert_eq!(mcp["status"], "warn", "{mcp}");
    assert!(
        mcp["details"].to_string().contains("held: not started"),
        "{mcp}"
    );
    let skills = area(&checks, "skills");
    let details = skills["details"].to_string();
    assert!(
        details.contains("/review: (built-in /review) is shadowed by")
            && details.contains("review.md"),
        "{skills}"
    );
}

#[tokio::test]
async fn review_and_init_are_built_in_and_a_projects_own_command_wins() {
    let h = Harness::new(DONE, Wire::Anthropic).await;
    let out = h.cadre(&["-p", "/review main"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = user_texts(&h.records()[0].body);
    assert!(sent.contains("What to review: main"), "{sent}");
    assert!(sent.contains("git diff TARGET...HEAD"), "{sent}");
    let out = h.cadre(&["-p", "/init"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = user_texts(&h.records()[1].body);
    assert!(sent.contains("Explore"), "{sent}");
    assert!(sent.contains("CLAUDE.md"), "{sent}");
    h.write(
        ".claude/commands/review.md",
        "---\ndescription: our review\n---\nReview the way we do: $ARGUMENTS\n",
    );
    let out = h.cadre(&["-p", "/review main"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = user_texts(&h.records()[2].body);
    assert!(sent.contains("Review the way we do: main"), "{sent}");
    assert!(!sent.contains("git diff TARGET...HEAD"), "{sent}");
}

#[tokio::test]
async fn doctor_in_a_session_names_a_hook_that_timed_out() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"First answer.\"\n",
        Wire::Anthropic,
    )
    .await;
    let settings = json!({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "sleep 30", "timeout": 1}]}
    ]}});
    crate::hooks::user_settings(&h, &settings.to_string());
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("hello");
    cadre.wait_for_stdout("First answer.").await;
    pty.type_line("/doctor");
    cadre.wait_for_stderr("hooks:", 1).await;
    let text = cadre.stderr();
    assert!(
        text.contains("1 failed or timed out in this session"),
        "{text}"
    );
    assert!(
        text.contains("UserPromptSubmit hook `sleep 30` timed out"),
        "{text}"
    );
    assert!(text.contains("✓ settings:"), "{text}");
    pty.type_line("/exit");
    assert!(cadre.exit_status().await);
}
