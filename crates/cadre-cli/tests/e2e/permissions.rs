//! Permission modes, rules and the approval gate, through the binary: headless
//! runs (nobody can answer) and runs whose stdin is a terminal that answers.

use crate::common;

use common::{Harness, Wire, events, stderr, tool_results};
use serde_json::Value;

/// What the policy does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Runs without a question.
    Run,
    /// Needs a question.
    Ask,
    /// Denied without a question.
    Deny,
}
use Expect::{Ask, Deny, Run};

const CALLS: [&str; 5] = [
    "Read inside",
    "Edit inside",
    "Edit outside",
    "sandboxed Bash",
    "unsandboxed Bash",
];

/// The decision table: mode × {Read, Edit inside, Edit outside, sandboxed Bash, unsandboxed Bash}.
const TABLE: [(&str, [Expect; 5]); 5] = [
    ("default", [Run, Ask, Ask, Ask, Ask]),
    ("acceptEdits", [Run, Run, Ask, Run, Ask]),
    ("plan", [Run, Deny, Deny, Deny, Deny]),
    ("dontAsk", [Run, Deny, Deny, Deny, Deny]),
    ("bypassPermissions", [Run, Run, Run, Run, Run]),
];

const HEADLESS: &str =
    "denied: no one can approve this in a headless run; allow it with --allow or a permission mode";

fn matrix_script(outside: &str) -> String {
    format!(
        r#"
rules:
  - name: matrix
    replies:
      - tool_calls:
          - {{ name: Read, input: {{ file_path: "a.txt" }} }}
          - {{ name: Edit, input: {{ file_path: "a.txt", old_string: "one", new_string: "two" }} }}
          - {{ name: Write, input: {{ file_path: "{outside}/out.txt", content: "x" }} }}
          - {{ name: Bash, input: {{ command: "echo sandboxed" }} }}
          - {{ name: Bash, input: {{ command: "echo unsandboxed", sandbox: false }} }}
      - text: "done"
"#
    )
}

/// Landlock is missing on this kernel when cadre warns so; sandboxed commands then ask.
fn adjust_for_kernel(expect: [Expect; 5], evs: &[Value], mode: &str) -> [Expect; 5] {
    let no_landlock = evs.iter().any(|e| {
        e["type"] == "warning" && e["message"].as_str().unwrap_or("").contains("no Landlock")
    });
    let mut e = expect;
    if no_landlock && mode == "acceptEdits" {
        e[3] = Ask;
    }
    e
}

#[tokio::test]
async fn each_mode_decides_each_kind_of_call_as_the_table_says_headless() {
    for (mode, expect) in TABLE {
        let outside = tempfile::tempdir().unwrap();
        let h = Harness::new(
            &matrix_script(outside.path().to_str().unwrap()),
            Wire::Anthropic,
        )
        .await;
        h.write("a.txt", "one\n");
        let out = h
            .cadre(&["exec", "--json", "--permission-mode", mode, "go"])
            .await;
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let evs = events(&out);
        let expect = adjust_for_kernel(expect, &evs, mode);
        let results = tool_results(&h.records()[1].body);
        assert_eq!(results.len(), 5);
        for (i, want) in expect.iter().enumerate() {
            let (text, _) = &results[i];
            let got = if text == HEADLESS {
                Ask
            } else if text.starts_with("denied") {
                Deny
            } else {
                Run
            };
            assert_eq!(got, *want, "{mode} / {}: {text}", CALLS[i]);
        }
        assert!(
            !evs.iter().any(|e| e["type"] == "approval_requested"),
            "headless runs ask nothing"
        );
        let wrote_outside = outside.path().join("out.txt").exists();
        assert_eq!(wrote_outside, expect[2] == Run, "{mode}: outside write");
    }
}

