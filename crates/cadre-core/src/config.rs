//! Settings from `$CADRE_HOME/config.toml` (user) and `.cadre/config.toml`
//! (project), merged; the binary layers environment and flags on top. A
//! project file is untrusted: it may not redirect requests (and so the API key)
//! to a non-loopback server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::context::{
    DEFAULT_AUTO_COMPACT_PERCENT, ModelOverride, ModelTable, Prices, builtin_prices,
};
use crate::model::{Provider, parse_base_url, url_is_loopback};
use crate::protocol::{PermissionMode, RuleKind};
use crate::small_file::{SmallFileError, read_small_text};

pub mod json;
pub mod trust;

pub use json::{
    DEFAULT_MANAGED_SETTINGS_DIR, ExtraSettings, JsonSettings, SettingsPaths, SettingsScope,
};
pub use trust::{TrustState, TrustStore};

/// Largest config file read: a hand-written config is a few KB; anything near
/// a megabyte is a mistake or an attack (a symlink to a device, a huge file).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A problem with configuration files or the data directory.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A config file is not a regular file, too large, or not text.
    #[error(transparent)]
    File(#[from] SmallFileError),
    /// A number in a config file is out of range.
    #[error("{path}: {key} = {value} is out of range: {expected}")]
    Range {
        /// File path.
        path: PathBuf,
        /// Dotted key (`subagents.max_depth`).
        key: String,
        /// The value as written.
        value: String,
        /// What is allowed.
        expected: String,
    },
    /// A config file is not valid TOML for cadre.
    #[error("{path}: {message}")]
    Parse {
        /// File path.
        path: PathBuf,
        /// Parser message (with line and column).
        message: String,
    },
    /// The data directory could not be created or secured.
    #[error("cannot prepare the data directory {path}: {source}")]
    DataDir {
        /// Directory path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// No home directory to put `~/.cadre` in.
    #[error("no home directory found; set CADRE_HOME")]
    NoHome,
}

/// Per-turn ceilings in config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    /// Model requests per turn.
    pub max_requests_per_turn: Option<u32>,
    /// Tool calls per turn.
    pub max_tool_calls_per_turn: Option<u32>,
    /// Seconds a model stream may stay silent before the try is abandoned and retried.
    pub stream_idle_timeout_s: Option<u64>,
    /// Most bytes a background task's output file keeps (64 MiB by default).
    pub task_output_max_bytes: Option<u64>,
    /// Most bytes an MCP server's stderr log keeps (8 MiB by default).
    pub mcp_log_max_bytes: Option<u64>,
    /// Seconds one model request may take, every try and wait included.
    pub request_deadline_s: Option<u64>,
}

/// Accepted range of `[limits] stream_idle_timeout_s` (a day at most).
pub const STREAM_IDLE_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=86_400;

/// Accepted range of `[limits] request_deadline_s` (a day at most).
pub const REQUEST_DEADLINE_RANGE: std::ops::RangeInclusive<u64> = 1..=86_400;

/// Tool settings in config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    /// Cap on a tool result's size in bytes.
    pub output_cap_bytes: Option<usize>,
}

/// `[permissions]`: Claude Code's names, plus snake_case for the mode.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsFile {
    /// Mode used when no flag picks one.
    #[serde(alias = "defaultMode")]
    pub default_mode: Option<String>,
    /// Rules that let calls run without a question.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that always ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that never run.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    /// Let sandboxed commands open TCP connections.
    pub network: Option<bool>,
}

/// `[web_search]`: where `WebSearch` searches. A project file may not set
/// `key` or `key_env`, and its `url` only on loopback: it cannot send the
/// user's key (or their queries) to a server of its choosing.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchFile {
    /// `anthropic` (the provider's own search), `searxng`, `brave`, `tavily` or `off`.
    pub provider: Option<String>,
    /// The service's address (needed for searxng; brave and tavily have their own).
    pub url: Option<String>,
    /// The service's API key (better: `key_env`).
    pub key: Option<String>,
    /// The environment variable holding the service's API key.
    pub key_env: Option<String>,
    /// Searches per model request with the provider's own search.
    pub max_uses: Option<u32>,
    /// Results listed per search with a service cadre calls.
    pub max_results: Option<u32>,
    /// Only results from these domains.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Never results from these domains.
    #[serde(default)]
    pub blocked_domains: Vec<String>,
}

// By hand, so that no debug print shows the key.
impl std::fmt::Debug for WebSearchFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearchFile")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| crate::secrets::REDACTED))
            .field("key_env", &self.key_env)
            .field("max_uses", &self.max_uses)
            .field("max_results", &self.max_results)
            .field("allowed_domains", &self.allowed_domains)
            .field("blocked_domains", &self.blocked_domains)
            .finish()
    }
}

/// `[subagents]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentsFile {
    /// Nesting levels (1 = children cannot spawn; at most 3).
    pub max_depth: Option<u32>,
    /// Children of one batch running at once (1–32).
    pub max_concurrent_subagents: Option<usize>,
    /// Children per parent turn.
    pub max_subagents_per_turn: Option<usize>,
    /// Children running at once in a session.
    pub max_running_subagents: Option<usize>,
    /// Type used when an `Agent` call names none.
    pub default_type: Option<String>,
    /// Model requests per child without a `maxTurns`.
    pub default_max_turns: Option<u32>,
    /// Tool calls per child.
    pub max_tool_calls_per_child: Option<u32>,
    /// Offer the `Verification` agent.
    pub enable_verification: Option<bool>,
    /// Tools denied to every non-built-in definition.
    #[serde(default)]
    pub extra_deny: Vec<String>,
    /// Seconds before a foreground child moves to the background.
    pub auto_background_after_s: Option<f64>,
}

/// `[teams]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamsFile {
    /// Give sessions a team (as `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1` does).
    pub enabled: Option<bool>,
    /// Teammates alive at once (1–16).
    pub max_teammates: Option<usize>,
}

/// Longest `auto_background_after_s`: a week. A longer wait means "never" in
/// practice, and far larger values overflow time arithmetic.
pub const MAX_AUTO_BACKGROUND_S: f64 = 7.0 * 24.0 * 3600.0;

/// `[context]`: when conversations are compacted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// Compact automatically once this percentage of the window is in use
    /// (1–100; 100 compacts only when the provider refuses a request as too long).
    pub auto_compact_percent: Option<u32>,
}

/// Accepted range of `[context] auto_compact_percent`.
pub const AUTO_COMPACT_PERCENT_RANGE: std::ops::RangeInclusive<u32> = 1..=100;
/// Accepted range of `[models.<provider>.<id>] context_window`: below 1024
/// tokens no system prompt fits; the top keeps token arithmetic far from overflow.
pub const CONTEXT_WINDOW_RANGE: std::ops::RangeInclusive<u64> = 1024..=100_000_000;
/// Highest price accepted, in US dollars per million tokens (today's dearest
/// models cost a few hundred): far above it is a typo, and cost sums could overflow.
pub const MAX_PRICE_PER_MILLION: f64 = 10_000.0;

/// `[models.<provider>.<id>]`: what cadre should know of one model. Prices are
/// US dollars per million tokens; a price left out comes from the built-in
/// table, or is 0 for a model without one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Tokens the model takes in one request.
    pub context_window: Option<u64>,
    /// Uncached input.
    pub input_price: Option<f64>,
    /// Output.
    pub output_price: Option<f64>,
    /// Input read from the prompt cache.
    pub cache_read_price: Option<f64>,
    /// Input written to the prompt cache.
    pub cache_write_price: Option<f64>,
    /// Whether the model takes images (default true); `false` sends a text
    /// note in place of each image.
    pub images: Option<bool>,
    /// How tool calls travel: `native`, `text` or `auto` (default `auto` on
    /// a loopback endpoint, `native` elsewhere).
    pub tool_calls: Option<crate::model::ToolCallMode>,
    /// Sampling temperature (0 to 2; default the server's, 0.2 in `text` mode).
    pub temperature: Option<f64>,
    /// Output tokens per request (over the top-level `max_tokens`).
    pub max_tokens: Option<u32>,
    /// Seconds to wait for the reply's first data (default 900 on loopback,
    /// else `[limits] stream_idle_timeout_s`).
    pub first_byte_timeout_s: Option<u64>,
    /// Seconds one request may take, every try included (default 1800 on
    /// loopback, else `[limits] request_deadline_s`).
    pub request_deadline_s: Option<u64>,
}

