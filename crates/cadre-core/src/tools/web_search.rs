//! `WebSearch`: a web search for the model. With the Anthropic provider the
//! provider runs it (the request offers its server tool, and the model never
//! sees a client tool of this name); with an OpenAI-compatible provider cadre
//! calls the search service configured in `[web_search]` (SearXNG, Brave or
//! Tavily) and hands the model a numbered list of results.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::{ToolContext, ToolOutput, TypedTool};
use crate::model::ServerWebSearch;
use crate::permissions::ToolEffect;

/// Longest a search may take.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read from a search service.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Results listed when the configuration names no number.
pub const DEFAULT_MAX_RESULTS: usize = 10;
/// Brave's web search endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// Tavily's search endpoint.
pub const TAVILY_URL: &str = "https://api.tavily.com/search";

/// A search service cadre calls itself.
#[derive(Clone)]
pub enum SearchBackend {
    /// A SearXNG instance: `GET {url}/search?q=…&format=json`.
    Searxng {
        /// The instance's base address.
        url: Url,
    },
    /// Brave Search: `GET {url}?q=…` with `X-Subscription-Token`.
    Brave {
        /// The endpoint.
        url: Url,
        /// The subscription token.
        key: String,
    },
    /// Tavily: `POST {url}` with the key in the JSON body.
    Tavily {
        /// The endpoint.
        url: Url,
        /// The API key.
        key: String,
    },
}

impl SearchBackend {
    /// The service's name as the configuration writes it.
    pub fn name(&self) -> &'static str {
        match self {
            SearchBackend::Searxng { .. } => "searxng",
            SearchBackend::Brave { .. } => "brave",
            SearchBackend::Tavily { .. } => "tavily",
        }
    }
}

// By hand, so that no debug print shows a key.
impl std::fmt::Debug for SearchBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = match self {
            SearchBackend::Searxng { url }
            | SearchBackend::Brave { url, .. }
            | SearchBackend::Tavily { url, .. } => url,
        };
        write!(f, "{} at {url}", self.name())
    }
}

/// How cadre searches with a service of its own.
#[derive(Debug, Clone)]
pub struct BackendSearch {
    /// The service.
    pub backend: SearchBackend,
    /// Results listed per search.
    pub max_results: usize,
    /// Only results from these domains (empty: any).
    pub allowed_domains: Vec<String>,
    /// Never results from these domains.
    pub blocked_domains: Vec<String>,
}

/// Searches the web, on the provider's side or through a configured service.
#[derive(Debug, Clone)]
pub struct WebSearchTool {
    how: How,
}

#[derive(Debug, Clone)]
enum How {
    Server(ServerWebSearch),
    Backend(Arc<BackendSearch>),
}

impl WebSearchTool {
    /// The provider's own search (Anthropic), offered on the request.
    pub fn server(search: ServerWebSearch) -> Self {
        WebSearchTool {
            how: How::Server(search),
        }
    }

    /// A search cadre runs through `search`'s service.
    pub fn backend(search: BackendSearch) -> Self {
        WebSearchTool {
            how: How::Backend(Arc::new(search)),
        }
    }
}

/// The arguments of a `WebSearch` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to search for
    query: String,
    /// Only include results from these domains
    allowed_domains: Option<Vec<String>>,
    /// Never include results from these domains
    blocked_domains: Option<Vec<String>>,
}

