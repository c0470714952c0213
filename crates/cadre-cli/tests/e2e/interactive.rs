//! The line-based interactive session: several turns in one conversation,
//! Ctrl+C interrupting a running turn without ending the program, `/exit`.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{Harness, Wire, tool_results};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

const SCRIPT: &str = r#"
rules:
  - name: chat
    when: { first_user: "first question" }
    replies:
      - text: "Answer one."
      - text: "Answer two."
  - name: slow
    when: { first_user: "run slow" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "touch started; sleep 30" } }
      - text: "Recovered after the interrupt."
"#;

fn spawn(h: &Harness) -> Child {
    spawn_with(h, &[])
}

fn spawn_with(h: &Harness, args: &[&str]) -> Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cadre"));
    cmd.args(["--permission-mode", "acceptEdits"])
        .args(args)
        .current_dir(h.project.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", h.home.path())
        .env("CADRE_HOME", h.home.path().join("cadre"))
        .env("CADRE_PROVIDER", "anthropic")
        .env("CADRE_BASE_URL", h.mock.url())
        .env("CADRE_MODEL", "mock-model")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd.spawn().unwrap()
}

async fn wait_for_line(lines: &mut Lines<BufReader<ChildStdout>>, want: &str) {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(want) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "stdout never showed {want:?}");
}

#[tokio::test]
async fn turns_share_one_conversation_and_exit_leaves() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let mut child = spawn(&h);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    stdin.write_all(b"first question\n").await.unwrap();
    wait_for_line(&mut lines, "Answer one.").await;
    stdin.write_all(b"second question\n").await.unwrap();
    wait_for_line(&mut lines, "Answer two.").await;
    stdin.write_all(b"/exit\n").await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());

    let records = h.records();
    assert_eq!(records.len(), 2);
    let messages = records[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "user, assistant, user");
    assert_eq!(messages[1]["content"][0]["text"], "Answer one.");
}

#[tokio::test]
async fn ctrl_c_interrupts_the_running_turn_not_the_program() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let mut child = spawn(&h);
    let pid = child.id().unwrap() as i32;
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    stdin.write_all(b"run slow\n").await.unwrap();
    // The first reply asks for the slow command; interrupt it once it runs.
    common::wait_until("the command started", || h.path("started").exists()).await;
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(pid, libc::SIGINT) };

    stdin.write_all(b"carry on\n").await.unwrap();
    wait_for_line(&mut lines, "Recovered after the interrupt.").await;
    stdin.write_all(b"/exit\n").await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "the program survived the interrupt");

    let records = h.records();
    assert_eq!(records.len(), 2);
    let results = tool_results(&records[1].body);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].1 && results[0].0.starts_with("interrupted"),
        "{results:?}"
    );
    let last = records[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last.to_string().contains("carry on"),
        "new text joins the pending user message"
    );
}

#[tokio::test]
async fn agent_with_an_initial_prompt_sends_it_first_then_takes_typed_turns() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    h.write(
        ".claude/agents/asker.md",
        "---\nname: asker\ndescription: Asks first.\ninitialPrompt: first question\n---\nYou ask.\n",
    );
    let mut child = spawn_with(&h, &["--agent", "asker"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    // Nothing typed yet: the definition's prompt went first.
    wait_for_line(&mut lines, "Answer one.").await;
    stdin.write_all(b"second question\n").await.unwrap();
    wait_for_line(&mut lines, "Answer two.").await;
    stdin.write_all(b"/exit\n").await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let records = h.records();
    assert_eq!(records.len(), 2);
    let messages = records[1].body["messages"].as_array().unwrap();
    // The first user message: the roster reminder, then the initial prompt.
    let texts: Vec<&str> = messages[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .filter(|t| !t.starts_with("<system-reminder>"))
        .collect();
    assert_eq!(texts, ["first question"]);
}
