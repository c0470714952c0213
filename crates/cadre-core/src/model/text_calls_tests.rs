#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn call(name: &str, arguments: Value) -> TextCall {
    TextCall {
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

fn calls_of(text: &str) -> Vec<TextCall> {
    let parsed = parse_reply(text);
    assert_eq!(parsed.problem, None, "unexpected problem for {text:?}");
    parsed.calls
}

// ---- formats ----

#[test]
fn fenced_json_block_from_qwen_coder() {
    let reply = "```json\n{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"**/*.rs\"}}\n```";
    let parsed = parse_reply(reply);
    assert_eq!(
        parsed.calls,
        vec![call("Glob", json!({"pattern": "**/*.rs"}))]
    );
    assert_eq!(parsed.text, "");
    assert_eq!(parsed.problem, None);
}

#[test]
fn fenced_untagged_and_tool_call_tagged_blocks() {
    let plain = "```\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a.txt\"}}\n```";
    assert_eq!(
        calls_of(plain),
        vec![call("Read", json!({"file_path": "a.txt"}))]
    );
    let tagged = "```tool_call\n{\"name\": \"Read\", \"parameters\": {\"file_path\": \"b\"}}\n```";
    assert_eq!(
        calls_of(tagged),
        vec![call("Read", json!({"file_path": "b"}))]
    );
    let upper = "```JSON\n{\"name\": \"Ls\", \"arguments\": {}}\n```";
    assert_eq!(calls_of(upper), vec![call("Ls", json!({}))]);
}

#[test]
fn fenced_array_is_several_calls() {
    let reply = "```json\n[{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}, \
                 {\"name\": \"Read\", \"arguments\": {\"file_path\": \"b\"}}]\n```";
    assert_eq!(
        calls_of(reply),
        vec![
            call("Read", json!({"file_path": "a"})),
            call("Read", json!({"file_path": "b"}))
        ]
    );
}

#[test]
fn text_around_a_call_is_kept() {
    let reply =
        "I'll look.\n```json\n{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"*\"}}\n```\n";
    let parsed = parse_reply(reply);
    assert_eq!(parsed.text, "I'll look.");
    assert_eq!(parsed.calls.len(), 1);
}

#[test]
fn bare_llama_object() {
    let reply = "{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a.txt\"}}";
    let parsed = parse_reply(reply);
    assert_eq!(
        parsed.calls,
        vec![call("Read", json!({"file_path": "a.txt"}))]
    );
    assert_eq!(parsed.text, "");
}

#[test]
fn bare_objects_on_lines_or_after_semicolons() {
    let lines = "Reading both.\n{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a\"}}\n  {\"name\": \"Read\", \"parameters\": {\"file_path\": \"b\"}}\n";
    let parsed = parse_reply(lines);
    assert_eq!(parsed.text, "Reading both.");
    assert_eq!(
        parsed.calls,
        vec![
            call("Read", json!({"file_path": "a"})),
            call("Read", json!({"file_path": "b"}))
        ]
    );
    let semis =
        "{\"name\": \"A\", \"parameters\": {}}; {\"name\": \"B\", \"parameters\": {\"x\": 1}}";
    let parsed = parse_reply(semis);
    assert_eq!(parsed.text, "");
    assert_eq!(
        parsed.calls,
        vec![call("A", json!({})), call("B", json!({"x": 1}))]
    );
}

#[test]
fn bare_object_mid_line_is_not_a_call() {
    let reply = "Write it as {\"name\": \"Read\", \"arguments\": {}} in the file.";
    let parsed = parse_reply(reply);
    assert!(parsed.calls.is_empty());
    assert_eq!(parsed.text, reply);
}

#[test]
fn hermes_tool_call_tags() {
    let reply =
        "<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>";
    let parsed = parse_reply(reply);
    assert_eq!(parsed.calls, vec![call("Bash", json!({"command": "ls"}))]);
    assert_eq!(parsed.text, "");
}

