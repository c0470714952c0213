//! Turns flags, environment and config files into a ready model client, tool
//! registry and agent. Precedence: flag → environment → project config → user config → default.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use cadre_core::agent::{Agent, EventSink, TurnLimits, build_system_prompt};
use cadre_core::config::{Settings, data_dir, ensure_private_dir};
use cadre_core::model::{ClientConfig, ModelClient, Provider};
use cadre_core::tools::{DEFAULT_OUTPUT_CAP, ToolContext, ToolRegistry};

use crate::ModelArgs;

/// Tries per request for a transient failure (429/5xx), first try included.
const MAX_ATTEMPTS: u32 = 4;
/// Output tokens per request when config says nothing.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Everything a front end needs to start agents.
pub struct Runtime {
    /// The project directory.
    pub cwd: PathBuf,
    /// Merged config.
    pub settings: Settings,
    /// The shared model client.
    pub client: ModelClient,
    /// Per-turn limits.
    pub limits: TurnLimits,
    /// Tool output cap.
    pub output_cap: usize,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Builds the runtime for the current directory.
pub fn prepare(args: &ModelArgs) -> Result<Runtime> {
    // reqwest is built without a default TLS provider (to avoid a C build);
    // install ring once so HTTPS endpoints work.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = data_dir()?;
    ensure_private_dir(&home)?;
    let settings = Settings::load(&home, &cwd)?;
    let file = &settings.file;

    let provider_name = env_nonempty("CADRE_PROVIDER").or_else(|| file.provider.clone());
    let provider: Provider = match (args.provider, provider_name) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().map_err(anyhow::Error::msg)?,
        // With no choice made, follow whichever key is present.
        (None, None)
            if env_nonempty("ANTHROPIC_API_KEY").is_none()
                && env_nonempty("OPENAI_API_KEY").is_some() =>
        {
            Provider::OpenAI
        }
        (None, None) => Provider::Anthropic,
    };
    let base_url = args
        .base_url
        .clone()
        .or_else(|| env_nonempty("CADRE_BASE_URL"))
        .or_else(|| file.base_url.clone())
        .unwrap_or_else(|| provider.default_base_url().to_string());
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!("base URL '{base_url}' must start with http:// or https://");
    }
    let model_name = args
        .model
        .clone()
        .or_else(|| env_nonempty("CADRE_MODEL"))
        .or_else(|| file.model.clone())
        .unwrap_or_else(|| provider.default_model().to_string());
    let model = settings.resolve_model(provider, &model_name);
    let api_key = env_nonempty(provider.key_env());

    let client = ModelClient::new(ClientConfig {
        provider,
        base_url,
        api_key,
        model,
        max_tokens: file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        max_attempts: MAX_ATTEMPTS,
    })?;
    let defaults = TurnLimits::default();
    let limits = TurnLimits {
        max_requests: file
            .limits
            .max_requests_per_turn
            .unwrap_or(defaults.max_requests),
        max_tool_calls: file
            .limits
            .max_tool_calls_per_turn
            .unwrap_or(defaults.max_tool_calls),
    };
    let output_cap = file.tools.output_cap_bytes.unwrap_or(DEFAULT_OUTPUT_CAP);
    Ok(Runtime {
        cwd,
        settings,
        client,
        limits,
        output_cap,
    })
}

impl Runtime {
    /// The top-level agent, sending its events to `events`.
    pub fn main_agent(&self, events: EventSink) -> Agent {
        let mut ctx = ToolContext::new(self.cwd.clone());
        ctx.output_cap = self.output_cap;
        Agent::new(
            "main",
            self.client.clone(),
            ToolRegistry::builtin(),
            ctx,
            build_system_prompt(&self.cwd),
            self.limits,
            events,
        )
    }
}
