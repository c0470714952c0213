#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cadre-mock-bin-{}-{name}", std::process::id()))
}

#[tokio::test]
async fn binary_serves_and_records() {
    let script = temp_path("script.yaml");
    let record = temp_path("record.jsonl");
    let _ = std::fs::remove_file(&record);
    std::fs::write(
        &script,
        "rules:\n  - name: hi\n    replies:\n      - text: hello\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cadre-mock"))
        .args([
            "--script",
            script.to_str().unwrap(),
            "--port",
            "0",
            "--record",
        ])
        .arg(&record)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("first line")
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"));
    // Its descriptor table is grown before its runtime's threads start, so
    // passing 64 connections does not stall them (see cadre's own test).
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let size: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(size >= 1024, "FDSize {size}");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let v: Value = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "hello");
    child.kill().unwrap();
    child.wait().unwrap();

    let text = std::fs::read_to_string(&record).unwrap();
    let rec: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(rec["rule"], "hi");
    assert_eq!(rec["wire"], "openai");
    let _ = std::fs::remove_file(&record);
    let _ = std::fs::remove_file(&script);
}

#[test]
fn binary_rejects_bad_script_with_exit_2() {
    let script = temp_path("bad.yaml");
    std::fs::write(&script, "rules:\n  - replies:\n      - txet: oops\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cadre-mock"))
        .args(["--script", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(script.to_str().unwrap()), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("txet"), "{err}");
    let _ = std::fs::remove_file(&script);
}
