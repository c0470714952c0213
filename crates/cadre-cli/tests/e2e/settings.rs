//! Claude Code's settings files (`.claude/settings.json` and friends), cadre's
//! own JSON settings and managed settings, through the binary against the mock.

use crate::common;

use common::{Harness, Wire, events, stderr, stdout, tool_results};
use serde_json::Value;

/// One Bash call, then a final reply.
fn bash_script(command: &str) -> String {
    format!(
        r#"
rules:
  - name: cmd
    replies:
      - tool_calls:
          - {{ name: Bash, input: {{ command: "{command}", description: "run it" }} }}
      - text: "done"
"#
    )
}

/// Writes `text` to `rel` under the harness's HOME (the user's home directory).
fn write_home(h: &Harness, rel: &str, text: &str) {
    let p = h.home.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The text of every warning event of a `--json` run.
fn warnings(out: &std::process::Output) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The first tool result the model got back.
fn first_result(h: &Harness) -> (String, bool) {
    let records = h.records();
    assert_eq!(records.len(), 2, "one call, then the final request");
    tool_results(&records[1].body).remove(0)
}

#[tokio::test]
async fn a_claude_project_deny_rule_stops_bash_even_when_a_flag_allows_it() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Bash"]}}"#,
    );
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(is_error, "{text}");
    assert_eq!(text, "denied: denied by the rule Bash");
    assert!(!h.path("ran.txt").exists(), "Bash must not have run");
}

