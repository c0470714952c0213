//! `cadre eval` reads `exec --json` as typed events: on the shipped cases,
//! which between them print most kinds of event, every stdout line of cadre
//! reads back as an event and every case passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

#[test]
fn every_line_of_the_shipped_cases_reads_back_as_an_event() {
    let evals = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals");
    let out = Command::new(env!("CARGO_BIN_EXE_cadre"))
        .args(["eval", "--json"])
        .arg(&evals)
        .stdin(Stdio::null())
        .output()
        .expect("cadre eval runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 10, "{text}");
    for c in cases {
        assert_eq!(c["result"], "pass", "{c}");
        assert_eq!(c["unparsed_lines"], 0, "{c}");
        assert_eq!(c["unparsed"], Value::Array(Vec::new()), "{c}");
    }
    assert_eq!(out.status.code(), Some(0), "{text}");
}
