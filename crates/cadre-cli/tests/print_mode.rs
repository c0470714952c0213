//! `cadre -p`, Claude Code's print mode, through the binary: the prompt is
//! the argument and piped stdin (piped text first), stdout is the answer or
//! one `result` object, a failure is the result with exit status 1, and a
//! missing prompt is a usage error (2) before any request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
