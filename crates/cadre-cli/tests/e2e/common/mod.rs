//! Shared test scaffolding: a temp project and data dir, the mock model server,
//! and a way to run the real `cadre` binary against it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod line_session;
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::Output;

pub use cadre_mock::tool_pairing_errors;
use cadre_mock::{MockServer, Record};
use serde_json::Value;
use tempfile::TempDir;

/// Which wire format a test drives.
#[derive(Debug, Clone, Copy)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

pub const BOTH_WIRES: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

/// A temp project directory, a temp `CADRE_HOME`, and a running mock.
///
/// Every request the mock recorded is checked for tool pairing (each
/// `tool_use` answered by exactly one `tool_result`, each assistant
/// `tool_calls` entry by exactly one `tool` message) whenever the test reads
/// the records and again when the harness is dropped, so no end-to-end test
/// can pass while cadre sends a request the real APIs would refuse.
pub struct Harness {
    pub project: TempDir,
    pub home: TempDir,
    pub mock: MockServer,
    pub wire: Wire,
    /// Set by [`Harness::allow_broken_pairing`].
    broken_pairing_allowed: std::cell::Cell<bool>,
}

impl Harness {
    pub async fn new(script: &str, wire: Wire) -> Harness {
        let mock = MockServer::start(script, None).await.expect("mock starts");
        Harness::from_parts(
            tempfile::tempdir().unwrap(),
            // Outside the temp dirs: the sandbox hides the data dir, and a data
            // dir inside /tmp would keep sandboxed commands from creating files there.
            tempfile::tempdir_in(non_temp_base()).unwrap(),
            mock,
            wire,
        )
    }

    /// A harness on directories and a mock the test made itself.
    pub fn from_parts(project: TempDir, home: TempDir, mock: MockServer, wire: Wire) -> Harness {
        Harness {
            project,
            home,
            mock,
            wire,
            broken_pairing_allowed: std::cell::Cell::new(false),
        }
    }

    /// Turns the pairing check off for a test that records a request whose
    /// tool pairing is broken on purpose (say, one it posts to the mock itself).
    pub fn allow_broken_pairing(&self) {
        self.broken_pairing_allowed.set(true);
    }

