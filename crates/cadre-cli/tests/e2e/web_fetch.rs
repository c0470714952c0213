//! `WebFetch` through the binary against a local axum server: HTML read as
//! Markdown, a same-host redirect followed and a cross-host one reported, the
//! size cap, and the per-domain permission rule.

use crate::common;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use common::{Harness, Wire, stderr, tool_results};

/// Serves the test pages on a free loopback port; returns its port.
async fn site() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<!doctype html><html><head><title>T</title><script>var x = 1;</script></head>\
                     <body><h1>Release notes</h1><p>Version <strong>2.4</strong> fixes the \
                     <a href=\"/bug\">parser bug</a>.</p><ul><li>one</li><li>two</li></ul></body></html>",
                )
            }),
        )
        .route(
            "/old",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/page")]).into_response() }),
        )
        .route(
            "/away",
            get(move || async move {
                // Another host name for the same machine: another host all the same.
                let to = format!("http://localhost:{port}/page");
                (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, to)]).into_response()
            }),
        )
        .route(
            "/huge",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "x".repeat(200_000)) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

fn fetch_calls(port: u16, paths: &[&str]) -> String {
    let calls: Vec<String> = paths
        .iter()
        .map(|p| {
            format!(
                "          - {{ name: WebFetch, input: {{ url: \"http://127.0.0.1:{port}{p}\", prompt: \"what changed?\" }} }}"
            )
        })
        .collect();
    format!(
        "rules:\n  - name: main\n    replies:\n      - tool_calls:\n{}\n      - text: \"done\"\n",
        calls.join("\n")
    )
}

#[tokio::test]
async fn pages_arrive_as_markdown_redirects_to_other_hosts_are_reported_and_the_cap_holds() {
    let port = site().await;
    let h = Harness::new(
        &fetch_calls(port, &["/page", "/old", "/away", "/huge"]),
        Wire::Anthropic,
    )
    .await;
    let out = h
        .cadre(&["exec", "--allow", "WebFetch(domain:127.0.0.1)", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[1].body);
    let (page, err) = &results[0];
    assert!(!err, "{page}");
    assert!(page.contains("# Release notes"), "{page}");
    assert!(page.contains("**2.4**"), "{page}");
    assert!(page.contains("[parser bug](/bug)"), "{page}");
    assert!(page.contains("what changed?"), "{page}");
    assert!(!page.contains("var x"), "scripts are not text: {page}");
    // A redirect on the same host is followed.
    assert!(results[1].0.contains("# Release notes"), "{:?}", results[1]);
    assert!(
        results[1]
            .0
            .contains(&format!("Fetched http://127.0.0.1:{port}/page"))
    );
    // One to another host is reported, not followed.
    assert!(
        results[2].0.contains(&format!(
            "redirects to another host: http://localhost:{port}/page"
        )),
        "{:?}",
        results[2]
    );
    assert!(!results[2].0.contains("Release notes"));
    // The tool output cap (64 KiB) holds.
    assert!(results[3].0.len() < 70 * 1024, "{}", results[3].0.len());
    assert!(results[3].0.contains("[truncated"), "marked as cut");
}

#[tokio::test]
async fn a_fetch_needs_its_domain_allowed() {
    let port = site().await;
    let h = Harness::new(&fetch_calls(port, &["/page"]), Wire::Anthropic).await;
    // Another domain's rule does not cover it; nobody can be asked in exec.
    let out = h
        .cadre(&["exec", "--allow", "WebFetch(domain:example.com)", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, err) = tool_results(&h.records()[1].body).remove(0);
    assert!(err, "{text}");
    assert!(!text.contains("Release notes"), "{text}");

    let h = Harness::new(&fetch_calls(port, &["/page"]), Wire::Anthropic).await;
    let out = h
        .cadre(&[
            "exec",
            "--allow",
            "WebFetch",
            "--deny",
            "WebFetch(domain:127.0.0.1)",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, err) = tool_results(&h.records()[1].body).remove(0);
    assert!(err && text.contains("WebFetch(domain:127.0.0.1)"), "{text}");
}

/// A fetch of /page, with a rule that answers the summary request.
fn summary_script(port: u16, summary_reply: &str) -> String {
    format!(
        "rules:\n  - name: summary\n    when: {{ system: \"answer a question about one web page\" }}\n    replies:\n{summary_reply}\n{}",
        fetch_calls(port, &["/page"]).trim_start_matches("rules:\n")
    )
}

#[tokio::test]
async fn with_a_small_model_the_page_is_summarised_against_the_prompt() {
    let port = site().await;
    let h = Harness::new(
        &summary_script(port, "      - text: \"Version 2.4 fixes the parser bug.\""),
        Wire::Anthropic,
    )
    .await;
    user_config(&h, "small_model = \"tiny-model\"\n");
    let out = h
        .cadre(&["exec", "--allow", "WebFetch(domain:127.0.0.1)", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let summary: Vec<_> = records
        .iter()
        .filter(|r| r.rule.as_deref() == Some("summary"))
        .collect();
    assert_eq!(summary.len(), 1, "{records:?}");
    let body = &summary[0].body;
    assert_eq!(body["model"], "tiny-model");
    assert!(body.get("tools").is_none(), "no tools: {body}");
    let asked = common::user_texts(body);
    assert!(
        asked.contains("# Release notes") && asked.contains("what changed?"),
        "{asked}"
    );
    let main: Vec<_> = records
        .iter()
        .filter(|r| r.rule.as_deref() == Some("main"))
        .collect();
    assert_eq!(main[0].body["model"], "mock-model");
    let (text, err) = tool_results(&main[1].body).remove(0);
    assert!(!err, "{text}");
    assert!(
        text.contains(&format!("Fetched http://127.0.0.1:{port}/page"))
            && text.contains("Version 2.4 fixes the parser bug."),
        "{text}"
    );
    assert!(
        !text.contains("# Release notes"),
        "the summary, not the page: {text}"
    );
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_the_page() {
    let port = site().await;
    let h = Harness::new(
        &summary_script(
            port,
            "      - fail: { status: 400, message: \"no such model\" }",
        ),
        Wire::Anthropic,
    )
    .await;
    user_config(&h, "small_model = \"tiny-model\"\n");
    let out = h
        .cadre(&["exec", "--allow", "WebFetch(domain:127.0.0.1)", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let main: Vec<_> = h
        .records()
        .into_iter()
        .filter(|r| r.rule.as_deref() == Some("main"))
        .collect();
    let (text, err) = tool_results(&main[1].body).remove(0);
    assert!(!err, "{text}");
    assert!(
        text.contains("the summary by tiny-model failed") && text.contains("# Release notes"),
        "{text}"
    );
}

/// Writes the user config file (`$CADRE_HOME/config.toml`).
fn user_config(h: &Harness, text: impl AsRef<str>) {
    std::fs::create_dir_all(h.data_dir()).unwrap();
    std::fs::write(h.data_dir().join("config.toml"), text.as_ref()).unwrap();
}
