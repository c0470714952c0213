//! Workspace trust, interactively: the real `cadre` in a tmux pane asks once
//! per folder whose project settings would widen permissions or run hooks,
//! records the answer, and applies those settings only when trusted.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire};
use serde_json::Value;

const SCRIPT: &str = r#"
rules:
  - name: cmd
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo trusted-run", description: "run it" } }
      - text: "All done here."
"#;

/// A project whose settings allow `echo` and run a PreToolUse hook that
/// leaves a marker; returns the marker's path.
fn project(h: &Harness) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let marker = h.home.path().join("hook-ran");
    let hook = h.home.path().join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat > /dev/null\necho yes >> {}\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    h.write(
        ".claude/settings.json",
        &serde_json::json!({
            "permissions": {"allow": ["Bash(echo:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": hook.display().to_string()}]}]},
        })
        .to_string(),
    );
    marker
}

fn trust_file(h: &Harness) -> Value {
    serde_json::from_str(&std::fs::read_to_string(h.data_dir().join("trust.json")).unwrap())
        .unwrap()
}

#[tokio::test]
async fn yes_trusts_the_folder_once_and_its_settings_and_hooks_apply() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let marker = project(&h);
    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("Trust this folder? [y/N]").await;
    assert!(
        screen.contains("permissions.allow (Bash(echo:*))"),
        "{screen}"
    );
    assert!(screen.contains("hooks (PreToolUse)"), "{screen}");
    pane.type_text("y");
    pane.keys(&["Enter"]);
    pane.wait_text("mock-model").await;
    pane.type_text("run it");
    pane.keys(&["Enter"]);
    // No approval dialog: the trusted project's allow rule applies.
    let screen = pane.wait_text("All done here.").await;
    assert!(!screen.contains("Permission needed"), "{screen}");
    let records = h.records();
    let (result, is_error) = common::tool_results(&records[1].body).remove(0);
    assert!(!is_error && result.contains("trusted-run"), "{result}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "yes\n");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    let folders = trust_file(&h)["folders"].clone();
    let (folder, answer) = folders.as_object().unwrap().iter().next().unwrap();
    assert_eq!(
        std::path::Path::new(folder),
        h.project.path().canonicalize().unwrap()
    );
    assert_eq!(answer["trusted"], true);

    // Asked once: the next start goes straight to the prompt.
    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("mock-model").await;
    assert!(!screen.contains("Trust this folder"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}

#[tokio::test]
async fn no_keeps_the_entries_ignored_with_one_warning_and_is_not_asked_again() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let marker = project(&h);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("Trust this folder? [y/N]").await;
    pane.type_text("n");
    pane.keys(&["Enter"]);
    // The warning comes with the session's first events, after the first frame.
    pane.wait_text("mock-model").await;
    pane.wait_text("not trusted").await;
    pane.type_text("run it");
    pane.keys(&["Enter"]);
    // The project's allow rule does not apply: the call is asked about.
    let screen = pane.wait_text("[y] Yes").await;
    assert!(screen.contains("Permission needed"), "{screen}");
    assert!(!marker.exists(), "the untrusted hook did not run");
    pane.keys(&["n"]);
    pane.wait_text("All done here.").await;
    let records = h.records();
    let (result, is_error) = common::tool_results(&records[1].body).remove(0);
    assert!(is_error && result.contains("declined"), "{result}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
    let folders = trust_file(&h)["folders"].clone();
    let answer = folders
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(answer["trusted"], false);

    let pane = Pane::start(&h, &[]);
    let screen = pane.wait_text("mock-model").await;
    assert!(!screen.contains("Trust this folder"), "{screen}");
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