impl ModelFile {
    /// Lays `over` on top of `self`, key by key.
    fn merge(&mut self, over: ModelFile) {
        macro_rules! take {
            ($($f:ident),*) => { $( if over.$f.is_some() { self.$f = over.$f; } )* };
        }
        take!(
            context_window,
            images,
            tool_calls,
            temperature,
            max_tokens,
            first_byte_timeout_s,
            request_deadline_s,
            input_price,
            output_price,
            cache_read_price,
            cache_write_price
        );
    }

    /// The prices this table gives, the others from `builtin` (or 0), when it gives any.
    fn prices(&self, builtin: Option<Prices>) -> Option<Prices> {
        if self.input_price.is_none()
            && self.output_price.is_none()
            && self.cache_read_price.is_none()
            && self.cache_write_price.is_none()
        {
            return None;
        }
        let base = builtin.unwrap_or(Prices {
            input: 0,
            output: 0,
            cache_read: 0,
            cache_write: 0,
        });
        let per_token = |usd: Option<f64>, builtin: u64| {
            usd.map_or(builtin, |usd| Prices::per_million(usd, 0.0, 0.0, 0.0).input)
        };
        Some(Prices {
            input: per_token(self.input_price, base.input),
            output: per_token(self.output_price, base.output),
            cache_read: per_token(self.cache_read_price, base.cache_read),
            cache_write: per_token(self.cache_write_price, base.cache_write),
        })
    }
}

/// One key of `[models.<provider>]`: an alias (`sonnet = "claude-…"`) or a
/// model's table (`[models.openai."my-local"]`, quoted when the id has dots).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEntry {
    /// Alias → model id.
    Alias(String),
    /// What cadre should know of the model with this id.
    Model(ModelFile),
}

impl<'de> Deserialize<'de> for ModelEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ModelEntry, D::Error> {
        struct EntryVisitor;
        impl<'de> serde::de::Visitor<'de> for EntryVisitor {
            type Value = ModelEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a model id (for an alias) or a table of model settings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ModelEntry, E> {
                Ok(ModelEntry::Alias(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ModelEntry, E> {
                Ok(ModelEntry::Alias(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ModelEntry, A::Error> {
                ModelFile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ModelEntry::Model)
            }
        }
        d.deserialize_any(EntryVisitor)
    }
}

/// One config file's contents. Every key is optional; later files override.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConfigFile {
    /// `anthropic` or `openai`.
    pub provider: Option<String>,
    /// Model id or alias.
    pub model: Option<String>,
    /// Endpoint base URL.
    pub base_url: Option<String>,
    /// Output tokens per request.
    pub max_tokens: Option<u32>,
    /// Per provider: aliases (`[models.anthropic] sonnet = "…"`) and model
    /// tables (`[models.openai."my-local"] context_window = 4000`).
    #[serde(default)]
    pub models: BTreeMap<String, BTreeMap<String, ModelEntry>>,
    /// Compaction settings.
    #[serde(default)]
    pub context: ContextFile,
    /// Per-turn limits.
    #[serde(default)]
    pub limits: LimitsFile,
    /// Tool settings.
    #[serde(default)]
    pub tools: ToolsFile,
    /// Permission mode and rules.
    #[serde(default)]
    pub permissions: PermissionsFile,
    /// Sandbox settings.
    #[serde(default)]
    pub sandbox: SandboxFile,
    /// Subagent settings.
    #[serde(default)]
    pub subagents: SubagentsFile,
    /// Agent team settings.
    #[serde(default)]
    pub teams: TeamsFile,
    /// Where `WebSearch` searches.
    #[serde(default)]
    pub web_search: WebSearchFile,
    /// A small, fast model (id or alias) for side work: WebFetch summarises
    /// pages with it. None: WebFetch gives the page itself.
    pub small_model: Option<String>,
    /// Sections later features read; kept so a newer file still loads.
    #[serde(flatten)]
    pub other: BTreeMap<String, toml::Value>,
}

impl ConfigFile {
    /// Reads and parses one file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = match read_small_text(path, MAX_CONFIG_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(ConfigFile::default()),
            Err(e) => return Err(e.into()),
        };
        let file: ConfigFile = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        file.check_ranges(path)?;
        Ok(file)
    }

    /// Refuses numbers that cannot mean anything (zero counts, non-finite or
    /// huge durations), so no later conversion can panic or misbehave.
    fn check_ranges(&self, path: &Path) -> Result<(), ConfigError> {
        fn int<T: Into<u64> + Copy>(
            path: &Path,
            key: &str,
            v: Option<T>,
            min: u64,
            max: u64,
        ) -> Result<(), ConfigError> {
            match v.map(Into::into) {
                Some(n) if n < min || n > max => Err(ConfigError::Range {
                    path: path.to_path_buf(),
                    key: key.to_string(),
                    value: n.to_string(),
                    expected: if max == u64::MAX {
                        format!("at least {min}")
                    } else {
                        format!("{min} to {max}")
                    },
                }),
                _ => Ok(()),
            }
        }
        let size = |v: Option<usize>| v.map(|n| n as u64);
        let any = u64::MAX;
        int(path, "max_tokens", self.max_tokens, 1, any)?;
        int(
            path,
            "web_search.max_uses",
            self.web_search.max_uses,
            1,
            100,
        )?;
        int(
            path,
            "web_search.max_results",
            self.web_search.max_results,
            1,
            50,
        )?;
        let l = &self.limits;
        int(
            path,
            "limits.max_requests_per_turn",
            l.max_requests_per_turn,
            1,
            any,
        )?;
        int(
            path,
            "limits.max_tool_calls_per_turn",
            l.max_tool_calls_per_turn,
            1,
            any,
        )?;
        // Below 1 KiB a result is all truncation marker; above 64 MiB one
        // result would not fit any model's context anyway.
        int(
            path,
            "tools.output_cap_bytes",
            size(self.tools.output_cap_bytes),
            1024,
            64 << 20,
        )?;
        int(
            path,
            "limits.stream_idle_timeout_s",
            l.stream_idle_timeout_s,
            *STREAM_IDLE_TIMEOUT_RANGE.start(),
            *STREAM_IDLE_TIMEOUT_RANGE.end(),
        )?;
        // Below 1 KiB a file holds little more than its marker line.
        int(
            path,
            "limits.task_output_max_bytes",
            l.task_output_max_bytes,
            1024,
            1 << 40,
        )?;
        int(
            path,
            "limits.mcp_log_max_bytes",
            l.mcp_log_max_bytes,
            1024,
            1 << 40,
        )?;
        int(
            path,
            "limits.request_deadline_s",
            l.request_deadline_s,
            *REQUEST_DEADLINE_RANGE.start(),
            *REQUEST_DEADLINE_RANGE.end(),
        )?;
        int(
            path,
            "teams.max_teammates",
            self.teams.max_teammates.map(|n| n as u64),
            1,
            16,
        )?;
        let s = &self.subagents;
        int(path, "subagents.max_depth", s.max_depth, 1, 3)?;
        int(
            path,
            "subagents.max_concurrent_subagents",
            size(s.max_concurrent_subagents),
            1,
            32,
        )?;
        int(
            path,
            "subagents.max_subagents_per_turn",
            size(s.max_subagents_per_turn),
            1,
            any,
        )?;
        int(
            path,
            "subagents.max_running_subagents",
            size(s.max_running_subagents),
            1,
            any,
        )?;
        int(
            path,
            "subagents.default_max_turns",
            s.default_max_turns,
            1,
            any,
        )?;
        int(
            path,
            "subagents.max_tool_calls_per_child",
            s.max_tool_calls_per_child,
            1,
            any,
        )?;
        int(
            path,
            "context.auto_compact_percent",
            self.context.auto_compact_percent,
            u64::from(*AUTO_COMPACT_PERCENT_RANGE.start()),
            u64::from(*AUTO_COMPACT_PERCENT_RANGE.end()),
        )?;
        for (provider, entries) in &self.models {
            for (id, entry) in entries {
                let ModelEntry::Model(m) = entry else {
                    continue;
                };
                let key = |name: &str| format!("models.{provider}.{}.{name}", toml_key(id));
                int(
                    path,
                    &key("context_window"),
                    m.context_window,
                    *CONTEXT_WINDOW_RANGE.start(),
                    *CONTEXT_WINDOW_RANGE.end(),
                )?;
                int(path, &key("max_tokens"), m.max_tokens, 1, any)?;
                for (name, secs) in [
                    ("first_byte_timeout_s", m.first_byte_timeout_s),
                    ("request_deadline_s", m.request_deadline_s),
                ] {
                    int(
                        path,
                        &key(name),
                        secs,
                        *REQUEST_DEADLINE_RANGE.start(),
                        *REQUEST_DEADLINE_RANGE.end(),
                    )?;
                }
                if let Some(t) = m.temperature
                    && !(t.is_finite() && (0.0..=2.0).contains(&t))
                {
                    return Err(ConfigError::Range {
                        path: path.to_path_buf(),
                        key: key("temperature"),
                        value: format!("{t:?}"),
                        expected: "0 to 2".into(),
                    });
                }
                for (name, price) in [
                    ("input_price", m.input_price),
                    ("output_price", m.output_price),
                    ("cache_read_price", m.cache_read_price),
                    ("cache_write_price", m.cache_write_price),
                ] {
                    if let Some(usd) = price
                        && !(usd.is_finite() && (0.0..=MAX_PRICE_PER_MILLION).contains(&usd))
                    {
                        return Err(ConfigError::Range {
                            path: path.to_path_buf(),
                            key: key(name),
                            value: format!("{usd:?}"),
                            expected: format!(
                                "US dollars per million tokens from 0 to {MAX_PRICE_PER_MILLION}"
                            ),
                        });
                    }
                }
            }
        }
        if let Some(secs) = s.auto_background_after_s
            && !(secs.is_finite() && (0.0..=MAX_AUTO_BACKGROUND_S).contains(&secs))
        {
            return Err(ConfigError::Range {
                path: path.to_path_buf(),
                key: "subagents.auto_background_after_s".into(),
                value: format!("{secs:?}"),
                expected: format!("seconds from 0 to {MAX_AUTO_BACKGROUND_S}"),
            });
        }
        Ok(())
    }

