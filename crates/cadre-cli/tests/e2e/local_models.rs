//! Small local models: tool calls written as text (`tool_calls = "text"` and
//! `"auto"`), the sampling and limits a local server gets, its window read
//! from the server, and waits long enough for a slow CPU server.

use crate::common;

use std::process::Output;
use std::time::Duration;

use common::{Harness, Wire, events, stderr, system_text, tool_results};
use serde_json::Value;

/// Writes the user's `config.toml`.
fn user_config(h: &Harness, text: &str) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), text).unwrap();
}

/// `[models.openai."mock-model"]` with `body` under it.
fn model_config(h: &Harness, body: &str) {
    user_config(h, &format!("[models.openai.\"mock-model\"]\n{body}\n"));
}

/// Runs `cadre <args>` within `secs` (see [`Harness::cadre_bounded`]).
async fn run(h: &Harness, args: &[&str], secs: u64) -> Output {
    h.cadre_bounded(args, secs).await
}

/// A harness on `script` with `tool_calls = "text"` for the mock's model,
/// and a `cadre exec --json <prompt>` that must succeed.
async fn text_mode_run(script: &str, prompt: &str) -> (Harness, Output) {
    let h = Harness::new(script, Wire::OpenAi).await;
    model_config(&h, "tool_calls = \"text\"");
    h.write("a.txt", "alpha-content\n");
    let out = run(&h, &["exec", "--json", prompt], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    (h, out)
}

/// The `context_breakdown` event a run reported.
fn breakdown(out: &Output) -> Value {
    events(out)
        .into_iter()
        .find(|e| e["type"] == "context_breakdown")
        .expect("a context breakdown")
}

/// A script whose first reply is `first` (YAML-quoted text) and whose second is "done".
fn two_step(first: &str) -> String {
    format!(
        "rules:\n  - name: main\n    replies:\n      - text: {}\n      - text: \"done\"\n",
        serde_json::to_string(first).unwrap()
    )
}

/// The text of a request's last message.
fn last_message_text(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The tool names each `tool_call_started` event named, in order.
fn started_tools(out: &Output) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["type"] == "tool_call_started")
        .map(|e| e["tool"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn each_text_format_becomes_a_call_whose_result_reaches_the_model_as_text() {
    let formats = [
        (
            "fenced json",
            "I'll read it.\n```json\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n```",
        ),
        (
            "bare json",
            "{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a.txt\"}}",
        ),
        (
            "hermes",
            "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n</tool_call>",
        ),
        (
            "llama python_tag",
            "<|python_tag|>{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a.txt\"}}<|eom_id|>",
        ),
        (
            "mistral",
            "[TOOL_CALLS][{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}]",
        ),
    ];
    for (label, reply) in formats {
        let h = Harness::new(&two_step(reply), Wire::OpenAi).await;
        model_config(&h, "tool_calls = \"text\"");
        h.write("a.txt", "alpha-content\n");
        let out = run(&h, &["exec", "--json", "read a.txt"], 60).await;
        assert!(out.status.success(), "{label}: {}", stderr(&out));
        assert_eq!(started_tools(&out), ["Read"], "{label}");
        let records = h.records();
        assert_eq!(records.len(), 2, "{label}");
        let first = &records[0].body;
        // Tools travel in the prompt, not in the API's field.
        assert!(first.get("tools").is_none(), "{label}: {first}");
        let system = system_text(first);
        assert!(
            system.contains("Read") && system.contains("file_path"),
            "{label}: {system}"
        );
        assert_eq!(first["temperature"], 0.2, "{label}");
        let second = &records[1].body;
        let messages = second["messages"].as_array().unwrap();
        assert!(
            messages.iter().all(|m| m["role"] != "tool"),
            "{label}: {second}"
        );
        assert!(
            messages.iter().all(|m| m.get("tool_calls").is_none()),
            "{label}: {second}"
        );
        let result = last_message_text(second);
        assert!(result.contains("alpha-content"), "{label}: {result}");
        assert!(
            result.contains("Read"),
            "{label}: the wrapper names the tool: {result}"
        );
        assert_eq!(messages.last().unwrap()["role"], "user", "{label}");
        // The call is written back in the assistant message as text.
        let assistant = &messages[messages.len() - 2];
        assert_eq!(assistant["role"], "assistant", "{label}");
        assert!(
            assistant["content"].as_str().unwrap().contains("a.txt"),
            "{label}: {assistant}"
        );
    }
}

#[tokio::test]
async fn two_text_calls_in_one_reply_run_in_order_and_text_around_them_is_kept() {
    let reply = "Reading both.\n<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"one.txt\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"two.txt\"}}\n</tool_call>";
    let h = Harness::new(&two_step(reply), Wire::OpenAi).await;
    model_config(&h, "tool_calls = \"text\"");
    h.write("one.txt", "first-file\n");
    h.write("two.txt", "second-file\n");
    let out = run(&h, &["exec", "--json", "read both"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(started_tools(&out), ["Read", "Read"]);
    let evs = events(&out);
    let said: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "assistant_message")
        .collect();
    assert_eq!(said[0]["text"], "Reading both.", "{said:?}");
    assert_eq!(said[0]["tool_calls"], 2);
    let records = h.records();
    let result = last_message_text(&records[1].body);
    let (a, b) = (result.find("first-file"), result.find("second-file"));
    assert!(a.is_some() && b.is_some() && a < b, "{result}");
}

#[tokio::test]
async fn a_malformed_text_call_gets_one_corrective_turn() {
    let script = r#"
rules:
  - name: main
    replies:
      - text: "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\",}}\n</tool_call>"
      - text: "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n</tool_call>"
      - text: "done"
"#;
    let (h, out) = text_mode_run(script, "read a.txt").await;
    assert_eq!(started_tools(&out), ["Read"]);
    let records = h.records();
    assert_eq!(records.len(), 3);
    let correction = last_message_text(&records[1].body);
    assert!(
        correction.contains("could not be read") && correction.contains("JSON"),
        "{correction}"
    );
    assert!(last_message_text(&records[2].body).contains("alpha-content"));
    // A second unreadable reply in a row is the answer as it is.
    let script = r#"
rules:
  - name: main
    replies:
      - text: "<tool_call>{\"name\": \"Read\", \"arguments\": {'file_path': 1}}</tool_call>"
      - text: "<tool_call>{\"name\": \"Read\", \"arguments\": {'file_path': 2}}</tool_call>"
      - text: "never asked"
"#;
    let (h, _) = text_mode_run(script, "go").await;
    assert_eq!(h.records().len(), 2);
}

#[tokio::test]
async fn auto_mode_uses_native_calls_and_reads_text_ones() {
    // A native call is used as it is, with the tools in the API's field.
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls: [{ name: Read, input: { file_path: "a.txt" } }]
      - text: "done"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    h.write("a.txt", "alpha-content\n");
    let out = run(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(records[0].body["tools"].is_array());
    assert!(records[0].body.get("temperature").is_none());
    assert!(
        tool_results(&records[1].body)[0]
            .0
            .contains("alpha-content")
    );

    // A reply with the call in its text alone: read, run, and sent back in
    // the API's own form (the server took the tools).
    let reply = "```json\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n```";
    let h = Harness::new(&two_step(reply), Wire::OpenAi).await;
    h.write("a.txt", "alpha-content\n");
    let out = run(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(started_tools(&out), ["Read"]);
    let records = h.records();
    assert!(records[1].body["tools"].is_array());
    let results = tool_results(&records[1].body);
    assert_eq!(results.len(), 1, "{}", records[1].body);
    assert!(results[0].0.contains("alpha-content"));
}

#[tokio::test]
async fn a_servers_tool_parse_error_is_retried_with_the_tools_in_the_prompt() {
    let script = r#"
rules:
  - name: main
    replies:
      - text: "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n</tool_call>"
        fail_once: { status: 500, message: "Failed to parse input at pos 0: ```json {\"name\": \"Read\"} ```" }
      - text: "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n</tool_call>"
      - text: "done"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    h.write("a.txt", "alpha-content\n");
    let out = run(&h, &["exec", "--json", "go"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let retries: Vec<&Value> = evs.iter().filter(|e| e["type"] == "retrying").collect();
    assert_eq!(retries.len(), 1, "{evs:?}");
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("tool_calls = \"text\""),
        "{retries:?}"
    );
    assert_eq!(started_tools(&out), ["Read", "Read"]);
    let records = h.records();
    assert_eq!(records.len(), 4, "one failed try, then three requests");
    assert!(
        records[0].body["tools"].is_array(),
        "the first try offered tools natively"
    );
    for r in &records[1..] {
        assert!(
            r.body.get("tools").is_none(),
            "then in the prompt: {}",
            r.body
        );
        assert!(system_text(&r.body).contains("file_path"), "{}", r.body);
    }
}

#[tokio::test]
async fn a_text_call_is_denied_exactly_as_a_native_one() {
    let native = r#"
rules:
  - name: main
    replies:
      - tool_calls: [{ name: Write, input: { file_path: "w.txt", content: "x" } }]
      - text: "done"
"#;
    let text = two_step(
        "<tool_call>{\"name\": \"Write\", \"arguments\": {\"file_path\": \"w.txt\", \"content\": \"x\"}}</tool_call>",
    );
    let mut seen = Vec::new();
    for (script, mode) in [(native.to_string(), "native"), (text, "text")] {
        for (args, rules) in [
            (["exec", "--json", "--permission-mode", "plan", "go"], ""),
            (
                ["exec", "--json", "--permission-mode", "acceptEdits", "go"],
                "[permissions]\ndeny = [\"Write\"]\n",
            ),
        ] {
            let h = Harness::new(&script, Wire::OpenAi).await;
            user_config(
                &h,
                &format!("{rules}[models.openai.\"mock-model\"]\ntool_calls = \"{mode}\"\n"),
            );
            let out = run(&h, &args, 60).await;
            assert!(out.status.success(), "{mode} {args:?}: {}", stderr(&out));
            assert!(!h.path("w.txt").exists(), "{mode} {args:?}: the write ran");
            let evs = events(&out);
            let ended: Vec<String> = evs
                .iter()
                .filter(|e| e["type"] == "tool_call_ended")
                .map(|e| format!("{} {} {}", e["tool"], e["is_error"], e["outcome"]))
                .collect();
            assert_eq!(ended.len(), 1, "{mode} {args:?}: {evs:?}");
            seen.push((args, ended));
        }
    }
    // The native and the text runs ended their calls the same way.
    assert_eq!(seen[0].1, seen[2].1, "{seen:?}");
    assert_eq!(seen[1].1, seen[3].1, "{seen:?}");
}

#[tokio::test]
async fn max_tokens_temperature_and_the_servers_window_reach_the_request() {
    let script = r#"
server:
  props: { default_generation_settings: { n_ctx: 8192 }, total_slots: 1 }
rules:
  - name: main
    replies:
      - text: "hi"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    model_config(&h, "max_tokens = 321\ntemperature = 0.7");
    let out = run(&h, &["exec", "--json", "hello"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let body = &records[0].body;
    assert_eq!(body["max_tokens"], 321);
    assert_eq!(body["temperature"], 0.7);
    // The window the server reported: the context figures use it, and a
    // small window gets short tool descriptions and prompt.
    let seen = breakdown(&out);
    assert_eq!(seen["window"], 8192, "{seen}");
    let system = system_text(body);
    assert!(
        !system.contains("Prefer Grep and Glob over Bash"),
        "{system}"
    );
    for tool in body["tools"].as_array().unwrap() {
        let d = tool["function"]["description"].as_str().unwrap();
        assert!(d.len() <= 210 && !d.contains('\n'), "{d}");
    }
    // Without the server's word, the full prompt.
    let h = Harness::new("rules:\n  - replies:\n      - text: \"hi\"\n", Wire::OpenAi).await;
    let out = run(&h, &["exec", "--json", "hello"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(system_text(&h.records()[0].body).contains("Prefer Grep and Glob over Bash"));
}

#[tokio::test]
async fn ollamas_show_gives_the_window_when_there_is_no_props() {
    let script = r#"
server:
  show: { parameters: "num_ctx 6144", model_info: { "qwen2.context_length": 32768 } }
rules:
  - replies:
      - text: "hi"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    let out = run(&h, &["exec", "--json", "hello"], 60).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = breakdown(&out);
    assert_eq!(seen["window"], 6144, "{seen}");
}

#[tokio::test]
async fn a_slow_first_byte_within_the_models_limit_succeeds() {
    let script = r#"
rules:
  - replies:
      - text: "slow but fine"
        latency_ms: 20000
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    // The idle timeout alone would give up after 5 s.
    user_config(
        &h,
        "[limits]\nstream_idle_timeout_s = 5\n[models.openai.\"mock-model\"]\nfirst_byte_timeout_s = 60\n",
    );
    let out = run(&h, &["exec", "--json", "hello"], 90).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    assert!(evs.iter().all(|e| e["type"] != "retrying"), "{evs:?}");
    assert_eq!(h.records().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_fails_at_the_models_limits() {
    let script = r#"
rules:
  - replies:
      - text: "never"
        fail: { stall: true }
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    model_config(&h, "first_byte_timeout_s = 2\nrequest_deadline_s = 5");
    let started = std::time::Instant::now();
    let out = run(&h, &["exec", "--json", "hello"], 60).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let evs = events(&out);
    let retries: Vec<&Value> = evs.iter().filter(|e| e["type"] == "retrying").collect();
    assert!(!retries.is_empty(), "{evs:?}");
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("first_byte_timeout_s"),
        "{retries:?}"
    );
    let all = format!("{evs:?}{}", stderr(&out));
    assert!(
        all.contains("within 5 s (request_deadline_s)"),
        "the deadline is named: {all}"
    );
    // The deadline, not the default 30 minutes, ended it.
    assert!(started.elapsed() < Duration::from_secs(40));
}

#[tokio::test]
async fn the_full_screen_says_it_waits_for_a_silent_model() {
    use common::tmux::{Pane, tmux_available};
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - replies:
      - text: "Finally here."
        latency_ms: 6000
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("waiting for the model (").await;
    assert!(screen.contains("Esc to interrupt"), "{screen}");
    let screen = pane.wait_text("Finally here.").await;
    assert!(!screen.contains("waiting for the model"), "{screen}");
}