#[test]
fn hermes_missing_close_at_end_is_accepted() {
    let reply =
        "Listing.\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n";
    let parsed = parse_reply(reply);
    assert_eq!(parsed.calls, vec![call("Bash", json!({"command": "ls"}))]);
    assert_eq!(parsed.text, "Listing.");
}

#[test]
fn hermes_with_a_fence_inside() {
    let reply = "<tool_call>\n```json\n{\"name\": \"Ls\", \"arguments\": {}}\n```\n</tool_call>";
    assert_eq!(calls_of(reply), vec![call("Ls", json!({}))]);
}

#[test]
fn hermes_without_arguments_is_a_call_with_empty_arguments() {
    let reply = "<tool_call>{\"name\": \"Pwd\"}</tool_call>";
    assert_eq!(calls_of(reply), vec![call("Pwd", json!({}))]);
}

#[test]
fn python_tag_calls() {
    let one =
        "<|python_tag|>{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a\"}}<|eom_id|>";
    let parsed = parse_reply(one);
    assert_eq!(parsed.calls, vec![call("Read", json!({"file_path": "a"}))]);
    assert_eq!(parsed.text, "");
    let two = "<|python_tag|>{\"name\": \"A\", \"parameters\": {}}; {\"name\": \"B\", \"parameters\": {}}<|eot_id|>";
    let parsed = parse_reply(two);
    assert_eq!(
        parsed.calls,
        vec![call("A", json!({})), call("B", json!({}))]
    );
    assert_eq!(parsed.text, "");
}

#[test]
fn mistral_array_and_name_args_forms() {
    let array = "[TOOL_CALLS][{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}, {\"name\": \"Ls\", \"arguments\": {}}]";
    let parsed = parse_reply(array);
    assert_eq!(
        parsed.calls,
        vec![
            call("Read", json!({"file_path": "a"})),
            call("Ls", json!({}))
        ]
    );
    assert_eq!(parsed.text, "");
    let named = "[TOOL_CALLS]Read[ARGS]{\"file_path\": \"a\"}[TOOL_CALLS]Ls[ARGS]{}";
    assert_eq!(
        calls_of(named),
        vec![
            call("Read", json!({"file_path": "a"})),
            call("Ls", json!({}))
        ]
    );
    let with_id = "[TOOL_CALLS]Read[CALL_ID]abc123[ARGS]{\"file_path\": \"a\"}";
    assert_eq!(
        calls_of(with_id),
        vec![call("Read", json!({"file_path": "a"}))]
    );
}

#[test]
fn several_formats_in_one_reply_in_order() {
    let reply = "First the file.\n<tool_call>{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}</tool_call>\nThen the tree.\n```json\n{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"*\"}}\n```\nDone soon.";
    let parsed = parse_reply(reply);
    assert_eq!(
        parsed.calls,
        vec![
            call("Read", json!({"file_path": "a"})),
            call("Glob", json!({"pattern": "*"}))
        ]
    );
    assert_eq!(parsed.text, "First the file.\nThen the tree.\nDone soon.");
    assert_eq!(parsed.problem, None);
}

#[test]
fn tolerated_shapes() {
    let string_args = "<tool_call>{\"name\": \"Read\", \"arguments\": \"{\\\"file_path\\\": \\\"a\\\"}\"}</tool_call>";
    assert_eq!(
        calls_of(string_args),
        vec![call("Read", json!({"file_path": "a"}))]
    );
    let wrapped = "```json\n{\"type\": \"function\", \"function\": {\"name\": \"Read\", \"arguments\": \"{\\\"file_path\\\": \\\"b\\\"}\"}}\n```";
    assert_eq!(
        calls_of(wrapped),
        vec![call("Read", json!({"file_path": "b"}))]
    );
    let extra =
        "{\"name\": \"Read\", \"id\": 7, \"arguments\": {\"file_path\": \"c\"}, \"why\": \"x\"}";
    assert_eq!(
        calls_of(extra),
        vec![call("Read", json!({"file_path": "c"}))]
    );
}