    /// Lays `over` on top of `self`.
    fn merge(&mut self, over: ConfigFile) {
        /// Each given (`Some`) value of `$from` replaces the one in `$into`.
        macro_rules! take {
            ($into:expr, $from:expr; $($f:ident),*) => {
                $( if $from.$f.is_some() { $into.$f = $from.$f; } )*
            };
        }
        take!(self, over; provider, model, base_url, max_tokens, small_model);
        take!(
            self.web_search, over.web_search;
            provider, url, key, key_env, max_uses, max_results
        );
        self.web_search
            .allowed_domains
            .extend(over.web_search.allowed_domains);
        self.web_search
            .blocked_domains
            .extend(over.web_search.blocked_domains);
        take!(self.limits, over.limits; max_requests_per_turn, max_tool_calls_per_turn, stream_idle_timeout_s, task_output_max_bytes, mcp_log_max_bytes, request_deadline_s);
        take!(self.tools, over.tools; output_cap_bytes);
        take!(self.sandbox, over.sandbox; network);
        take!(
            self.subagents, over.subagents;
            max_depth,
            max_concurrent_subagents,
            max_subagents_per_turn,
            max_running_subagents,
            default_type,
            default_max_turns,
            max_tool_calls_per_child,
            enable_verification,
            auto_background_after_s
        );
        take!(self.context, over.context; auto_compact_percent);
        take!(self.teams, over.teams; enabled, max_teammates);
        for (provider, entries) in over.models {
            let mine = self.models.entry(provider).or_default();
            for (key, entry) in entries {
                // Two tables of one model merge key by key; otherwise the later file wins.
                match (mine.get_mut(&key), entry) {
                    (Some(ModelEntry::Model(base)), ModelEntry::Model(over)) => base.merge(over),
                    (_, entry) => {
                        mine.insert(key, entry);
                    }
                }
            }
        }
        self.subagents.extra_deny.extend(over.subagents.extra_deny);
        self.other.extend(over.other);
    }
}

/// Why a project entry does not apply in an untrusted folder.
pub const UNTRUSTED_WHY: &str = "needs workspace trust (the folder is not trusted)";

/// The merged settings of the user and project files, plus warnings to show.
/// Permissions are kept per source: a project file may narrow them, never widen.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Merged values (permissions excluded; see the two fields below).
    pub file: ConfigFile,
    /// `[permissions]` of the user file (trusted).
    pub user_permissions: PermissionsFile,
    /// `[permissions]` of the project file (untrusted: its allow rules and wider modes are dropped).
    pub project_permissions: PermissionsFile,
    /// Things the user should know (ignored project keys and such).
    pub warnings: Vec<String>,
    /// The project file set `provider` without a loopback `base_url` of its
    /// own: with a server the user chose, that would pick which key goes there.
    pub project_provider_unbound: bool,
    /// `provider` as the user file set it (before the project's).
    pub user_provider: Option<String>,
    /// `$CADRE_HOME/config.toml`, as named in sources.
    pub user_config_path: PathBuf,
    /// `.cadre/config.toml`, as named in sources.
    pub project_config_path: PathBuf,
    /// The JSON settings files found, lowest precedence first, each with what
    /// applies of it (entries a scope may not set are already dropped).
    pub json: Vec<LoadedJson>,
    /// Entries of settings files that do not apply, with why (unknown keys too).
    pub ignored: Vec<IgnoredEntry>,
    /// `env` for the commands cadre starts: name → (value, file).
    pub env: BTreeMap<String, (String, PathBuf)>,
    /// The file `file.model` comes from.
    pub model_source: Option<PathBuf>,
    /// `model` of the managed file: it wins over flags and the environment too.
    pub managed_model: Option<(String, PathBuf)>,
    /// A file with `permissions.disableBypassPermissionsMode: "disable"`.
    pub bypass_disabled_by: Option<PathBuf>,
    /// The project folder is trusted for this run: its files may widen too.
    pub project_trusted: bool,
    /// Project entries held back because the folder is not trusted (also in `ignored`).
    pub needs_trust: Vec<IgnoredEntry>,
    /// The session talks to a server other than its provider's own API (a
    /// local server, a proxy): built-in aliases that name a hosted model of
    /// that provider do not apply there (see [`Settings::model_alias`]).
    pub custom_endpoint: bool,
    /// `statusLine` of the last file that sets it (a project's only in a
    /// trusted folder), with that file and its scope.
    pub status_line: Option<(json::StatusLineSetting, PathBuf, SettingsScope)>,
    /// `outputStyle` of the last file that sets it, with that file.
    pub output_style: Option<(String, PathBuf)>,
}

/// What a model name stands for (see [`Settings::model_alias`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelName {
    /// This model id.
    Id(String),
    /// An alias with no mapping for this provider and endpoint: the name of
    /// no model it serves.
    Unmapped(String),
}

/// A JSON settings file as loaded.
#[derive(Debug, Clone)]
pub struct LoadedJson {
    /// Which scope it belongs to.
    pub scope: SettingsScope,
    /// Its path.
    pub path: PathBuf,
    /// What applies of it.
    pub settings: JsonSettings,
}

/// An entry of a settings file that does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredEntry {
    /// The file.
    pub path: PathBuf,
    /// Dotted key (`permissions.allow`), with the values when they matter.
    pub key: String,
    /// Why it does not apply.
    pub why: String,
}

/// A permission rule with the file (or flag) it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedRule {
    /// Allow, ask or deny.
    pub kind: RuleKind,
    /// The rule as written.
    pub text: String,
    /// Where it comes from (`user settings (/home/u/.claude/settings.json)`).
    pub source: String,
}

/// The permission mode the settings files choose, and the file that chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeChoice {
    /// The mode.
    pub mode: PermissionMode,
    /// Where it comes from, as shown to the user.
    pub source: String,
    /// It comes from managed settings (which a flag may only narrow).
    pub managed: bool,
}

impl Settings {
    /// Loads `<home>/config.toml` then `<project>/.cadre/config.toml`, the
    /// project folder untrusted.
    pub fn load(home: &Path, project: &Path) -> Result<Settings, ConfigError> {
        let mut s = Settings::load_toml(home, project, false)?;
        s.warn_untrusted();
        Ok(s)
    }