impl TypedTool for WebSearchTool {
    type Input = Args;
    const NAME: &'static str = "WebSearch";
    const DESCRIPTION: &'static str = "Search the web for current information. Returns a numbered list of results (title, \
         URL, snippet). Use `allowed_domains` or `blocked_domains` to keep to or away from \
         sites. Read a result in full with WebFetch. Cite the URLs you rely on.";
    // It changes nothing and reads nothing local: like a search of the
    // project, it runs unasked in every mode (plan mode included); a deny
    // rule `WebSearch` takes it away.
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn server_web_search(&self) -> Option<ServerWebSearch> {
        match &self.how {
            How::Server(s) => Some(s.clone()),
            How::Backend(_) => None,
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let How::Backend(search) = &self.how else {
                // Not offered as a client tool then; a model that calls it anyway learns why.
                return ToolOutput::error(
                    "WebSearch runs on the provider's side in this session; use its web_search tool",
                );
            };
            let query = args.query.trim();
            if query.chars().count() < 2 {
                return ToolOutput::invalid_arguments("`query` needs at least 2 characters");
            }
            let filter = DomainFilter {
                allowed: [
                    search.allowed_domains.as_slice(),
                    args.allowed_domains.as_deref().unwrap_or_default(),
                ],
                blocked: [
                    search.blocked_domains.as_slice(),
                    args.blocked_domains.as_deref().unwrap_or_default(),
                ],
            };
            let found = tokio::select! {
                r = tokio::time::timeout(SEARCH_TIMEOUT, run_search(search, query, &filter)) => r,
                () = ctx.cancel.cancelled() => return ToolOutput::error("interrupted"),
            };
            match found {
                Err(_) => ToolOutput::error(format!(
                    "the search service did not answer within {} s",
                    SEARCH_TIMEOUT.as_secs()
                )),
                Ok(Err(why)) => ToolOutput::error(why),
                Ok(Ok(hits)) => {
                    let kept: Vec<Hit> = hits
                        .into_iter()
                        .filter(|h| filter.keeps(&h.url))
                        .take(search.max_results)
                        .collect();
                    ToolOutput::ok(render(query, &kept))
                }
            }
        })
    }
}

/// One result as a service gave it.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

/// The configuration's and the call's domain lists: a result must pass both.
struct DomainFilter<'a> {
    allowed: [&'a [String]; 2],
    blocked: [&'a [String]; 2],
}

impl DomainFilter<'_> {
    fn keeps(&self, url: &str) -> bool {
        let Some(host) = Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        else {
            return false;
        };
        self.allowed
            .iter()
            .all(|list| list.is_empty() || list.iter().any(|d| on_domain(&host, d)))
            && !self
                .blocked
                .iter()
                .any(|list| list.iter().any(|d| on_domain(&host, d)))
    }
}

/// Whether `host` is `domain` or lies under it (`docs.rs` under `rs` does
/// not count as `s`); a domain may be written as a URL or with `*.`.
fn on_domain(host: &str, domain: &str) -> bool {
    let domain = domain.trim().to_ascii_lowercase();
    let domain = Url::parse(&domain)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or(domain);
    let domain = domain.trim_start_matches("*.").trim_matches('.');
    !domain.is_empty()
        && (host == domain
            || host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.')))
}

async fn run_search(
    search: &BackendSearch,
    query: &str,
    filter: &DomainFilter<'_>,
) -> Result<Vec<Hit>, String> {
    let client = reqwest::Client::builder()
        .user_agent(concat!("cadre/", env!("CARGO_PKG_VERSION"), " (WebSearch)"))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    // Ask for more than are shown: the domain filters may drop some.
    let count = (search.max_results * 2).clamp(1, 20).to_string();
    let request = match &search.backend {
        SearchBackend::Searxng { url } => {
            let mut url = url.clone();
            url.path_segments_mut()
                .map_err(|()| "the searxng url cannot have a path".to_string())?
                .pop_if_empty()
                .push("search");
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            client.get(url)
        }
        SearchBackend::Brave { url, key } => {
            let mut url = url.clone();
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &count);
            client
                .get(url)
                .header("X-Subscription-Token", key)
                .header(reqwest::header::ACCEPT, "application/json")
        }
        SearchBackend::Tavily { url, key } => {
            let mut body = json!({
                "api_key": key,
                "query": query,
                "max_results": search.max_results.min(20),
            });
            // The service filters too, which keeps more results to list.
            let [a, b] = filter.allowed;
            if !a.is_empty() || !b.is_empty() {
                body["include_domains"] = json!([a, b].concat());
            }
            let [a, b] = filter.blocked;
            if !a.is_empty() || !b.is_empty() {
                body["exclude_domains"] = json!([a, b].concat());
            }
            client.post(url.clone()).json(&body)
        }
    };
    let name = search.backend.name();
    let response = request
        .send()
        .await
        // Without the URL: reqwest's text would name it, and Brave's has the query only,
        // but a configured URL could carry a token.
        .map_err(|e| format!("the {name} search failed: {}", e.without_url()))?;
    let status = response.status();
    let body = read_capped(response).await?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let text: String = text.chars().take(300).collect();
        return Err(format!(
            "the {name} search answered {status}: {}",
            text.trim()
        ));
    }
    let answer: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("the {name} search did not answer JSON: {e}"))?;
    let results = match &search.backend {
        SearchBackend::Brave { .. } => answer.pointer("/web/results"),
        SearchBackend::Searxng { .. } | SearchBackend::Tavily { .. } => answer.get("results"),
    };
    let snippet_key = match &search.backend {
        SearchBackend::Brave { .. } => "description",
        SearchBackend::Searxng { .. } | SearchBackend::Tavily { .. } => "content",
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    Ok(results
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(Hit {
                        url: text(item, "url")?,
                        title: text(item, "title").unwrap_or_default(),
                        snippet: text(item, snippet_key).unwrap_or_default(),
                    })
                })
                .collect()
        })
        .unwrap_or_default())
}

