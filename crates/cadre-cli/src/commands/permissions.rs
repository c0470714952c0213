//! `/permissions`: the session's permission mode and the rules in force,
//! each with where it comes from.

use cadre_core::permissions::PermissionMode;
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
    let mode_source = mode_source(
        mode,
        ctx.perms.permission_mode.is_some(),
        ctx.agents.agent.as_deref(),
        (settings.user_permissions.default_mode.as_deref(), &user),
        (
            settings.project_permissions.default_mode.as_deref(),
            &project,
        ),
    );
    let mut lines = vec![match ctx.view.mode() {
        // Changed in the session: that is the mode in force now.
        Some(now) if now != mode => {
            format!(
                "permission mode: {now} (changed in this session; started as {mode}, from {mode_source})"
            )
        }
        _ => format!("permission mode: {mode} (from {mode_source})"),
    }];
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

/// Where the mode in force comes from, decided as setup decides the mode:
/// the flag; else the user's default mode, over which a project's applies
/// only when at least as strict; `--agent` may then change it through its
/// definition. `user` and `project`: each file's default mode and its label.
fn mode_source(
    mode: PermissionMode,
    flag: bool,
    agent: Option<&str>,
    user: (Option<&str>, &str),
    project: (Option<&str>, &str),
) -> String {
    if flag {
        return "--permission-mode".to_string();
    }
    let parse = |m: Option<&str>| m.and_then(|m| m.parse::<PermissionMode>().ok());
    let (mut config_mode, mut config_source) = match parse(user.0) {
        Some(m) => (m, user.1.to_string()),
        None => (PermissionMode::Default, "the default".to_string()),
    };
    if let Some(p) = parse(project.0)
        && p.strictness() >= config_mode.strictness()
    {
        (config_mode, config_source) = (p, project.1.to_string());
    }
    match agent {
        Some(name) if mode != config_mode => {
            format!("--agent {name}, from its definition; {config_source} says {config_mode}")
        }
        _ => config_source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_names_where_it_comes_from() {
        use PermissionMode::{AcceptEdits, Default, Plan};
        let user = |m| (m, "user config");
        let project = |m| (m, "project config");
        let source = |mode, flag, agent, u, p| mode_source(mode, flag, agent, user(u), project(p));
        assert_eq!(
            source(Plan, true, None, Some("plan"), None),
            "--permission-mode"
        );
        assert_eq!(source(Default, false, None, None, None), "the default");
        assert_eq!(
            source(AcceptEdits, false, None, Some("acceptEdits"), None),
            "user config"
        );
        // A project's mode applies only when at least as strict as the user's.
        assert_eq!(
            source(Plan, false, None, Some("acceptEdits"), Some("plan")),
            "project config"
        );
        assert_eq!(
            source(
                AcceptEdits,
                false,
                None,
                Some("acceptEdits"),
                Some("bypassPermissions")
            ),
            "user config"
        );
        // `--agent` counts only when its definition changed the mode.
        assert_eq!(
            source(Plan, false, Some("reviewer"), Some("acceptEdits"), None),
            "--agent reviewer, from its definition; user config says acceptEdits"
        );
        assert_eq!(
            source(
                AcceptEdits,
                false,
                Some("reviewer"),
                Some("acceptEdits"),
                None
            ),
            "user config"
        );
    }
}
