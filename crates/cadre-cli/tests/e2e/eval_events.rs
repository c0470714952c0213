//! `cadre eval` reads `exec --json` as typed events: on the shipped cases,
//! which between them print most kinds of event, every stdout line of cadre
//! reads back as an event and every case passes. And a grader spec that
//! cannot hold is an error in its case, found before cadre runs.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn eval_json(path: &Path) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cadre"))
        .args(["eval", "--json"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("cadre eval runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (out, doc)
}

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
    assert_eq!(out.status.code(), Some(0), "{doc}");
}

#[test]
fn a_grader_that_cannot_hold_fails_its_case_before_cadre_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        (
            "bad-regex",
            "- final_text_matches: \"(unclosed\"",
            "grader 2: bad regex",
        ),
        (
            "bad-status",
            "- subagent_status: { status: complete }",
            "unknown variant `complete`",
        ),
        (
            "bad-bound",
            "- requests: { min: 3, max: 1 }",
            "grader 2: min 3 is above max 1",
        ),
    ];
    for (name, grader, _) in bad {
        let case = dir.path().join(name);
        std::fs::create_dir_all(&case).unwrap();
        std::fs::write(
            case.join("case.yaml"),
            format!("prompt: hi\ngraders:\n- exit_code: 0\n{grader}\n"),
        )
        .unwrap();
        // No model.yaml: had cadre been started, the error would be about that.
    }
    let (out, doc) = eval_json(dir.path());
    assert_eq!(out.status.code(), Some(1), "{doc}");
    assert_eq!(doc["failed"], 3, "{doc}");
    for (name, _, error) in bad {
        let case = doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        assert_eq!(case["result"], "fail", "{case}");
        assert!(
            case["error"].as_str().unwrap().contains(error),
            "{name}: {case}"
        );
        assert_eq!(case["graders"], Value::Array(Vec::new()), "{case}");
    }
}
