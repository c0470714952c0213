//! Turns flags, environment and config files into a ready model client,
//! permission policy, approval gate and agent. Precedence: flag → environment →
//! project config → user config → default; permissions from a project file can
//! only narrow what the user allowed.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use cadre_core::agent::{Agent, AgentSetup, EventSink, TurnLimits, build_system_prompt};
use cadre_core::config::{Settings, data_dir, ensure_private_dir};
use cadre_core::model::{ClientConfig, ModelClient, Provider};
use cadre_core::permissions::rules::{RuleKind, RuleSet, parse_rule};
use cadre_core::permissions::{ApprovalGate, ApprovalSource, PermissionMode, PermissionPolicy};
use cadre_core::sandbox::{SandboxPolicy, SandboxSupport, probe};
use cadre_core::session::SessionLog;
use cadre_core::tools::{DEFAULT_OUTPUT_CAP, ToolContext, ToolRegistry};

use crate::{ModelArgs, PermissionArgs, UsageError};

/// Tries per request for a transient failure (429/5xx), first try included.
const MAX_ATTEMPTS: u32 = 4;
/// Output tokens per request when config says nothing.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Everything a front end needs to start agents.
pub struct Runtime {
    /// The project directory.
    pub cwd: PathBuf,
    /// The data directory.
    pub home: PathBuf,
    /// The shared model client.
    pub client: ModelClient,
    /// Per-turn limits.
    pub limits: TurnLimits,
    /// Tool output cap.
    pub output_cap: usize,
    /// Session permission policy.
    pub policy: Arc<PermissionPolicy>,
    /// How Bash commands are sandboxed (none where Landlock is missing).
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// Warnings to show once.
    pub warnings: Vec<String>,
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Builds the runtime for the current directory.
pub fn prepare(args: &ModelArgs, perms: &PermissionArgs) -> Result<Runtime> {
    // reqwest is built without a default TLS provider (to avoid a C build);
    // install ring once so HTTPS endpoints work.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = data_dir()?;
    ensure_private_dir(&home)?;
    let settings = Settings::load(&home, &cwd)?;
    let mut warnings = settings.warnings.clone();
    let file = &settings.file;

    let provider_name = env_nonempty("CADRE_PROVIDER").or_else(|| file.provider.clone());
    let provider: Provider = match (args.provider, provider_name) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().map_err(|e: String| UsageError(e))?,
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
        bail!(UsageError(format!(
            "base URL '{base_url}' must start with http:// or https://"
        )));
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

    let mode = permission_mode(perms, &settings, &mut warnings)?;
    let rules = permission_rules(perms, &settings)?;
    let support = probe();
    let sandbox = match support {
        SandboxSupport::Unavailable => {
            warnings.push(
                "this kernel has no Landlock: Bash commands cannot be sandboxed and will be asked about"
                    .into(),
            );
            None
        }
        _ => Some(Arc::new(SandboxPolicy::new(
            cwd.clone(),
            home.clone(),
            file.sandbox.network.unwrap_or(false),
        ))),
    };
    let policy = Arc::new(PermissionPolicy::new(
        mode,
        rules,
        &cwd,
        &home,
        sandbox.is_some(),
    ));
    Ok(Runtime {
        cwd,
        home,

        client,
        limits,
        output_cap,
        policy,
        sandbox,
        warnings,
    })
}

/// Flag, else the user's default mode; a project's default mode applies only
/// if it is at least as strict.
fn permission_mode(
    perms: &PermissionArgs,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<PermissionMode> {
    if let Some(m) = perms.permission_mode {
        return Ok(m);
    }
    let parse = |s: &str| s.parse::<PermissionMode>().map_err(UsageError);
    let mut mode = match &settings.user_permissions.default_mode {
        Some(m) => parse(m)?,
        None => PermissionMode::Default,
    };
    if let Some(p) = &settings.project_permissions.default_mode {
        let project = parse(p)?;
        if project.strictness() >= mode.strictness() {
            mode = project;
        } else {
            warnings.push(format!(
                "the project config asks for permission mode {project}, which is wider than {mode}; ignored"
            ));
        }
    }
    Ok(mode)
}

/// Rules from flags, the user file and the project file (its allow rules were dropped on load).
fn permission_rules(perms: &PermissionArgs, settings: &Settings) -> Result<RuleSet> {
    let home = dirs_home();
    let mut set = RuleSet::new();
    let sources = [
        (RuleKind::Allow, &perms.allow),
        (RuleKind::Ask, &perms.ask),
        (RuleKind::Deny, &perms.deny),
        (RuleKind::Allow, &settings.user_permissions.allow),
        (RuleKind::Ask, &settings.user_permissions.ask),
        (RuleKind::Deny, &settings.user_permissions.deny),
        (RuleKind::Ask, &settings.project_permissions.ask),
        (RuleKind::Deny, &settings.project_permissions.deny),
    ];
    for (kind, texts) in sources {
        for text in texts {
            let rule =
                parse_rule(kind, text, home.as_deref()).map_err(|e| UsageError(e.to_string()))?;
            set.add(rule);
        }
    }
    Ok(set)
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

impl Runtime {
    /// The top-level agent, sending its events to `events` and asking through `approvals`.
    pub fn main_agent(
        &self,
        events: EventSink,
        approvals: Arc<dyn ApprovalSource>,
        log: Option<Arc<SessionLog>>,
    ) -> Agent {
        let mut ctx = ToolContext::new(self.cwd.clone());
        ctx.output_cap = self.output_cap;
        ctx.sandbox = self.sandbox.clone();
        Agent::new(AgentSetup {
            id: "main".into(),
            label: None,
            client: self.client.clone(),
            tools: ToolRegistry::builtin(),
            ctx,
            system: build_system_prompt(&self.cwd),
            limits: self.limits,
            gate: Arc::new(ApprovalGate::new(approvals, events.clone())),
            events,
            policy: self.policy.clone(),
            log,
        })
    }
}
