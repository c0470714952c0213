//! `WebSearch` through the binary: on the Anthropic wire the provider's own
//! search tool is offered and its blocks (from the mock) are kept, shown and
//! sent back verbatim; on the OpenAI wire a SearXNG service (a local axum
//! server) is called, or, with none configured, the tool is absent and a
//! definition listing it is warned about.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;
use common::{Harness, Wire, events, stderr, tool_results};
use serde_json::{Value, json};

/// A search reply, then a Read (so a second request carries the reply back).
const SEARCH_SCRIPT: &str = r#"
rules:
  - name: main
    replies:
      - server_tool:
          input: { query: "serde derive docs" }
          results:
            - { url: "https://docs.rs/serde", title: "serde docs", page_age: "3 days ago" }
            - { url: "https://serde.rs/derive.html", title: "Using derive" }
        text: "Found the docs."
        tool_calls: [{ name: Read, input: { file_path: "notes.txt" } }]
      - text: "done"
"#;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        // Anthropic's `name`, OpenAI's `function.name`.
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .map(str::to_string)
        })
        .collect()
}

#[tokio::test]
async fn the_providers_search_is_offered_and_its_blocks_go_back_verbatim() {
    let h = Harness::new(SEARCH_SCRIPT, Wire::Anthropic).await;
    user_config(
        &h,
        "[web_search]\nprovider = \"anthropic\"\nmax_uses = 3\nallowed_domains = [\"docs.rs\", \"serde.rs\"]\n",
    );
    h.write("notes.txt", "a note\n");
    let out = h.cadre(&["exec", "--json", "find the serde docs"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert_eq!(records.len(), 2, "{records:?}");

    // Offered as the server tool, not as a client tool.
    let tools = records[0].body["tools"].as_array().unwrap();
    let server: Vec<&Value> = tools
        .iter()
        .filter(|t| t["type"] == "web_search_20250305")
        .collect();
    assert_eq!(
        server,
        [
            &json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3,
                 "allowed_domains": ["docs.rs", "serde.rs"]})
        ]
    );
    assert!(!tool_names(&records[0].body).contains(&"WebSearch".to_string()));
    // The client tools keep their cache breakpoint on the last of them.
    let clients: Vec<&Value> = tools.iter().filter(|t| t.get("type").is_none()).collect();
    assert!(clients.last().unwrap()["cache_control"].is_object());

    // The second request holds the server's blocks exactly as they came.
    let assistant = &records[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let content = assistant["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "server_tool_use", "id": "srvtoolu_main_0", "name": "web_search",
               "input": {"query": "serde derive docs"}})
    );
    assert_eq!(
        content[1],
        json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_main_0", "content": [
            {"type": "web_search_result", "url": "https://docs.rs/serde", "title": "serde docs",
             "encrypted_content": "enc_main_0_0", "page_age": "3 days ago"},
            {"type": "web_search_result", "url": "https://serde.rs/derive.html",
             "title": "Using derive", "encrypted_content": "enc_main_0_1"}
        ]})
    );
    assert_eq!(content[2]["text"], "Found the docs.");
    // Not a client call: only the Read got a result.
    let results = tool_results(&records[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].0.contains("a note"), "{results:?}");

    // The user sees what was searched and found.
    let evs = events(&out);
    let used: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "server_tool_used")
        .collect();
    assert_eq!(used.len(), 1, "{evs:?}");
    assert_eq!(used[0]["tool"], "WebSearch");
    assert_eq!(used[0]["query"], "serde derive docs");
    assert_eq!(
        used[0]["results"],
        json!([{"title": "serde docs", "url": "https://docs.rs/serde"},
               {"title": "Using derive", "url": "https://serde.rs/derive.html"}])
    );
    // And the session log keeps the blocks, encrypted content included.
    let id = evs
        .iter()
        .find(|e| e["type"] == "session_started")
        .and_then(|e| e["session_id"].as_str())
        .unwrap();
    let log =
        std::fs::read_to_string(h.data_dir().join("sessions").join(format!("{id}.jsonl"))).unwrap();
    assert!(
        log.contains("serde derive docs") && log.contains("enc_main_0_1"),
        "{log}"
    );
}