#[tokio::test]
async fn a_project_allow_rule_applies_only_once_the_folder_is_trusted() {
    // Untrusted: the project's allow rule is ignored, one warning names it,
    // and the headless run is refused the call.
    let h = Harness::new(&bash_script("echo ran-by-bash"), Wire::Anthropic).await;
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#,
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = first_result(&h);
    assert!(text.starts_with("denied"), "{text}");
    let w = warnings(&out);
    let untrusted: Vec<&String> = w.iter().filter(|w| w.contains("not trusted")).collect();
    assert_eq!(untrusted.len(), 1, "{w:?}");
    assert!(
        untrusted[0].contains("permissions.allow (Bash(echo:*)) in ")
            && untrusted[0].contains(".claude/settings.json")
            && untrusted[0].contains("--trust"),
        "{}",
        untrusted[0]
    );

    // `--trust` for one run: the rule applies, nothing is recorded.
    let h = Harness::new(&bash_script("echo ran-by-bash"), Wire::Anthropic).await;
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#,
    );
    let out = h.cadre(&["exec", "--json", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(!is_error && text.contains("ran-by-bash"), "{text}");
    assert!(warnings(&out).iter().all(|w| !w.contains("not trusted")));
    assert!(!h.data_dir().join("trust.json").exists());

    // Trust recorded by `cadre config trust`: exec uses it without a flag.
    let h = Harness::new(&bash_script("echo ran-by-bash"), Wire::Anthropic).await;
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#,
    );
    let out = h.cadre(&["config", "trust"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = h.cadre(&["config", "show", "--json"]).await;
    let report: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(report["trust"], "trusted", "{report}");
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(!is_error && text.contains("ran-by-bash"), "{text}");
    let store = h.data_dir().join("trust.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&store).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // `cadre config untrust` takes it back.
    let out = h.cadre(&["config", "untrust"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = h.cadre(&["config", "show", "--json"]).await;
    let report: Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(report["trust"], "not trusted (answered no)", "{report}");

    // The same rule in the user's ~/.claude/settings.json applies untrusted.
    let h = Harness::new(&bash_script("echo ran-by-bash"), Wire::Anthropic).await;
    write_home(
        &h,
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#,
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(!is_error, "{text}");
    assert!(text.contains("ran-by-bash"), "{text}");
    assert!(warnings(&out).iter().all(|w| !w.contains("ignored")));
}

#[tokio::test]
async fn a_trusted_folders_project_mode_applies_but_its_deny_rules_apply_either_way() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(echo:*)"]}}"#,
    );
    let out = h.cadre(&["exec", "--json", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(is_error, "{text}");
    assert!(text.contains("Bash(echo:*)"), "{text}");
    assert!(!h.path("ran.txt").exists());
    let mode = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cadre"))
            .args(args)
            .current_dir(h.project.path())
            .env("HOME", h.home.path())
            .env("CADRE_HOME", h.data_dir())
            .output()
            .unwrap();
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        report["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == "permissions.defaultMode")
            .map(|e| e["value"].clone())
    };
    assert_eq!(
        mode(&["config", "show", "--json", "--trust"]),
        Some(Value::from("bypassPermissions"))
    );
    assert_eq!(mode(&["config", "show", "--json"]), None);
}

#[tokio::test]
async fn managed_settings_win_and_forbid_bypass_permissions() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let managed = tempfile::tempdir().unwrap();
    std::fs::write(
        managed.path().join("managed-settings.json"),
        r#"{"permissions": {"deny": ["Bash(echo:*)"], "disableBypassPermissionsMode": "disable"}}"#,
    )
    .unwrap();
    // The user allows the command; the managed deny rule still wins.
    write_home(
        &h,
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(echo:*)"], "defaultMode": "bypassPermissions"}}"#,
    );
    let dir = managed.path().to_str().unwrap();
    let env = [("CADRE_MANAGED_SETTINGS_DIR", dir)];
    // The flag asking for bypassPermissions is refused outright.
    let out = h
        .cadre_env(
            &["exec", "--permission-mode", "bypassPermissions", "go"],
            &env,
        )
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bypassPermissions is disabled by")
            && stderr(&out).contains("managed-settings.json"),
        "{}",
        stderr(&out)
    );
    assert!(h.records().is_empty(), "refused before any request");

    // The user's bypassPermissions default is ignored with a warning; the deny applies.
    let out = h.cadre_env(&["exec", "--json", "go"], &env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let w = warnings(&out);
    assert!(
        w.iter()
            .any(|w| w.contains("bypassPermissions ignored") && w.contains("managed-settings.json")),
        "{w:?}"
    );
    let (text, is_error) = first_result(&h);
    assert!(is_error);
    assert_eq!(text, "denied: denied by the rule Bash(echo:*)");
    assert!(!h.path("ran.txt").exists());
}

#[tokio::test]
async fn managed_mode_wins_over_a_wider_flag() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let managed = tempfile::tempdir().unwrap();
    std::fs::write(
        managed.path().join("managed-settings.json"),
        r#"{"permissions": {"defaultMode": "plan"}}"#,
    )
    .unwrap();
    let dir = managed.path().to_str().unwrap();
    let out = h
        .cadre_env(
            &["exec", "--json", "--permission-mode", "acceptEdits", "go"],
            &[("CADRE_MANAGED_SETTINGS_DIR", dir)],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, _) = first_result(&h);
    assert_eq!(text, "denied: plan mode is read-only");
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains("--permission-mode acceptEdits ignored")),
        "{:?}",
        warnings(&out)
    );
}

#[tokio::test]
async fn user_env_reaches_bash_and_project_env_only_once_trusted() {
    let script = bash_script("echo \\\"$FROM_USER/$FROM_PROJECT\\\" > env.txt");
    let setup = |h: &Harness| {
        write_home(
            h,
            ".claude/settings.json",
            r#"{"env": {"FROM_USER": "user-value"}}"#,
        );
        h.write(
            ".cadre/settings.json",
            r#"{"env": {"FROM_PROJECT": "project-value"}}"#,
        );
    };
    let h = Harness::new(&script, Wire::Anthropic).await;
    setup(&h);
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(!is_error, "{text}");
    assert_eq!(h.read("env.txt"), "user-value/\n");
    let w = warnings(&out);
    let untrusted: Vec<&String> = w.iter().filter(|w| w.contains("not trusted")).collect();
    assert_eq!(untrusted.len(), 1, "{w:?}");
    assert!(
        untrusted[0].contains("env (FROM_PROJECT) in ")
            && untrusted[0].contains(".cadre/settings.json"),
        "{}",
        untrusted[0]
    );

    let h = Harness::new(&script, Wire::Anthropic).await;
    setup(&h);
    let out = h
        .cadre(&["exec", "--json", "--trust", "--allow", "Bash", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(h.read("env.txt"), "user-value/project-value\n");
}

#[tokio::test]
async fn config_show_lists_settings_with_sources_and_unknown_keys() {
    let h = Harness::new("rules: []", Wire::Anthropic).await;
    write_home(
        &h,
        ".claude/settings.json",
        r#"{"model": "opus", "env": {"TOKEN": "s3cret"}, "permissions": {"allow": ["Read"]}, "spinnerTipsEnabled": false, "outputStyle": "Concise"}"#,
    );
    h.write(
        ".claude/settings.local.json",
        r#"{"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"], "colour": "red"}}"#,
    );
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[limits]\nmax_requests_per_turn = 7\n",
    )
    .unwrap();
    let out = h.cadre(&["config", "show", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let user_json = h.home.path().join(".claude/settings.json");
    let local_json = h.path(".claude/settings.local.json");
    let src = |p: &std::path::Path| p.display().to_string();
    let find = |key: &str| -> Vec<Value> {
        report["settings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["key"] == key)
            .cloned()
            .collect()
    };
    assert_eq!(find("model")[0]["value"], "opus");
    assert_eq!(find("model")[0]["source"], src(&user_json));
    assert_eq!(find("limits.max_requests_per_turn")[0]["value"], 7);
    assert_eq!(
        find("limits.max_requests_per_turn")[0]["source"],
        src(&h.data_dir().join("config.toml"))
    );
    let allow = find("permissions.allow");
    assert_eq!(
        allow.len(),
        1,
        "the local file's allow rule is not in force"
    );
    assert_eq!(allow[0]["value"], "Read");
    assert!(
        allow[0]["source"]
            .as_str()
            .unwrap()
            .contains(&src(&user_json)),
        "{allow:?}"
    );
    let deny = find("permissions.deny");
    assert_eq!(deny[0]["value"], "Bash(rm:*)");
    assert!(
        deny[0]["source"]
            .as_str()
            .unwrap()
            .starts_with(&format!("local project settings ({}", src(&local_json))),
        "{deny:?}"
    );
    assert_eq!(find("outputStyle")[0]["value"], "Concise");
    assert_eq!(find("outputStyle")[0]["source"], src(&user_json));
    let env = find("env.TOKEN");
    assert_eq!(env[0]["source"], src(&user_json));
    assert!(!stdout(&out).contains("s3cret"), "env values are not shown");
    let unknown: Vec<(String, String)> = report["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["key"].as_str().unwrap().to_string(),
                u["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        unknown.contains(&("spinnerTipsEnabled".into(), src(&user_json))),
        "{unknown:?}"
    );
    assert!(
        unknown.contains(&("permissions.colour".into(), src(&local_json))),
        "{unknown:?}"
    );
    let ignored = report["ignored"].as_array().unwrap();
    assert!(
        ignored
            .iter()
            .any(|i| i["key"] == "permissions.allow (Bash)" && i["source"] == src(&local_json)),
        "{ignored:?}"
    );
    // The text form names the same things.
    let out = h.cadre(&["config", "show"]).await;
    let text = stdout(&out);
    assert!(
        text.contains("spinnerTipsEnabled") && text.contains("model = opus"),
        "{text}"
    );
}

#[tokio::test]
async fn permissions_command_names_each_settings_file() {
    use common::Pty;
    use common::line_session::Interactive;
    let h = Harness::new("rules: []", Wire::Anthropic).await;
    write_home(
        &h,
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(ls:*)"], "defaultMode": "acceptEdits"}}"#,
    );
    h.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
    );
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("/permissions");
    cadre.wait_for_stderr("rules:", 1).await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let err = cadre.stderr();
    let user = h.home.path().join(".claude/settings.json");
    let project = h.path(".claude/settings.json");
    assert!(
        err.contains(&format!(
            "permission mode: acceptEdits (from user settings ({}))",
            user.display()
        )),
        "{err}"
    );
    let row = |kind: &str, text: &str, source: String| {
        assert!(
            err.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.len() >= 3 && words[0] == kind && words[1] == text && l.contains(&source)
            }),
            "no {kind} {text} from {source}: {err}"
        );
    };
    row(
        "allow",
        "Bash(ls:*)",
        format!("user settings ({})", user.display()),
    );
    row(
        "deny",
        "Bash(rm:*)",
        format!("project settings ({})", project.display()),
    );
}

/// One Read, then one Bash call, both in `dir`, then a final reply.
fn read_then_write(dir: &std::path::Path) -> String {
    format!(
        r#"
rules:
  - name: cmd
    replies:
      - tool_calls:
          - {{ name: Read, input: {{ file_path: "{d}/notes.txt" }} }}
          - {{ name: Bash, input: {{ command: "echo written > {d}/out.txt", description: "w" }} }}
      - text: "done"
"#,
        d = dir.display()
    )
}

#[tokio::test]
async fn additional_directories_count_as_the_project_for_reads_and_the_sandbox() {
    for how in ["flag", "user settings", "untrusted project settings"] {
        // Not a temp dir: those are writable in the sandbox anyway.
        let other = tempfile::tempdir_in(common::non_temp_base()).unwrap();
        let other_dir = other.path().canonicalize().unwrap();
        std::fs::write(other_dir.join("notes.txt"), "beside the project").unwrap();
        let h = Harness::new(&read_then_write(&other_dir), Wire::Anthropic).await;
        let entry = format!(
            r#"{{"permissions": {{"additionalDirectories": ["{}"]}}}}"#,
            other_dir.display()
        );
        let mut args = vec!["exec", "--json", "--allow", "Bash"];
        let flag = other_dir.display().to_string();
        match how {
            "flag" => args.extend(["--add-dir", flag.as_str()]),
            "user settings" => write_home(&h, ".claude/settings.json", &entry),
            _ => h.write(".claude/settings.json", &entry),
        }
        args.push("go");
        let out = h.cadre(&args).await;
        assert!(out.status.success(), "{how}: {}", stderr(&out));
        common::require_landlock(&events(&out));
        let records = h.records();
        let results = tool_results(&records[1].body);
        if how == "untrusted project settings" {
            // Outside the project: the read asks (denied headless), the
            // sandbox refuses the write; the warning names the entry.
            assert!(results[0].1, "{how}: {results:?}");
            assert!(!other_dir.join("out.txt").exists(), "{how}");
            assert!(
                warnings(&out)
                    .iter()
                    .any(|w| w.contains("not trusted") && w.contains("additionalDirectories")),
                "{:?}",
                warnings(&out)
            );
        } else {
            assert!(
                !results[0].1 && results[0].0.contains("beside the project"),
                "{how}: {results:?}"
            );
            assert!(!results[1].1, "{how}: {results:?}");
            assert_eq!(
                std::fs::read_to_string(other_dir.join("out.txt")).unwrap(),
                "written\n",
                "{how}"
            );
        }
    }
}
