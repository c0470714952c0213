//! Tool arguments are parsed once, as a JSON object with unique keys, before
//! the permission policy sees them; anything else goes back to the model as
//! `invalid_arguments` and never reaches the policy or the tool. Plan mode is
//! read-only whatever the rules say. Through the binary, on both wires.

use crate::common;

use common::{BOTH_WIRES, Harness, events, stderr, tool_results};
use serde_json::Value;
use tempfile::TempDir;

/// A script whose one reply makes the tool calls `calls` (YAML flow items), then ends.
fn script(calls: &[String]) -> String {
    let items: Vec<String> = calls.iter().map(|c| format!("          - {c}")).collect();
    format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n{}\n      - text: \"done\"\n",
        items.join("\n")
    )
}

/// A tool call whose argument text is `raw`, verbatim.
fn raw_call(tool: &str, raw: &str) -> String {
    format!(
        "{{ name: {tool}, input_raw: '{}' }}",
        raw.replace('\'', "''")
    )
}

/// A directory no sandboxed command may write: outside the project and the temp dirs.
fn outside() -> TempDir {
    tempfile::tempdir_in(common::non_temp_base()).unwrap()
}

/// The records of the main session log of a `--json` run.
fn session_log(h: &Harness, evs: &[Value]) -> Vec<Value> {
    let id = evs
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .expect("a session_started event");
    let path = h.data_dir().join("sessions").join(format!("{id}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `cadre exec --json <flags> go` and checks that every call of the
/// reply came back as `invalid_arguments` without reaching the policy or the
/// tool: the model was told so, nothing was started, asked or denied, and
/// the log holds an error result and no `tool_start` for each call.
async fn run_expecting_invalid(h: &Harness, flags: &[&str], calls: usize, why: &str) {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(flags);
    args.push("go");
    let out = h.cadre(&args).await;
    let wire = h.wire;
    assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
    let evs = events(&out);

    let results = tool_results(&h.records()[1].body);
    assert_eq!(results.len(), calls, "{wire:?}: {results:?}");
    for (text, is_error) in &results {
        assert!(*is_error, "{wire:?}: {text}");
        assert!(
            text.starts_with("invalid_arguments: ") && text.contains(why),
            "{wire:?}: {text}"
        );
    }
    for kind in ["tool_call_denied", "approval_requested"] {
        assert!(
            !evs.iter().any(|e| e["type"] == kind),
            "{wire:?}: the policy never saw the call ({kind})"
        );
    }
    let ended: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "tool_call_ended")
        .collect();
    assert_eq!(ended.len(), calls, "{wire:?}");
    assert!(ended.iter().all(|e| e["is_error"] == true), "{wire:?}");

    let log = session_log(h, &evs);
    assert!(
        !log.iter().any(|r| r["type"] == "tool_start"),
        "{wire:?}: no tool started: {log:?}"
    );
    let logged: Vec<&Value> = log.iter().filter(|r| r["type"] == "tool_result").collect();
    assert_eq!(logged.len(), calls, "{wire:?}");
    for r in logged {
        assert_eq!(r["status"], "error", "{wire:?}: {r}");
        assert!(
            r["content"]
                .as_str()
                .unwrap()
                .starts_with("invalid_arguments: "),
            "{wire:?}: {r}"
        );
    }
}

const NOT_AN_OBJECT: &str = "the arguments must be a JSON object, not an array";

#[tokio::test]
async fn bash_array_with_sandbox_false_is_refused_in_default_mode() {
    for wire in BOTH_WIRES {
        let dir = outside();
        let target = dir.path().join("unsandboxed");
        let raw = format!(
            r#"["touch made.txt {}", null, null, null, false]"#,
            target.display()
        );
        let h = Harness::new(&script(&[raw_call("Bash", &raw)]), wire).await;
        run_expecting_invalid(&h, &[], 1, NOT_AN_OBJECT).await;
        assert!(!target.exists(), "{wire:?}: ran unsandboxed");
        assert!(!h.path("made.txt").exists(), "{wire:?}: ran");
    }
}

#[tokio::test]
async fn bash_array_with_sandbox_false_is_refused_in_plan_mode_with_a_bash_deny() {
    for wire in BOTH_WIRES {
        let dir = outside();
        let target = dir.path().join("unsandboxed");
        let raw = format!(
            r#"["touch made.txt {}", null, null, null, false]"#,
            target.display()
        );
        let h = Harness::new(&script(&[raw_call("Bash", &raw)]), wire).await;
        let flags = ["--permission-mode", "plan", "--deny", "Bash"];
        run_expecting_invalid(&h, &flags, 1, NOT_AN_OBJECT).await;
        assert!(!target.exists(), "{wire:?}: ran unsandboxed");
        assert!(!h.path("made.txt").exists(), "{wire:?}: ran");
    }
}

#[tokio::test]
async fn write_array_outside_the_project_is_refused_in_plan_mode_with_a_write_deny() {
    for wire in BOTH_WIRES {
        let dir = outside();
        let target = dir.path().join("written.txt");
        let raw = serde_json::json!([target.to_str().unwrap(), "x"]).to_string();
        let h = Harness::new(&script(&[raw_call("Write", &raw)]), wire).await;
        let flags = ["--permission-mode", "plan", "--deny", "Write"];
        run_expecting_invalid(&h, &flags, 1, NOT_AN_OBJECT).await;
        assert!(!target.exists(), "{wire:?}: wrote outside the project");
    }
}

#[tokio::test]
async fn read_array_is_refused_and_a_read_deny_keeps_the_file_unread() {
    for wire in BOTH_WIRES {
        let h = Harness::new(
            &script(&[raw_call("Read", r#"["secret.txt", null, null]"#)]),
            wire,
        )
        .await;
        h.write("secret.txt", "TOPSECRET\n");
        run_expecting_invalid(&h, &["--deny", "Read(secret.txt)"], 1, NOT_AN_OBJECT).await;
        let body = h.records()[1].body.to_string();
        assert!(
            !body.contains("TOPSECRET"),
            "{wire:?}: the denied file was read"
        );
    }
}

#[tokio::test]
async fn edit_array_is_refused_and_an_edit_deny_keeps_the_file_unchanged() {
    for wire in BOTH_WIRES {
        // The file is read first (allowed), so the edit is not refused for
        // want of a read.
        let calls = [
            r#"{ name: Read, input: { file_path: "a.txt" } }"#.to_string(),
            raw_call("Edit", r#"["a.txt", "one", "two", null]"#),
        ];
        let h = Harness::new(&script(&calls), wire).await;
        h.write("a.txt", "one\n");
        let out = h
            .cadre(&[
                "exec",
                "--json",
                "--permission-mode",
                "acceptEdits",
                "--deny",
                "Edit(a.txt)",
                "go",
            ])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert_eq!(h.read("a.txt"), "one\n", "{wire:?}: the denied edit ran");
        let results = tool_results(&h.records()[1].body);
        assert!(!results[0].1, "{wire:?}: {:?}", results[0]);
        assert!(
            results[1].0.starts_with("invalid_arguments: ") && results[1].0.contains(NOT_AN_OBJECT),
            "{wire:?}: {:?}",
            results[1]
        );
        let log = session_log(&h, &events(&out));
        let started: Vec<&Value> = log.iter().filter(|r| r["type"] == "tool_start").collect();
        assert_eq!(started.len(), 1, "{wire:?}: only the Read started");
        assert_eq!(started[0]["tool"], "Read");
    }
}

#[tokio::test]
async fn agent_array_is_refused_and_an_agent_explore_deny_starts_no_child() {
    for wire in BOTH_WIRES {
        let raw = r#"["look", "PROBE-CHILD: list the files", "Explore", null, null, null, null]"#;
        let text = format!(
            "rules:
  - name: child
    when: {{ first_user: \"PROBE-CHILD\" }}
    replies:
      - text: \"child ran\"
  - name: parent
    replies:
      - tool_calls:
          - {}
      - text: \"done\"
",
            raw_call("Agent", raw)
        );
        let h = Harness::new(&text, wire).await;
        run_expecting_invalid(&h, &["--deny", "Agent(Explore)"], 1, NOT_AN_OBJECT).await;
        let records = h.records();
        assert!(
            !records.iter().any(|r| r.rule.as_deref() == Some("child")),
            "{wire:?}: a denied Explore child was started"
        );
        assert_eq!(records.len(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn duplicate_keys_are_refused_before_the_policy_at_any_depth() {
    for wire in BOTH_WIRES {
        // The policy would see the last `command` (allowed); a parser keeping
        // the first would run `touch`.
        let calls = [
            raw_call(
                "Bash",
                r#"{"command": "touch made.txt", "command": "echo hi"}"#,
            ),
            raw_call(
                "Bash",
                r#"{"command": "echo hi", "sandbox": true, "sandbox": false}"#,
            ),
            raw_call(
                "TodoWrite",
                r#"{"todos": [{"content": "a", "status": "pending", "status": "completed"}]}"#,
            ),
        ];
        let h = Harness::new(&script(&calls), wire).await;
        run_expecting_invalid(&h, &["--allow", "Bash(echo:*)"], 3, "duplicate key").await;
        assert!(!h.path("made.txt").exists(), "{wire:?}");
    }
}

#[tokio::test]
async fn scalar_arguments_are_refused_before_the_policy() {
    for wire in BOTH_WIRES {
        let calls = [
            raw_call("Bash", r#""touch made.txt""#),
            raw_call("Read", "42"),
            raw_call("Glob", "null"),
        ];
        let h = Harness::new(&script(&calls), wire).await;
        run_expecting_invalid(
            &h,
            &["--permission-mode", "acceptEdits"],
            3,
            "must be a JSON object, not",
        )
        .await;
        assert!(!h.path("made.txt").exists(), "{wire:?}");
    }
}

#[tokio::test]
async fn turning_the_sandbox_off_needs_permission_in_every_mode_but_bypass_even_with_an_allow_rule()
{
    for wire in BOTH_WIRES {
        for mode in ["default", "acceptEdits", "plan", "dontAsk"] {
            let dir = outside();
            let target = dir.path().join("unsandboxed");
            let call = format!(
                r#"{{ name: Bash, input: {{ command: "touch {}", sandbox: false }} }}"#,
                target.display()
            );
            let h = Harness::new(&script(&[call]), wire).await;
            let out = h
                .cadre(&[
                    "exec",
                    "--json",
                    "--permission-mode",
                    mode,
                    "--allow",
                    "Bash(touch:*)",
                    "go",
                ])
                .await;
            assert!(out.status.success(), "{wire:?} {mode}: {}", stderr(&out));
            let results = tool_results(&h.records()[1].body);
            assert!(
                results[0].0.starts_with("denied"),
                "{wire:?} {mode}: {:?}",
                results[0]
            );
            assert!(!target.exists(), "{wire:?} {mode}: ran unsandboxed");
            let evs = events(&out);
            assert!(
                evs.iter().any(|e| e["type"] == "tool_call_denied"),
                "{wire:?} {mode}"
            );
        }
    }
}

/// Plan mode denies Write, Edit and Bash even where an allow rule matches.
#[tokio::test]
async fn plan_mode_is_read_only_whatever_the_allow_rules_say() {
    for wire in BOTH_WIRES {
        let calls = [
            r#"{ name: Read, input: { file_path: "docs/a.md" } }"#,
            r#"{ name: Write, input: { file_path: "docs/new.md", content: "x" } }"#,
            r#"{ name: Edit, input: { file_path: "docs/a.md", old_string: "one", new_string: "two" } }"#,
            r#"{ name: Bash, input: { command: "touch made.txt" } }"#,
        ]
        .map(String::from);
        let h = Harness::new(&script(&calls), wire).await;
        h.write("docs/a.md", "one\n");
        let out = h
            .cadre(&[
                "exec",
                "--json",
                "--permission-mode",
                "plan",
                "--allow",
                "Edit(docs/**)",
                "--allow",
                "Bash(touch:*)",
                "go",
            ])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        assert!(!h.path("docs/new.md").exists(), "{wire:?}: Write ran");
        assert_eq!(h.read("docs/a.md"), "one\n", "{wire:?}: Edit ran");
        assert!(!h.path("made.txt").exists(), "{wire:?}: Bash ran");
        let results = tool_results(&h.records()[1].body);
        assert!(!results[0].1, "{wire:?}: reads run: {:?}", results[0]);
        for r in &results[1..] {
            assert_eq!(r.0, "denied: plan mode is read-only", "{wire:?}");
        }
        let evs = events(&out);
        let denied: Vec<&str> = evs
            .iter()
            .filter(|e| e["type"] == "tool_call_denied")
            .map(|e| e["tool"].as_str().unwrap())
            .collect();
        assert_eq!(denied, ["Write", "Edit", "Bash"], "{wire:?}");
        let log = session_log(&h, &evs);
        let started: Vec<&Value> = log.iter().filter(|r| r["type"] == "tool_start").collect();
        assert_eq!(started.len(), 1, "{wire:?}: only the Read started");
    }
}

/// An `Agent` call that names no type runs the default type, so the policy
/// decides on that type: a deny rule naming it applies.
#[tokio::test]
async fn an_agent_call_without_a_type_is_decided_as_the_default_type() {
    for wire in BOTH_WIRES {
        let text = "rules:
  - name: child
    when: { first_user: \"PROBE-CHILD\" }
    replies:
      - text: \"child ran\"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: \"look\", prompt: \"PROBE-CHILD: one\" } }
          - { name: Agent, input: { description: \"look\", prompt: \"PROBE-CHILD: two\", subagent_type: \" \" } }
      - text: \"done\"
";
        let h = Harness::new(text, wire).await;
        let out = h
            .cadre(&["exec", "--json", "--deny", "Agent(general-purpose)", "go"])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let records = h.records();
        assert!(
            !records.iter().any(|r| r.rule.as_deref() == Some("child")),
            "{wire:?}: a denied default-type child was started"
        );
        let results = tool_results(&records[1].body);
        assert_eq!(results.len(), 2, "{wire:?}");
        for r in &results {
            assert_eq!(
                r.0, "denied: denied by the rule Agent(general-purpose)",
                "{wire:?}"
            );
        }
        let denied = events(&out)
            .iter()
            .filter(|e| e["type"] == "tool_call_denied")
            .count();
        assert_eq!(denied, 2, "{wire:?}");
    }
}
