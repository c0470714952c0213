//! Driving the real `cadre` in a tmux pane (120×40) against the scripted
//! model: `send-keys` in, `capture-pane` out. Every wait polls the pane (or
//! a file) with a generous deadline. Without tmux, [`tmux_available`] says
//! so and the caller skips; `.ci/run` installs it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::Harness;

/// How long any one wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(40);

/// A tmux server of its own, with one pane running `cadre` from a script
/// that records `stty -a` before and after and the exit status.
pub struct Pane {
    socket: String,
    dir: tempfile::TempDir,
}

pub fn tmux_available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    // Under CI a missing tmux is a broken machine, not a reason to pass.
    assert!(
        found || std::env::var_os("CI").is_none(),
        "tmux is not installed and CI is set: .ci/run installs it; the TUI end-to-end tests must run"
    );
    if !found {
        eprintln!(
            "SKIPPED: tmux is not installed (.ci/run installs it); the TUI end-to-end test did not run"
        );
    }
    found
}

impl Pane {
    /// Starts `cadre <args>` in a fresh 120×40 pane with the harness's environment.
    pub fn start(h: &Harness, args: &[&str]) -> Pane {
        Pane::start_env(h, args, &[])
    }

    /// [`Pane::start`] with extra environment variables (they win over the defaults).
    pub fn start_env(h: &Harness, args: &[&str], extra_env: &[(&str, &str)]) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        // The server's socket lives in the test's temp dir, gone with it.
        let socket = dir.path().join("tmux.sock").display().to_string();
        let cmd = h.command(args, extra_env);
        let std_cmd = cmd.as_std();
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let mut env = String::new();
        for (k, v) in std_cmd.get_envs() {
            if let Some(v) = v {
                env.push_str(&format!(
                    "{}={} ",
                    k.to_string_lossy(),
                    quote(&v.to_string_lossy())
                ));
            }
        }
        let argv: Vec<String> = std::iter::once(std_cmd.get_program())
            .chain(std_cmd.get_args())
            .map(|a| quote(&a.to_string_lossy()))
            .collect();
        let d = dir.path().display();
        let script = format!(
            "stty -a > {d}/before.txt\ncd {}\nenv -i TERM=xterm-256color {env}{}\necho $? > {d}/status.tmp\nstty -a > {d}/after.txt\nmv {d}/status.tmp {d}/status.txt\nexec sleep 600\n",
            quote(&h.project.path().display().to_string()),
            argv.join(" ")
        );
        std::fs::write(dir.path().join("run.sh"), script).unwrap();
        let ok = Command::new("tmux")
            .args([
                "-S",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
            ])
            .arg(format!("sh {d}/run.sh"))
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(ok.success(), "tmux starts");
        Pane { socket, dir }
    }

    pub fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-S", &self.socket])
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    }

    /// The pane's text now.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p"]).stdout).into_owned()
    }

    /// Types keys (tmux key names, or literal text with `literal`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        assert!(self.tmux(&["send-keys", "-l", text]).status.success());
    }

    /// Polls the pane until `ready` holds for its text; returns that text.
    pub async fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "gave up waiting for {what}; the pane shows:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text)).await
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Waits for cadre to end; returns its exit status.
    pub async fn exit_status(&self) -> i32 {
        let path = self.file("status.txt");
        super::wait_until("cadre to exit", || path.exists()).await;
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