#[test]
fn arguments_keep_their_key_order() {
    let reply = "<tool_call>{\"name\": \"Edit\", \"arguments\": {\"z\": 1, \"a\": 2, \"m\": {\"y\": 1, \"b\": 2}}}</tool_call>";
    assert_eq!(
        calls_of(reply)[0].arguments,
        r#"{"z":1,"a":2,"m":{"y":1,"b":2}}"#
    );
}

// ---- malformed ----

fn assert_problem(reply: &str, needle: &str) {
    let parsed = parse_reply(reply);
    assert!(parsed.calls.is_empty(), "no call expected in {reply:?}");
    let problem = parsed.problem.unwrap_or_default();
    assert!(
        problem.contains(needle),
        "problem {problem:?} should mention {needle:?}"
    );
    assert_eq!(
        parsed.text.trim(),
        reply.trim(),
        "a bad span stays in the text"
    );
}

#[test]
fn malformed_calls_give_a_problem_and_no_call() {
    assert_problem(
        "<tool_call>{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"</tool_call>",
        "the <tool_call> block is not valid JSON",
    );
    assert_problem(
        "```json\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\",},}\n```",
        "not valid JSON",
    );
    assert_problem(
        "{'name': 'Read', 'arguments': {'file_path': 'a'}}",
        "not valid JSON",
    );
    assert_problem(
        "<tool_call>{\"name\": \"Read\", \"arguments\": \"file a\"}</tool_call>",
        "does not hold a JSON object",
    );
    assert_problem("[TOOL_CALLS][{\"name\": \"Read\",]", "not valid JSON");
    assert_problem(
        "<|python_tag|>{\"name\": \"Read\", parameters}",
        "not valid JSON",
    );
    assert_problem(
        "<|python_tag|>brave_search.call(query=\"x\")",
        "not a JSON object",
    );
    assert_problem("<tool_call>{\"tool\": \"Read\"}</tool_call>", "no call");
}

#[test]
fn problem_names_the_json_error() {
    let parsed = parse_reply("<tool_call>{\"name\": \"Read\" \"arguments\": {}}</tool_call>");
    let problem = parsed.problem.unwrap();
    assert!(problem.contains("line 1 column"), "{problem}");
}

#[test]
fn a_good_call_after_a_bad_one_is_still_read() {
    let reply = "<tool_call>{bad}</tool_call>\n<tool_call>{\"name\": \"Ls\", \"arguments\": {}}</tool_call>";
    let parsed = parse_reply(reply);
    assert_eq!(parsed.calls, vec![call("Ls", json!({}))]);
    assert!(parsed.problem.is_some());
    assert_eq!(parsed.text, "<tool_call>{bad}</tool_call>");
}

// ---- not calls ----

#[test]
fn final_answers_are_not_calls() {
    let samples = [
        "Here is the fix:\n```rust\nfn main() {\n    println!(\"{}\", 1);\n}\n```\nDone.",
        "The config looks like:\n```json\n{\"name\": \"cadre\", \"version\": \"0.1\"}\n```",
        "{\"name\": \"cadre\", \"version\": \"0.1\"}",
        "{ this is a brace at a line start }",
        "```json\n{\"a\": 1,}\n```",
        "```\nplain code\n```",
        "Use {\"name\": \"x\", \"arguments\": {}} inline.",
        "{\"name\": \"John Smith\", \"arguments\": {\"age\": 3}}",
    ];
    for text in samples {
        let parsed = parse_reply(text);
        assert!(parsed.calls.is_empty(), "no call in {text:?}");
        assert_eq!(parsed.problem, None, "no problem in {text:?}");
        assert_eq!(parsed.text, text);
    }
}

// ---- families ----