async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("the search answer was cut off: {e}"))?;
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err("the search answer is larger than 4 MiB; not read".into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The model's view: a numbered list, each result's title, URL and snippet
/// on lines of their own (tags stripped from snippets, which some services mark up).
fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for {query:?}.");
    }
    let mut out = format!("Web search results for {query:?}:\n");
    for (i, hit) in hits.iter().enumerate() {
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "\n{}. {}\n   {}\n",
            i + 1,
            one_line(&hit.title),
            hit.url
        ));
        let snippet = one_line(&strip_tags(&hit.snippet));
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    out.push_str("\nCite the URLs you rely on; read a page in full with WebFetch.");
    out
}

fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn domains_match_whole_labels_and_both_lists_apply() {
        assert!(on_domain("docs.rs", "docs.rs"));
        assert!(on_domain("www.docs.rs", "docs.rs"));
        assert!(on_domain("www.docs.rs", "*.docs.rs"));
        assert!(on_domain("docs.rs", "https://docs.rs/x"));
        assert!(!on_domain("notdocs.rs", "docs.rs"));
        assert!(!on_domain("docs.rs", ""));
        let config = strings(&["rust-lang.org", "docs.rs"]);
        let call = strings(&["docs.rs"]);
        let blocked = strings(&["bad.docs.rs"]);
        let filter = DomainFilter {
            allowed: [&config, &call],
            blocked: [&blocked, &[]],
        };
        assert!(filter.keeps("https://docs.rs/serde"));
        assert!(
            !filter.keeps("https://www.rust-lang.org/"),
            "not in the call's list"
        );
        assert!(!filter.keeps("https://bad.docs.rs/"));
        assert!(!filter.keeps("not a url"));
    }

    #[test]
    fn results_are_numbered_with_title_url_and_snippet() {
        let hits = vec![
            Hit {
                title: "One\ntitle".into(),
                url: "https://a.example/".into(),
                snippet: "<b>bold</b>   text".into(),
            },
            Hit {
                title: "Two".into(),
                url: "https://b.example/".into(),
                snippet: String::new(),
            },
        ];
        let text = render("q", &hits);
        assert!(
            text.contains("1. One title\n   https://a.example/\n   bold text\n"),
            "{text}"
        );
        assert!(text.contains("2. Two\n   https://b.example/\n\n"), "{text}");
        assert_eq!(render("q", &[]), "No results for \"q\".");
    }
}
