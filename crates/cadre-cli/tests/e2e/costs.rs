//! Cost and context configuration through the binary: prices from a config
//! table reach `usage`, `turn_ended` and `subagent_ended` and the session
//! listing to the cent; a local model shows tokens without a cost; a
//! configured window and threshold reach the agent; `cadre sessions show`
//! prints a history with its compactions marked; config range errors.

use crate::common;

use common::{BOTH_WIRES, Harness, Wire, events, stderr, stdout};
use serde_json::Value;

/// Prices of the test model, US dollars per million tokens.
const PRICES: [f64; 4] = [2.5, 12.5, 0.25, 3.125];

fn provider(wire: Wire) -> &'static str {
    match wire {
        Wire::Anthropic => "anthropic",
        Wire::OpenAi => "openai",
    }
}

fn write_config(h: &Harness, text: &str) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), text).unwrap();
}

/// `[models.<provider>.priced-1]` with [`PRICES`], and a window that holds
/// the scripted counts without compacting.
fn priced_config(wire: Wire) -> String {
    let [i, o, r, w] = PRICES;
    format!(
        "[models.{}.priced-1]\ncontext_window = 10000000\ninput_price = {i}\noutput_price = {o}\ncache_read_price = {r}\ncache_write_price = {w}\n",
        provider(wire)
    )
}

/// Token counts a scripted reply reports: (input, output, cache read, cache write).
type Counts = (u64, u64, u64, u64);

/// What cadre sees of `c` on `wire`: OpenAI's usage has no cache-write
/// count, so those tokens arrive as plain input.
fn seen(wire: Wire, c: Counts) -> Counts {
    match wire {
        Wire::Anthropic => c,
        Wire::OpenAi => (c.0 + c.3, c.1, c.2, 0),
    }
}

/// The cost of `c` at [`PRICES`], in US dollars, computed from the price table.
fn expected_usd(c: Counts) -> f64 {
    let [i, o, r, w] = PRICES;
    (c.0 as f64 * i + c.1 as f64 * o + c.2 as f64 * r + c.3 as f64 * w) / 1e6
}

fn usage_yaml(c: Counts) -> String {
    format!(
        "{{ input_tokens: {}, output_tokens: {}, cache_read_input_tokens: {}, cache_creation_input_tokens: {} }}",
        c.0, c.1, c.2, c.3
    )
}

fn of_type<'a>(evs: &'a [Value], t: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["type"] == t).collect()
}

fn assert_usd(actual: &Value, expected: f64, what: &str) {
    let got = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no cost_usd in {actual}"));
    assert!((got - expected).abs() < 1e-9, "{what}: {got} != {expected}");
}

/// The `cadre sessions` line of session `id`.
async fn listing_line(h: &Harness, id: &str) -> String {
    let out = h.cadre(&["sessions"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id} not listed: {}", stdout(&out)))
        .to_string()
}

/// The dollar figure of a listing line, if it shows one.
fn listed_usd(line: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix('$'))
        .map(|n| n.parse().unwrap())
}

/// The token figure of a listing line (`12345 tok`).
fn listed_tokens(line: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "tok")
        .expect("a token count");
    words[at - 1].parse().unwrap()
}