#[test]
fn family_of_model_ids() {
    let cases = [
        (
            "unsloth/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M",
            CallFamily::Hermes,
        ),
        ("qwen2.5-coder:1.5b", CallFamily::Hermes),
        ("NousResearch/Hermes-3-Llama-3.1-8B", CallFamily::Hermes),
        ("hermes3:8b", CallFamily::Hermes),
        ("llama3.2:3b", CallFamily::Llama),
        ("Meta-Llama-3.1-8B-Instruct", CallFamily::Llama),
        ("meta-llama/Llama-3.2-3B-Instruct", CallFamily::Llama),
        ("mistral-nemo", CallFamily::Mistral),
        ("mistralai/Devstral-Small-2505", CallFamily::Mistral),
        ("mixtral:8x7b", CallFamily::Mistral),
        ("codestral:22b", CallFamily::Mistral),
        ("ministral-8b", CallFamily::Mistral),
        ("gpt-4.1", CallFamily::Json),
        ("deepseek-coder:6.7b", CallFamily::Json),
    ];
    for (id, family) in cases {
        assert_eq!(family_of(id), family, "{id}");
    }
}

const FAMILIES: [CallFamily; 4] = [
    CallFamily::Hermes,
    CallFamily::Llama,
    CallFamily::Mistral,
    CallFamily::Json,
];

#[test]
fn render_call_parses_back() {
    let args =
        r#"{"file_path":"src/a b.rs","lines":[1,2],"opts":{"z":true,"a":null},"s":"q\"uote}"}"#;
    for family in FAMILIES {
        for (name, arguments) in [("Read", args), ("Ls", "{}"), ("mcp__x__y", "")] {
            let rendered = render_call(family, name, arguments);
            let parsed = parse_reply(&rendered);
            let want = if arguments.is_empty() {
                "{}"
            } else {
                arguments
            };
            assert_eq!(
                parsed.calls,
                vec![TextCall {
                    name: name.into(),
                    arguments: want.into()
                }],
                "{family:?}: {rendered}"
            );
            assert_eq!(parsed.text, "", "{family:?}");
            // Written back after some text, too.
            let parsed = parse_reply(&format!("Checking.\n{rendered}"));
            assert_eq!(parsed.calls.len(), 1, "{family:?}");
            assert_eq!(parsed.text, "Checking.");
        }
    }
}

#[test]
fn render_call_shapes() {
    assert_eq!(
        render_call(CallFamily::Hermes, "Read", r#"{"a": 1}"#),
        "<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"a\":1}}\n</tool_call>"
    );
    assert_eq!(
        render_call(CallFamily::Llama, "Read", "{}"),
        "{\"name\": \"Read\", \"parameters\": {}}"
    );
    assert_eq!(
        render_call(CallFamily::Mistral, "Read", "{}"),
        "[TOOL_CALLS][{\"name\": \"Read\", \"arguments\": {}}]"
    );
    assert_eq!(
        render_call(CallFamily::Json, "Read", "{}"),
        "```json\n{\"name\": \"Read\", \"arguments\": {}}\n```"
    );
}

#[test]
fn render_result_names_the_tool_and_errors() {
    for family in FAMILIES {
        let ok = render_result(family, "Read", "line one", false);
        assert!(ok.contains("Read") && ok.contains("line one"), "{ok}");
        assert!(!ok.contains("Error:"));
        let err = render_result(family, "Bash", "exit 1", true);
        assert!(
            err.contains("Bash") && err.contains("Error: exit 1"),
            "{err}"
        );
    }
    assert!(render_result(CallFamily::Hermes, "Read", "x", false).starts_with("<tool_response>"));
    assert!(render_result(CallFamily::Hermes, "Read", "x", false).ends_with("</tool_response>"));
    assert_eq!(
        render_result(CallFamily::Json, "Read", "x", false),
        "[Result of Read]\nx\n[End of result]"
    );
}

fn sample_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "Read".into(),
            description: "Reads a file.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "offset": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["text", "bytes"]},
                    "all": {"type": ["boolean", "null"]}
                },
                "required": ["file_path", "offset", "mode", "all"]
            }),
        },
        ToolSpec {
            name: "Bash".into(),
            description: "Runs a command.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        },
    ]
}

