//! `cadre eval` through the binary: failing graders say what they saw, a
//! crashing or hanging run is a failure rather than a hang, and `-j` runs
//! cases at once in separate temp directories.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cadre"))
        .arg("eval")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cadre eval runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

const HELLO_SCRIPT: &str = "rules:\n  - replies:\n      - text: \"hello world\"\n";

#[test]
fn a_failing_case_names_each_failed_grader_and_what_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("wrong-answer");
    write(
        &case,
        "case.yaml",
        "prompt: say goodbye\ngraders:\n  - final_text_matches: \"^goodbye\"\n  - file_exists: nope.txt\n  - file_unchanged: keep.txt\n  - tool_not_called: { tool: Read, by: parent }\n",
    );
    write(&case, "model.yaml", HELLO_SCRIPT);
    write(&case, "project/keep.txt", "kept\n");

    let out = eval(&[case.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("wrong-answer  FAIL"), "{text}");
    assert!(
        text.contains("✗ final_text_matches \"^goodbye\": saw \"hello world\""),
        "{text}"
    );
    assert!(
        text.contains("✗ file_exists nope.txt: saw missing"),
        "{text}"
    );
    // Graders that held are not listed as failures.
    assert!(!text.contains("✗ file_unchanged"), "{text}");
    assert!(!text.contains("✗ tool_not_called"), "{text}");
    assert!(text.contains("0 passed, 1 failed"), "{text}");

    let out = eval(&["--json", case.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["failed"], 1);
    let c = &doc["cases"][0];
    assert_eq!(c["name"], "wrong-answer");
    assert_eq!(c["result"], "fail");
    assert_eq!(c["exit_code"], 0);
    assert_eq!(c["requests"]["total"], 1);
    assert_eq!(c["requests"]["parent"], 1);
    let failed: Vec<&str> = c["graders"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["passed"] == false)
        .map(|g| g["grader"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["final_text_matches \"^goodbye\"", "file_exists nope.txt"]
    );
}

#[test]
fn a_case_whose_cadre_fails_or_hangs_is_reported_as_failed_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    // The model server refuses the request: cadre exits 1.
    let crash = dir.path().join("crash");
    write(&crash, "case.yaml", "prompt: hi\n");
    write(
        &crash,
        "model.yaml",
        "rules:\n  - replies:\n      - fail: { status: 400, message: \"scripted refusal\" }\n",
    );
    // The model never answers in time: the runner kills cadre.
    let hang = dir.path().join("hang");
    write(
        &hang,
        "case.yaml",
        "prompt: hi\ntimeout_s: 1\ngraders:\n  - exit_code: 0\n",
    );
    write(
        &hang,
        "model.yaml",
        "rules:\n  - replies:\n      - latency_ms: 30000\n        text: late\n",
    );
    // And one that is fine, next to them.
    let fine = dir.path().join("fine");
    write(
        &fine,
        "case.yaml",
        "prompt: hi\ngraders:\n  - final_text_matches: hello\n",
    );
    write(&fine, "model.yaml", HELLO_SCRIPT);
    // A case.yaml that does not parse is a failed case too, not a stopped run.
    let broken = dir.path().join("broken");
    write(
        &broken,
        "case.yaml",
        "prompt: hi\ngraders:\n  - no_such_grader: 1\n",
    );

    let out = eval(&["--json", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let doc = json(&out);
    let case = |name: &str| {
        doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    let c = case("crash");
    assert_eq!(c["result"], "fail");
    assert_eq!(c["exit_code"], 1);
    assert_eq!(c["graders"][0]["grader"], "exit_code 0 (implicit)");
    assert_eq!(c["graders"][0]["saw"], "exit 1");
    assert!(
        c["turn"].as_str().unwrap().starts_with("failed: ")
            && c["turn"].as_str().unwrap().contains("scripted refusal"),
        "{c}"
    );

    let c = case("hang");
    assert_eq!(c["result"], "fail");
    assert_eq!(c["error"], "timed out after 1 s");
    // Killed, not waited for: the model's reply would take 30 s.
    assert_eq!(c["graders"][0]["saw"], "killed: timed out");

    assert_eq!(case("fine")["result"], "pass");
    let c = case("broken");
    assert_eq!(c["result"], "fail");
    assert!(
        c["error"].as_str().unwrap().contains("no_such_grader"),
        "{c}"
    );

    // The table says the same.
    let out = eval(&[dir.path().to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.contains("error: timed out after 1 s"), "{text}");
    assert!(
        text.contains("✗ exit_code 0 (implicit): saw exit 1"),
        "{text}"
    );
    assert!(text.contains("1 passed, 3 failed"), "{text}");
}

#[test]
fn four_jobs_run_cases_at_once_each_in_its_own_directories() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["iso-a", "iso-b", "iso-c", "iso-d"];
    for name in names {
        let case = dir.path().join(name);
        // Each writes its own name into the same relative path; with shared
        // directories, at most one of them could find its own text there.
        write(
            &case,
            "case.yaml",
            &format!(
                "prompt: write your name\npermission_mode: acceptEdits\ngraders:\n  - file_contains: {{ path: out.txt, text: \"{name}\" }}\n  - file_contains: {{ path: fixture.txt, text: \"{name}\" }}\n  - file_unchanged: fixture.txt\n"
            ),
        );
        write(
            &case,
            "project/fixture.txt",
            &format!("fixture of {name}\n"),
        );
        write(
            &case,
            "model.yaml",
            &format!(
                "rules:\n  - replies:\n      - latency_ms: 700\n        tool_calls: [{{ name: Write, input: {{ file_path: out.txt, content: \"{name}\" }} }}]\n      - text: done\n"
            ),
        );
    }
    let out = eval(&["--json", "--keep", "-j", "4", dir.path().to_str().unwrap()]);
    let doc = json(&out);
    let cases = doc["cases"].as_array().unwrap().clone();
    // Clean up what --keep left before asserting.
    let workdirs: Vec<String> = cases
        .iter()
        .map(|c| c["workdir"].as_str().unwrap().to_string())
        .collect();
    let outs: Vec<String> = workdirs
        .iter()
        .map(|w| std::fs::read_to_string(Path::new(w).join("project/out.txt")).unwrap_or_default())
        .collect();
    for w in &workdirs {
        let _ = std::fs::remove_dir_all(w);
    }
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(doc["passed"], 4);
    let mut unique = workdirs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "separate directories: {workdirs:?}");
    assert_eq!(outs, names, "each run wrote only its own project");

    // Concurrency: every run started before any of them ended.
    let starts: Vec<u64> = cases
        .iter()
        .map(|c| c["started_ms"].as_u64().unwrap())
        .collect();
    let ends: Vec<u64> = cases
        .iter()
        .map(|c| c["started_ms"].as_u64().unwrap() + c["duration_ms"].as_u64().unwrap())
        .collect();
    assert!(
        starts.iter().max() < ends.iter().min(),
        "overlapping runs: starts {starts:?}, ends {ends:?}"
    );
}

#[test]
fn the_board_grader_passes_on_the_sessions_board_and_says_what_it_saw_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("lead-board");
    // The lead alone plans two tasks, takes the first and completes it.
    write(
        &case,
        "case.yaml",
        concat!(
            "prompt: plan and do the first task\n",
            "config: |\n  [teams]\n  enabled = true\n",
            "graders:\n",
            "  - board: { status: completed, min: 1, max: 1 }\n",
            "  - board: { status: completed, subject: schema, owner: team-lead }\n",
            "  - board: { status: pending, subject: API, min: 1, max: 1 }\n",
            // Fails: one task is still pending.
            "  - board: { status: completed, all: true }\n",
            // Fails: nobody named alice owns a task.
            "  - board: { status: completed, owner: alice }\n",
        ),
    );
    write(
        &case,
        "model.yaml",
        concat!(
            "rules:\n  - replies:\n",
            "      - tool_calls:\n",
            "          - { name: TaskCreate, input: { subject: \"Write the schema\", description: \"tables\" } }\n",
            "          - { name: TaskCreate, input: { subject: \"Write the API\", description: \"handlers\" } }\n",
            "      - tool_calls: [ { name: TaskUpdate, input: { taskId: \"1\", status: in_progress, owner: team-lead } } ]\n",
            "      - tool_calls: [ { name: TaskUpdate, input: { taskId: \"1\", status: completed } } ]\n",
            "      - text: \"schema done\"\n",
        ),
    );
    let out = eval(&["--json", case.to_str().unwrap()]);
    let doc = json(&out);
    let graders: Vec<Value> = doc["cases"][0]["graders"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["grader"].as_str().unwrap().starts_with("board"))
        .cloned()
        .collect();
    let verdicts: Vec<(String, bool)> = graders
        .iter()
        .map(|g| {
            (
                g["grader"].as_str().unwrap().to_string(),
                g["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
        [true, true, true, false, false],
        "{verdicts:?}"
    );
    let saw = graders[3]["saw"].as_str().unwrap_or_default();
    assert!(
        saw.contains("#1 completed team-lead") && saw.contains("#2 pending -"),
        "{saw}"
    );
    assert_eq!(out.status.code(), Some(1));

    // Without a team there is no board to grade.
    let plain = dir.path().join("no-team");
    write(
        &plain,
        "case.yaml",
        "prompt: hi\ngraders:\n  - board: { status: completed }\n",
    );
    write(&plain, "model.yaml", HELLO_SCRIPT);
    let out = eval(&["--json", plain.to_str().unwrap()]);
    let doc = json(&out);
    let g = doc["cases"][0]["graders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["grader"].as_str().unwrap().starts_with("board"))
        .unwrap();
    assert_eq!(g["passed"], false);
    assert_eq!(g["saw"], "no tasks on the session's board", "{g}");
}