fn session_id(evs: &[Value]) -> String {
    evs[0]["session_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn configured_prices_give_request_turn_and_session_costs_to_the_cent() {
    let first: Counts = (120_000, 3_000, 450_000, 70_000);
    let second: Counts = (8_000, 1_500, 520_000, 9_000);
    let script = format!(
        r#"
rules:
  - name: priced
    replies:
      - text: "looking"
        tool_calls:
          - {{ name: Glob, input: {{ pattern: "*.none" }} }}
        usage: {}
      - text: "done"
        usage: {}
"#,
        usage_yaml(first),
        usage_yaml(second)
    );
    for wire in BOTH_WIRES {
        let h = Harness::new(&script, wire).await;
        write_config(&h, &priced_config(wire));
        let out = h
            .cadre_env(&["exec", "--json", "go"], &[("CADRE_MODEL", "priced-1")])
            .await;
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let evs = events(&out);
        let usages = of_type(&evs, "usage");
        assert_eq!(usages.len(), 2, "{wire:?}");
        let mut total = 0.0;
        let mut tokens = 0;
        for (event, counts) in usages.iter().zip([first, second]) {
            let c = seen(wire, counts);
            assert_eq!(event["input_tokens"], c.0, "{wire:?}: {event}");
            assert_eq!(event["cache_write_tokens"], c.3, "{wire:?}: {event}");
            assert_usd(&event["cost_usd"], expected_usd(c), "usage");
            total += expected_usd(c);
            tokens += c.0 + c.1 + c.2 + c.3;
        }
        assert!(of_type(&evs, "compaction_started").is_empty());
        let ended = of_type(&evs, "turn_ended");
        assert_usd(&ended[0]["cost_usd"], total, "turn_ended");
        let id = session_id(&evs);
        let line = listing_line(&h, &id).await;
        assert_eq!(listed_tokens(&line), tokens, "{line}");
        let listed = listed_usd(&line).unwrap_or_else(|| panic!("no cost: {line}"));
        assert!((listed - total).abs() < 0.005, "{line} vs {total}");
        let out = h.cadre(&["sessions", "show", &id]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let shown = stdout(&out);
        let last = shown.lines().last().unwrap();
        assert!(last.starts_with(&format!("tokens: {tokens} ")), "{last}");
        let shown_usd: f64 = last
            .split("cost $")
            .nth(1)
            .unwrap_or_else(|| panic!("no cost: {last}"))
            .trim()
            .parse()
            .unwrap();
        assert!((shown_usd - total).abs() < 0.005, "{last} vs {total}");
    }
}

#[tokio::test]
async fn a_childs_cost_is_in_its_subagent_ended_and_in_the_session_total() {
    let parent: Counts = (3_000, 200, 0, 1_000);
    let child: Counts = (40_000, 6_000, 100_000, 20_000);
    let script = format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "count-task" }}
    replies:
      - text: "CHILD REPORT"
        usage: {}
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "c", prompt: "count-task", subagent_type: "general-purpose" }} }}
        usage: {}
      - text: "parent done"
        usage: {}
"#,
        usage_yaml(child),
        usage_yaml(parent),
        usage_yaml(parent)
    );
    let wire = Wire::Anthropic;
    let h = Harness::new(&script, wire).await;
    write_config(&h, &priced_config(wire));
    let out = h
        .cadre_env(&["exec", "--json", "go"], &[("CADRE_MODEL", "priced-1")])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let ended = of_type(&evs, "subagent_ended");
    assert_eq!(ended.len(), 1);
    assert_usd(&ended[0]["cost_usd"], expected_usd(child), "subagent_ended");

    let id = session_id(&evs);
    let line = listing_line(&h, &id).await;
    let total = expected_usd(child) + 2.0 * expected_usd(parent);
    let listed = listed_usd(&line).unwrap_or_else(|| panic!("no cost: {line}"));
    assert!((listed - total).abs() < 0.005, "{line} vs {total}");
    let tokens = |c: Counts| c.0 + c.1 + c.2 + c.3;
    assert_eq!(
        listed_tokens(&line),
        tokens(child) + 2 * tokens(parent),
        "{line}"
    );
}

#[tokio::test]
async fn a_local_model_shows_tokens_without_cost_and_its_configured_window() {
    let script = r#"
rules:
  - name: local
    replies:
      - text: "hi from local"
        usage: { input_tokens: 900, output_tokens: 40 }
"#;
    let wire = Wire::OpenAi;
    let h = Harness::new(script, wire).await;
    write_config(&h, "[models.openai.\"my-local\"]\ncontext_window = 4000\n");
    let out = h
        .cadre_env(&["exec", "--json", "hello"], &[("CADRE_MODEL", "my-local")])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let contexts = of_type(&evs, "context_usage");
    assert!(!contexts.is_empty());
    for c in &contexts {
        assert_eq!(c["window"], 4000, "{c}");
    }
    let last = contexts.last().unwrap();
    assert_eq!(last["tokens"], 940, "{last}");
    assert_eq!(last["percent"], 23, "{last}");
    let usage = of_type(&evs, "usage");
    assert!(usage[0].get("cost_usd").is_none(), "{}", usage[0]);
    assert!(of_type(&evs, "turn_ended")[0].get("cost_usd").is_none());

    let id = session_id(&evs);
    let line = listing_line(&h, &id).await;
    assert_eq!(listed_tokens(&line), 940, "{line}");
    assert_eq!(listed_usd(&line), None, "no cost for a local model: {line}");
    let out = h.cadre(&["sessions", "show", &id]).await;
    let last = stdout(&out).lines().last().unwrap().to_string();
    assert!(last.starts_with("tokens: 940 "), "{last}");
    assert!(!last.contains("cost"), "{last}");

    // The same model without its table: the default window.
    let h2 = Harness::new(script, wire).await;
    let out = h2
        .cadre_env(&["exec", "--json", "hello"], &[("CADRE_MODEL", "my-local")])
        .await;
    let evs = events(&out);
    assert_eq!(of_type(&evs, "context_usage")[0]["window"], 128_000);
}

