//! Code checkpoints through the binary: three messages each change files
//! with `Write` and `Edit`; going back to before the first brings every file
//! back byte for byte (created ones removed) and the conversation with it,
//! in the line front end (`/rewind`), across `--resume` and with `cadre
//! sessions rewind`. A file changed outside cadre meanwhile is asked about
//! and not overwritten without force.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, events, stderr, stdout};

/// Three turns: each writes a new file and edits an existing one; the third
/// changes what the first wrote. A fourth request answers after going back.
const THREE_TURNS: &str = r#"
rules:
  - name: main
    step_by: requests
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Write, input: { file_path: "new1.txt", content: "created by turn one\n" } }
          - { name: Read, input: { file_path: "a.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "a.txt", old_string: "alpha", new_string: "ALPHA-ONE" } }
      - text: "DONE-ONE"
      - tool_calls:
          - { name: Write, input: { file_path: "sub/new2.txt", content: "created by turn two\n" } }
          - { name: Read, input: { file_path: "b.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "b.txt", old_string: "beta", new_string: "BETA-TWO" } }
      - text: "DONE-TWO"
      - tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
          - { name: Read, input: { file_path: "new1.txt" } }
      - tool_calls:
          - { name: Edit, input: { file_path: "a.txt", old_string: "ALPHA-ONE", new_string: "ALPHA-THREE" } }
          - { name: Write, input: { file_path: "new1.txt", content: "rewritten by turn three\n" } }
      - text: "DONE-THREE"
      - text: "AFTER-GOING-BACK"
"#;

/// `a.txt` and `b.txt` as they were before any message (bytes that are no
/// valid UTF-8 and CRLF line ends included).
const A_BEFORE: &[u8] = b"first line\r\nalpha \xff\xfe\nlast line without newline";
const B_BEFORE: &[u8] = b"beta\n\n\tindented\n";

fn setup(h: &Harness) {
    std::fs::write(h.path("a.txt"), A_BEFORE).unwrap();
    std::fs::write(h.path("b.txt"), B_BEFORE).unwrap();
}

/// Every file is as it was before the first message.
fn assert_as_before(h: &Harness) {
    assert_eq!(std::fs::read(h.path("a.txt")).unwrap(), A_BEFORE);
    assert_eq!(std::fs::read(h.path("b.txt")).unwrap(), B_BEFORE);
    assert!(!h.path("new1.txt").exists(), "the created file is removed");
    assert!(
        !h.path("sub/new2.txt").exists(),
        "the created file is removed"
    );
}

/// The three turns ran: the files hold what they wrote.
fn assert_changed(h: &Harness) {
    let a = std::fs::read(h.path("a.txt")).unwrap();
    assert!(
        a.windows(11).any(|w| w == b"ALPHA-THREE"),
        "{}",
        String::from_utf8_lossy(&a)
    );
    assert_eq!(h.read("new1.txt"), "rewritten by turn three\n");
    assert_eq!(h.read("sub/new2.txt"), "created by turn two\n");
    assert!(h.read("b.txt").contains("BETA-TWO"));
}

fn session_log(h: &Harness, id: &str) -> String {
    std::fs::read_to_string(h.data_dir().join(format!("sessions/{id}.jsonl"))).unwrap()
}

#[tokio::test]
async fn rewind_in_the_line_front_end_restores_every_file_and_the_conversation_after_asking() {
    let h = Harness::new(THREE_TURNS, Wire::Anthropic).await;
    setup(&h);
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--permission-mode", "acceptEdits"]);
    for (prompt, done) in [
        ("first prompt", "DONE-ONE"),
        ("second prompt", "DONE-TWO"),
        ("third prompt", "DONE-THREE"),
    ] {
        pty.type_line(prompt);
        cadre.wait_for_stdout(done).await;
    }
    assert_changed(&h);
    pty.type_line("/rewind");
    cadre
        .wait_for_stderr("/rewind N [both|conversation|code|summarize]", 1)
        .await;
    let listing = cadre.stderr();
    assert!(
        listing.contains("  1  ") && listing.contains("first prompt  (4 files changed since)"),
        "{listing}"
    );
    assert!(
        listing.contains("third prompt  (2 files changed since)"),
        "{listing}"
    );
    // Changed outside cadre since cadre last wrote it: asked about, kept.
    std::fs::write(h.path("b.txt"), "the user's own edit\n").unwrap();
    pty.type_line("/rewind 1");
    cadre
        .wait_for_stderr("these files changed outside cadre", 1)
        .await;
    let said = cadre.stderr();
    assert!(
        said.contains(&format!(
            "  {}",
            h.path("b.txt").canonicalize().unwrap().display()
        )),
        "{said}"
    );
    assert_eq!(h.read("b.txt"), "the user's own edit\n");
    assert!(
        h.read("new1.txt").contains("turn three"),
        "nothing restored"
    );
    // With force: every file as before the first message, and the conversation too.
    pty.type_line("/rewind 1 both force");
    cadre
        .wait_for_stderr("went back to before \"first prompt\"", 1)
        .await;
    assert_as_before(&h);
    let said = cadre.stderr();
    assert!(
        said.contains("restored the code: 2 file(s) written back, 2 removed"),
        "{said}"
    );
    pty.type_line("a new start");
    cadre.wait_for_stdout("AFTER-GOING-BACK").await;
    let records = h.records();
    let last = records.last().unwrap().body.to_string();
    assert!(last.contains("a new start"), "{last}");
    for gone in ["first prompt", "third prompt", "DONE-ONE", "DONE-THREE"] {
        assert!(!last.contains(gone), "{gone} went with the rewind: {last}");
    }
    let id = cadre.sessions().pop().unwrap();
    let log = session_log(&h, &id);
    assert!(log.contains("\"type\":\"rewind\""), "{log}");
    pty.type_line("/exit");
    assert!(cadre.exit_status().await);
    // The checkpoints after the one gone back to are gone with their messages.
    let out = h.cadre(&["sessions", "checkpoints", &id]).await;
    let listed = stdout(&out);
    assert!(listed.contains("a new start"), "{listed}");
    assert!(!listed.contains("third prompt"), "{listed}");
}

/// `cadre exec --json --permission-mode acceptEdits [--resume ID] PROMPT`: its events.
async fn exec(h: &Harness, resume: Option<&str>, prompt: &str) -> Vec<serde_json::Value> {
    let mut args = vec!["exec", "--json", "--permission-mode", "acceptEdits"];
    if let Some(id) = resume {
        args.extend(["--resume", id]);
    }
    args.push(prompt);
    let out = h.cadre(&args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    events(&out)
}

#[tokio::test]
async fn checkpoints_survive_resume_and_cadre_sessions_rewind_restores_them() {
    let h = Harness::new(THREE_TURNS, Wire::Anthropic).await;
    setup(&h);
    let first = exec(&h, None, "first prompt").await;
    let id = first
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .unwrap()
        .to_string();
    // Each message in a process of its own: the index is on disk.
    exec(&h, Some(&id), "second prompt").await;
    exec(&h, Some(&id), "third prompt").await;
    assert_changed(&h);

    let out = h.cadre(&["sessions", "checkpoints", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    for prompt in ["first prompt", "second prompt", "third prompt"] {
        assert!(listed.contains(prompt), "{listed}");
    }
    let dir = h.data_dir().join(format!("sessions/{id}.checkpoints"));
    let mode = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&dir), 0o700);
    for e in std::fs::read_dir(dir.join("objects")).unwrap().flatten() {
        assert_eq!(mode(&e.path()), 0o600);
    }

    // Changed outside cadre: refused, named, and left as it is.
    std::fs::write(h.path("new1.txt"), "the user's version\n").unwrap();
    let out = h.cadre(&["sessions", "rewind", &id, "1"]).await;
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("changed outside cadre") && said.contains("new1.txt"),
        "{said}"
    );
    assert!(said.contains("--force"), "{said}");
    assert_eq!(h.read("new1.txt"), "the user's version\n");
    assert_eq!(h.read("sub/new2.txt"), "created by turn two\n");

    // The code alone first: the conversation stays.
    let out = h
        .cadre(&["sessions", "rewind", &id, "2", "--code", "--force"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!h.path("sub/new2.txt").exists());
    assert!(!session_log(&h, &id).contains("\"type\":\"rewind\""));
    // Then both, to before the first message.
    let out = h
        .cadre(&["sessions", "rewind", &id, "1", "--both", "--force"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("the conversation went back to before \"first prompt\""),
        "{said}"
    );
    assert_as_before(&h);
    assert!(session_log(&h, &id).contains("\"type\":\"rewind\""));

    // Resumed, the conversation no longer holds the three messages.
    exec(&h, Some(&id), "a new start").await;
    let records = h.records();
    let last = records.last().unwrap().body.to_string();
    assert!(last.contains("a new start"), "{last}");
    for gone in ["first prompt", "second prompt", "DONE-TWO", "DONE-THREE"] {
        assert!(!last.contains(gone), "{gone} went with the rewind: {last}");
    }

    // Removed with the session.
    let out = h.cadre(&["sessions", "rm", &id, "--yes"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dir.exists());
}

/// A file written through a symlink is named, not restored through the
/// link; what a Bash command changed stays and the command is named.
#[tokio::test]
async fn a_symlinked_file_and_bash_commands_are_named_as_not_restored() {
    let script = r#"
rules:
  - name: main
    step_by: requests
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "link.txt" } }
      - tool_calls:
          - { name: Write, input: { file_path: "link.txt", content: "through the link\n" } }
          - { name: Write, input: { file_path: "plain.txt", content: "plain\n" } }
          - { name: Bash, input: { command: "echo from-bash > bashed.txt", description: "write a file" } }
      - text: "DONE"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::write(h.path("target.txt"), "target before\n").unwrap();
    std::os::unix::fs::symlink(h.path("target.txt"), h.path("link.txt")).unwrap();
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "bypassPermissions",
            "change things",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .unwrap()
        .to_string();
    assert_eq!(h.read("target.txt"), "through the link\n");
    let out = h.cadre(&["sessions", "rewind", &id, "1", "--code"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(!h.path("plain.txt").exists(), "{said}");
    assert!(
        said.contains("skipped 1 file(s)") && said.contains("target.txt (symlinked)"),
        "{said}"
    );
    assert!(said.contains("$ echo from-bash > bashed.txt"), "{said}");
    assert_eq!(
        h.read("target.txt"),
        "through the link\n",
        "not restored through the link"
    );
    assert_eq!(h.read("bashed.txt"), "from-bash\n", "Bash's change stays");
}
