//! `/permissions`: the session's permission mode and the rules in force,
//! each with where it comes from.

use cadre_core::permissions::rules::RuleKind;

use super::CommandContext;

/// The mode, its source, and every rule with its source.
pub fn describe(ctx: &CommandContext<'_>) -> String {
    let runtime = ctx.runtime;
    let settings = &runtime.settings;
    let user_file = runtime.home.join("config.toml");
    let project_file = runtime.cwd.join(".cadre").join("config.toml");
    let user = format!("user config ({})", user_file.display());
    let project = format!("project config ({})", project_file.display());
    let mode = runtime.policy.mode;
    let mode_source = if ctx.perms.permission_mode.is_some() {
        "--permission-mode".to_string()
    } else if let Some(spec) = &runtime.main_spec
        && spec.mode.mode == mode
        && ctx.agents.agent.is_some()
    {
        format!(
            "--agent {}",
            ctx.agents.agent.as_deref().unwrap_or_default()
        )
    } else if settings
        .project_permissions
        .default_mode
        .as_deref()
        .and_then(|m| m.parse().ok())
        == Some(mode)
    {
        project.clone()
    } else if settings.user_permissions.default_mode.is_some() {
        user.clone()
    } else {
        "the default".to_string()
    };
    let mut lines = vec![format!("permission mode: {mode} (from {mode_source})")];
    let sources = [
        (RuleKind::Allow, &ctx.perms.allow, "--allow".to_string()),
        (RuleKind::Ask, &ctx.perms.ask, "--ask".to_string()),
        (RuleKind::Deny, &ctx.perms.deny, "--deny".to_string()),
        (
            RuleKind::Allow,
            &settings.user_permissions.allow,
            user.clone(),
        ),
        (RuleKind::Ask, &settings.user_permissions.ask, user.clone()),
        (RuleKind::Deny, &settings.user_permissions.deny, user),
        (
            RuleKind::Ask,
            &settings.project_permissions.ask,
            project.clone(),
        ),
        (RuleKind::Deny, &settings.project_permissions.deny, project),
    ];
    let mut rules: Vec<(RuleKind, String, String)> = Vec::new();
    for (kind, texts, source) in sources {
        for text in texts {
            rules.push((kind, text.trim().to_string(), source.clone()));
        }
    }
    for (agent, rule) in ctx.view.granted() {
        let whose = if agent == "main" {
            "this session".to_string()
        } else {
            format!("this session, subagent {agent} only")
        };
        rules.push((
            RuleKind::Allow,
            rule.clone(),
            format!("{whose}: \"yes, don't ask again\""),
        ));
    }
    if rules.is_empty() {
        lines.push("rules: none".into());
    } else {
        lines.push("rules:".into());
        let width = rules
            .iter()
            .map(|(_, t, _)| t.chars().count())
            .max()
            .unwrap_or(0);
        for (kind, text, source) in rules {
            lines.push(format!("  {:<5}  {text:<width$}  {source}", kind.as_str()));
        }
    }
    lines.push(
        match runtime.sandbox {
            Some(_) => "sandbox: Bash commands run in the sandbox (Landlock)",
            None => "sandbox: none on this kernel (Bash commands are asked about)",
        }
        .to_string(),
    );
    lines.push(
        "a project config's allow rules are never applied; it may only add ask and deny rules"
            .to_string(),
    );
    lines.join("\n")
}