#[tokio::test]
async fn each_mode_decides_each_kind_of_call_as_the_table_says_with_a_terminal_saying_yes() {
    for (mode, expect) in TABLE {
        let outside = tempfile::tempdir().unwrap();
        let h = Harness::new(
            &matrix_script(outside.path().to_str().unwrap()),
            Wire::Anthropic,
        )
        .await;
        h.write("a.txt", "one\n");
        let out = h
            .cadre_tty(
                &["exec", "--json", "--permission-mode", mode, "go"],
                &["y", "y", "y", "y", "y"],
            )
            .await;
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let evs = events(&out);
        let expect = adjust_for_kernel(expect, &evs, mode);
        let asked: Vec<String> = evs
            .iter()
            .filter(|e| e["type"] == "approval_requested")
            .map(|e| e["question"]["tool"].as_str().unwrap().to_string())
            .collect();
        let want_asked: Vec<&str> = expect
            .iter()
            .zip(["Read", "Edit", "Write", "Bash", "Bash"])
            .filter(|(e, _)| **e == Ask)
            .map(|(_, t)| t)
            .collect();
        assert_eq!(asked, want_asked, "{mode}: questions asked");
        let results = tool_results(&h.records()[1].body);
        for (i, want) in expect.iter().enumerate() {
            let denied = results[i].0.starts_with("denied");
            assert_eq!(
                denied,
                *want == Deny,
                "{mode} / {}: {}",
                CALLS[i],
                results[i].0
            );
        }
        // Questions show the sandbox line for Bash.
        for e in evs.iter().filter(|e| e["type"] == "approval_requested") {
            if e["question"]["tool"] == "Bash" {
                let line = e["question"]["sandbox"].as_str().unwrap();
                assert!(line.starts_with("sandbox:"), "{line}");
            }
        }
    }
}

