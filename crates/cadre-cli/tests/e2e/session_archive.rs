//! `cadre sessions export` / `import` through the binary: a session moved to
//! another data directory resumes there with the same history, hostile
//! archives are refused with nothing written, keys never reach the archive,
//! files are private, and kept worktree branches travel as a git bundle.

use crate::common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cadre_core::tasks::{BlockingTaskTable, TaskFilter, TaskKind};
use common::{Elsewhere, Harness, Wire, events, stderr, stdout};
use serde_json::Value;

const HELPER: &str = "---
name: helper
description: Looks around.
tools: Read
---
You are HELPER.
";

const SCRIPT: &str = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "CHILD-REPORT: looked around."
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look around", prompt: "child-task: look", subagent_type: "helper" } }
          - { name: Bash, input: { command: "echo bg-done", run_in_background: true, description: "bg echo" } }
      - text: "Started both."
      - text: "Noted the shell."
      - text: "Continued."
      - text: "Continued again."
      - text: "Continued once more."
"#;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Runs the scripted session (a child of a custom definition, a background
/// shell) in the harness's project and returns its id.
async fn run_session(h: &Harness) -> String {
    h.write(".cadre/agents/helper.md", HELPER);
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "acceptEdits",
            "start the work",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    events(&out)[0]["session_id"].as_str().unwrap().to_string()
}

/// `cadre sessions export ID -o FILE` in the harness's project; the archive's path.
async fn export(h: &Harness, id: &str, name: &str) -> PathBuf {
    let file = h.path(name);
    let out = h
        .cadre(&["sessions", "export", id, "-o", file.to_str().unwrap()])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("session {id}")),
        "{}",
        stdout(&out)
    );
    file
}

/// The archive's tar stream, uncompressed.
fn tar_bytes(file: &Path) -> Vec<u8> {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    raw
}

