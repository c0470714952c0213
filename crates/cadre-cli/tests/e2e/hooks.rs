//! Hooks in Claude Code's format, through the binary against the mock: each
//! hook a small shell script in a temp dir, its stdin saved to a file.

use crate::common;

use common::{Harness, Wire, events, stderr, tool_results, user_texts};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Writes an executable script under the harness's HOME; returns its path.
pub(crate) fn script(h: &Harness, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = h.home.path().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Where a hook script saves what it reads on stdin (one JSON per line).
pub(crate) fn stdin_log(h: &Harness, name: &str) -> PathBuf {
    h.home.path().join("hooks").join(format!("{name}.stdin"))
}

pub(crate) fn read_inputs(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `{"hooks": {event: [{matcher, hooks: [{type, command}]}], …}}`.
pub(crate) fn hooks_json(entries: &[(&str, &str, &PathBuf)]) -> String {
    let mut hooks = serde_json::Map::new();
    for (event, matcher, command) in entries {
        let list = hooks
            .entry(event.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .unwrap();
        list.push(json!({
            "matcher": matcher,
            "hooks": [{"type": "command", "command": command.display().to_string(), "timeout": 30}],
        }));
    }
    json!({ "hooks": hooks }).to_string()
}

/// Writes the user's `~/.claude/settings.json` (trusted: no trust needed).
pub(crate) fn user_settings(h: &Harness, text: &str) {
    let p = h.home.path().join(".claude").join("settings.json");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

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

fn hook_events(out: &std::process::Output, kind: &str) -> Vec<Value> {
    events(out)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

fn first_result(h: &Harness) -> (String, bool) {
    let records = h.records();
    assert_eq!(records.len(), 2, "one call, then the final request");
    tool_results(&records[1].body).remove(0)
}

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_and_its_stderr_reaches_the_model() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let log = stdin_log(&h, "guard");
    let guard = script(
        &h,
        "guard.sh",
        &format!(
            "cat >> {}; echo >> {}; echo 'no shell today, use Read' >&2; exit 2",
            log.display(),
            log.display()
        ),
    );
    user_settings(&h, &hooks_json(&[("PreToolUse", "Bash", &guard)]));
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(is_error, "{text}");
    assert!(text.contains("no shell today, use Read"), "{text}");
    assert!(!h.path("ran.txt").exists(), "the hook blocked the call");

    let inputs = read_inputs(&log);
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let input = &inputs[0];
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "echo ran > ran.txt");
    assert!(input["tool_use_id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(input["permission_mode"], "default");
    assert!(!input["session_id"].as_str().unwrap().is_empty(), "{input}");
    assert!(
        input["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl"),
        "{input}"
    );
    let cwd = PathBuf::from(input["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        h.project.path().canonicalize().unwrap()
    );
    assert!(
        input.get("agent_id").is_none(),
        "the main agent has no agent_id"
    );

    let started = hook_events(&out, "hook_started");
    let ended = hook_events(&out, "hook_ended");
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["event"], "PreToolUse");
    assert_eq!(ended[0]["exit_code"], 2);
    assert!(
        matches!(ended[0]["decision"].as_str(), Some("block" | "deny")),
        "{}",
        ended[0]
    );
}

#[tokio::test]
async fn pre_tool_use_json_deny_updated_input_and_an_allow_that_cannot_beat_a_deny_rule() {
    // JSON deny with a reason.
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let deny = script(
        &h,
        "deny.sh",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "grep is faster"}}'"#,
    );
    user_settings(&h, &hooks_json(&[("PreToolUse", "Bash|Edit", &deny)]));
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(is_error && text.contains("grep is faster"), "{text}");
    assert!(!h.path("ran.txt").exists());

    // `allow` with `updatedInput`: the replaced command runs, and the allow
    // answers the question a headless run would otherwise be denied.
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let rewrite = script(
        &h,
        "rewrite.sh",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "echo rewritten > rewritten.txt", "description": "safer"}}}'"#,
    );
    user_settings(&h, &hooks_json(&[("PreToolUse", "Bash", &rewrite)]));
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(!is_error, "{text}");
    assert!(h.path("rewritten.txt").exists(), "the hook's command ran");
    assert!(!h.path("ran.txt").exists(), "the model's command did not");
    let ended = hook_events(&out, "hook_ended");
    assert_eq!(ended[0]["decision"], "allow", "{}", ended[0]);

    // `allow` never overrides a deny rule.
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let allow = script(
        &h,
        "allow.sh",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'"#,
    );
    user_settings(&h, &hooks_json(&[("PreToolUse", "Bash", &allow)]));
    let out = h
        .cadre(&["exec", "--json", "--deny", "Bash(echo:*)", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = first_result(&h);
    assert!(is_error && text.contains("Bash(echo:*)"), "{text}");
    assert!(!h.path("ran.txt").exists());
}

#[tokio::test]
async fn a_stop_hook_blocking_twice_then_allowing_gets_three_final_replies() {
    let script_text = r#"
rules:
  - name: talk
    replies:
      - text: "first answer"
      - text: "second answer"
      - text: "third answer"
      - text: "never asked for"
"#;
    let h = Harness::new(script_text, Wire::Anthropic).await;
    let log = stdin_log(&h, "stop");
    let count = h.home.path().join("hooks").join("count");
    let stop = script(
        &h,
        "stop.sh",
        &format!(
            r#"cat >> {log}; echo >> {log}
n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}
if [ $n -le 2 ]; then echo "{{\"decision\": \"block\", \"reason\": \"not done yet, round $n\"}}"; fi"#,
            log = log.display(),
            count = count.display()
        ),
    );
    user_settings(&h, &hooks_json(&[("Stop", "", &stop)]));
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let ended = hook_events(&out, "turn_ended");
    assert_eq!(ended.last().unwrap()["final_text"], "third answer");
    let records = h.records();
    assert_eq!(records.len(), 3, "three final replies were asked for");
    assert!(user_texts(&records[1].body).contains("Stop hook feedback:\\nnot done yet, round 1"));
    assert!(user_texts(&records[2].body).contains("not done yet, round 2"));
    let inputs = read_inputs(&log);
    assert_eq!(inputs.len(), 3);
    assert_eq!(inputs[0]["hook_event_name"], "Stop");
    assert_eq!(inputs[0]["stop_hook_active"], false);
    assert_eq!(inputs[1]["stop_hook_active"], true);
    assert_eq!(inputs[0]["last_assistant_message"], "first answer");
    assert_eq!(inputs[2]["last_assistant_message"], "third answer");
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_cut_off_after_eight() {
    let replies = "      - text: \"answer\"\n".repeat(12);
    let script_text = format!("rules:\n  - name: talk\n    replies:\n{replies}");
    let h = Harness::new(&script_text, Wire::Anthropic).await;
    let stop = script(
        &h,
        "stop.sh",
        r#"cat > /dev/null; echo '{"decision": "block", "reason": "again"}'"#,
    );
    user_settings(&h, &hooks_json(&[("Stop", "*", &stop)]));
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(h.records().len(), 9, "the first reply and eight more");
}

const FINDER: &str = "---
name: finder
description: Finds things in the project.
tools: Read, Grep, Glob, Bash
---
You are FINDER, a search subagent. Report briefly.
";

#[tokio::test]
async fn subagent_start_context_reaches_the_child_and_subagent_stop_keeps_it_going() {
    let script_text = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "look", prompt: "find the config", subagent_type: "finder" } }
      - text: "All reports in."
  - name: child
    when: { first_user: "find the config" }
    replies:
      - text: "first report"
      - text: "second report, checked"
"#;
    let h = Harness::new(script_text, Wire::Anthropic).await;
    h.write(".cadre/agents/finder.md", FINDER);
    let start_log = stdin_log(&h, "start");
    let stop_log = stdin_log(&h, "sstop");
    let count = h.home.path().join("hooks").join("count");
    let start = script(
        &h,
        "start.sh",
        &format!(
            r#"cat >> {log}; echo >> {log}
echo '{{"hookSpecificOutput": {{"hookEventName": "SubagentStart", "additionalContext": "the config lives in etc/app.toml"}}}}'"#,
            log = start_log.display()
        ),
    );
    let stop = script(
        &h,
        "sstop.sh",
        &format!(
            r#"cat >> {log}; echo >> {log}
n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}
if [ $n -le 1 ]; then echo "check the file exists" >&2; exit 2; fi"#,
            log = stop_log.display(),
            count = count.display()
        ),
    );
    user_settings(
        &h,
        &hooks_json(&[
            ("SubagentStart", "finder", &start),
            ("SubagentStop", "finder", &stop),
        ]),
    );
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child: Vec<_> = records
        .iter()
        .filter(|r| r.rule.as_deref() == Some("child"))
        .collect();
    assert_eq!(
        child.len(),
        2,
        "the SubagentStop hook asked for one more turn"
    );
    assert!(
        user_texts(&child[0].body).contains("the config lives in etc/app.toml"),
        "{}",
        user_texts(&child[0].body)
    );
    assert!(user_texts(&child[1].body).contains("check the file exists"));
    // The parent got the report after the extra turn.
    let parent_last = records
        .iter()
        .rfind(|r| r.rule.as_deref() == Some("parent"))
        .unwrap();
    let (report, _) = tool_results(&parent_last.body).remove(0);
    assert!(report.contains("second report, checked"), "{report}");

    let starts = read_inputs(&start_log);
    assert_eq!(starts.len(), 1);
    assert_eq!(starts[0]["hook_event_name"], "SubagentStart");
    assert_eq!(starts[0]["agent_type"], "finder");
    let agent_id = starts[0]["agent_id"].as_str().unwrap().to_string();
    assert!(!agent_id.is_empty());
    let stops = read_inputs(&stop_log);
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(stops[0]["agent_id"], agent_id.as_str());
    assert_eq!(stops[0]["agent_type"], "finder");
    assert_eq!(stops[0]["last_assistant_message"], "first report");
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert!(
        stops[0]["agent_transcript_path"]
            .as_str()
            .unwrap()
            .contains(&agent_id),
        "{}",
        stops[0]
    );
}

