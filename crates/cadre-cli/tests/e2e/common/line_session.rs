//! The line front end (`cadre` with no subcommand) driven through a real
//! pseudo-terminal, for tests of its commands.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use super::{Harness, Pty, wait_until};

/// `cadre` with no subcommand, its stdin on `pty`; what it prints on stderr
/// is collected, its stdout read line by line.
pub struct Interactive {
    pub child: Child,
    pub stdout: Lines<BufReader<ChildStdout>>,
    pub stderr: Arc<Mutex<String>>,
}

impl Interactive {
    pub fn start(h: &Harness, pty: &Pty, args: &[&str]) -> Interactive {
        let mut child = h
            .command(args, &[])
            .stdin(pty.slave_stdio())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let seen = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err.next_line().await {
                seen.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Interactive {
            child,
            stdout,
            stderr,
        }
    }

    /// Reads stdout until a line holds `want`.
    pub async fn wait_for_stdout(&mut self, want: &str) {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = self.stdout.next_line().await.unwrap() {
                if line.contains(want) {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            found,
            Ok(true),
            "stdout never showed {want:?}; stderr:\n{}",
            self.stderr()
        );
    }

    /// What cadre printed on stderr, each line without the prompts before
    /// it (at a terminal the typed line and its newline follow a prompt).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap()
            .lines()
            .map(|l| {
                let mut l = l;
                while let Some(rest) = l.strip_prefix("› ") {
                    l = rest;
                }
                format!("{l}\n")
            })
            .collect()
    }

    /// Waits until stderr holds `want` `times` times.
    pub async fn wait_for_stderr(&self, want: &str, times: usize) {
        let seen = self.stderr.clone();
        wait_until(&format!("stderr shows {want:?} {times} time(s)"), || {
            seen.lock().unwrap().matches(want).count() >= times
        })
        .await;
    }

    /// The session ids the banners named, in order.
    pub fn sessions(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter(|l| l.starts_with("cadre · "))
            .filter_map(|l| l.rsplit("· session ").next())
            .map(str::to_string)
            .collect()
    }

    /// Waits for the process to leave and says whether it succeeded.
    pub async fn exit_status(&mut self) -> bool {
        tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("cadre leaves within 20 s")
            .unwrap()
            .success()
    }
}