    /// Panics naming every recorded request whose tool pairing is broken.
    fn check_tool_pairing(&self, records: &[Record]) {
        if self.broken_pairing_allowed.get() {
            return;
        }
        let broken: Vec<String> = records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let errors = tool_pairing_errors(&r.body);
                (!errors.is_empty()).then(|| {
                    format!(
                        "request {i} (rule {:?}, step {}): {}\n{}",
                        r.rule,
                        r.step,
                        errors.join("; "),
                        r.body
                    )
                })
            })
            .collect();
        assert!(
            broken.is_empty(),
            "tool calls and results do not pair up:\n{}",
            broken.join("\n")
        );
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.project.path().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Waits (up to 30 s) until a file a background process writes holds a whole line.
    pub async fn read_line_when_written(&self, rel: &str) -> String {
        let path = self.path(rel);
        for _ in 0..600 {
            if let Ok(text) = std::fs::read_to_string(&path)
                && text.ends_with('\n')
            {
                return text;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{rel} was never written");
    }

    /// Runs `cadre <args>` in the project against the mock, with a clean environment.
    pub async fn cadre(&self, args: &[&str]) -> Output {
        self.cadre_env(args, &[]).await
    }

    pub async fn cadre_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("cadre runs")
    }

    /// Runs `cadre <args>`, killed and failing the test if it has not ended
    /// within `secs` (a generous bound: a regression here means hanging forever).
    pub async fn cadre_bounded(&self, args: &[&str], secs: u64) -> Output {
        let run = self
            .command(args, &[])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(std::time::Duration::from_secs(secs), run)
            .await
            .unwrap_or_else(|_| panic!("cadre {args:?} still running after {secs} s"))
            .expect("cadre runs")
    }

    /// Runs cadre with stdin on a pseudo-terminal, pre-loaded with `answers`
    /// (one per line), as a person at a terminal would type them.
    pub async fn cadre_tty(&self, args: &[&str], answers: &[&str]) -> Output {
        let pty = Pty::open();
        for a in answers {
            pty.type_line(a);
        }
        let out = self
            .command(args, &[])
            .stdin(pty.slave_stdio())
            .output()
            .await
            .expect("cadre runs");
        drop(pty);
        out
    }

    /// The data directory the runs use.
    pub fn data_dir(&self) -> PathBuf {
        self.home.path().join("cadre")
    }

    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
        let (provider, base) = match self.wire {
            Wire::Anthropic => ("anthropic", self.mock.url()),
            Wire::OpenAi => ("openai", format!("{}/v1", self.mock.url())),
        };
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cadre"));
        cmd.args(args)
            .current_dir(self.project.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("CADRE_HOME", self.home.path().join("cadre"))
            .env("CADRE_PROVIDER", provider)
            .env("CADRE_BASE_URL", base)
            .env("CADRE_MODEL", "mock-model");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `cadre <args>` against the mock like [`Harness::cadre_env`], but
    /// as on another machine: in `project`, with `home` as `HOME` and its
    /// `cadre/` as the data directory (see [`Elsewhere`]).
    pub async fn cadre_at(
        &self,
        project: &Path,
        home: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        self.command(args, env)
            .current_dir(project)
            .env("HOME", home)
            .env("CADRE_HOME", home.join("cadre"))
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("cadre runs")
    }

    /// The requests the mock received, in arrival order, each checked for tool pairing.
    pub fn records(&self) -> Vec<Record> {
        let mut r = self.mock.records();
        r.sort_by_key(|r| r.t_start_ms);
        self.check_tool_pairing(&r);
        r
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // A test that already failed says why; a second panic would abort.
        if !std::thread::panicking() {
            self.check_tool_pairing(&self.mock.records());
        }
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The tool results a request carried back to the model, as (content, is_error), in order.
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str() {
            // OpenAI: one `tool` message per result; errors are prefixed.
            Some("tool") => {
                let c = m["content"].as_str().unwrap_or("").to_string();
                let err = c.starts_with("Error: ");
                out.push((c.trim_start_matches("Error: ").to_string(), err));
            }
            Some("user") => {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_result" {
                        // A string, or blocks (text beside images): their text.
                        let text = match &b["content"] {
                            Value::Array(parts) => parts
                                .iter()
                                .filter_map(|p| p["text"].as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                            other => other.as_str().unwrap_or("").to_string(),
                        };
                        out.push((text, b["is_error"].as_bool().unwrap_or(false)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The last request the mock received.
pub fn last_body(h: &Harness) -> Value {
    h.records().last().expect("a request").body.clone()
}

pub fn assert_exists(p: &Path) {
    assert!(p.exists(), "{} should exist", p.display());
}

/// A pseudo-terminal pair; the test types into the master side.
pub struct Pty {
    master: std::fs::File,
    slave: std::os::fd::OwnedFd,
}

impl Pty {
    pub fn open() -> Pty {
        use std::os::fd::FromRawFd;
        let mut master = 0;
        let mut slave = 0;
        // SAFETY: openpty writes two new descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty failed");
        // SAFETY: fresh descriptors from openpty.
        unsafe {
            Pty {
                master: std::fs::File::from_raw_fd(master),
                slave: std::os::fd::OwnedFd::from_raw_fd(slave),
            }
        }
    }

    pub fn type_line(&self, line: &str) {
        use std::io::Write;
        (&self.master)
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    pub fn slave_stdio(&self) -> std::process::Stdio {
        std::process::Stdio::from(self.slave.try_clone().unwrap())
    }
}

/// Parses `--json` output into events.
pub fn events(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A `cadre exec --json` run in progress, read event line by event line.
pub struct LiveRun {
    pub child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Harness {
    /// Starts `cadre <args>` (which should include `--json`) with stdin closed.
    pub fn spawn_json(&self, args: &[&str]) -> LiveRun {
        use tokio::io::AsyncBufReadExt;
        let mut child = self
            .command(args, &[])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("cadre starts");
        let stdout = child.stdout.take().expect("piped stdout");
        LiveRun {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }
}

impl Harness {
    /// Starts `cadre <args>` (which should include `--json`) with stdin on
    /// `pty`, so approval questions are asked there.
    pub fn spawn_json_tty(&self, args: &[&str], pty: &Pty) -> LiveRun {
        use tokio::io::AsyncBufReadExt;
        let mut child = self
            .command(args, &[])
            .stdin(pty.slave_stdio())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("cadre starts");
        let stdout = child.stdout.take().expect("piped stdout");
        LiveRun {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }
}

impl LiveRun {
    /// The process id.
    pub fn pid(&self) -> i32 {
        self.child.id().expect("running") as i32
    }

    /// Reads events until the `count`-th one of `event_type`, and returns it.
    pub async fn wait_for(&mut self, event_type: &str, count: usize) -> Value {
        let mut found = 0;
        loop {
            let line =
                tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line())
                    .await
                    .unwrap_or_else(|_| panic!("no {event_type} event within 20 s"))
                    .expect("stdout readable")
                    .unwrap_or_else(|| panic!("cadre ended before {count} {event_type} events"));
            let event: Value = serde_json::from_str(&line).expect("JSON event");
            self.seen.push(line);
            if event["type"] == event_type {
                found += 1;
                if found == count {
                    return event;
                }
            }
        }
    }

    /// Reads events until one of `event_type`, calling `nudge` before the
    /// first read and again whenever a short while passes without it: for a
    /// request cadre may miss if it comes too early (a `SIGUSR1` before the
    /// batch waits), repeated until it takes effect. Fails after 20 s.
    pub async fn wait_for_nudging(
        &mut self,
        event_type: &str,
        mut nudge: impl FnMut(&LiveRun),
    ) -> Value {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            nudge(self);
            let retry_at = tokio::time::Instant::now() + std::time::Duration::from_millis(250);
            // `next_line` is cancel safe: a line read when the timer fires is kept.
            while let Ok(line) = tokio::time::timeout_at(retry_at, self.lines.next_line()).await {
                let line = line
                    .expect("stdout readable")
                    .unwrap_or_else(|| panic!("cadre ended before a {event_type} event"));
                let event: Value = serde_json::from_str(&line).expect("JSON event");
                self.seen.push(line);
                if event["type"] == event_type {
                    return event;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {event_type} event within 20 s"
            );
        }
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.pid(), signal) };
    }

    /// Reads the remaining events and waits for the exit status.
    pub async fn finish(mut self) -> (std::process::ExitStatus, Vec<Value>) {
        while let Ok(Some(line)) =
            tokio::time::timeout(std::time::Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("cadre ends within 30 s")
        {
            self.seen.push(line);
        }
        let status = self.child.wait().await.expect("exit status");
        let events = self
            .seen
            .iter()
            .map(|l| serde_json::from_str(l).expect("JSON event"))
            .collect();
        (status, events)
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("kill");
        self.child.wait().await.expect("exit status");
    }
}

/// Fails a sandbox test whose run shows this kernel has no Landlock (cadre
/// warns so) although the build script found it: such a test must not pass
/// without checking. Where the build finds no Landlock, these tests are
/// compiled `#[ignore]`d instead (see `build.rs`).
pub fn require_landlock(events: &[Value]) {
    let missing = events.iter().any(|e| {
        e["type"] == "warning" && e["message"].as_str().unwrap_or("").contains("no Landlock")
    });
    assert!(
        !missing,
        "this kernel has no Landlock, but the build found it: rebuild so the \
         sandbox tests are compiled as ignored"
    );
}

/// Polls `ready` until it holds; fails naming `what` after a safety deadline
/// (30 s) far beyond what any wait in these tests needs.
pub async fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The session logs of the children of session `session` that hold at least
/// one line: a child's log gets its first line when the child starts.
pub fn child_logs_started(h: &Harness, session: &str) -> usize {
    let dir = h
        .data_dir()
        .join("sessions")
        .join(format!("{session}.agents"));
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.len() > 0))
                .count()
        })
        .unwrap_or(0)
}

/// A directory for test files that is not inside a temp dir the sandbox lets
/// commands write (`/tmp`, `/var/tmp`, `$TMPDIR`): the build's own temp dir
/// when the checkout is elsewhere, else a folder in the user's cache.
pub fn non_temp_base() -> PathBuf {
    let temp_roots: Vec<PathBuf> = ["/tmp", "/var/tmp"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let in_temp = |p: &Path| {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        temp_roots.iter().any(|t| real.starts_with(t))
    };
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if !in_temp(&target) {
        return target;
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    let base = home.join(".cache").join("cadre-tests");
    std::fs::create_dir_all(&base).unwrap();
    base
}

/// The requests the mock answered with rule `rule`.
pub fn rule_records<'a>(records: &'a [Record], rule: &str) -> Vec<&'a Record> {
    records
        .iter()
        .filter(|r| r.rule.as_deref() == Some(rule))
        .collect()
}

/// Every user message of a request body, one JSON text a line.
pub fn user_texts(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of every user message of a request, in order: string contents
/// and text blocks as they are (tool results left out).
pub fn user_plain_text(body: &Value) -> String {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] != "user" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    out.join("\n")
}

/// Every row of the harness's task table.
pub fn tasks(h: &Harness) -> Vec<cadre_core::tasks::TaskRow> {
    cadre_core::tasks::BlockingTaskTable::open(&h.data_dir())
        .unwrap()
        .list(&cadre_core::tasks::TaskFilter::default())
        .unwrap()
}

/// The system prompt a request carried: Anthropic's `system` (a string or
/// text blocks), or OpenAI's first message (role system).
pub fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The MCP fixture server binary, built by `cargo test --workspace` beside
/// `cadre` (and built here when a narrower run left it out).
pub fn mcp_fixture() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let path =
                PathBuf::from(env!("CARGO_BIN_EXE_cadre")).with_file_name("cadre-mcp-fixture");
            if !path.exists() {
                let status = std::process::Command::new(env!("CARGO"))
                    .args(["build", "-p", "cadre-mock", "--bin", "cadre-mcp-fixture"])
                    .status()
                    .expect("cargo runs");
                assert!(status.success(), "the fixture builds");
            }
            path
        })
        .clone()
}

/// Another machine's folders for [`Harness::cadre_at`]: a project and a home
/// (its data directory `cadre/` inside, outside the temp dirs like the harness's own).
pub struct Elsewhere {
    pub project: TempDir,
    pub home: TempDir,
}

impl Elsewhere {
    pub fn new() -> Elsewhere {
        Elsewhere {
            project: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir_in(non_temp_base()).unwrap(),
        }
    }

    /// The data directory runs there use.
    pub fn data_dir(&self) -> PathBuf {
        self.home.path().join("cadre")
    }

    /// Runs `cadre <args>` there against `h`'s mock.
    pub async fn cadre(&self, h: &Harness, args: &[&str]) -> Output {
        h.cadre_at(self.project.path(), self.home.path(), args, &[])
            .await
    }
}

/// Two project definitions for nesting tests: `scout` (Read, Grep, Agent;
/// "You are SCOUT") and `leaf` (Read; "You are LEAF"), the files they read
/// (`src/config.rs`, `a.txt`, `b.txt`) and a depth of 2.
pub fn scout_and_leaf_files(h: &Harness) {
    h.write(
        ".cadre/agents/scout.md",
        "---\nname: scout\ndescription: Searches and delegates reads.\ntools: Read, Grep, Agent\n---\nYou are SCOUT.\n",
    );
    h.write(
        ".cadre/agents/leaf.md",
        "---\nname: leaf\ndescription: Reads one file.\ntools: Read\n---\nYou are LEAF.\n",
    );
    h.write("src/config.rs", "fn parse_config() {}\n");
    h.write("a.txt", "alpha\n");
    h.write("b.txt", "beta\n");
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nmax_depth = 2\n",
    )
    .unwrap();
}