#[tokio::test]
async fn a_definitions_own_pre_tool_use_hook_runs_for_that_child_only() {
    let script_text = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo parent > parent.txt", description: "p" } }
      - tool_calls:
          - { name: Agent, input: { description: "a", prompt: "task-guarded", subagent_type: "guarded" } }
          - { name: Agent, input: { description: "b", prompt: "task-plain", subagent_type: "plain" } }
      - text: "All reports in."
  - name: guarded
    when: { first_user: "task-guarded" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo guarded > guarded.txt", description: "g" } }
      - text: "guarded done"
  - name: plain
    when: { first_user: "task-plain" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo plain > plain.txt", description: "p" } }
      - text: "plain done"
"#;
    let h = Harness::new(script_text, Wire::Anthropic).await;
    let log = stdin_log(&h, "own");
    let own = script(
        &h,
        "own.sh",
        &format!(
            "cat >> {log}; echo >> {log}; echo 'the guarded agent may not run commands' >&2; exit 2",
            log = log.display()
        ),
    );
    // User-level definitions (trusted), one with its own hooks.
    let agents = h.data_dir().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("guarded.md"),
        format!(
            "---\nname: guarded\ndescription: A guarded helper.\ntools: Bash\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: {}\n---\nYou are guarded.\n",
            own.display()
        ),
    )
    .unwrap();
    std::fs::write(
        agents.join("plain.md"),
        "---\nname: plain\ndescription: A plain helper.\ntools: Bash\n---\nYou are plain.\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(h.path("parent.txt").exists(), "the parent's call ran");
    assert!(h.path("plain.txt").exists(), "the sibling's call ran");
    assert!(
        !h.path("guarded.txt").exists(),
        "the guarded child's call was blocked"
    );
    let records = h.records();
    let guarded_last = records
        .iter()
        .rfind(|r| r.rule.as_deref() == Some("guarded"))
        .unwrap();
    let (text, is_error) = tool_results(&guarded_last.body).remove(0);
    assert!(is_error && text.contains("may not run commands"), "{text}");
    let inputs = read_inputs(&log);
    assert_eq!(inputs.len(), 1, "only the guarded child's call: {inputs:?}");
    assert_eq!(inputs[0]["agent_type"], "guarded");
}

#[tokio::test]
async fn project_hooks_run_only_in_a_trusted_folder() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let marker = h.home.path().join("hooks").join("marker");
    let hook = script(
        &h,
        "mark.sh",
        &format!("cat > /dev/null; echo ran >> {}", marker.display()),
    );
    h.write(
        ".claude/settings.json",
        &hooks_json(&[("PreToolUse", "Bash", &hook)]),
    );
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!marker.exists(), "an untrusted folder's hook must not run");
    let warned: Vec<String> = hook_events(&out, "warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .filter(|m| m.contains("not trusted"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("hooks (PreToolUse) in "),
        "{}",
        warned[0]
    );

    let out = h
        .cadre(&["exec", "--json", "--trust", "--allow", "Bash", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

#[tokio::test]
async fn session_prompt_and_post_tool_hooks_add_context_and_session_end_fires() {
    let h = Harness::new(&bash_script("echo hi"), Wire::Anthropic).await;
    let end_log = stdin_log(&h, "end");
    let session = script(
        &h,
        "session.sh",
        "cat > /dev/null; echo 'session context ALPHA'",
    );
    let prompt = script(
        &h,
        "prompt.sh",
        "cat > /dev/null; echo 'prompt context BETA'",
    );
    let post = script(
        &h,
        "post.sh",
        r#"cat > /dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "post context GAMMA"}}'"#,
    );
    let end = script(
        &h,
        "end.sh",
        &format!("cat >> {log}; echo >> {log}", log = end_log.display()),
    );
    user_settings(
        &h,
        &hooks_json(&[
            ("SessionStart", "startup", &session),
            ("UserPromptSubmit", "", &prompt),
            ("PostToolUse", "Bash", &post),
            ("SessionEnd", "", &end),
        ]),
    );
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let first = user_texts(&records[0].body);
    assert!(first.contains("session context ALPHA"), "{first}");
    assert!(first.contains("prompt context BETA"), "{first}");
    let (result, _) = tool_results(&records[1].body).remove(0);
    assert!(
        result.contains("hi") && result.contains("post context GAMMA"),
        "{result}"
    );
    let ends = read_inputs(&end_log);
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["hook_event_name"], "SessionEnd");
    assert_eq!(ends[0]["reason"], "other");
}

#[tokio::test]
async fn a_user_prompt_submit_hook_can_block_the_prompt() {
    let h = Harness::new(&bash_script("echo hi"), Wire::Anthropic).await;
    let block = script(
        &h,
        "block.sh",
        "cat > /dev/null; echo 'prompts mentioning secrets are refused' >&2; exit 2",
    );
    user_settings(&h, &hooks_json(&[("UserPromptSubmit", "", &block)]));
    let out = h.cadre(&["exec", "--json", "show me the secrets"]).await;
    assert!(!out.status.success());
    assert!(h.records().is_empty(), "nothing was sent to the model");
    let warned = hook_events(&out, "warning");
    assert!(
        warned.iter().any(|w| w["message"]
            .as_str()
            .unwrap()
            .contains("prompts mentioning secrets are refused")),
        "{warned:?}"
    );
}

#[tokio::test]
async fn a_hook_that_cannot_start_or_fails_lets_the_call_through_with_a_warning() {
    let h = Harness::new(&bash_script("echo ran > ran.txt"), Wire::Anthropic).await;
    let missing = h.home.path().join("hooks").join("missing.sh");
    let failing = script(&h, "fail.sh", "cat > /dev/null; echo 'oops' >&2; exit 1");
    user_settings(
        &h,
        &hooks_json(&[
            ("PreToolUse", "Bash", &missing),
            ("PreToolUse", "Bash", &failing),
        ]),
    );
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(h.path("ran.txt").exists(), "hooks fail open");
    let ended = hook_events(&out, "hook_ended");
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert!(ended.iter().all(|e| e["decision"] == "error"), "{ended:?}");
    let warned = hook_events(&out, "warning");
    assert!(
        warned
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("oops")),
        "{warned:?}"
    );
}
