//! Keys and hostile files, through the binary: a project file cannot send the
//! key off loopback, a redirect cannot carry it elsewhere, sandboxed commands
//! cannot read it from cadre's process, tool output quoting it is redacted;
//! config numbers out of range and non-regular or huge config, instruction
//! and definition files give clear errors, never a panic or a hang.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{BOTH_WIRES, Harness, Wire, events, stderr, stdout, tool_results};

const ANTHROPIC_KEY: &str = "sk-ant-test-KEY-4f9c2d7e1a";
const OPENAI_KEY: &str = "sk-openai-test-KEY-8b3e6f";

fn key_env() -> [(&'static str, &'static str); 2] {
    [
        ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        ("OPENAI_API_KEY", OPENAI_KEY),
    ]
}

/// Every byte of every file under `dir`, lossily as text.
fn all_files_text(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.push_str(&all_files_text(&p));
        } else if ft.is_file() {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            out.push('\n');
        }
    }
    out
}

/// A listener that records every connection and the bytes it received.
struct Witness {
    port: u16,
    received: Arc<Mutex<Vec<String>>>,
}

impl Witness {
    fn start() -> Witness {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let rec = received.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
                let head = read_head(&mut conn);
                rec.lock().unwrap().push(head);
                let _ = conn.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Witness { port, received }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

/// Reads a request's head and its body (by content-length), as text.
fn read_head(conn: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                break;
            }
        }
    }
    String::from_utf8_lossy(&buf).to_string()
}

/// A server answering every request with `status` and `Location: location`.
fn redirector(status: u16, location: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = read_head(&mut conn);
            let reply = format!(
                "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    port
}

async fn run(h: &Harness, args: &[&str], env: &[(&str, &str)]) -> Output {
    h.command(args, env)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap()
}

// ---------------------------------------------------------------- item 1

#[tokio::test]
async fn project_base_url_with_userinfo_is_ignored() {
    let witness = Witness::start();
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    h.write(
        ".cadre/config.toml",
        &format!("base_url = \"http://[::1]@127.0.0.1:{}\"\n", witness.port),
    );
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        format!("base_url = \"{}\"\n", h.mock.url()),
    )
    .unwrap();
    // Trusted: the userinfo rule holds whatever the trust.
    let mut cmd = h.command(&["exec", "--json", "--trust", "hi"], &key_env());
    cmd.env_remove("CADRE_BASE_URL");
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = events(&out)
        .into_iter()
        .find(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("base_url"))
        .expect("a warning about the project's base_url");
    let msg = warning["message"].as_str().unwrap();
    assert!(msg.contains(".cadre/config.toml"), "{msg}");
    assert!(msg.contains("user name or password"), "{msg}");
    assert_eq!(
        h.records().len(),
        1,
        "the request went to the user's server"
    );
    assert!(
        witness.received().is_empty(),
        "nothing reached the host behind the userinfo"
    );
}

#[tokio::test]
async fn project_base_url_spellings_are_decided_on_the_parsed_host() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    let port = h.mock.url().rsplit(':').next().unwrap().to_string();
    // Spellings the URL parser turns into a loopback host: used as parsed.
    let accepted = [
        format!("http://0x7f.1:{port}"),
        format!("http://2130706433:{port}"),
        format!("http://127.0.0.%31:{port}"),
        format!("http://%6c%6fcalhost:{port}"),
        format!("http://LocalHost:{port}/"),
    ];
    for (i, url) in accepted.iter().enumerate() {
        h.write(".cadre/config.toml", &format!("base_url = \"{url}\"\n"));
        // A project's base_url applies only in a trusted folder.
        let mut cmd = h.command(&["exec", "--json", "--trust", "hi"], &key_env());
        cmd.env_remove("CADRE_BASE_URL");
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{url}: {}", stderr(&out));
        assert_eq!(
            h.records().len(),
            i + 1,
            "{url}: the request reached loopback"
        );
    }
    // Spellings that are not plainly loopback: ignored with a warning, the
    // user's own server is used, the named one gets nothing.
    let witness = Witness::start();
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        format!("base_url = \"{}\"\n", h.mock.url()),
    )
    .unwrap();
    let w = witness.port;
    let refused = [
        format!("http://user:pw@127.0.0.1:{w}"),
        format!("http://[::ffff:127.0.0.1]:{w}"),
        format!("http://localhost.:{w}"),
        format!("http://x.localhost:{w}"),
        format!("http://127.0.0.1%2f@localhost:{w}"),
    ];
    for url in &refused {
        h.write(".cadre/config.toml", &format!("base_url = \"{url}\"\n"));
        let before = h.records().len();
        let mut cmd = h.command(&["exec", "--json", "--trust", "hi"], &key_env());
        cmd.env_remove("CADRE_BASE_URL");
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{url}: {}", stderr(&out));
        assert!(
            events(&out).iter().any(|e| e["type"] == "warning"
                && e["message"].as_str().unwrap().contains("base_url ignored")),
            "{url}: warned"
        );
        assert_eq!(
            h.records().len(),
            before + 1,
            "{url}: the user's server answered"
        );
    }
    assert!(witness.received().is_empty(), "{:?}", witness.received());
}