    fn load_toml(home: &Path, project: &Path, trusted: bool) -> Result<Settings, ConfigError> {
        let mut file = ConfigFile::load(&home.join("config.toml"))?;
        let project_path = project.join(".cadre").join("config.toml");
        let mut project_file = ConfigFile::load(&project_path)?;
        let mut warnings = Vec::new();
        let mut needs_trust = Vec::new();
        let user_permissions = std::mem::take(&mut file.permissions);
        let mut project_permissions = std::mem::take(&mut project_file.permissions);
        if !project_permissions.allow.is_empty() && !trusted {
            needs_trust.push(IgnoredEntry {
                path: project_path.clone(),
                key: format!(
                    "permissions.allow ({})",
                    project_permissions.allow.join(", ")
                ),
                why: UNTRUSTED_WHY.into(),
            });
            project_permissions.allow.clear();
        }
        if project_file.sandbox.network == Some(true) {
            warnings.push(format!(
                "{}: sandbox.network ignored: a project file cannot open the sandbox's network",
                project_path.display()
            ));
            project_file.sandbox.network = None;
        }
        project_web_search(&project_path, &mut project_file.web_search, &mut warnings);
        if let Some(text) = project_file.base_url.take() {
            // Decided on the parsed URL, and its serialisation is what is kept:
            // the client parses that same text to the same host.
            match parse_base_url(&text) {
                Ok(url) if url_is_loopback(&url) => project_file.base_url = Some(url.to_string()),
                checked => {
                    let why = checked
                        .err()
                        .unwrap_or_else(|| "its host is not loopback".into());
                    warnings.push(format!(
                        "{}: base_url ignored: {why}; a project file may only point at a loopback server (127.0.0.0/8, ::1 or localhost) by its plain address (set other servers in your user config, CADRE_BASE_URL or --base-url)",
                        project_path.display()
                    ));
                }
            }
        }
        if !trusted {
            hold_back_servers(&project_path, &mut project_file, &mut needs_trust);
        }
        for (source, f) in [
            (home.join("config.toml"), &file),
            (project_path.clone(), &project_file),
        ] {
            for provider in f.models.keys() {
                if !matches!(provider.as_str(), "anthropic" | "openai") {
                    warnings.push(format!(
                        "{}: [models.{provider}] ignored: cadre knows the providers anthropic and openai",
                        source.display()
                    ));
                }
            }
        }
        let project_provider_unbound =
            project_file.provider.is_some() && project_file.base_url.is_none();
        let user_provider = file.provider.clone();
        let model_source = match (&file.model, &project_file.model) {
            (_, Some(_)) => Some(project_path.clone()),
            (Some(_), None) => Some(home.join("config.toml")),
            _ => None,
        };
        file.merge(project_file);
        Ok(Settings {
            file,
            user_permissions,
            project_permissions,
            warnings,
            project_provider_unbound,
            user_provider,
            user_config_path: home.join("config.toml"),
            project_config_path: project_path,
            json: Vec::new(),
            env: BTreeMap::new(),
            model_source,
            managed_model: None,
            bypass_disabled_by: None,
            project_trusted: trusted,
            ignored: needs_trust.clone(),
            needs_trust,
            // Known once the endpoint is (see `model_alias`).
            custom_endpoint: false,
            status_line: None,
            output_style: None,
        })
    }

    /// One warning naming every project entry held back for want of trust.
    fn warn_untrusted(&mut self) {
        if self.needs_trust.is_empty() {
            return;
        }
        let entries: Vec<String> = self
            .needs_trust
            .iter()
            .map(|e| format!("{} in {}", e.key, e.path.display()))
            .collect();
        self.warnings.push(format!(
            "this folder is not trusted, so its project settings that widen permissions, run commands or choose the servers your keys and queries go to are ignored: {}; answer yes when cadre asks to trust the folder, run `cadre config trust`, or pass --trust for one run (deny and ask rules apply either way)",
            entries.join("; ")
        ));
    }

    /// Loads the config.toml files (as [`Settings::load`]) and the JSON
    /// settings files of `paths` over them. Precedence, lowest first: user,
    /// shared project, local project, (the command line, applied by the
    /// binary), managed. Project files may narrow permissions, never widen
    /// them: their allow rules, wider modes and `env` are dropped with a
    /// warning (workspace trust will let a trusted folder's apply).
    pub fn load_with(paths: &SettingsPaths) -> Result<Settings, ConfigError> {
        let mut s = Settings::load_toml(&paths.data_dir, &paths.project, paths.trusted)?;
        if !s.project_trusted
            && let Some(m) = s.project_permissions.default_mode.clone()
        {
            let path = s.project_config_path.clone();
            s.note_wide_project_mode(&path, &m);
        }
        // config.toml's model sits below every JSON file of its scope and above
        // the lower scopes': find the project config's place by its scope.
        let project_toml_model = s
            .model_source
            .as_ref()
            .filter(|p| **p == s.project_config_path)
            .and_then(|_| s.file.model.clone());
        let mut model: Option<(String, PathBuf)> = s.file.model.clone().zip(s.model_source.clone());
        if project_toml_model.is_some() {
            // Restored after the user JSON files below.
            model = None;
        }
        let mut project_model_pending =
            project_toml_model.map(|m| (m, s.project_config_path.clone()));
        let mut extra = paths.extra.clone();
        for (scope, path) in paths.json_files() {
            // The run's own layer goes on just below the managed file.
            if scope == SettingsScope::Managed
                && let Some(given) = extra.take()
            {
                s.apply_extra(&given, &mut model)?;
            }
            let Some(mut js) = JsonSettings::load(&path)? else {
                continue;
            };
            if scope >= SettingsScope::Project
                && let Some(pending) = project_model_pending.take()
            {
                model = Some(pending);
            }
            s.apply_json(scope, &path, &mut js, &mut model);
            s.json.push(LoadedJson {
                scope,
                path,
                settings: js,
            });
        }
        if let Some(given) = extra.take() {
            s.apply_extra(&given, &mut model)?;
        }
        if let Some(pending) = project_model_pending {
            model = Some(pending);
        }
        s.file.model = model.as_ref().map(|(m, _)| m.clone());
        s.model_source = model.map(|(_, p)| p);
        s.warn_untrusted();
        Ok(s)
    }

    /// Applies the run's `--settings` layer (trusted, like the user's files).
    fn apply_extra(
        &mut self,
        given: &ExtraSettings,
        model: &mut Option<(String, PathBuf)>,
    ) -> Result<(), ConfigError> {
        let mut js = JsonSettings::parse(&given.label, &given.text)?;
        self.apply_json(SettingsScope::User, &given.label, &mut js, model);
        self.json.push(LoadedJson {
            scope: SettingsScope::User,
            path: given.label.clone(),
            settings: js,
        });
        Ok(())
    }

    /// Holds back (for the trust question) a project mode wider than `default`.
    fn note_wide_project_mode(&mut self, path: &Path, mode: &str) {
        if let Ok(m) = mode.parse::<PermissionMode>()
            && m.strictness() < PermissionMode::Default.strictness()
        {
            let entry = IgnoredEntry {
                path: path.to_path_buf(),
                key: format!("permissions.defaultMode ({m})"),
                why: UNTRUSTED_WHY.into(),
            };
            self.needs_trust.push(entry.clone());
            self.ignored.push(entry);
        }
    }

    /// Drops what `scope` may not set from `js` (with warnings), and merges
    /// `env`, `model` and the bypass switch into `self`.
    fn apply_json(
        &mut self,
        scope: SettingsScope,
        path: &Path,
        js: &mut JsonSettings,
        model: &mut Option<(String, PathBuf)>,
    ) {
        if !scope.is_trusted() && !self.project_trusted {
            // Held back until the folder is trusted; named in one warning.
            let mut held = Vec::new();
            if !js.permissions.allow.is_empty() {
                held.push(format!(
                    "permissions.allow ({})",
                    js.permissions.allow.join(", ")
                ));
                js.permissions.allow.clear();
            }
            if !js.env.is_empty() {
                let names: Vec<&str> = js.env.keys().map(String::as_str).collect();
                held.push(format!("env ({})", names.join(", ")));
                js.env.clear();
            }
            if !js.additional_directories.is_empty() {
                held.push(format!(
                    "permissions.additionalDirectories ({})",
                    js.additional_directories.join(", ")
                ));
                js.additional_directories.clear();
            }
            if js.hooks.take().is_some() && !js.hook_events.is_empty() {
                held.push(format!("hooks ({})", js.hook_events.join(", ")));
            }
            // A status line runs a command, like a hook.
            if js.status_line.take().is_some() {
                held.push("statusLine".into());
            }
            // Turning off the user's hooks (a guard, say) widens too.
            if std::mem::take(&mut js.disable_all_hooks) {
                held.push("disableAllHooks".into());
            }
            for key in held {
                let entry = IgnoredEntry {
                    path: path.to_path_buf(),
                    key,
                    why: UNTRUSTED_WHY.into(),
                };
                self.needs_trust.push(entry.clone());
                self.ignored.push(entry);
            }
            if let Some(m) = js.permissions.default_mode.clone() {
                self.note_wide_project_mode(path, &m);
            }
        }
        for (name, value) in &js.env {
            self.env
                .insert(name.clone(), (value.clone(), path.to_path_buf()));
        }
        if let Some(line) = &js.status_line {
            self.status_line = Some((line.clone(), path.to_path_buf(), scope));
        }
        if let Some(style) = &js.output_style {
            self.output_style = Some((style.clone(), path.to_path_buf()));
        }
        if let Some(m) = &js.model {
            if scope == SettingsScope::Managed {
                self.managed_model = Some((m.clone(), path.to_path_buf()));
            }
            *model = Some((m.clone(), path.to_path_buf()));
        }
        if js.disable_bypass
            && (self.bypass_disabled_by.is_none() || scope == SettingsScope::Managed)
        {
            self.bypass_disabled_by = Some(path.to_path_buf());
        }
    }