/// A first reply that fills 2210 tokens of a 4000 window, then a summary and an answer.
const THRESHOLD_SCRIPT: &str = r#"
rules:
  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
      - text: "SUMMARY-OF-WORK: looked for files, found none."
        usage: { input_tokens: 2300, output_tokens: 60 }
  - name: main
    step_by: requests
    replies:
      - text: "looking"
        tool_calls:
          - { name: Glob, input: { pattern: "*.none" } }
        usage: { input_tokens: 2200, output_tokens: 10 }
      - text: "all done"
        usage: { input_tokens: 700, output_tokens: 5 }
"#;

#[tokio::test]
async fn the_configured_threshold_compacts_and_sessions_show_marks_the_boundary() {
    let wire = Wire::Anthropic;
    let window = "[models.anthropic.small-1]\ncontext_window = 4000\n";

    // At the default 85% (3400 tokens), 2210 tokens in use do not compact.
    let h = Harness::new(THRESHOLD_SCRIPT, wire).await;
    write_config(&h, window);
    let out = h
        .cadre_env(&["exec", "--json", "go"], &[("CADRE_MODEL", "small-1")])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(of_type(&events(&out), "compaction_started").is_empty());

    // At 50% (2000 tokens) they do.
    let h = Harness::new(THRESHOLD_SCRIPT, wire).await;
    write_config(
        &h,
        &format!("[context]\nauto_compact_percent = 50\n{window}"),
    );
    let out = h
        .cadre_env(&["exec", "--json", "go"], &[("CADRE_MODEL", "small-1")])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let evs = events(&out);
    let started = of_type(&evs, "compaction_started");
    assert_eq!(started.len(), 1, "{evs:?}");
    assert_eq!(started[0]["trigger"], "auto");
    let ended = of_type(&evs, "compaction_ended");
    let (before, after, kept) = (
        ended[0]["tokens_before"].as_u64().unwrap(),
        ended[0]["tokens_after"].as_u64().unwrap(),
        ended[0]["kept_messages"].as_u64().unwrap(),
    );
    assert!(
        before >= 2210,
        "the reply's 2210 tokens and the tool result: {before}"
    );

    let id = session_id(&evs);
    let out = h.cadre(&["sessions", "show", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    let rule = format!(
        "──── compacted (auto): {before} → {after} tokens, {kept} message{} kept ────",
        if kept == 1 { "" } else { "s" }
    );
    let lines: Vec<&str> = shown.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == rule)
        .unwrap_or_else(|| panic!("no `{rule}` in:\n{shown}"));
    assert!(
        lines[at + 1].starts_with("SUMMARY-OF-WORK"),
        "the summary follows the rule:\n{shown}"
    );
    // In order: the prompt, the call, its result, the boundary, the answer.
    let pos = |needle: &str| {
        shown
            .find(needle)
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{shown}"))
    };
    assert!(pos("> go") < pos("→ Glob(*.none)"));
    assert!(pos("→ Glob(*.none)") < pos("← "));
    assert!(pos("← ") < pos(&rule));
    assert!(pos(&rule) < pos("all done"));
    // The summary request's tokens count too: 2210 + 2360 + 705.
    let last = lines.last().unwrap();
    assert!(last.starts_with("tokens: 5275 "), "{last}");

    // --json: the log's records, one a line, the boundary among them.
    let out = h.cadre(&["sessions", "show", "--json", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = events(&out);
    let log =
        std::fs::read_to_string(h.data_dir().join("sessions").join(format!("{id}.jsonl"))).unwrap();
    assert_eq!(records.len(), log.lines().count());
    let boundary = records
        .iter()
        .find(|r| r["type"] == "compact_boundary")
        .expect("a compact_boundary record");
    assert_eq!(boundary["tokens_before"], before);
    assert!(
        boundary["summary"]
            .as_str()
            .unwrap()
            .starts_with("SUMMARY-OF-WORK")
    );
}

#[tokio::test]
async fn sessions_show_refuses_child_and_bad_ids_and_shows_a_written_boundary() {
    let script = r#"
rules:
  - name: any
    replies:
      - text: "ok"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    let out = h.cadre(&["exec", "--json", "first prompt"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let id = session_id(&events(&out));
    let sessions = h.data_dir().join("sessions");
    let agents = sessions.join(format!("{id}.agents"));
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("child-9.jsonl"), "{}\n").unwrap();

    for (bad, says) in [
        ("child-9", "subagent sessions are internal"),
        ("../x", "is not a session id"),
        ("nosuch", "no session 'nosuch'"),
    ] {
        let out = h.cadre(&["sessions", "show", bad]).await;
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{bad}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }

    // A boundary written by hand, as the log format has it, and a record after it.
    let log = sessions.join(format!("{id}.jsonl"));
    let mut text = std::fs::read_to_string(&log).unwrap();
    let kept = serde_json::json!([
        {"role": "user", "content": [{"type": "text", "text": "kept question"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "kept answer"}]}
    ]);
    text.push_str(
        &serde_json::json!({
            "v": 1, "time_ms": 1, "type": "compact_boundary", "trigger": "manual",
            "summary": "HAND SUMMARY line one\nline two", "kept": kept,
            "tokens_before": 3400, "tokens_after": 900,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 0, "cache_write_tokens": 0},
        })
        .to_string(),
    );
    text.push('\n');
    text.push_str(r#"{"v":1,"time_ms":2,"type":"user","text":"after the boundary"}"#);
    text.push('\n');
    std::fs::write(&log, text).unwrap();
    let out = h.cadre(&["sessions", "show", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    let rule = "──── compacted (manual): 3400 → 900 tokens, 2 messages kept ────";
    let at = shown
        .find(rule)
        .unwrap_or_else(|| panic!("no boundary in:\n{shown}"));
    assert!(
        shown[at..].contains("HAND SUMMARY line one\nline two"),
        "{shown}"
    );
    assert!(
        shown.find("> first prompt").unwrap() < at
            && at < shown.find("> after the boundary").unwrap(),
        "{shown}"
    );
}

#[tokio::test]
async fn a_session_in_use_can_be_shown() {
    let script = r#"
rules:
  - name: slow
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo $$ >> runs.txt; sleep 30" } }
      - text: "finished"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let mut run = h.spawn_json(&[
        "exec",
        "--json",
        "--permission-mode",
        "acceptEdits",
        "run the slow thing",
    ]);
    let started = run.wait_for("session_started", 1).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    common::wait_until("the command runs", || h.path("runs.txt").exists()).await;

    let out = h.cadre(&["sessions", "show", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("> run the slow thing"), "{shown}");
    assert!(
        shown.contains("→ Bash(echo $$ >> runs.txt; sleep 30)"),
        "{shown}"
    );
    // The running session still refuses a resume.
    let out = h.cadre(&["exec", "--resume", &id, "x"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is in use"), "{}", stderr(&out));

    run.kill().await;
    let pid: i32 = h.read("runs.txt").trim().parse().unwrap();
    // SAFETY: signalling a process group this test started.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

#[tokio::test]
async fn context_and_price_values_out_of_range_are_refused_naming_the_key() {
    let script = r#"
rules:
  - name: any
    replies:
      - text: "never"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    for (config, key) in [
        (
            "[models.openai.\"gpt-4.1\"]\ncontext_window = 100\n",
            "models.openai.\"gpt-4.1\".context_window",
        ),
        (
            "[models.openai.m]\ninput_price = -0.5\n",
            "models.openai.m.input_price",
        ),
        (
            "[context]\nauto_compact_percent = 0\n",
            "context.auto_compact_percent",
        ),
        (
            "[context]\nauto_compact_percent = 150\n",
            "context.auto_compact_percent",
        ),
    ] {
        write_config(&h, config);
        let out = h.cadre(&["exec", "--json", "hello"]).await;
        assert!(!out.status.success(), "{config}");
        let err = stderr(&out);
        assert!(
            err.contains(key) && err.contains("out of range"),
            "{config}: {err}"
        );
        assert!(err.contains("config.toml"), "{err}");
    }
    assert!(h.records().is_empty(), "nothing was sent");
    // A project file's table is read too, and checked the same way.
    write_config(&h, "");
    h.write(
        ".cadre/config.toml",
        "[models.openai.m]\ncontext_window = 0\n",
    );
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("models.openai.m.context_window"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn the_readme_config_examples_load() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(
        blocks.iter().any(|b| b.contains("[context]")),
        "the README shows the [context] section"
    );
    let script = r#"
rules:
  - name: any
    replies:
      - text: "ok"
"#;
    for block in blocks {
        let h = Harness::new(script, Wire::OpenAi).await;
        write_config(&h, block);
        let out = h.cadre(&["exec", "--json", "hello"]).await;
        assert!(out.status.success(), "{block}\n{}", stderr(&out));
    }
}
