//! `WebSearch` and `WebFetch` as the configuration sets them up: which search
//! the session has (the provider's own, a service of `[web_search]`, or none)
//! and which model, if any, summarises fetched pages.

use std::sync::Arc;

use super::overrides::ApiKeys;
use crate::config::{Settings, WebSearchFile};
use crate::model::{ClientConfig, Provider, ServerWebSearch, parse_base_url};
use crate::permissions::{Decision, PermissionPolicy, PermissionTracker, ToolEffect};
use crate::subagents::catalog::DefinitionCatalog;
use crate::subagents::session_tools;
use crate::tools::{
    BRAVE_URL, BackendSearch, DEFAULT_MAX_RESULTS, SearchBackend, TAVILY_URL, Tool, ToolInput,
    ToolRegistry, WebFetchTool, WebSearchTool,
};

/// The tool name.
const WEB_SEARCH: &str = "WebSearch";

/// What a warning about a missing `WebSearch` tells the user to set.
const SETTING_HINT: &str = "set [web_search] provider = \"searxng\" (with url), \"brave\" or \"tavily\" (with key_env) in your config.toml";

/// The session's web tools.
#[derive(Clone)]
pub struct WebTools {
    /// `WebSearch`, when the session can search.
    pub search: Option<Arc<dyn Tool>>,
    /// `WebFetch`, with its summary model.
    pub fetch: Arc<dyn Tool>,
}

impl WebTools {
    /// The tools `settings` give a session on `client`, with a warning for
    /// each setting that cannot be used; a search service's key named by a
    /// model key's variable comes from `keys`.
    pub fn from_settings(
        settings: &Settings,
        client: &ClientConfig,
        keys: &ApiKeys,
        warnings: &mut Vec<String>,
    ) -> WebTools {
        let fetch: Arc<dyn Tool> = match &settings.file.small_model {
            Some(name) if !name.trim().is_empty() => Arc::new(WebFetchTool::summarised_by(
                settings.resolve_model(client.provider, name.trim()),
            )),
            _ => Arc::new(WebFetchTool::default()),
        };
        let search = search_tool(&settings.file.web_search, client, keys, warnings);
        WebTools { search, fetch }
    }

    /// The session's tools (see [`session_tools`]) with these web tools.
    pub fn session_tools(&self) -> ToolRegistry {
        let mut tools = session_tools();
        tools.replace(self.fetch.clone());
        if let Some(search) = &self.search {
            tools.replace(search.clone());
        }
        tools
    }

    /// Takes `WebSearch` away when `policy` denies it outright, or (for the
    /// provider's own search, whose calls cadre never sees) when it would ask.
    pub fn apply_policy(
        &mut self,
        policy: &PermissionPolicy,
        cwd: &std::path::Path,
        warnings: &mut Vec<String>,
    ) {
        let Some(search) = &self.search else { return };
        let on_server = search.server_web_search().is_some();
        let decision = policy.decide(
            &PermissionTracker::default(),
            WEB_SEARCH,
            ToolEffect::ReadOnly,
            &ToolInput::new(),
            cwd,
        );
        match decision {
            Decision::Deny(_) => self.search = None,
            Decision::Ask { .. } if on_server => {
                warnings.push(
                    "WebSearch removed: a rule asks about it, and the provider runs its searches without cadre seeing each one".into(),
                );
                self.search = None;
            }
            _ => {}
        }
    }

    /// A warning for each definition whose `tools` lists `WebSearch` when the
    /// session has none, naming the setting that provides it.
    pub fn missing_search_warnings(
        &self,
        catalog: &DefinitionCatalog,
        provider: Provider,
    ) -> Vec<String> {
        if self.search.is_some() {
            return Vec::new();
        }
        catalog
            .entries()
            .iter()
            .map(|e| &e.definition)
            .filter(|d| {
                d.tools.as_ref().is_some_and(|t| {
                    t.iter()
                        .any(|n| n.split('(').next().map(str::trim) == Some(WEB_SEARCH))
                })
            })
            .map(|d| {
                format!(
                    "agent {}: `tools` lists WebSearch, which this session does not have with the {provider} provider and no search service: {SETTING_HINT}",
                    d.name
                )
            })
            .collect()
    }
}

