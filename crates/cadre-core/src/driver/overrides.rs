//! What a front end decides about a session before it is built: its
//! flags as [`SessionOverrides`] (with the model keys in [`ApiKeys`] and
//! the run flags' [`MainShape`]), and why building can fail ([`BuildError`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::ConfigError;
use crate::model::{ModelError, Provider};
use crate::permissions::PermissionMode;
use crate::secrets::KEY_VARS;
use crate::structured::AnswerSchema;
use crate::tasks::TaskError;

/// Why a session could not be built or opened.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A mistake in what the caller asked for or in the configuration (the
    /// CLI's bad usage, exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The data directory or a configuration file could not be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The model client could not be built.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The task table could not be opened.
    #[error(transparent)]
    Task(#[from] TaskError),
}

/// Model keys by the variable they were read from (`ANTHROPIC_API_KEY`,
/// `OPENAI_API_KEY`). Its `Debug` shows the names only, never a key.
#[derive(Clone, Default)]
pub struct ApiKeys(Vec<(String, String)>);

impl ApiKeys {
    /// No keys.
    pub fn new() -> ApiKeys {
        ApiKeys::default()
    }

    /// These keys and `key` for the variable `name` (a blank key is no key);
    /// the key is redacted from every tool result, log and error from now on.
    pub fn with(mut self, name: impl Into<String>, key: impl Into<String>) -> ApiKeys {
        let (name, key) = (name.into(), key.into());
        if key.trim().is_empty() {
            return self;
        }
        crate::secrets::register(&key);
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, key));
        self
    }

    /// The key given for `name`.
    pub fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// `name`'s value: a model key's from these keys (the process
    /// environment no longer holds them), any other from the environment.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        if KEY_VARS.contains(&name) {
            return self.get(name);
        }
        std::env::var(name).ok()
    }

    /// The model keys, by variable, for an MCP server's configuration to refer to.
    pub(super) fn taken_vars(&self) -> std::collections::BTreeMap<String, String> {
        KEY_VARS
            .iter()
            .filter_map(|name| self.get(name).map(|v| (name.to_string(), v)))
            .collect()
    }
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| n))
            .finish()
    }
}

/// What a front end decides about its sessions (the `cadre` binary: its
/// flags and environment); whatever is left unset the settings decide.
#[derive(Debug, Default)]
pub struct SessionOverrides {
    /// The project folder.
    pub cwd: PathBuf,
    /// cadre's data directory (`$CADRE_HOME`).
    pub home: PathBuf,
    /// Whether the folder's project settings are trusted (the settings
    /// passed along must have been loaded the same way).
    pub trusted: bool,
    /// Warnings the front end gathered on the way, reported first.
    pub warnings: Vec<String>,
    /// The provider (`--provider`, `CADRE_PROVIDER`).
    pub provider: Option<Provider>,
    /// The endpoint (`--base-url`, `CADRE_BASE_URL`).
    pub base_url: Option<String>,
    /// The model id or alias (`--model`, `CADRE_MODEL`); managed settings still win.
    pub model: Option<String>,
    /// The model keys the front end read.
    pub keys: ApiKeys,
    /// The permission mode (`--permission-mode`, `--dangerously-skip-permissions`).
    pub permission_mode: Option<PermissionMode>,
    /// Rules whose calls run without asking.
    pub allow: Vec<String>,
    /// Rules whose calls always ask.
    pub ask: Vec<String>,
    /// Rules whose calls never run.
    pub deny: Vec<String>,
    /// Folders that count as part of the project (`--add-dir`, relative to `cwd`).
    pub add_dirs: Vec<PathBuf>,
    /// The agent definition the main session runs as (`--agent`).
    pub agent: Option<String>,
    /// Agent definitions as JSON (`--agents`).
    pub agents_json: Option<String>,
    /// Plugin folders loaded for this run only (`--plugin-dir`).
    pub plugin_dirs: Vec<PathBuf>,
    /// MCP configuration files (`--mcp-config`, relative to `cwd`).
    pub mcp_config: Vec<PathBuf>,
    /// Only the servers of `mcp_config`, none of the configured ones.
    pub strict_mcp_config: bool,
    /// What the run changes about the main agent's prompt, tools and answer.
    pub shape: MainShape,
    /// Most model requests of the main agent in a turn (`--max-turns`).
    pub max_turns: Option<u32>,
    /// The run's spend cap in US dollars, children included.
    pub max_budget_usd: Option<f64>,
    /// Models to fall back to, in order, when the main one is overloaded.
    pub fallback_models: Vec<String>,
    /// `--teams`: the session has a team whatever the settings say.
    pub teams: bool,
}

impl SessionOverrides {
    /// No overrides, for the project folder `cwd` with data in `home`.
    pub fn new(cwd: PathBuf, home: PathBuf) -> SessionOverrides {
        SessionOverrides {
            cwd,
            home,
            ..SessionOverrides::default()
        }
    }
}

/// What Claude Code's run flags change about the main agent.
#[derive(Debug, Default)]
pub struct MainShape {
    /// `--system-prompt[-file]`: replaces the default system prompt.
    pub system: Option<String>,
    /// `--append-system-prompt[-file]`: added after it.
    pub append: Option<String>,
    /// `--json-schema`: the form of the final answer.
    pub answer_schema: Option<Arc<AnswerSchema>>,
    /// `--disallowedTools` bare names: tools taken away.
    pub removed_tools: Vec<String>,
    /// `--tools`: the only built-in tools kept (none when empty).
    pub only_tools: Option<Vec<String>>,
}

impl MainShape {
    /// Whether the main agent keeps the built-in tool `name`.
    pub(super) fn keeps(&self, name: &str) -> bool {
        let removed = self
            .removed_tools
            .iter()
            .any(|r| r == name || r == "*" || crate::tool_names::canonical_tool_name(r) == name);
        let listed = self.only_tools.as_ref().is_none_or(|only| {
            only.iter()
                .any(|t| t == name || crate::tool_names::canonical_tool_name(t) == name)
        });
        !removed && listed
    }
}