#[tokio::test]
async fn a_deny_rule_takes_the_providers_search_away() {
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"ok\"\n",
        Wire::Anthropic,
    )
    .await;
    user_config(&h, "[web_search]\nprovider = \"anthropic\"\n");
    let out = h.cadre(&["exec", "--deny", "WebSearch", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &h.records()[0].body;
    assert!(
        !body["tools"].to_string().contains("web_search"),
        "{}",
        body["tools"]
    );
    // Allowed in plan mode, which is read-only like the search.
    let h = Harness::new(
        "rules:\n  - replies:\n      - text: \"ok\"\n",
        Wire::Anthropic,
    )
    .await;
    user_config(&h, "[web_search]\nprovider = \"anthropic\"\n");
    let out = h.cadre(&["exec", "--permission-mode", "plan", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        h.records()[0].body["tools"]
            .to_string()
            .contains("web_search_20250305")
    );
}

/// The queries a fake SearXNG instance received.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A SearXNG-like `/search` on a free loopback port; returns its port.
async fn searxng(seen: Seen) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = Router::new()
        .route(
            "/search",
            get(
                |State(seen): State<Seen>,
                 Query(q): Query<std::collections::HashMap<String, String>>| async move {
                    seen.lock().unwrap().push((
                        q.get("q").cloned().unwrap_or_default(),
                        q.get("format").cloned().unwrap_or_default(),
                    ));
                    axum::Json(json!({"results": [
                        {"url": "https://docs.rs/tokio", "title": "tokio docs", "content": "An <b>async</b> runtime."},
                        {"url": "https://spam.example/tokio", "title": "spam", "content": "buy"},
                        {"url": "https://tokio.rs/", "title": "Tokio", "content": "Build reliable apps."}
                    ]}))
                },
            ),
        )
        .with_state(seen);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

#[tokio::test]
async fn the_openai_wire_searches_through_searxng_with_the_domain_filters() {
    let seen: Seen = Arc::default();
    let port = searxng(seen.clone()).await;
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: WebSearch, input: { query: "tokio runtime", blocked_domains: ["spam.example"] } }
          - { name: WebSearch, input: { query: "tokio runtime", allowed_domains: ["tokio.rs"] } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    user_config(
        &h,
        format!("[web_search]\nprovider = \"searxng\"\nurl = \"http://127.0.0.1:{port}\"\n"),
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(tool_names(&records[0].body).contains(&"WebSearch".to_string()));
    let results = tool_results(&records[1].body);
    let (first, err) = &results[0];
    assert!(!err, "{first}");
    assert!(
        first.contains("1. tokio docs\n   https://docs.rs/tokio\n   An async runtime.\n"),
        "{first}"
    );
    assert!(
        first.contains("2. Tokio\n   https://tokio.rs/\n"),
        "{first}"
    );
    assert!(!first.contains("spam"), "blocked: {first}");
    let (second, _) = &results[1];
    assert!(
        second.contains("1. Tokio") && !second.contains("docs.rs"),
        "{second}"
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![("tokio runtime".to_string(), "json".to_string()); 2]
    );
}

#[tokio::test]
async fn without_a_search_service_the_openai_wire_has_no_websearch_and_definitions_are_warned() {
    let h = Harness::new("rules:\n  - replies:\n      - text: \"ok\"\n", Wire::OpenAi).await;
    h.write(
        ".cadre/agents/researcher.md",
        "---\nname: researcher\ndescription: Looks things up.\ntools: Read, WebSearch\n---\nResearch.\n",
    );
    let out = h.cadre(&["exec", "--json", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let names = tool_names(&h.records()[0].body);
    assert!(names.contains(&"WebFetch".to_string()), "{names:?}");
    assert!(!names.contains(&"WebSearch".to_string()), "{names:?}");
    let warnings: Vec<String> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    let about: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("researcher") && w.contains("WebSearch"))
        .collect();
    assert_eq!(about.len(), 1, "{warnings:?}");
    assert!(about[0].contains("[web_search]"), "{about:?}");
}

/// Writes the user config file (`$CADRE_HOME/config.toml`).
fn user_config(h: &Harness, text: impl AsRef<str>) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), text.as_ref()).unwrap();
}

#[tokio::test]
async fn a_paused_search_turn_is_sent_back_and_continued() {
    let script = r#"
rules:
  - name: main
    replies:
      - server_tool:
          input: { query: "long research" }
          results:
            - { url: "https://example.com/a", title: "A" }
        stop_reason: pause_turn
      - text: "Finished after the pause."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    user_config(&h, "[web_search]\nprovider = \"anthropic\"\n");
    let out = h.cadre(&["exec", "--json", "research it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        common::stdout(&out).contains("Finished after the pause."),
        "{}",
        common::stdout(&out)
    );
    let records = h.records();
    assert_eq!(records.len(), 2, "{records:?}");
    // The paused reply went back as the last message, with no user message after it.
    let messages = records[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{last}");
    assert!(
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "server_tool_use"),
        "{last}"
    );
}

/// What a fake Brave or Tavily service was sent: its key and query.
type Asked = Arc<Mutex<Vec<(String, String)>>>;

/// Brave's `GET /res/v1/web/search?q=` (key in `X-Subscription-Token`) and
/// Tavily's `POST /search` (key and query in the JSON body) on a free
/// loopback port; returns its port.
async fn brave_and_tavily(asked: Asked) -> u16 {
    use axum::http::HeaderMap;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = Router::new()
        .route(
            "/res/v1/web/search",
            get(
                |State(asked): State<Asked>,
                 headers: HeaderMap,
                 Query(q): Query<std::collections::HashMap<String, String>>| async move {
                    let key = headers
                        .get("x-subscription-token")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    asked
                        .lock()
                        .unwrap()
                        .push((key, q.get("q").cloned().unwrap_or_default()));
                    axum::Json(json!({"web": {"results": [
                        {"url": "https://brave.example/a", "title": "From Brave", "description": "brave snippet"}
                    ]}}))
                },
            ),
        )
        .route(
            "/search",
            axum::routing::post(
                |State(asked): State<Asked>, axum::Json(body): axum::Json<Value>| async move {
                    asked.lock().unwrap().push((
                        body["api_key"].as_str().unwrap_or("").to_string(),
                        body["query"].as_str().unwrap_or("").to_string(),
                    ));
                    axum::Json(json!({"results": [
                        {"url": "https://tavily.example/b", "title": "From Tavily", "content": "tavily snippet"}
                    ]}))
                },
            ),
        )
        .with_state(asked);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

#[tokio::test]
async fn brave_and_tavily_are_called_with_their_keys_which_never_reach_the_model() {
    let asked: Asked = Arc::default();
    let port = brave_and_tavily(asked.clone()).await;
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: WebSearch, input: { query: "rust search" } }
      - text: "done"
"#;
    for (provider, path, key, title) in [
        (
            "brave",
            "/res/v1/web/search",
            "brave-secret-key-123",
            "From Brave",
        ),
        ("tavily", "/search", "tavily-secret-key-456", "From Tavily"),
    ] {
        let h = Harness::new(script, Wire::OpenAi).await;
        user_config(
            &h,
            format!(
                "[web_search]\nprovider = \"{provider}\"\nurl = \"http://127.0.0.1:{port}{path}\"\nkey_env = \"TEST_SEARCH_KEY\"\n"
            ),
        );
        let out = h
            .cadre_env(&["exec", "--json", "go"], &[("TEST_SEARCH_KEY", key)])
            .await;
        assert!(out.status.success(), "{}", stderr(&out));
        let records = h.records();
        let (result, is_error) = tool_results(&records[1].body).remove(0);
        assert!(!is_error && result.contains(title), "{provider}: {result}");
        // The key went to the service, never to the model or the events.
        assert!(!records[1].body.to_string().contains(key));
        assert!(!common::stdout(&out).contains(key));
        assert!(
            asked
                .lock()
                .unwrap()
                .contains(&(key.to_string(), "rust search".to_string())),
            "{provider}: {:?}",
            asked.lock().unwrap()
        );
    }
}

#[tokio::test]
async fn a_search_services_key_is_not_inherited_by_commands() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo \"key=[${TEST_SEARCH_KEY:-unset}]\"" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::OpenAi).await;
    user_config(
        &h,
        "[web_search]\nprovider = \"brave\"\nkey_env = \"TEST_SEARCH_KEY\"\n",
    );
    let out = h
        .cadre_env(
            &["exec", "--allow", "Bash", "go"],
            &[("TEST_SEARCH_KEY", "search-secret-789")],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, _) = tool_results(&h.records()[1].body).remove(0);
    assert!(result.contains("key=[unset]"), "{result}");
}