/// `WebSearch` as `[web_search]` sets it up, if the session has one.
fn search_tool(
    file: &WebSearchFile,
    client: &ClientConfig,
    keys: &ApiKeys,
    warnings: &mut Vec<String>,
) -> Option<Arc<dyn Tool>> {
    let anthropic = client.provider == Provider::Anthropic;
    let chosen = file.provider.as_deref().map(str::trim);
    let server = || -> Option<Arc<dyn Tool>> {
        Some(Arc::new(WebSearchTool::server(ServerWebSearch {
            max_uses: file.max_uses,
            allowed_domains: file.allowed_domains.clone(),
            blocked_domains: file.blocked_domains.clone(),
        })))
    };
    let backend = |backend: SearchBackend| -> Option<Arc<dyn Tool>> {
        Some(Arc::new(WebSearchTool::backend(BackendSearch {
            backend,
            max_results: file.max_results.map_or(DEFAULT_MAX_RESULTS, |n| n as usize),
            allowed_domains: file.allowed_domains.clone(),
            blocked_domains: file.blocked_domains.clone(),
        })))
    };
    match chosen {
        // The provider's own search, by default only at its own API: another
        // server speaking the Anthropic wire may refuse a server tool.
        None => (anthropic && on_anthropic_api(client))
            .then(server)
            .flatten(),
        Some("off") => None,
        Some("anthropic") if anthropic => server(),
        Some("anthropic") => {
            warnings.push(format!(
                "web_search.provider = \"anthropic\" needs the Anthropic provider; this session has no WebSearch ({SETTING_HINT})"
            ));
            None
        }
        Some("searxng") => match file.url.as_deref().map(parse_base_url) {
            Some(Ok(url)) => backend(SearchBackend::Searxng { url }),
            Some(Err(why)) => {
                warnings.push(format!("web_search.url ignored: {why}; no WebSearch"));
                None
            }
            None => {
                warnings.push(
                    "web_search.provider = \"searxng\" needs web_search.url (the instance's address); no WebSearch".into(),
                );
                None
            }
        },
        Some(name @ ("brave" | "tavily")) => {
            let default_url = if name == "brave" {
                BRAVE_URL
            } else {
                TAVILY_URL
            };
            let url = match parse_base_url(file.url.as_deref().unwrap_or(default_url)) {
                Ok(u) => u,
                Err(why) => {
                    warnings.push(format!("web_search.url ignored: {why}; no WebSearch"));
                    return None;
                }
            };
            let env = file.key_env.clone().unwrap_or_else(|| {
                if name == "brave" {
                    "BRAVE_API_KEY".into()
                } else {
                    "TAVILY_API_KEY".into()
                }
            });
            // Whether or not it is set here, nothing cadre starts inherits it.
            crate::secrets::register_var(&env);
            let key = file
                .key
                .clone()
                .or_else(|| keys.var(&env))
                .filter(|k| !k.trim().is_empty());
            let Some(key) = key else {
                warnings.push(format!(
                    "web_search.provider = \"{name}\" needs a key: set {env} or web_search.key_env; no WebSearch"
                ));
                return None;
            };
            // Out of every tool result, log and error from now on.
            crate::secrets::register(&key);
            if name == "brave" {
                backend(SearchBackend::Brave { url, key })
            } else {
                backend(SearchBackend::Tavily { url, key })
            }
        }
        Some(other) => {
            warnings.push(format!(
                "web_search.provider = {other:?} is not known (anthropic, searxng, brave, tavily or off); no WebSearch"
            ));
            None
        }
    }
}

/// Whether `client` talks to Anthropic's own API.
fn on_anthropic_api(client: &ClientConfig) -> bool {
    parse_base_url(&client.base_url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.eq_ignore_ascii_case("api.anthropic.com"))
        })
        .unwrap_or(false)
}
