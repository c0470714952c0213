//! Session logs through the binary: crash safety (SIGKILL mid-call), resume,
//! torn lines, listing and removal, file modes, and keys kept out of logs.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{Harness, Wire, events, stderr, stdout, tool_results};
use serde_json::Value;

const CRASH: &str = r#"
rules:
  - name: slow
    when: { first_user: "run the slow thing" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ >> runs.txt; sleep 30" } }
      - text: "Resumed fine."
"#;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn log_records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Starts a run whose Bash call sleeps, kills cadre with SIGKILL once the
/// command is running, and returns the session id.
async fn crash_mid_call(h: &Harness) -> String {
    let mut run = h.spawn_json(&[
        "exec",
        "--json",
        "--permission-mode",
        "acceptEdits",
        "run the slow thing",
    ]);
    let started = run.wait_for("session_started", 1).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    tokio::time::timeout(Duration::from_secs(10), async {
        // The file exists before the shell has written its pid into it.
        while !std::fs::read_to_string(h.path("runs.txt"))
            .is_ok_and(|t| t.ends_with('\n') && t.trim().parse::<i32>().is_ok())
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command started");
    run.kill().await;
    // The orphaned shell is its own process group; end it too.
    let pid: i32 = h.read("runs.txt").trim().parse().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    id
}

#[tokio::test]
async fn sigkill_mid_call_resumes_as_unknown_after_confirmation_and_nothing_reruns() {
    let h = Harness::new(CRASH, Wire::Anthropic).await;
    let id = crash_mid_call(&h).await;
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let recs = log_records(&log);
    assert_eq!(
        recs.last().unwrap()["type"],
        "tool_start",
        "the log ends mid-call"
    );

    // Headless without --accept-unknown: refused, nothing sent.
    let before = h.records().len();
    let out = h.cadre(&["exec", "--resume", &id, "continue"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("echo $$ >> runs.txt; sleep 30"),
        "names the call: {err}"
    );
    assert!(err.contains("--accept-unknown"), "{err}");
    assert_eq!(h.records().len(), before);

    // A terminal user who says no: not resumed.
    let out = h
        .cadre_tty(&["exec", "--resume", &id, "continue"], &["n"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(h.records().len(), before);

    // A terminal user who confirms: the model sees `unknown`, nothing re-runs.
    let out = h
        .cadre_tty(&["exec", "--json", "--resume", &id, "continue"], &["y"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(evs.iter().any(
        |e| e["type"] == "session_resumed" && e["unknown_calls"].as_array().unwrap().len() == 1
    ));
    let last = h.records().last().unwrap().body.clone();
    let results = tool_results(&last);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].1 && results[0].0.starts_with("unknown"),
        "{results:?}"
    );
    assert!(last.to_string().contains("continue"));
    assert_eq!(h.read("runs.txt").lines().count(), 1, "nothing was re-run");
    let recs = log_records(&log);
    assert!(
        recs.iter()
            .any(|r| r["type"] == "tool_result" && r["status"] == "unknown")
    );
}

#[tokio::test]
async fn headless_resume_with_accept_unknown_goes_on() {
    let h = Harness::new(CRASH, Wire::OpenAi).await;
    let id = crash_mid_call(&h).await;
    let out = h
        .cadre(&["exec", "--resume", &id, "--accept-unknown", "continue"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Resumed fine.");
    assert_eq!(h.read("runs.txt").lines().count(), 1);
}

#[tokio::test]
async fn a_torn_last_line_resumes_with_a_warning() {
    let script = r#"
rules:
  - name: chat
    replies:
      - text: "One."
      - text: "Two."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success());
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(r#"{"v":1,"time_ms":1,"type":"assis"#);
    std::fs::write(&log, text).unwrap();

    let out = h.cadre(&["exec", "--resume", &id, "again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cut off mid-write"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).trim(), "Two.");
    let body = h.records().last().unwrap().body.clone();
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
    // The healed log parses again, line by line: the torn line went to its
    // recovery file.
    let after = std::fs::read_to_string(&log).unwrap();
    let bad = after
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .count();
    assert_eq!(bad, 0, "the torn line left the log");
}

#[tokio::test]
async fn sessions_are_listed_newest_first_and_removed_with_their_agents_folder() {
    let script = r#"
rules:
  - name: any
    replies:
      - text: "ok"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let a = h.cadre(&["exec", "--json", "first prompt"]).await;
    let b = h.cadre(&["exec", "--json", "second prompt"]).await;
    let id_a = events(&a)[0]["session_id"].as_str().unwrap().to_string();
    let id_b = events(&b)[0]["session_id"].as_str().unwrap().to_string();
    let agents = h.data_dir().join("sessions").join(format!("{id_b}.agents"));
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("child-1.jsonl"), "{}\n").unwrap();

    let out = h.cadre(&["sessions"]).await;
    assert!(out.status.success());
    let listed: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(listed.len(), 2, "child logs are not listed: {listed:?}");
    assert!(listed[0].starts_with(&id_b) && listed[0].contains("second prompt"));
    assert!(listed[1].starts_with(&id_a));
    assert!(listed[0].contains(h.project.path().to_str().unwrap()));

    let out = h.cadre(&["exec", "--resume", "child-1", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("subagent sessions are internal and cannot be opened"));

    let out = h.cadre(&["sessions", "rm", &id_b]).await;
    assert_eq!(out.status.code(), Some(2), "headless rm needs --yes");
    let out = h.cadre(&["sessions", "rm", &id_b, "--yes"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 subagent log"), "{}", stdout(&out));
    assert!(!agents.exists());
    let out = h.cadre(&["sessions"]).await;
    assert_eq!(stdout(&out).lines().count(), 1);
}

#[tokio::test]
async fn data_dir_and_logs_are_private_and_keys_never_reach_them() {
    let secret = "sk-ant-test-SECRET-5555555555";
    let script = format!(
        r#"
rules:
  - name: echoes
    replies:
      - text: "never"
        fail: {{ status: 401, body: '{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {secret}"}}}}' }}
"#
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let out = h
        .cadre_env(
            &["exec", "--json", "hello"],
            &[("ANTHROPIC_API_KEY", secret)],
        )
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(!stdout(&out).contains(secret), "events");
    assert!(!stderr(&out).contains(secret), "stderr");
    assert!(
        stdout(&out).contains("authentication_error"),
        "the error itself is shown"
    );
    // The key did reach the server (it is sent, just never written anywhere).
    assert_eq!(h.records()[0].status, 401);

    let data = h.data_dir();
    assert_eq!(mode(&data), 0o700);
    let sessions = data.join("sessions");
    assert_eq!(mode(&sessions), 0o700);
    let mut logs = 0;
    for e in std::fs::read_dir(&sessions).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // The session's code checkpoints: private, and no key in them.
            assert_eq!(mode(&p), 0o700, "{}", p.display());
            for f in std::fs::read_dir(&p).unwrap() {
                let f = f.unwrap().path();
                if f.is_file() {
                    assert_eq!(mode(&f), 0o600, "{}", f.display());
                    assert!(
                        !std::fs::read(&f)
                            .unwrap()
                            .windows(secret.len())
                            .any(|w| w == secret.as_bytes())
                    );
                }
            }
            continue;
        }
        assert_eq!(mode(&p), 0o600, "{}", p.display());
        assert!(!std::fs::read_to_string(&p).unwrap().contains(secret));
        logs += 1;
    }
    assert_eq!(logs, 1);
}