    /// The status line to run, if any: none when a settings file turns off
    /// every hook (`disableAllHooks`), unless the managed file set it.
    pub fn status_line(&self) -> Option<&json::StatusLineSetting> {
        let (line, _, scope) = self.status_line.as_ref()?;
        let hooks_off = self.json.iter().any(|j| j.settings.disable_all_hooks);
        (*scope == SettingsScope::Managed || !hooks_off).then_some(line)
    }

    /// `permissions.additionalDirectories` of the files that apply, resolved
    /// (`~/` against `home`, relative paths against `project`), each with
    /// its file; entries that are not existing folders go to `warnings`.
    pub fn additional_dirs(
        &self,
        home: Option<&Path>,
        project: &Path,
        warnings: &mut Vec<String>,
    ) -> Vec<(PathBuf, PathBuf)> {
        let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
        for j in &self.json {
            for raw in &j.settings.additional_directories {
                let path = match (raw.strip_prefix("~/"), home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => project.join(raw),
                };
                match path.canonicalize() {
                    Ok(dir) if dir.is_dir() => {
                        if !out.iter().any(|(d, _)| *d == dir) {
                            out.push((dir, j.path.clone()));
                        }
                    }
                    _ => warnings.push(format!(
                        "{}: permissions.additionalDirectories entry {raw} ignored: not an existing folder",
                        j.path.display()
                    )),
                }
            }
        }
        out
    }

    /// Every permission rule of the settings files, each with its source:
    /// user files, then project files, then managed (allow rules a scope may
    /// not give are already gone). Deny beats allow wherever each comes from.
    pub fn rules(&self) -> Vec<SourcedRule> {
        let mut out = Vec::new();
        let mut add = |p: &PermissionsFile, source: String| {
            for (kind, texts) in [
                (RuleKind::Allow, &p.allow),
                (RuleKind::Ask, &p.ask),
                (RuleKind::Deny, &p.deny),
            ] {
                for text in texts {
                    out.push(SourcedRule {
                        kind,
                        text: text.trim().to_string(),
                        source: source.clone(),
                    });
                }
            }
        };
        let user = format!("user config ({})", self.user_config_path.display());
        let project = format!("project config ({})", self.project_config_path.display());
        add(&self.user_permissions, user);
        for scope in [
            SettingsScope::User,
            SettingsScope::Project,
            SettingsScope::Local,
            SettingsScope::Managed,
        ] {
            if scope == SettingsScope::Project {
                add(&self.project_permissions, project.clone());
            }
            for j in self.json.iter().filter(|j| j.scope == scope) {
                add(
                    &j.settings.permissions,
                    format!("{} ({})", scope.label(), j.path.display()),
                );
            }
        }
        out
    }

    /// The permission mode the files choose (`None`: none sets one), warning
    /// in `warnings` of each mode not applied. A user or managed file's mode
    /// replaces the one below it; a project file's applies only when at least
    /// as strict; `bypassPermissions` never applies when a file disables it.
    /// Err: a config.toml names a mode cadre does not know.
    pub fn file_mode(&self, warnings: &mut Vec<String>) -> Result<Option<ModeChoice>, String> {
        let mut layers: Vec<(SettingsScope, String, &str, bool)> = Vec::new();
        let user = format!("user config ({})", self.user_config_path.display());
        let project = format!("project config ({})", self.project_config_path.display());
        if let Some(m) = &self.user_permissions.default_mode {
            layers.push((SettingsScope::User, user, m, true));
        }
        for scope in [
            SettingsScope::User,
            SettingsScope::Project,
            SettingsScope::Local,
            SettingsScope::Managed,
        ] {
            if scope == SettingsScope::Project
                && let Some(m) = &self.project_permissions.default_mode
            {
                layers.push((SettingsScope::Project, project.clone(), m, true));
            }
            for j in self.json.iter().filter(|j| j.scope == scope) {
                if let Some(m) = &j.settings.permissions.default_mode {
                    let label = format!("{} ({})", scope.label(), j.path.display());
                    layers.push((scope, label, m, false));
                }
            }
        }
        let mut chosen: Option<ModeChoice> = None;
        for (scope, source, text, toml) in layers {
            let mode = match text.parse::<PermissionMode>() {
                Ok(m) => m,
                Err(e) if toml => return Err(e),
                Err(e) => {
                    warnings.push(format!("{source}: permissions.defaultMode ignored: {e}"));
                    continue;
                }
            };
            if mode == PermissionMode::BypassPermissions
                && let Some(by) = &self.bypass_disabled_by
            {
                warnings.push(format!(
                    "{source}: permission mode bypassPermissions ignored: {} disables it",
                    by.display()
                ));
                continue;
            }
            let current = chosen.as_ref().map_or(PermissionMode::Default, |c| c.mode);
            if scope.is_trusted()
                || self.project_trusted
                || mode.strictness() >= current.strictness()
            {
                chosen = Some(ModeChoice {
                    mode,
                    source,
                    managed: scope == SettingsScope::Managed,
                });
            } else {
                warnings.push(format!(
                    "{source} asks for permission mode {mode}, which is wider than {current}; ignored (a project file may only narrow the mode until the folder is trusted)"
                ));
            }
        }
        Ok(chosen)
    }

    /// Resolves a model alias (`sonnet`, `opus`, `haiku`) for `provider`
    /// through `[models.<provider>]`, then built-in defaults; other names,
    /// and an alias with no mapping here, pass through as they are.
    pub fn resolve_model(&self, provider: Provider, name: &str) -> String {
        match self.model_alias(provider, name) {
            ModelName::Id(id) | ModelName::Unmapped(id) => id,
        }
    }

    /// What `name` stands for with `provider` at this session's endpoint:
    /// `[models.<provider>]` first, then the built-in aliases. The Claude
    /// aliases name Claude models, which every Anthropic-wire server takes
    /// (as Claude Code sends them to any base URL); the OpenAI ones name
    /// OpenAI's hosted models, so they hold only at OpenAI's own API, and
    /// elsewhere (a local server) the alias is [`ModelName::Unmapped`].
    pub fn model_alias(&self, provider: Provider, name: &str) -> ModelName {
        if let Some(ModelEntry::Alias(id)) = self
            .file
            .models
            .get(provider.as_str())
            .and_then(|m| m.get(name))
        {
            return ModelName::Id(id.clone());
        }
        let builtin = match (provider, name) {
            (Provider::Anthropic, "sonnet") => Some("claude-sonnet-4-5"),
            (Provider::Anthropic, "opus") => Some("claude-opus-4-1"),
            (Provider::Anthropic, "haiku") => Some("claude-haiku-4-5"),
            (Provider::Anthropic, "fable") => Some("claude-fable-5-2"),
            (Provider::OpenAI, "sonnet" | "opus") => Some("gpt-4.1"),
            (Provider::OpenAI, "haiku") => Some("gpt-4.1-mini"),
            _ => None,
        };
        match builtin {
            Some(_) if provider == Provider::OpenAI && self.custom_endpoint => {
                ModelName::Unmapped(name.to_string())
            }
            Some(id) => ModelName::Id(id.to_string()),
            None => ModelName::Id(name.to_string()),
        }
    }

    /// The model tables of `[models.<provider>.<id>]` over the built-in ones
    /// (tables under a provider cadre does not know are ignored).
    pub fn model_table(&self) -> ModelTable {
        let mut table = ModelTable::default();
        for provider in [Provider::Anthropic, Provider::OpenAI] {
            let Some(entries) = self.file.models.get(provider.as_str()) else {
                continue;
            };
            for (id, entry) in entries {
                let ModelEntry::Model(m) = entry else {
                    continue;
                };
                table.set(
                    provider,
                    id,
                    ModelOverride {
                        context_window: m.context_window,
                        prices: m.prices(builtin_prices(provider, id)),
                        images: m.images,
                    },
                );
            }
        }
        table
    }

