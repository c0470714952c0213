//! Attacks on processes, locks and sessions through the binary: what a user
//! (or a script) can do to a session another cadre is using.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, Wire, events, stderr};

const SLOW_SECOND: &str = r#"
rules:
  - name: main
    replies:
      - text: "first answer"
      - latency_ms: 15000
        text: "slow second answer"
      - text: "third answer"
"#;

/// `cadre sessions rm` of a session another process is using is refused,
/// naming that process: deleting it would unlink the log the run still writes
/// (its work silently lost) and the lock file, after which a second process
/// could lock a fresh file and use the same session at once.
#[tokio::test]
async fn a_session_in_use_cannot_be_removed() {
    let h = Harness::new(SLOW_SECOND, Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let lock = h.data_dir().join("locks").join(format!("{id}.lock"));

    let mut first = h.spawn_json(&["exec", "--json", "--resume", &id, "again"]);
    first.wait_for("session_resumed", 1).await;
    let rm = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    let log_kept = log.exists();
    let lock_kept = lock.exists();
    let pid = first.pid();
    first.signal(libc::SIGTERM);
    let (status, _) = first.finish().await;
    assert_eq!(status.code(), Some(143));

    assert!(!rm.status.success(), "removed a session in use");
    let msg = stderr(&rm);
    assert!(
        msg.contains(&format!("in use by cadre process {pid}")),
        "{msg}"
    );
    assert!(log_kept, "the log of a running session was deleted");
    assert!(lock_kept, "the lock of a running session was deleted");

    // Once nobody uses it, it can be removed, lock file included.
    let rm = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    assert!(rm.status.success(), "{}", stderr(&rm));
    assert!(!log.exists());
    assert!(!lock.exists());
}
