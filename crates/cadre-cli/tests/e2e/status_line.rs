//! The user's status line (`statusLine`) in the full screen: the real
//! `cadre` in tmux runs the command with the session's JSON on its stdin
//! and shows what it prints instead of its own status line, runs it again
//! after a reply, kills a run that hangs without the screen waiting for it,
//! and never runs a project's status line in a folder that is not trusted.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};

const REPLY: &str = r#"
rules:
  - name: chat
    replies:
      - text: "Reply arrived."
        usage: { input_tokens: 50000, output_tokens: 10 }
"#;

/// A status script printing its stdin's `model.id` and
/// `context_window.used_percentage` (and keeping the last input beside it).
fn script(h: &Harness) -> String {
    let dir = h.home.path();
    let path = dir.join("status.sh");
    std::fs::write(
        &path,
        format!(
            r#"input=$(cat)
printf '%s' "$input" > {dir}/status-input.json
model=$(printf '%s' "$input" | sed -n 's/.*"model":{{[^}}]*"id":"\([^"]*\)".*/\1/p')
used=$(printf '%s' "$input" | sed -n 's/.*"used_percentage":\([^,}}]*\).*/\1/p')
printf '\033[1;32mSL\033[0m model=%s used=%s\033]0;title\007\n' "$model" "$used"
"#,
            dir = dir.display()
        ),
    )
    .unwrap();
    format!("sh {}", path.display())
}

fn user_settings(h: &Harness, value: serde_json::Value) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("settings.json"), value.to_string()).unwrap();
}

#[tokio::test]
async fn status_line_shows_the_scripts_output_and_updates_after_a_reply() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(REPLY, Wire::Anthropic).await;
    let command = script(&h);
    user_settings(
        &h,
        serde_json::json!({"statusLine": {"type": "command", "command": command, "padding": 1}}),
    );
    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("SL model=mock-model used=null").await;
    // It replaces cadre's own line (model · mode · …), and the window
    // title sequence it printed was dropped, not shown.
    assert!(!screen.contains("mock-model · default"), "{screen}");
    assert!(!screen.contains("title"), "{screen}");
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    pane.wait_text("Reply arrived.").await;
    // Run again after the reply: 50 000 input tokens of the model's window.
    let screen = pane
        .wait_for("the status line after the reply", |s| {
            s.contains("SL model=mock-model used=") && !s.contains("used=null")
        })
        .await;
    let input: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(h.home.path().join("status-input.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(input["hook_event_name"], "Status");
    assert_eq!(input["context_window"]["total_input_tokens"], 50000);
    let window = input["context_window"]["context_window_size"]
        .as_u64()
        .unwrap();
    let used = (50000.0 * 1000.0 / window as f64).round() / 10.0;
    assert_eq!(input["context_window"]["used_percentage"], used);
    assert!(screen.contains(&format!("used={used}")), "{screen}");
    assert_eq!(
        input["context_window"]["remaining_percentage"],
        ((100.0 - used) * 10.0_f64).round() / 10.0
    );
    assert_eq!(input["output_style"]["name"], "default");
    assert!(
        input["session_id"].as_str().is_some_and(|s| !s.is_empty()),
        "{input}"
    );
    assert!(
        input["transcript_path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".jsonl")),
        "{input}"
    );
    assert_eq!(input["workspace"]["project_dir"], input["cwd"], "{input}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn status_line_that_hangs_is_killed_and_the_screen_goes_on() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(REPLY, Wire::Anthropic).await;
    let pids = h.home.path().join("pids");
    let path = h.home.path().join("hang.sh");
    std::fs::write(
        &path,
        format!("echo $$ >> {}\nexec sleep 600\n", pids.display()),
    )
    .unwrap();
    user_settings(
        &h,
        serde_json::json!({"statusLine": {"type": "command", "command": format!("sh {}", path.display())}}),
    );
    let pane = Pane::start(&h, &[]);
    // Its own status line stays while the script hangs.
    pane.wait_text("mock-model · default").await;
    common::wait_until("the status script to start", || pids.exists()).await;
    // Typing works while it hangs.
    pane.type_text("still typing");
    pane.wait_text("still typing").await;
    // Nothing else asked for a run: the first ends at its timeout.
    let first: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::wait_until("the hanging status script to be killed", || {
        // Gone, or dead and not yet reaped.
        std::fs::read_to_string(format!("/proc/{first}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    })
    .await;
    // And a turn runs.
    pane.keys(&["Enter"]);
    pane.wait_text("Reply arrived.").await;
    let screen = pane.screen();
    assert!(screen.contains("mock-model · default"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn status_line_of_an_untrusted_project_does_not_run() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(REPLY, Wire::Anthropic).await;
    let marker = h.home.path().join("status-ran");
    h.write(
        ".claude/settings.json",
        &serde_json::json!({"statusLine": {"type": "command",
            "command": format!("touch {}; echo PROJECT-SL", marker.display())}})
        .to_string(),
    );
    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("Trust this folder? [y/N]").await;
    assert!(screen.contains("statusLine"), "{screen}");
    pane.type_text("n");
    pane.keys(&["Enter"]);
    pane.wait_text("mock-model · default").await;
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Reply arrived.").await;
    assert!(!screen.contains("PROJECT-SL"), "{screen}");
    assert!(!marker.exists(), "the untrusted status line ran");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