/// The archive's entry names, in order.
fn entry_names(file: &Path) -> Vec<String> {
    let raw = tar_bytes(file);
    let mut archive = tar::Archive::new(raw.as_slice());
    archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

fn messages(body: &Value) -> Value {
    body["messages"].clone()
}

#[tokio::test]
async fn an_imported_session_resumes_elsewhere_with_the_same_history() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let id = run_session(&h).await;
    let file = export(&h, &id, "session.tar.gz").await;
    assert_eq!(mode(&file), 0o600);
    let names = entry_names(&file);
    assert_eq!(names[0], "manifest.json");
    assert!(names.contains(&format!("sessions/{id}.jsonl")), "{names:?}");
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with(&format!("sessions/{id}.agents/")))
            .count(),
        1,
        "the child's log: {names:?}"
    );
    assert!(names.contains(&"tasks.jsonl".to_string()));
    assert!(names.iter().any(|n| n.ends_with("/output.log")));
    assert!(names.iter().any(|n| n.ends_with("/agent.json")));

    // Another machine: its own data directory and project folder.
    let other = Elsewhere::new();
    std::fs::create_dir_all(other.project.path().join(".cadre/agents")).unwrap();
    std::fs::write(other.project.path().join(".cadre/agents/helper.md"), HELPER).unwrap();
    let out = other
        .cadre(&h, &["sessions", "import", file.to_str().unwrap()])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("imported session {id}")),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains(&format!("cadre --resume {id}")));

    // Everything arrived, private.
    let data = other.data_dir();
    let sessions = data.join("sessions");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&sessions), 0o700);
    assert_eq!(mode(&sessions.join(format!("{id}.jsonl"))), 0o600);
    let agents = sessions.join(format!("{id}.agents"));
    assert_eq!(mode(&agents), 0o700);
    for e in std::fs::read_dir(&agents).unwrap() {
        assert_eq!(mode(&e.unwrap().path()), 0o600);
    }
    let rows = BlockingTaskTable::open(&data)
        .unwrap()
        .list(&TaskFilter::default())
        .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().any(|r| r.kind == TaskKind::Subagent));
    assert!(
        rows.iter()
            .any(|r| r.kind == TaskKind::Bash && r.background)
    );
    for row in &rows {
        assert!(row.output_path.starts_with(&data), "{row:?}");
        assert_eq!(mode(&row.output_path), 0o600);
        assert_eq!(mode(row.output_path.parent().unwrap()), 0o700);
    }
    assert!(
        std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".import-")),
        "no staging folder is left"
    );

    // `sessions show` and the listing work there.
    let out = other.cadre(&h, &["sessions", "show", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains(&format!("session {id}")), "{shown}");
    assert!(shown.contains("> start the work"), "{shown}");
    assert!(shown.contains("Agent"), "{shown}");
    let out = other.cadre(&h, &["sessions"]).await;
    assert!(stdout(&out).starts_with(&id), "{}", stdout(&out));

    // Importing it again is refused without --force.
    let out = other
        .cadre(&h, &["sessions", "import", file.to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));

    // Resumed there (from another folder than the one it ran in)...
    let out = other.cadre(&h, &["-p", "-r", &id, "continue"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let moved = h.records().last().unwrap().body.clone();
    let history = messages(&moved).to_string();
    assert!(history.contains("start the work"), "{history}");
    assert!(history.contains("child-task: look"), "{history}");
    assert!(history.contains("CHILD-REPORT"), "{history}");
    assert!(history.contains("bg-done"), "the shell's notice: {history}");
    let last = messages(&moved).as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("continue"), "{last}");

    // ...sends the very messages the original sends when resumed at home.
    let out = h.cadre(&["-p", "-r", &id, "continue"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let home = h.records().last().unwrap().body.clone();
    assert_eq!(messages(&moved), messages(&home));
}

#[tokio::test]
async fn keys_never_reach_the_archive() {
    let secret = "sk-ant-archive-SECRET-7777777777";
    let script = r#"
rules:
  - name: any
    replies:
      - text: "ok"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let env = [("ANTHROPIC_API_KEY", secret)];
    let out = h.cadre_env(&["exec", "--json", "hello"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    // A key that got into the log anyway (by hand, an older cadre): export
    // still takes it out.
    let log = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&format!(
        "{{\"v\":1,\"time_ms\":1,\"type\":\"user\",\"text\":\"the key is {secret}\"}}\n"
    ));
    std::fs::write(&log, text).unwrap();

    let file = h.path("keys.tar.gz");
    let out = h
        .cadre_env(
            &["sessions", "export", &id, "-o", file.to_str().unwrap()],
            &env,
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let compressed = std::fs::read(&file).unwrap();
    let raw = tar_bytes(&file);
    let needle = secret.as_bytes();
    for bytes in [&compressed, &raw] {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "the key is in the archive"
        );
    }
    assert!(String::from_utf8_lossy(&raw).contains("the key is [redacted]"));
}

#[tokio::test]
async fn a_hostile_archive_is_refused_and_nothing_is_written() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    // `../evil` written into the header by hand: tar writers refuse it.
    let manifest = br#"{"format":"cadre-session-archive","version":1,"session_id":"s1","cwd":"","cadre_version":"0","created_ms":0,"entries":[]}"#;
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in [("manifest.json", &manifest[..]), ("../evil", b"pwned")] {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(data.len() as u64);
        header.set_mode(0o600);
        header.set_cksum();
        b.append(&header, data).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &b.into_inner().unwrap()).unwrap();
    let dir = h.path("inbox");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("evil.tar.gz");
    std::fs::write(&file, gz.finish().unwrap()).unwrap();

    let out = h
        .cadre(&["sessions", "import", file.to_str().unwrap()])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("\"../evil\""), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("nothing was imported"), "{err}");
    assert!(!h.path("evil").exists());
    assert!(!h.data_dir().join("evil").exists());
    assert!(!h.home.path().join("evil").exists());
    assert!(!h.data_dir().join("sessions").exists());
    assert!(!h.data_dir().join("tasks.db").exists());
    let left: Vec<_> = std::fs::read_dir(h.data_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `git` in `dir`, quietly, with an identity; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn kept_worktree_branches_travel_as_a_bundle() {
    let script = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - text: "CHILD-REPORT"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look", prompt: "child-task", subagent_type: "helper" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    git(h.project.path(), &["init", "-q"]);
    h.write("README", "hello\n");
    git(h.project.path(), &["add", "README"]);
    git(h.project.path(), &["commit", "-qm", "first"]);
    h.write(".cadre/agents/helper.md", HELPER);
    let out = h.cadre(&["exec", "--json", "look around"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let agents = h.data_dir().join("sessions").join(format!("{id}.agents"));
    let child = std::fs::read_dir(&agents)
        .unwrap()
        .flatten()
        .find_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".jsonl")
                .map(str::to_string)
        })
        .unwrap();
    // The branch the child's worktree would have kept, with a commit of its own.
    let branch = format!("cadre/{child}");
    git(h.project.path(), &["switch", "-qc", &branch]);
    h.write("work.txt", "the child's work\n");
    git(h.project.path(), &["add", "work.txt"]);
    git(h.project.path(), &["commit", "-qm", "child work"]);
    let tip = git(h.project.path(), &["rev-parse", "HEAD"]);
    git(h.project.path(), &["switch", "-q", "main"]);

    let file = export(&h, &id, "branches.tar.gz").await;
    assert!(entry_names(&file).contains(&"branches.bundle".to_string()));

    // Into a repository: the branch is fetched under the same name.
    let repo = Elsewhere::new();
    git(repo.project.path(), &["init", "-q"]);
    let out = repo
        .cadre(&h, &["sessions", "import", file.to_str().unwrap()])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("fetched branches {branch}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(git(repo.project.path(), &["rev-parse", &branch]), tip);

    // Outside any repository: the bundle is kept beside the session, private.
    let plain = Elsewhere::new();
    let out = plain
        .cadre(&h, &["sessions", "import", file.to_str().unwrap()])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = plain
        .data_dir()
        .join("sessions")
        .join(format!("{id}.branches.bundle"));
    assert!(
        stderr(&out).contains(&kept.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(mode(&kept), 0o600);
}