#[tokio::test]
async fn redirects_are_not_followed_with_the_key() {
    for wire in BOTH_WIRES {
        for status in [307, 302] {
            let witness = Witness::start();
            let path = match wire {
                Wire::Anthropic => "/v1/messages",
                Wire::OpenAi => "/v1/chat/completions",
            };
            let port = redirector(status, format!("http://127.0.0.1:{}{path}", witness.port));
            let h = Harness::new("rules:\n  - replies:\n      - text: fine\n", wire).await;
            let base = match wire {
                Wire::Anthropic => format!("http://127.0.0.1:{port}"),
                Wire::OpenAi => format!("http://127.0.0.1:{port}/v1"),
            };
            let mut env = key_env().to_vec();
            env.push(("CADRE_BASE_URL", &base));
            let out = run(&h, &["exec", "--json", "hi"], &env).await;
            assert_eq!(out.status.code(), Some(1), "{wire:?} {status}");
            // With --json the failure is an event on stdout.
            let err = stdout(&out) + &stderr(&out);
            assert!(
                err.contains("does not follow redirects"),
                "{wire:?} {status}: {err}"
            );
            let got = witness.received();
            assert!(
                got.is_empty(),
                "{wire:?} {status}: the redirect target got a request: {got:?}"
            );
        }
    }
}

// ---------------------------------------------------------------- item 2

const HELPER: &str = "---
name: helper
description: Reads the environment.
tools: Bash
---
You are HELPER.
";

const ENV_PROBE: &str =
    r"tr '\0' '\n' < /proc/$PPID/environ; echo; cat /proc/$PPID/cmdline; echo; echo probed";

#[tokio::test]
async fn sandboxed_commands_cannot_read_the_key() {
    let probe_yaml = ENV_PROBE.replace('\'', "''");
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ system: "You are HELPER" }}
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: '{probe_yaml}' }} }}
      - text: "child done"
  - name: parent
    when: {{ system: "You are cadre" }}
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: 'touch started; while [ ! -f go ]; do sleep 0.05; done; {probe_yaml}' }} }}
      - tool_calls:
          - {{ name: Bash, input: {{ command: '{probe_yaml}', run_in_background: true, description: "bg probe" }} }}
          - {{ name: Agent, input: {{ description: "env child", prompt: "probe", subagent_type: "helper" }} }}
      - text: "waiting"
      - text: "done"
      - text: "done"