#[tokio::test]
async fn answering_no_denies_that_call_only_and_the_model_is_told() {
    let script = r#"
rules:
  - name: two
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo first > first.txt" } }
          - { name: Bash, input: { command: "echo second > second.txt" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre_tty(&["exec", "go"], &["n", "y"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0].0, "denied: the user declined this call");
    assert!(!results[1].1, "{:?}", results[1]);
    assert!(!h.path("first.txt").exists());
    assert!(h.path("second.txt").exists());
    let err = stderr(&out);
    assert!(err.contains("Permission needed: Bash"), "{err}");
    assert!(
        err.contains("echo first > first.txt"),
        "full command shown: {err}"
    );
}

#[tokio::test]
async fn no_with_what_to_do_instead_tells_the_model_and_runs_nothing() {
    let script = r#"
rules:
  - name: one
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo first > first.txt" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    let out = h
        .cadre_tty(&["exec", "go"], &["n write it with the Write tool"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(
        results[0].0,
        "denied: the user declined this call and said what to do instead:\nwrite it with the Write tool"
    );
    assert!(!h.path("first.txt").exists());
}

#[tokio::test]
async fn yes_for_the_session_allows_matching_calls_without_asking_again() {
    let script = r#"
rules:
  - name: ls
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "ls -a" } }
      - tool_calls:
          - { name: Bash, input: { command: "ls -l" } }
      - tool_calls:
          - { name: Bash, input: { command: "pwd" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h.cadre_tty(&["exec", "--json", "go"], &["a", "n"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let asked: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 2, "ls -l was covered by Bash(ls:*); pwd asked");
    assert_eq!(asked[0]["question"]["session_rule"], "Bash(ls:*)");
    assert_eq!(asked[1]["question"]["input"], "pwd");
}

#[tokio::test]
async fn rules_deny_beats_allow_and_prefix_rules_match_whole_words() {
    let script = r#"
rules:
  - name: git
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "git status -s" } }
          - { name: Bash, input: { command: "git statusx" } }
          - { name: Bash, input: { command: "git status && echo sneaky" } }
          - { name: Bash, input: { command: "rm -rf build" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.path("build")).unwrap();
    let out = h
        .cadre(&[
            "exec",
            "--allow",
            "Bash(git status:*)",
            "--allow",
            "Bash(rm:*)",
            "--deny",
            "Bash(rm:*)",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert!(
        !results[0].0.starts_with("denied"),
        "git status -s allowed: {:?}",
        results[0]
    );
    assert_eq!(results[1].0, HEADLESS, "git statusx is not covered");
    assert_eq!(
        results[2].0, HEADLESS,
        "a compound command is not covered by a prefix"
    );
    assert_eq!(results[3].0, "denied: denied by the rule Bash(rm:*)");
    assert!(h.path("build").exists());
}

#[tokio::test]
async fn a_bad_rule_fails_start_up_naming_it() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let out = h.cadre(&["exec", "--allow", "Bash(git status", "go"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Bash(git status"), "{}", stderr(&out));
    assert!(h.records().is_empty(), "nothing was sent");

    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[permissions]\ndeny = [\"TodoWrite(x)\"]\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "go"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("TodoWrite(x)"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_project_config_cannot_widen_permissions() {
    let script = r#"
rules:
  - name: cmd
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo hi > hi.txt" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/config.toml",
        "[permissions]\ndefault_mode = \"bypassPermissions\"\nallow = [\"Bash\"]\n",
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0].0, HEADLESS);
    assert!(!h.path("hi.txt").exists());
    let err = stderr(&out);
    assert!(
        err.contains("not trusted") && err.contains("permissions.allow (Bash)"),
        "{err}"
    );
    assert!(err.contains("wider"), "{err}");
}

#[tokio::test]
async fn paths_escaping_the_project_through_dotdot_or_symlinks_are_asked_about() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    let script = r#"
rules:
  - name: escape
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "link/secret.txt" } }
          - { name: Read, input: { file_path: "sub/../../x" } }
          - { name: Grep, input: { pattern: "s3cret", path: "link" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    std::os::unix::fs::symlink(outside.path(), h.path("link")).unwrap();
    std::fs::create_dir_all(h.path("sub")).unwrap();
    for (mode, want) in [
        ("default", HEADLESS),
        ("dontAsk", "denied: it reads outside"),
    ] {
        let out = h.cadre(&["exec", "--permission-mode", mode, "go"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let results = tool_results(&h.records().last().unwrap().body);
        for r in &results {
            assert!(r.0.starts_with(want), "{mode}: {r:?}");
            assert!(!r.0.contains("s3cret"));
        }
    }
    // An allow rule over the outside path lets it through.
    let rule = format!("Read(/{}/**)", outside.path().display());
    let out = h.cadre(&["exec", "--allow", &rule, "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records().last().unwrap().body);
    assert!(results[0].0.contains("s3cret"), "{:?}", results[0]);
}

#[tokio::test]
async fn writes_to_git_and_the_data_dir_ask_even_in_accept_edits_with_an_allow_rule() {
    let data = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let script = format!(
        r#"
rules:
  - name: protected
    replies:
      - tool_calls:
          - {{ name: Write, input: {{ file_path: ".git/hooks/pre-commit", content: "evil" }} }}
          - {{ name: Write, input: {{ file_path: "{}/config.toml", content: "x = 1" }} }}
          - {{ name: Write, input: {{ file_path: "ok.txt", content: "fine" }} }}
      - text: "done"
"#,
        data.path().display()
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    std::fs::create_dir_all(h.path(".git/hooks")).unwrap();
    let out = h
        .cadre_env(
            &[
                "exec",
                "--permission-mode",
                "acceptEdits",
                "--allow",
                "Write",
                "go",
            ],
            &[("CADRE_HOME", data.path().to_str().unwrap())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    assert_eq!(results[0].0, HEADLESS, ".git write asks");
    // The data dir is never written by a file tool (not even asked about).
    assert!(
        results[1].0.starts_with("denied: file tools never write"),
        "{:?}",
        results[1]
    );
    assert!(!results[2].1, "{:?}", results[2]);
    assert!(!h.path(".git/hooks/pre-commit").exists());
    assert!(!data.path().join("config.toml").exists());

    // bypassPermissions is the one mode that does not ask.
    let out = h
        .cadre_env(
            &["exec", "--permission-mode", "bypassPermissions", "go"],
            &[("CADRE_HOME", data.path().to_str().unwrap())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(h.path(".git/hooks/pre-commit").exists());
}