    /// Per model id of `provider`: what its requests carry beyond the
    /// session's defaults (`tool_calls`, `temperature`, `max_tokens`, timeouts).
    pub fn model_wire(&self, provider: Provider) -> BTreeMap<String, crate::model::ModelWire> {
        let Some(entries) = self.file.models.get(provider.as_str()) else {
            return BTreeMap::new();
        };
        entries
            .iter()
            .filter_map(|(id, entry)| match entry {
                ModelEntry::Model(m) => Some((
                    id.clone(),
                    crate::model::ModelWire {
                        tool_calls: m.tool_calls,
                        temperature: m.temperature,
                        max_tokens: m.max_tokens,
                        first_byte_timeout_s: m.first_byte_timeout_s,
                        request_deadline_s: m.request_deadline_s,
                    },
                )),
                ModelEntry::Alias(_) => None,
            })
            .collect()
    }

    /// `[context] auto_compact_percent`, or the default.
    pub fn auto_compact_percent(&self) -> u8 {
        self.file
            .context
            .auto_compact_percent
            .and_then(|p| u8::try_from(p).ok())
            .unwrap_or(DEFAULT_AUTO_COMPACT_PERCENT)
    }
}

/// Holds back, in an untrusted folder, what of the project file picks the
/// servers the user's keys and queries go to (`base_url`, `provider`,
/// `[web_search]`): even a loopback port may be anyone's on a shared machine.
fn hold_back_servers(path: &Path, project: &mut ConfigFile, needs_trust: &mut Vec<IgnoredEntry>) {
    let mut held = Vec::new();
    if let Some(url) = project.base_url.take() {
        held.push(format!("base_url ({url})"));
    }
    if let Some(provider) = project.provider.take() {
        held.push(format!("provider ({provider})"));
    }
    let search = std::mem::take(&mut project.web_search);
    let mut keys = Vec::new();
    for (name, value) in [
        ("provider", search.provider.clone()),
        ("url", search.url.clone()),
        ("max_uses", search.max_uses.map(|n| n.to_string())),
        ("max_results", search.max_results.map(|n| n.to_string())),
    ] {
        if let Some(v) = value {
            keys.push(format!("{name} = {v}"));
        }
    }
    for (name, list) in [
        ("allowed_domains", &search.allowed_domains),
        ("blocked_domains", &search.blocked_domains),
    ] {
        if !list.is_empty() {
            keys.push(format!("{name} = {}", list.join(" ")));
        }
    }
    if !keys.is_empty() {
        held.push(format!("web_search ({})", keys.join(", ")));
    }
    for key in held {
        needs_trust.push(IgnoredEntry {
            path: path.to_path_buf(),
            key,
            why: UNTRUSTED_WHY.into(),
        });
    }
}

/// Drops what a project file may not set in `[web_search]`: a key, the
/// variable a key is read from, and a `url` that is not loopback.
fn project_web_search(path: &Path, search: &mut WebSearchFile, warnings: &mut Vec<String>) {
    for (name, given) in [
        ("key", search.key.take().is_some()),
        ("key_env", search.key_env.take().is_some()),
    ] {
        if given {
            warnings.push(format!(
                "{}: web_search.{name} ignored: a project file cannot choose the search key (set it in your user config)",
                path.display()
            ));
        }
    }
    if let Some(text) = search.url.take() {
        match parse_base_url(&text) {
            Ok(url) if url_is_loopback(&url) => search.url = Some(url.to_string()),
            _ => warnings.push(format!(
                "{}: web_search.url ignored: a project file may only point the search at a loopback server (set other servers in your user config)",
                path.display()
            )),
        }
    }
}

/// `id` as a TOML key: bare when it can be, else quoted (`"gpt-4.1"`).
fn toml_key(id: &str) -> String {
    if !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        id.to_string()
    } else {
        format!("{id:?}")
    }
}

/// The data directory: `$CADRE_HOME`, else `~/.cadre`.
pub fn data_dir() -> Result<PathBuf, ConfigError> {
    if let Some(h) = std::env::var_os("CADRE_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(h));
    }
    dirs::home_dir()
        .map(|h| h.join(".cadre"))
        .ok_or(ConfigError::NoHome)
}