"#
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    h.write(".cadre/agents/helper.md", HELPER);
    let child = h
        .command(
            &[
                "exec",
                "--json",
                "--permission-mode",
                "acceptEdits",
                "probe",
            ],
            &key_env(),
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // Safety net only: the first command waits for `go`.
    for _ in 0..400 {
        if h.path("started").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(h.path("started").exists(), "the first command started");
    for file in ["environ", "cmdline"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for key in [ANTHROPIC_KEY, OPENAI_KEY] {
            assert!(
                !text.contains(key),
                "/proc/<cadre>/{file} shows the key: {text}"
            );
        }
    }
    h.write("go", "");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("cadre ends")
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    // The probes ran: each result came back (whatever the kernel let them read).
    let probed = records
        .iter()
        .flat_map(|r| tool_results(&r.body))
        .filter(|(c, _)| c.contains("probed"))
        .count();
    assert!(probed >= 2, "the probes ran");
    let mut everything = stdout(&out) + &stderr(&out);
    for r in &records {
        everything.push_str(&r.body.to_string());
    }
    everything.push_str(&all_files_text(&h.data_dir()));
    for key in [ANTHROPIC_KEY, OPENAI_KEY] {
        assert!(!everything.contains(key), "the key {key} leaked");
    }
    assert!(
        everything.contains("bg probe"),
        "the background task was recorded"
    );
}

#[tokio::test]
async fn tool_output_quoting_the_key_is_redacted() {
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "cat notes.txt" } }
          - { name: Read, input: { file_path: "notes.txt" } }
          - { name: Grep, input: { pattern: "token", path: "." , output_mode: "content" } }
      - tool_calls:
          - { name: Bash, input: { command: "cat notes.txt", run_in_background: true, description: "bg cat" } }
          - { name: Bash, input: { command: "printf %s sk-ant-test-; sleep 0.3; echo KEY-4f9c2d7e1a", run_in_background: true, description: "split key" } }
      - text: "waiting"
      - text: "done"
      - text: "done"
"#;
    for wire in BOTH_WIRES {
        let h = Harness::new(script, wire).await;
        h.write(
            "notes.txt",
            &format!("token: {ANTHROPIC_KEY}\nother: {OPENAI_KEY}\n"),
        );
        let out = run(
            &h,
            &["exec", "--json", "--permission-mode", "acceptEdits", "go"],
            &key_env(),
        )
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
        let records = h.records();
        let results: Vec<String> = tool_results(&records[1].body)
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(results.len(), 3, "{results:?}");
        for r in &results {
            assert!(r.contains("[redacted]"), "{wire:?}: {r}");
        }
        let mut everything = stdout(&out) + &stderr(&out);
        for r in &records {
            everything.push_str(&r.body.to_string());
        }
        everything.push_str(&all_files_text(&h.data_dir()));
        for key in [ANTHROPIC_KEY, OPENAI_KEY] {
            assert!(!everything.contains(key), "{wire:?}: the key {key} leaked");
        }
        let later: String = records[2..].iter().map(|r| r.body.to_string()).collect();
        assert!(
            later.contains("token: [redacted]"),
            "{wire:?}: the notice is redacted"
        );
    }
}

// ---------------------------------------------------------------- item 19

