//! `cadre -p`, Claude Code's print mode, through the binary: the prompt is
//! the argument and piped stdin (piped text first), stdout is the answer or
//! one `result` object, a failure is the result with exit status 1, and a
//! missing prompt is a usage error (2) before any request.

use crate::common;

use common::{Harness, Wire, stderr, stdout, tool_results, user_texts};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

/// Runs `cadre <args>` with `input` piped on stdin.
async fn piped(h: &Harness, args: &[&str], input: &str) -> std::process::Output {
    let mut child = h
        .command(args, &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child.wait_with_output().await.unwrap()
}

#[tokio::test]
async fn piped_text_and_the_argument_make_one_prompt_and_stdout_is_the_answer() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"It is a log.\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = piped(&h, &["-p", "explain"], "the log\nline two\n").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It is a log.\n");
    let records = h.records();
    assert_eq!(records.len(), 1);
    let text = user_texts(&records[0].body);
    assert!(text.contains("the log\\nline two\\n\\nexplain"), "{text}");

    // Stdin alone is the whole prompt.
    let out = piped(&h, &["--print"], "only piped").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(user_texts(&h.records()[1].body).contains("only piped"));
}

#[tokio::test]
async fn no_prompt_at_all_is_a_usage_error_before_any_request() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"never\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h.cadre(&["-p"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("-p needs a prompt"),
        "{}",
        stderr(&out)
    );
    let out = h.cadre(&["--output-format", "json", "hi"]).await;
    assert_eq!(out.status.code(), Some(2), "--output-format needs -p");
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn json_output_is_one_result_object_in_claude_codes_shape() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
      - text: "Read it."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("a.txt", "alpha\n");
    let out = h
        .cadre(&["-p", "read a.txt", "--output-format", "json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Read it.");
    assert_eq!(result["num_turns"], 2);
    assert!(result["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(result["duration_ms"].as_u64().is_some());
    assert!(result["duration_api_ms"].as_u64().is_some());
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(
        result["modelUsage"]["mock-model"]["outputTokens"]
            .as_u64()
            .is_some()
    );
    assert!(result["total_cost_usd"].as_f64().is_some());
    assert_eq!(result["permission_denials"], serde_json::json!([]));
    assert!(!tool_results(&h.records()[1].body)[0].1);
}

#[tokio::test]
async fn the_results_usage_by_model_includes_the_childrens() {
    let script = r#"
rules:
  - name: child
    when: { first_user: "count the files" }
    replies:
      - text: "three files"
        usage: { input_tokens: 700, output_tokens: 70 }
  - name: main
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "count", prompt: "count the files", subagent_type: Explore, model: "child-model" } }
        usage: { input_tokens: 100, output_tokens: 10 }
      - text: "Three."
        usage: { input_tokens: 200, output_tokens: 20 }
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h
        .cadre(&["-p", "how many files?", "--output-format", "json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["result"], "Three.");
    // The main loop's own tokens, and every model's, children included.
    assert_eq!(result["usage"]["input_tokens"], 300, "{result}");
    let by_model = result["modelUsage"].as_object().unwrap();
    let total_in: u64 = by_model
        .values()
        .map(|m| m["inputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(total_in, 1000, "{result}");
}

#[tokio::test]
async fn a_failed_run_is_the_result_with_status_one() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"never\"\n",
        Wire::Anthropic,
    )
    .await;
    let out = h
        .cadre(&["-p", "/onboard", "--output-format", "json"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(
        result["errors"][0]
            .as_str()
            .unwrap()
            .contains("unknown command /onboard"),
        "{result}"
    );
    let out = h.cadre(&["-p", "/onboard"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).starts_with("Error: unknown command /onboard"),
        "{}",
        stdout(&out)
    );
    assert!(h.records().is_empty());
}

#[tokio::test]
async fn commands_expand_in_print_mode() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"Fixed.\"\n",
        Wire::Anthropic,
    )
    .await;
    h.write(".claude/commands/fix-issue.md", "Fix issue #$0 now.");
    let out = h.cadre(&["-p", "/fix-issue 12"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Fixed.\n");
    assert!(user_texts(&h.records()[0].body).contains("Fix issue #12 now."));
}

/// The `type` (and `subtype`) of each stream-json line, and its
/// `parent_tool_use_id`.
fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l["subtype"].as_str() {
            Some(sub) => format!("{}/{sub}", l["type"].as_str().unwrap()),
            None => l["type"].as_str().unwrap().to_string(),
        })
        .collect()
}

const FAMILY: &str = r#"
rules:
  - name: child
    when: { first_user: "list the notes" }
    replies:
      - tool_calls:
          - { name: Glob, input: { pattern: "*.txt" } }
      - text: "one note"
  - name: main
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
      - tool_calls:
          - { name: Agent, input: { description: "notes", prompt: "list the notes", subagent_type: Explore } }
      - text: "All read."
"#;

async fn stream_run(wire: Wire) -> Vec<Value> {
    let h = Harness::new(FAMILY, wire).await;
    h.write("a.txt", "alpha\n");
    let out = h
        .cadre(&["-p", "read everything", "--output-format", "stream-json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn stream_json_gives_init_every_message_with_the_childs_marked_and_the_result_last() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let lines = stream_run(wire).await;
        let kinds = kinds(&lines);
        assert_eq!(
            kinds.first().map(String::as_str),
            Some("system/init"),
            "{kinds:?}"
        );
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("result/success"),
            "{kinds:?}"
        );
        let init = &lines[0];
        let session = init["session_id"].as_str().unwrap();
        assert!(!session.is_empty());
        assert!(
            init["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "Agent"),
            "{init}"
        );
        assert!(
            init["agents"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "Explore"),
            "{init}"
        );
        assert_eq!(init["permissionMode"], "default");
        // Main: reply (Read), results, reply (Agent), [child], results, final reply.
        let main: Vec<&Value> = lines
            .iter()
            .filter(|l| {
                l["parent_tool_use_id"].is_null()
                    && (l["type"] == "assistant" || l["type"] == "user")
            })
            .collect();
        assert_eq!(main.len(), 5, "{kinds:?}");
        assert_eq!(main[0]["message"]["content"][0]["type"], "tool_use");
        assert_eq!(main[0]["message"]["stop_reason"], "tool_use");
        assert_eq!(main[1]["message"]["content"][0]["type"], "tool_result");
        let agent_call = main[2]["message"]["content"][0]["id"].as_str().unwrap();
        assert_eq!(main[2]["message"]["content"][0]["name"], "Agent");
        assert_eq!(main[4]["message"]["content"][0]["text"], "All read.");
        // The child's own messages carry the id of the call that started it.
        let child: Vec<&Value> = lines
            .iter()
            .filter(|l| l["parent_tool_use_id"] == agent_call)
            .collect();
        assert_eq!(child.len(), 3, "{kinds:?}");
        assert_eq!(child[0]["message"]["content"][0]["name"], "Glob");
        assert_eq!(child[1]["message"]["content"][0]["type"], "tool_result");
        assert_eq!(child[2]["message"]["content"][0]["text"], "one note");
        for l in &lines[1..] {
            assert_eq!(l["session_id"], session, "{l}");
        }
        let result = lines.last().unwrap();
        assert_eq!(result["result"], "All read.");
        assert_eq!(result["num_turns"], 3);
    }
}

#[tokio::test]
async fn a_retry_is_a_system_api_retry_line_before_the_reply() {
    let script = r#"
rules:
  - name: main
    replies:
      - text: "After one retry."
        fail_once: { status: 500 }
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let out = h
        .cadre(&["-p", "hello", "--output-format", "stream-json"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        kinds(&lines),
        [
            "system/init",
            "system/api_retry",
            "assistant",
            "result/success"
        ]
    );
    assert_eq!(lines[1]["attempt"], 2);
    assert_eq!(lines[1]["error_status"], 500);
    assert_eq!(lines[1]["max_retries"], 5);
}
