//! Hardening, round 3, for processes: what a hook or an MCP server starts in
//! a session of its own (`setsid`) is stopped with cadre, whether cadre
//! exits normally or is killed.

use crate::common;

use common::mcp_fixture as fixture;

use std::path::Path;
use std::time::Duration;

use common::{Harness, Wire, stderr};
use serde_json::json;

/// Whether process `pid` still runs (a zombie counts as gone).
fn alive(pid: i32) -> bool {
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

/// Waits (bounded) for `file` to hold a pid, and returns it.
async fn pid_in(file: &Path) -> i32 {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(text) = std::fs::read_to_string(file)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} was not written", file.display()))
}

/// Waits (bounded, 10 s) for `pid` to be gone; kills it if it is not, and
/// says whether it went by itself.
async fn went(pid: i32) -> bool {
    for _ in 0..500 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SAFETY: ending the stray sleep this test's run started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    false
}

/// A shell line that starts `sleep 300` in a session of its own, holding
/// none of its parent's streams, and writes its pid to `pid_file`.
fn escaping_sleep(pid_file: &Path) -> String {
    format!(
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {}",
        pid_file.display()
    )
}

/// A script whose one Bash call waits until `gate` exists.
fn waiting_script(gate: &Path) -> String {
    format!(
        r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: "while [ ! -e {} ]; do sleep 0.05; done", description: "wait" }} }}
      - text: "done"
"#,
        gate.display()
    )
}

/// Writes the user's settings with a `UserPromptSubmit` hook running `command`.
fn hook_settings(h: &Harness, command: &str) {
    let p = h.home.path().join(".claude").join("settings.json");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let settings = json!({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    ]}});
    std::fs::write(p, settings.to_string()).unwrap();
}

/// Writes `.mcp.json` with a server that starts the escaping sleep, then serves.
fn escaping_server(h: &Harness, pid_file: &Path) {
    let script = format!("{}; exec {}", escaping_sleep(pid_file), fixture().display());
    h.write(
        ".mcp.json",
        &json!({"mcpServers": {"fx": {"command": "sh", "args": ["-c", script]}}}).to_string(),
    );
}

#[tokio::test]
async fn what_a_hook_starts_in_its_own_session_goes_when_cadre_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("sleep.pid");
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: done\n",
        Wire::Anthropic,
    )
    .await;
    hook_settings(&h, &escaping_sleep(&pid_file));
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let pid = pid_in(&pid_file).await;
    assert!(went(pid).await, "the hook's setsid'd sleep outlived cadre");
}

#[tokio::test]
async fn what_a_hook_starts_in_its_own_session_goes_when_cadre_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, gate) = (dir.path().join("sleep.pid"), dir.path().join("gate"));
    let h = Harness::new(&waiting_script(&gate), Wire::Anthropic).await;
    hook_settings(&h, &escaping_sleep(&pid_file));
    let mut run = h.spawn_json(&["exec", "--json", "--allow", "Bash", "go"]);
    run.wait_for("tool_call_started", 1).await;
    let pid = pid_in(&pid_file).await;
    assert!(alive(pid), "the sleep runs while cadre does");
    run.kill().await;
    assert!(
        went(pid).await,
        "the hook's setsid'd sleep outlived a killed cadre"
    );
}

#[tokio::test]
async fn what_an_mcp_server_starts_in_its_own_session_goes_when_cadre_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("sleep.pid");
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: done\n",
        Wire::Anthropic,
    )
    .await;
    escaping_server(&h, &pid_file);
    let out = h.cadre(&["exec", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let pid = pid_in(&pid_file).await;
    assert!(
        went(pid).await,
        "the server's setsid'd sleep outlived cadre"
    );
}

#[tokio::test]
async fn what_an_mcp_server_starts_in_its_own_session_goes_when_cadre_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, gate) = (dir.path().join("sleep.pid"), dir.path().join("gate"));
    let h = Harness::new(&waiting_script(&gate), Wire::Anthropic).await;
    escaping_server(&h, &pid_file);
    let mut run = h.spawn_json(&["exec", "--json", "--trust", "--allow", "Bash", "go"]);
    run.wait_for("tool_call_started", 1).await;
    let pid = pid_in(&pid_file).await;
    assert!(alive(pid), "the sleep runs while cadre does");
    run.kill().await;
    assert!(
        went(pid).await,
        "the server's setsid'd sleep outlived a killed cadre"
    );
}