/// Creates `dir` (and parents) if needed and makes it private (0700): it holds
/// logs that may quote the user's code and, later, credentials.
pub fn ensure_private_dir(dir: &Path) -> Result<(), ConfigError> {
    let err = |source| ConfigError::DataDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_cannot_choose_the_search_key_or_a_remote_search_server() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "small_model = \"haiku\"\n[web_search]\nprovider = \"brave\"\nkey_env = \"MY_BRAVE\"\nblocked_domains = [\"a.example\"]\n",
        )
        .unwrap();
        std::fs::create_dir(proj.path().join(".cadre")).unwrap();
        std::fs::write(
            proj.path().join(".cadre/config.toml"),
            "[web_search]\nprovider = \"searxng\"\nurl = \"https://evil.example\"\nkey = \"stolen-key-123\"\nkey_env = \"ANTHROPIC_API_KEY\"\nblocked_domains = [\"b.example\"]\n",
        )
        .unwrap();
        // Trusted: the rules for keys and remote servers hold all the same.
        let s = Settings::load_toml(home.path(), proj.path(), true).unwrap();
        let search = &s.file.web_search;
        assert_eq!(search.provider.as_deref(), Some("searxng"));
        assert_eq!(search.url, None);
        assert_eq!(search.key, None);
        assert_eq!(search.key_env.as_deref(), Some("MY_BRAVE"));
        assert_eq!(search.blocked_domains, ["a.example", "b.example"]);
        assert_eq!(s.file.small_model.as_deref(), Some("haiku"));
        for key in ["web_search.key ", "web_search.key_env", "web_search.url"] {
            assert!(
                s.warnings.iter().any(|w| w.contains(key)),
                "{key}: {:?}",
                s.warnings
            );
        }
        assert!(!format!("{search:?}").contains("stolen"));
        // A loopback server is the project's to name.
        std::fs::write(
            proj.path().join(".cadre/config.toml"),
            "[web_search]\nurl = \"http://127.0.0.1:8888\"\n",
        )
        .unwrap();
        let s = Settings::load_toml(home.path(), proj.path(), true).unwrap();
        assert_eq!(
            s.file.web_search.url.as_deref(),
            Some("http://127.0.0.1:8888/")
        );
        // …once the folder is trusted; until then the user's search stays.
        let s = Settings::load(home.path(), proj.path()).unwrap();
        assert_eq!(s.file.web_search.url, None);
        assert_eq!(s.file.web_search.provider.as_deref(), Some("brave"));
        let held: Vec<&str> = s.needs_trust.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(held, ["web_search (url = http://127.0.0.1:8888/)"]);
    }

    #[test]
    fn an_untrusted_project_picks_no_server_and_no_provider() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "provider = \"anthropic\"\nbase_url = \"http://127.0.0.1:1111\"\n",
        )
        .unwrap();
        std::fs::create_dir(proj.path().join(".cadre")).unwrap();
        std::fs::write(
            proj.path().join(".cadre/config.toml"),
            "provider = \"openai\"\nbase_url = \"http://127.0.0.1:2222\"\n",
        )
        .unwrap();
        let s = Settings::load(home.path(), proj.path()).unwrap();
        assert_eq!(s.file.base_url.as_deref(), Some("http://127.0.0.1:1111"));
        assert_eq!(s.file.provider.as_deref(), Some("anthropic"));
        assert!(!s.project_provider_unbound);
        let warning: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.contains("not trusted"))
            .collect();
        assert_eq!(warning.len(), 1, "{:?}", s.warnings);
        assert!(
            warning[0].contains("base_url (http://127.0.0.1:2222/)")
                && warning[0].contains("provider (openai)"),
            "{warning:?}"
        );
        let s = Settings::load_toml(home.path(), proj.path(), true).unwrap();
        assert_eq!(s.file.base_url.as_deref(), Some("http://127.0.0.1:2222/"));
        assert_eq!(s.file.provider.as_deref(), Some("openai"));
    }

    #[test]
    fn project_overrides_user_but_cannot_redirect_to_remote() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "model = \"a\"\nbase_url = \"https://example.com\"\n[limits]\nmax_requests_per_turn = 7\n",
        )
        .unwrap();
        std::fs::create_dir(proj.path().join(".cadre")).unwrap();
        std::fs::write(
            proj.path().join(".cadre/config.toml"),
            "model = \"b\"\nbase_url = \"https://evil.example\"\n[subagents]\nmax_depth = 2\n",
        )
        .unwrap();
        let s = Settings::load(home.path(), proj.path()).unwrap();
        assert_eq!(s.file.model.as_deref(), Some("b"));
        assert_eq!(s.file.base_url.as_deref(), Some("https://example.com"));
        assert_eq!(s.file.limits.max_requests_per_turn, Some(7));
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn bad_toml_names_the_file() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), "model = \n").unwrap();
        let err = Settings::load(home.path(), home.path()).unwrap_err();
        assert!(err.to_string().contains("config.toml"));
    }

    #[test]
    fn stream_idle_timeout_out_of_range_names_file_and_key() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(&path, "[limits]\nstream_idle_timeout_s = 0\n").unwrap();
        let err = Settings::load(home.path(), home.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml"), "{err}");
        assert!(err.contains("stream_idle_timeout_s"), "{err}");
        std::fs::write(&path, "[limits]\nstream_idle_timeout_s = 5\n").unwrap();
        let s = Settings::load(home.path(), home.path()).unwrap();
        assert_eq!(s.file.limits.stream_idle_timeout_s, Some(5));
        for bad in ["0", "86401"] {
            std::fs::write(&path, format!("[limits]\nrequest_deadline_s = {bad}\n")).unwrap();
            let err = Settings::load(home.path(), home.path())
                .unwrap_err()
                .to_string();
            assert!(err.contains("limits.request_deadline_s"), "{err}");
        }
        std::fs::write(&path, "[limits]\nrequest_deadline_s = 30\n").unwrap();
        let s = Settings::load(home.path(), home.path()).unwrap();
        assert_eq!(s.file.limits.request_deadline_s, Some(30));
    }

    #[test]
    fn aliases_resolve_per_provider() {
        let mut s = Settings::default();
        s.file
            .models
            .entry("openai".into())
            .or_default()
            .insert("sonnet".into(), ModelEntry::Alias("qwen".into()));
        assert_eq!(s.resolve_model(Provider::OpenAI, "sonnet"), "qwen");
        assert_eq!(s.resolve_model(Provider::Anthropic, "x-1"), "x-1");
        assert_eq!(
            s.model_alias(Provider::OpenAI, "opus"),
            ModelName::Id("gpt-4.1".into())
        );
        // At a local server only the user's own mapping holds.
        s.custom_endpoint = true;
        assert_eq!(
            s.model_alias(Provider::OpenAI, "opus"),
            ModelName::Unmapped("opus".into())
        );
        assert_eq!(
            s.model_alias(Provider::OpenAI, "sonnet"),
            ModelName::Id("qwen".into())
        );
        assert_eq!(
            s.model_alias(Provider::Anthropic, "opus"),
            ModelName::Id("claude-opus-4-1".into())
        );
    }

    fn load_user(text: &str) -> Result<Settings, ConfigError> {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), text).unwrap();
        Settings::load(home.path(), home.path())
    }

    #[test]
    fn model_tables_sit_beside_aliases_and_dotted_ids_are_quoted() {
        let s = load_user(
            "[models.openai]\nsonnet = \"qwen\"\n\
             [models.openai.\"my-local\"]\ncontext_window = 4000\n\
             [models.openai.\"gpt-4.1\"]\ninput_price = 1.5\n\
             [models.anthropic.claude-x]\ninput_price = 2\noutput_price = 4.25\n",
        )
        .unwrap();
        assert_eq!(s.resolve_model(Provider::OpenAI, "sonnet"), "qwen");
        let t = s.model_table();
        let local = t.profile(Provider::OpenAI, "my-local");
        assert_eq!(local.context_window, 4000);
        assert_eq!(local.prices, None, "no price given, none built in");
        // A partial table takes the other prices from the built-in entry.
        let gpt = t.profile(Provider::OpenAI, "gpt-4.1");
        assert_eq!(gpt.context_window, 1_047_576);
        assert_eq!(
            gpt.prices,
            Some(Prices::per_million(1.5, 8.0, 0.5, 0.0)),
            "input from config, the rest built in"
        );
        // …or 0 when the model has none (integers are accepted as prices).
        let x = t.profile(Provider::Anthropic, "claude-x");
        assert_eq!(x.prices, Some(Prices::per_million(2.0, 4.25, 0.0, 0.0)));
        // The same id under the other provider is not configured.
        assert_eq!(
            t.profile(Provider::Anthropic, "my-local").context_window,
            128_000
        );
        assert_eq!(s.auto_compact_percent(), DEFAULT_AUTO_COMPACT_PERCENT);
    }

    #[test]
    fn project_model_tables_and_context_merge_over_the_users_key_by_key() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[context]\nauto_compact_percent = 70\n[models.openai.m]\ncontext_window = 8000\ninput_price = 1\n",
        )
        .unwrap();
        std::fs::create_dir(proj.path().join(".cadre")).unwrap();
        std::fs::write(
            proj.path().join(".cadre/config.toml"),
            "[context]\nauto_compact_percent = 100\n[models.openai.m]\ninput_price = 2\n",
        )
        .unwrap();
        let s = Settings::load(home.path(), proj.path()).unwrap();
        assert_eq!(s.auto_compact_percent(), 100);
        let m = s.model_table().profile(Provider::OpenAI, "m");
        assert_eq!(m.context_window, 8000, "kept from the user file");
        assert_eq!(m.prices.map(|p| p.input), Some(2000), "project's price");
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn context_and_model_values_out_of_range_name_file_and_key() {
        for (text, key) in [
            (
                "[context]\nauto_compact_percent = 0\n",
                "context.auto_compact_percent",
            ),
            (
                "[context]\nauto_compact_percent = 101\n",
                "context.auto_compact_percent",
            ),
            (
                "[models.openai.\"gpt-4.1\"]\ncontext_window = 1000\n",
                "models.openai.\"gpt-4.1\".context_window",
            ),
            (
                "[models.anthropic.m]\noutput_price = -1\n",
                "models.anthropic.m.output_price",
            ),
            (
                "[models.anthropic.m]\ncache_read_price = nan\n",
                "models.anthropic.m.cache_read_price",
            ),
            (
                "[models.anthropic.m]\ncache_write_price = inf\n",
                "models.anthropic.m.cache_write_price",
            ),
        ] {
            let err = load_user(text).unwrap_err();
            assert!(matches!(err, ConfigError::Range { .. }), "{text}: {err}");
            let msg = err.to_string();
            assert!(msg.contains("config.toml") && msg.contains(key), "{msg}");
        }
        let ok = load_user(
            "[context]\nauto_compact_percent = 1\n[models.openai.m]\ncontext_window = 1024\ninput_price = 0\n",
        )
        .unwrap();
        assert_eq!(ok.auto_compact_percent(), 1);
    }

    #[test]
    fn model_tables_of_an_unknown_provider_are_ignored_with_a_warning() {
        let s = load_user("[models.opneai.m]\ncontext_window = 4000\n").unwrap();
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains("[models.opneai] ignored"),
            "{:?}",
            s.warnings
        );
        assert_eq!(
            s.model_table()
                .profile(Provider::OpenAI, "m")
                .context_window,
            128_000
        );
    }

    #[test]
    fn unknown_keys_in_model_tables_and_context_are_refused() {
        let err = load_user("[models.openai.m]\ncontext_windw = 4000\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("context_windw"), "{err}");
        let err = load_user("[context]\nthreshold = 50\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("threshold"), "{err}");
    }

    /// A data dir, a home and a project, each empty, plus a managed dir.
    struct Dirs {
        data: tempfile::TempDir,
        home: tempfile::TempDir,
        project: tempfile::TempDir,
        managed: tempfile::TempDir,
    }

    impl Dirs {
        fn new() -> Dirs {
            Dirs {
                data: tempfile::tempdir().unwrap(),
                home: tempfile::tempdir().unwrap(),
                project: tempfile::tempdir().unwrap(),
                managed: tempfile::tempdir().unwrap(),
            }
        }
        fn paths(&self) -> SettingsPaths {
            SettingsPaths {
                data_dir: self.data.path().to_path_buf(),
                home_dir: Some(self.home.path().to_path_buf()),
                project: self.project.path().to_path_buf(),
                managed_dir: Some(self.managed.path().to_path_buf()),
                trusted: false,
                extra: None,
                sources: None,
            }
        }
        fn write(dir: &tempfile::TempDir, rel: &str, text: &str) -> PathBuf {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }
        fn load(&self) -> Settings {
            Settings::load_with(&self.paths()).unwrap()
        }
    }

    #[test]
    fn run_settings_sit_above_local_and_sources_pick_the_files() {
        let d = Dirs::new();
        Dirs::write(&d.data, "settings.json", r#"{"model": "user"}"#);
        Dirs::write(
            &d.project,
            ".claude/settings.local.json",
            r#"{"model": "local", "permissions": {"deny": ["Bash(rm:*)"]}}"#,
        );
        let mut paths = d.paths();
        paths.extra = Some(ExtraSettings {
            label: PathBuf::from("--settings"),
            text: r#"{"model": "flag", "permissions": {"allow": ["Bash(ls:*)"]}}"#.into(),
        });
        let s = Settings::load_with(&paths).unwrap();
        assert_eq!(s.file.model.as_deref(), Some("flag"));
        // Trusted like the user's own: its allow rule holds in an untrusted folder.
        assert!(s.rules().iter().any(|r| r.text == "Bash(ls:*)"));
        paths.extra = None;
        paths.sources = Some(vec![SettingsScope::User]);
        let s = Settings::load_with(&paths).unwrap();
        assert_eq!(s.file.model.as_deref(), Some("user"));
        assert!(!s.rules().iter().any(|r| r.text == "Bash(rm:*)"));
        paths.extra = Some(ExtraSettings {
            label: PathBuf::from("--settings"),
            text: "[1]".into(),
        });
        assert!(Settings::load_with(&paths).is_err());
    }

    #[test]
    fn model_follows_user_then_project_then_local_then_managed() {
        let d = Dirs::new();
        Dirs::write(&d.data, "config.toml", "model = \"toml-user\"\n");
        let claude_user = Dirs::write(
            &d.home,
            ".claude/settings.json",
            r#"{"model": "claude-user"}"#,
        );
        let s = d.load();
        assert_eq!(s.file.model.as_deref(), Some("claude-user"));
        assert_eq!(s.model_source.as_ref(), Some(&claude_user));
        let cadre_user = Dirs::write(&d.data, "settings.json", r#"{"model": "cadre-user"}"#);
        assert_eq!(d.load().model_source, Some(cadre_user));
        // The project's config.toml beats every user file.
        let project_toml = Dirs::write(
            &d.project,
            ".cadre/config.toml",
            "model = \"toml-project\"\n",
        );
        let s = d.load();
        assert_eq!(s.file.model.as_deref(), Some("toml-project"));
        assert_eq!(s.model_source, Some(project_toml));
        Dirs::write(
            &d.project,
            ".claude/settings.json",
            r#"{"model": "claude-project"}"#,
        );
        assert_eq!(d.load().file.model.as_deref(), Some("claude-project"));
        Dirs::write(
            &d.project,
            ".cadre/settings.json",
            r#"{"model": "cadre-project"}"#,
        );
        assert_eq!(d.load().file.model.as_deref(), Some("cadre-project"));
        Dirs::write(
            &d.project,
            ".claude/settings.local.json",
            r#"{"model": "claude-local"}"#,
        );
        assert_eq!(d.load().file.model.as_deref(), Some("claude-local"));
        Dirs::write(
            &d.project,
            ".cadre/settings.local.json",
            r#"{"model": "cadre-local"}"#,
        );
        let s = d.load();
        assert_eq!(s.file.model.as_deref(), Some("cadre-local"));
        assert_eq!(s.managed_model, None);
        let managed = Dirs::write(
            &d.managed,
            "managed-settings.json",
            r#"{"model": "managed"}"#,
        );
        let s = d.load();
        assert_eq!(s.file.model.as_deref(), Some("managed"));
        assert_eq!(s.managed_model, Some(("managed".into(), managed)));
    }

    #[test]
    fn project_files_narrow_the_mode_and_managed_wins() {
        let d = Dirs::new();
        let mode = |s: &Settings| {
            let mut w = Vec::new();
            let m = s.file_mode(&mut w).unwrap().map(|c| (c.mode, c.managed));
            (m, w)
        };
        Dirs::write(
            &d.home,
            ".claude/settings.json",
            r#"{"permissions": {"defaultMode": "acceptEdits"}}"#,
        );
        assert_eq!(
            mode(&d.load()).0,
            Some((PermissionMode::AcceptEdits, false))
        );
        // A wider project mode is ignored with a warning naming the file.
        Dirs::write(
            &d.project,
            ".claude/settings.json",
            r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
        );
        let (m, w) = mode(&d.load());
        assert_eq!(m, Some((PermissionMode::AcceptEdits, false)));
        assert!(
            w.len() == 1 && w[0].contains("project settings (") && w[0].contains("wider"),
            "{w:?}"
        );
        // A stricter local mode applies.
        Dirs::write(
            &d.project,
            ".claude/settings.local.json",
            r#"{"permissions": {"defaultMode": "plan"}}"#,
        );
        assert_eq!(mode(&d.load()).0, Some((PermissionMode::Plan, false)));
        // Managed replaces everything, even with a wider mode.
        Dirs::write(
            &d.managed,
            "managed-settings.json",
            r#"{"permissions": {"defaultMode": "default"}}"#,
        );
        assert_eq!(mode(&d.load()).0, Some((PermissionMode::Default, true)));
        // An unknown mode in a JSON file is a warning, not an error.
        Dirs::write(
            &d.managed,
            "managed-settings.json",
            r#"{"permissions": {"defaultMode": "auto"}}"#,
        );
        let (m, w) = mode(&d.load());
        assert_eq!(m, Some((PermissionMode::Plan, false)));
        assert!(
            w.iter()
                .any(|w| w.contains("unknown permission mode 'auto'")),
            "{w:?}"
        );
    }

    #[test]
    fn bypass_is_refused_when_any_file_disables_it() {
        let d = Dirs::new();
        Dirs::write(
            &d.data,
            "settings.json",
            r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
        );
        let mut w = Vec::new();
        let m = d.load().file_mode(&mut w).unwrap().map(|c| c.mode);
        assert_eq!(m, Some(PermissionMode::BypassPermissions));
        let managed = Dirs::write(
            &d.managed,
            "managed-settings.json",
            r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#,
        );
        let s = d.load();
        assert_eq!(s.bypass_disabled_by.as_ref(), Some(&managed));
        let m = s.file_mode(&mut w).unwrap();
        assert_eq!(m, None);
        assert!(
            w.iter().any(|w| w.contains("bypassPermissions ignored")),
            "{w:?}"
        );
    }

    #[test]
    fn rules_keep_their_sources_and_project_allow_rules_are_dropped() {
        let d = Dirs::new();
        Dirs::write(
            &d.data,
            "config.toml",
            "[permissions]\nallow = [\"Read\"]\n",
        );
        let user = Dirs::write(
            &d.home,
            ".claude/settings.json",
            r#"{"permissions": {"allow": ["Bash(ls:*)"], "deny": ["WebFetch"]}}"#,
        );
        let project = Dirs::write(
            &d.project,
            ".claude/settings.json",
            r#"{"permissions": {"allow": ["Bash"], "ask": ["Edit"], "deny": ["Bash(rm:*)"]}, "env": {"X": "1"}}"#,
        );
        let managed = Dirs::write(
            &d.managed,
            "managed-settings.json",
            r#"{"permissions": {"deny": ["Bash(curl:*)"]}, "env": {"Y": "2"}}"#,
        );
        Dirs::write(
            &d.data,
            "settings.json",
            r#"{"env": {"Y": "user", "Z": "3"}}"#,
        );
        let s = d.load();
        let rules: Vec<(RuleKind, String, String)> = s
            .rules()
            .into_iter()
            .map(|r| (r.kind, r.text, r.source))
            .collect();
        let shown = |scope: &str, p: &Path| format!("{scope} ({})", p.display());
        assert_eq!(
            rules,
            vec![
                (
                    RuleKind::Allow,
                    "Read".into(),
                    shown("user config", &d.data.path().join("config.toml"))
                ),
                (
                    RuleKind::Allow,
                    "Bash(ls:*)".into(),
                    shown("user settings", &user)
                ),
                (
                    RuleKind::Deny,
                    "WebFetch".into(),
                    shown("user settings", &user)
                ),
                (
                    RuleKind::Ask,
                    "Edit".into(),
                    shown("project settings", &project)
                ),
                (
                    RuleKind::Deny,
                    "Bash(rm:*)".into(),
                    shown("project settings", &project)
                ),
                (
                    RuleKind::Deny,
                    "Bash(curl:*)".into(),
                    shown("managed settings", &managed)
                ),
            ]
        );
        // One warning names every held-back entry.
        let untrusted: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.contains("not trusted"))
            .collect();
        assert_eq!(untrusted.len(), 1, "{:?}", s.warnings);
        assert!(
            untrusted[0].contains("permissions.allow (Bash)") && untrusted[0].contains("env (X)"),
            "{untrusted:?}"
        );
        let env: Vec<(&str, &str)> = s
            .env
            .iter()
            .map(|(k, (v, _))| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [("Y", "2"), ("Z", "3")],
            "managed env wins; project env dropped"
        );
    }
}