#[test]
fn tools_prompt_lists_tools_and_its_example_parses_back() {
    let tools = sample_tools();
    for family in FAMILIES {
        let prompt = tools_prompt(&tools, family);
        for tool in &tools {
            assert!(prompt.contains(&format!("## {}", tool.name)), "{family:?}");
            assert!(prompt.contains(&tool.description));
            assert!(prompt.contains(&tool.input_schema.to_string()));
        }
        let parsed = parse_reply(&prompt);
        assert_eq!(
            parsed.calls,
            vec![call(
                "Read",
                json!({"file_path": "src/main.rs", "offset": 1, "mode": "text", "all": false})
            )],
            "{family:?}"
        );
        assert!(prompt.contains("wait"));
        assert!(prompt.contains("plain text"));
    }
    assert_eq!(tools_prompt(&[], CallFamily::Json), "");
}

#[test]
fn tools_prompt_example_without_required_properties() {
    let tools = vec![ToolSpec {
        name: "Pwd".into(),
        description: "Prints the directory.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }];
    let parsed = parse_reply(&tools_prompt(&tools, CallFamily::Hermes));
    assert_eq!(parsed.calls, vec![call("Pwd", json!({}))]);
}

// ---- streaming ----

const STREAM_SAMPLES: &[&str] = &[
    "Plain prose with no calls at all — naïve café ✓.\nSecond line with `code` and a < sign and [brackets].\n",
    "I'll look.\n```json\n{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"**/*.rs\"}}\n```\n",
    "Here is the fix:\n```rust\nfn main() {\n    let s = \"}\";\n}\n```\nAnd a note ``inline``.",
    "First.\n<tool_call>\n{\"name\": \"Read\", \"arguments\": {\"file_path\": \"é.txt\"}}\n</tool_call>\nThen.\n<tool_call>{\"name\": \"Ls\", \"arguments\": {}}</tool_call>",
    "{\"name\": \"Read\", \"parameters\": {\"file_path\": \"a}\\\"b\"}}; {\"name\": \"Ls\", \"parameters\": {}}\nok",
    "Calling.<|python_tag|>{\"name\": \"A\", \"parameters\": {}}; {\"name\": \"B\", \"parameters\": {\"q\": \"x;y\"}}<|eom_id|>",
    "Mistral says [TOOL_CALLS][{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\"}}] and [TOOL_CALLS]Ls[ARGS]{\"d\": [1, {\"e\": 2}]} end",
    "Bad one:\n<tool_call>{\"name\": \"Read\", \"arguments\": {\"file_path\": \"a\",}}</tool_call>\n{ not json }\n{\"name\": \"cadre\"}\n",
    "  \n\n<tool_call>{\"name\": \"Ls\", \"arguments\": {}}</tool_call>\n\n  Trailing text.  \n",
    "Unclosed at end:\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n",
    "```\n{\"name\": \"X\", \"arguments\": \"{\\\"k\\\": 1}\"}\n```text after``` and `` ` ``` unclosed fence",
    "<|python_tag|>print('hi')",
    "{\"name\": \"Ls\", \"parameters\": {}}\n</tool_call>\nafter",
    "Go.[TOOL_CALLS]Read[CALL_ID]x1[ARGS] {\"a\": \"[ARGS]\"}\n[TOOL_CALLS]Ls[NOPE]{}",
    "<tool_call>\n```json\n{\"name\": \"Ls\", \"arguments\": {}}\n```\n</tool_call><|eot_id|> done",
];

fn streamed(pieces: &[&str]) -> String {
    let mut hold = StreamHold::default();
    let mut out = String::new();
    for piece in pieces {
        out.push_str(&hold.push(piece));
    }
    out.push_str(&hold.finish());
    out
}

fn char_bounds(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect()
}

#[test]
fn stream_matches_parse_at_every_split_point() {
    for text in STREAM_SAMPLES {
        let want = parse_reply(text).text;
        for at in char_bounds(text) {
            let got = streamed(&[&text[..at], &text[at..]]);
            assert_eq!(got, want, "split at {at} of {text:?}");
        }
    }
}

#[test]
fn stream_matches_parse_char_by_char_and_in_chunks() {
    for text in STREAM_SAMPLES {
        let want = parse_reply(text).text;
        let bounds = char_bounds(text);
        for size in 1..=7 {
            let pieces: Vec<&str> = bounds
                .windows(size + 1)
                .step_by(size)
                .map(|w| &text[w[0]..w[size]])
                .chain(std::iter::once(
                    &text[bounds[(bounds.len() - 1) / size * size]..],
                ))
                .collect();
            assert_eq!(pieces.concat(), *text);
            assert_eq!(streamed(&pieces), want, "chunks of {size} in {text:?}");
        }
    }
}

#[test]
fn stream_matches_parse_at_every_pair_of_split_points() {
    for text in STREAM_SAMPLES.iter().filter(|t| t.len() < 130) {
        let want = parse_reply(text).text;
        let bounds = char_bounds(text);
        for (n, &a) in bounds.iter().enumerate() {
            for &b in &bounds[n..] {
                let got = streamed(&[&text[..a], &text[a..b], &text[b..]]);
                assert_eq!(got, want, "splits {a},{b} of {text:?}");
            }
        }
    }
}

#[test]
fn prose_streams_through_at_once() {
    let mut hold = StreamHold::default();
    assert_eq!(hold.push("Hello, world."), "Hello, world.");
    assert_eq!(
        hold.push(" It works {ok} [x] <b>."),
        " It works {ok} [x] <b>."
    );
    // Only a partial marker at a piece's end waits.
    assert_eq!(hold.push(" Look ``"), " Look");
    assert_eq!(hold.push("x`` done"), " ``x`` done");
    assert_eq!(hold.push(" then <tool_"), " then");
    assert_eq!(hold.push("box>"), " <tool_box>");
    assert_eq!(hold.push(" and [TOOL_"), " and");
    assert_eq!(hold.push("KIT]"), " [TOOL_KIT]");
    assert_eq!(hold.finish(), "");
}

#[test]
fn stream_withholds_calls_and_releases_fenced_code_a_block_at_a_time() {
    // Trailing whitespace waits for the next text, in case a call follows.
    let mut hold = StreamHold::default();
    assert_eq!(hold.push("Fix:\n```rust\nfn x() {}\n"), "Fix:");
    assert_eq!(hold.push("```\nNow "), "\n```rust\nfn x() {}\n```\nNow");
    assert_eq!(
        hold.push("reading.\n<tool_call>{\"name\": \"Read\", "),
        " reading."
    );
    assert_eq!(hold.push("\"arguments\": {}}</tool_call>\n"), "");
    assert_eq!(hold.push("{\"name\": \"Ls\""), "");
    assert_eq!(hold.push(", \"parameters\": {}}"), "");
    assert_eq!(hold.finish(), "");
}

#[test]
fn stream_holds_a_line_start_brace_until_it_closes() {
    let mut hold = StreamHold::default();
    assert_eq!(hold.push("Config:\n{\"name\": \"cadre\","), "Config:");
    assert_eq!(
        hold.push(" \"version\": 1}\nok"),
        "\n{\"name\": \"cadre\", \"version\": 1}\nok"
    );
    assert_eq!(hold.finish(), "");
}

#[test]
fn mistral_name_form_with_call_id_and_a_broken_one() {
    let parsed = parse_reply(STREAM_SAMPLES[13]);
    assert_eq!(parsed.calls, vec![call("Read", json!({"a": "[ARGS]"}))]);
    assert_eq!(parsed.text, "Go.\n[TOOL_CALLS]Ls[NOPE]{}");
    assert!(
        parsed
            .problem
            .unwrap()
            .contains("[TOOL_CALLS]Ls is not followed by [ARGS]")
    );
}
