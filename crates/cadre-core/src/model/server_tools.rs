//! Tools the provider runs on its own side (Anthropic's web search): how one
//! is asked for on a request, and what its blocks in a reply say, read back
//! for display. The blocks themselves stay in the conversation verbatim.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, Message};

/// Anthropic's server-side web search, offered beside the client tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerWebSearch {
    /// Searches allowed per request (`None`: the provider's default).
    pub max_uses: Option<u32>,
    /// Only results from these domains (empty: any).
    pub allowed_domains: Vec<String>,
    /// Never results from these domains.
    pub blocked_domains: Vec<String>,
}

/// One result of a search, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchHit {
    /// The page title.
    pub title: String,
    /// The page address.
    pub url: String,
}

/// One call of a server tool in a reply: what was asked and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerToolRun {
    /// The server's call id (`srvtoolu_…`).
    pub id: String,
    /// The server tool's name (`web_search`).
    pub name: String,
    /// The search query, when the call has one.
    pub query: Option<String>,
    /// The results, in the server's order.
    pub results: Vec<SearchHit>,
    /// The server's error code, when the call failed.
    pub error: Option<String>,
}

/// The server-tool calls in `message`, each with its result (matched by id).
pub fn server_tool_runs(message: &Message) -> Vec<ServerToolRun> {
    let mut runs: Vec<ServerToolRun> = Vec::new();
    for block in &message.content {
        let ContentBlock::ServerBlock { block } = block else {
            continue;
        };
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        match text("type") {
            "server_tool_use" => runs.push(ServerToolRun {
                id: text("id").to_string(),
                name: text("name").to_string(),
                query: block
                    .pointer("/input/query")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ..ServerToolRun::default()
            }),
            kind if kind.ends_with("_tool_result") => {
                let id = text("tool_use_id");
                let Some(run) = runs.iter_mut().rev().find(|r| r.id == id) else {
                    continue;
                };
                match block.get("content") {
                    Some(Value::Array(items)) => {
                        run.results.extend(items.iter().filter_map(|item| {
                            Some(SearchHit {
                                title: item.get("title")?.as_str()?.to_string(),
                                url: item.get("url")?.as_str()?.to_string(),
                            })
                        }));
                    }
                    Some(error) => {
                        run.error = Some(
                            error
                                .get("error_code")
                                .and_then(Value::as_str)
                                .unwrap_or("unknown_error")
                                .to_string(),
                        );
                    }
                    None => {}
                }
            }
            _ => {}
        }
    }
    runs
}

/// Whether a content block of this type is one the provider's server made
/// for a tool it runs itself (kept verbatim, never run by cadre).
pub(crate) fn is_server_block(kind: &str) -> bool {
    kind == "server_tool_use" || kind.ends_with("_tool_result") && kind != "tool_result"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use serde_json::json;

    #[test]
    fn runs_pair_calls_with_results_and_errors() {
        let message = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::ServerBlock {
                    block: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust 2024"}}),
                },
                ContentBlock::ServerBlock {
                    block: json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                        {"type": "web_search_result", "url": "https://a.example/", "title": "A", "encrypted_content": "x"}
                    ]}),
                },
                ContentBlock::ServerBlock {
                    block: json!({"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "more"}}),
                },
                ContentBlock::ServerBlock {
                    block: json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2", "content":
                        {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}),
                },
                ContentBlock::Text { text: "done".into() },
            ]
            .into(),
        };
        let runs = server_tool_runs(&message);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].query.as_deref(), Some("rust 2024"));
        assert_eq!(
            runs[0].results,
            vec![SearchHit {
                title: "A".into(),
                url: "https://a.example/".into()
            }]
        );
        assert_eq!(runs[1].error.as_deref(), Some("max_uses_exceeded"));
        assert!(is_server_block("web_search_tool_result"));
        assert!(is_server_block("server_tool_use"));
        assert!(!is_server_block("tool_result"));
        assert!(!is_server_block("tool_use"));
    }
}
