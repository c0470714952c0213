//! `/permissions`: the session's permission mode and the rules in force,
//! each with where it comes from.

use cadre_core::permissions::PermissionMode;
use cadre_core::permissions::rules::RuleKind;

use super::CommandContext;

/// The mode the session started in and where it comes from.
pub(super) fn started_mode(ctx: &CommandContext<'_>) -> (PermissionMode, String) {
    let runtime = ctx.runtime;
    let settings = &runtime.settings;
    let mode = runtime.policy.mode;
    // The settings files' choice (every file, managed included) stands in for the user's.
    let file_mode = settings.file_mode(&mut Vec::new()).ok().flatten();
    let source = mode_source(
        mode,
        // A managed mode wins over a wider flag.
        ctx.perms.permission_mode.is_some()
            && !file_mode
                .as_ref()
                .is_some_and(|c| c.managed && c.mode == mode),
        ctx.agents.agent.as_deref(),
        (
            file_mode.as_ref().map(|c| c.mode.as_str()),
            file_mode.as_ref().map_or("", |c| c.source.as_str()),
        ),
        (None, ""),
    );
    (mode, source)
}

/// The mode, its source, and every rule with its source.
pub fn describe(ctx: &CommandContext<'_>) -> String {
    let runtime = ctx.runtime;
    let settings = &runtime.settings;
    let (mode, mode_source) = started_mode(ctx);
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
    ];
    let mut rules: Vec<(RuleKind, String, String)> = Vec::new();
    for (kind, texts, source) in sources {
        for text in texts {
            rules.push((kind, text.trim().to_string(), source.clone()));
        }
    }
    // Every settings file's rules (config.toml and settings.json), each with its file.
    for r in settings.rules() {
        rules.push((r.kind, r.text, r.source));
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
    // What the folder's trust decides: said as it stands for this session.
    lines.push(
        if settings.project_trusted {
            "this folder is trusted: its project files' allow rules apply (listed above)"
        } else {
            "this folder is not trusted: its project files' allow rules are not applied (their ask and deny rules are); trust the folder to apply them"
        }
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