#[tokio::test]
async fn config_numbers_out_of_range_are_refused() {
    let cases = [
        (
            "[subagents]\nauto_background_after_s = 1e300\n",
            "auto_background_after_s",
        ),
        (
            "[subagents]\nauto_background_after_s = -1.0\n",
            "auto_background_after_s",
        ),
        (
            "[subagents]\nauto_background_after_s = nan\n",
            "auto_background_after_s",
        ),
        (
            "[subagents]\nauto_background_after_s = inf\n",
            "auto_background_after_s",
        ),
        ("max_tokens = 0\n", "max_tokens"),
        (
            "[limits]\nmax_requests_per_turn = 0\n",
            "max_requests_per_turn",
        ),
        (
            "[limits]\nmax_tool_calls_per_turn = 0\n",
            "max_tool_calls_per_turn",
        ),
        ("[tools]\noutput_cap_bytes = 0\n", "output_cap_bytes"),
        ("[subagents]\nmax_depth = 0\n", "max_depth"),
        ("[subagents]\nmax_depth = 9\n", "max_depth"),
        (
            "[subagents]\nmax_concurrent_subagents = 0\n",
            "max_concurrent_subagents",
        ),
        (
            "[subagents]\nmax_running_subagents = 0\n",
            "max_running_subagents",
        ),
        ("[subagents]\ndefault_max_turns = 0\n", "default_max_turns"),
        (
            "[subagents]\nmax_concurrent_subagents = -3\n",
            "max_concurrent_subagents",
        ),
    ];
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    for (text, key) in cases {
        // Both the user's and the project's file are checked, each named.
        for project in [false, true] {
            let (path, shown) = if project {
                let _ = std::fs::remove_file(h.data_dir().join("config.toml"));
                (h.path(".cadre/config.toml"), ".cadre/config.toml")
            } else {
                (h.data_dir().join("config.toml"), "cadre/config.toml")
            };
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            for args in [&["agents", "list"][..], &["exec", "hi"][..]] {
                let out = h.cadre(args).await;
                let err = stderr(&out);
                assert_eq!(out.status.code(), Some(1), "{text} {args:?}: {err}");
                assert!(err.contains(shown), "{text}: names the file: {err}");
                assert!(err.contains(key), "{text}: names the key: {err}");
                assert!(!err.contains("panicked"), "{err}");
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    assert!(h.records().is_empty(), "nothing was sent");
    // In range still works.
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nauto_background_after_s = 0.5\nmax_depth = 2\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
}

// ---------------------------------------------------------------- item 20

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Replaces `rel` in the project by a symlink to /dev/zero, a FIFO, or a file
/// over `limit` bytes, by `kind`.
fn plant(h: &Harness, rel: &str, kind: &str, limit: usize) {
    let p = h.path(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&p);
    match kind {
        "zero" => std::os::unix::fs::symlink("/dev/zero", &p).unwrap(),
        "fifo" => mkfifo(&p),
        "big" => std::fs::write(&p, "# padding\n".repeat(limit / 10 + 1)).unwrap(),
        _ => unreachable!(),
    }
}

/// Runs cadre with a safety net: a FIFO used to hang it forever.
async fn bounded(h: &Harness, args: &[&str]) -> Output {
    let out = h
        .command(args, &[])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("cadre did not hang")
        .unwrap()
}

#[tokio::test]
async fn config_file_that_is_not_a_small_regular_file_is_refused() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    for kind in ["zero", "fifo", "big"] {
        plant(&h, ".cadre/config.toml", kind, 1 << 20);
        let out = bounded(&h, &["agents", "list"]).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(err.contains(".cadre/config.toml"), "{kind}: {err}");
        let why = match kind {
            "big" => "larger than",
            _ => "not a regular file",
        };
        assert!(err.contains(why), "{kind}: {err}");
    }
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn instruction_file_that_is_not_a_small_regular_file_is_skipped() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    for kind in ["zero", "fifo", "big"] {
        let limit = cadre_core::instructions::MAX_READ_BYTES as usize;
        plant(&h, "AGENTS.md", kind, limit);
        // Trusted, so a link out of the project is followed up to the check.
        let out = bounded(&h, &["exec", "--json", "--trust", "hi"]).await;
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let warning = events(&out)
            .into_iter()
            .find(|e| {
                e["type"] == "warning" && e["message"].as_str().unwrap().contains("AGENTS.md")
            })
            .unwrap_or_else(|| panic!("{kind}: a warning names AGENTS.md"));
        let msg = warning["message"].as_str().unwrap();
        let why = match kind {
            "big" => "larger than",
            _ => "not a regular file",
        };
        assert!(msg.contains(why), "{kind}: {msg}");
        let system = h.records().last().unwrap().body["system"].to_string();
        assert!(!system.contains("Contents of"), "{kind}: skipped");
    }
}

#[tokio::test]
async fn definition_file_that_is_not_a_small_regular_file_is_skipped() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: fine\n",
        Wire::Anthropic,
    )
    .await;
    h.write(".cadre/agents/good.md", HELPER);
    for kind in ["zero", "fifo", "big"] {
        plant(&h, ".cadre/agents/bad.md", kind, 1 << 20);
        let out = bounded(&h, &["exec", "--json", "hi"]).await;
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let warning = events(&out)
            .into_iter()
            .find(|e| e["type"] == "warning" && e["message"].as_str().unwrap().contains("bad.md"))
            .unwrap_or_else(|| panic!("{kind}: a warning names bad.md"));
        let msg = warning["message"].as_str().unwrap();
        let why = match kind {
            "big" => "larger than",
            _ => "not a regular file",
        };
        assert!(msg.contains(why), "{kind}: {msg}");
        let list = bounded(&h, &["agents", "list"]).await;
        assert!(
            stdout(&list).contains("helper"),
            "{kind}: the good one loads"
        );
    }
}
