//! The `hooks` value of a settings file or definition: parsing, and picking
//! the hooks whose matcher fits an event's subject.

use crate::config::Settings;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{HookCommand, HookEvent};

/// Timeout of a command hook without `timeout` (Claude Code's default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest timeout accepted; larger values are lowered to it.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// A `hooks` value that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: hooks{}: {message}", event.as_ref().map(|e| format!(" for `{e}`")).unwrap_or_default())]
pub struct HookConfigError {
    /// Where the value came from (the `source` given to [`HookSet::parse`]).
    pub origin: String,
    /// The event whose entry is wrong, when it is one event's.
    pub event: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Which subjects a group of hooks applies to.
#[derive(Debug, Clone)]
enum Matcher {
    /// `*`, "" or no matcher.
    All,
    /// Exact names (a matcher of only letters, digits, `_`, `-`, spaces,
    /// `|` and `,`).
    Names(Vec<String>),
    /// Anything else: an unanchored regular expression.
    Regex(regex::Regex),
}

impl Matcher {
    /// Reads a matcher as Claude Code does; `Err` holds the regex error.
    fn parse(text: &str) -> Result<Matcher, regex::Error> {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Matcher::All);
        }
        let plain = trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | ',' | '|' | '-'));
        if plain {
            let names = trimmed
                .split(['|', ','])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>();
            // "|" alone names nothing; treat it like no matcher rather than
            // a hook that can never run.
            return Ok(if names.is_empty() {
                Matcher::All
            } else {
                Matcher::Names(names)
            });
        }
        regex::Regex::new(trimmed).map(Matcher::Regex)
    }

    fn matches(&self, subject: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == subject),
            Matcher::Regex(re) => re.is_match(subject),
        }
    }
}

/// One `{"matcher": …, "hooks": […]}` entry.
#[derive(Debug, Clone)]
struct Group {
    matcher: Matcher,
    commands: Vec<HookCommand>,
}

/// Hooks of any number of sources, by event.
#[derive(Clone, Default, Debug)]
pub struct HookSet {
    groups: BTreeMap<HookEvent, Vec<Group>>,
}

impl HookSet {
    /// Parses the value of a `hooks` key. Returns the set plus warnings
    /// (unknown events, hook types other than `command`, `async`, `if`);
    /// shape errors and invalid matchers are `Err`, naming the event.
    pub fn parse(value: &Value, source: &str) -> Result<(HookSet, Vec<String>), HookConfigError> {
        let err = |event: Option<&str>, message: String| HookConfigError {
            origin: source.to_string(),
            event: event.map(str::to_string),
            message,
        };
        let Some(events) = value.as_object() else {
            return Err(err(
                None,
                format!(
                    "expected an object of event names, found {}",
                    kind_of(value)
                ),
            ));
        };
        let mut set = HookSet::default();
        let mut warnings = Vec::new();
        let mut warned_async = false;
        let mut warned_if = false;
        for (name, entries) in events {
            let Some(event) = HookEvent::parse(name) else {
                warnings.push(format!(
                    "{source}: hook event `{name}` is not supported yet, it will not run"
                ));
                continue;
            };
            let ev = Some(name.as_str());
            let Some(entries) = entries.as_array() else {
                return Err(err(
                    ev,
                    format!("expected a list of entries, found {}", kind_of(entries)),
                ));
            };
            for entry in entries {
                let Some(entry) = entry.as_object() else {
                    return Err(err(
                        ev,
                        format!(
                            "expected an entry object {{\"matcher\": …, \"hooks\": […]}}, found {}",
                            kind_of(entry)
                        ),
                    ));
                };
                let matcher = match entry.get("matcher") {
                    None | Some(Value::Null) => Matcher::All,
                    Some(Value::String(text)) => Matcher::parse(text)
                        .map_err(|e| err(ev, format!("invalid matcher `{text}`: {e}")))?,
                    Some(other) => {
                        return Err(err(
                            ev,
                            format!("`matcher` must be a string, found {}", kind_of(other)),
                        ));
                    }
                };
                let Some(hooks) = entry.get("hooks").and_then(Value::as_array) else {
                    return Err(err(ev, "an entry has no `hooks` list".to_string()));
                };
                let mut commands = Vec::new();
                for hook in hooks {
                    let Some(hook) = hook.as_object() else {
                        return Err(err(
                            ev,
                            format!("expected a hook object, found {}", kind_of(hook)),
                        ));
                    };
                    // A missing type is read as "command", the only kind
                    // that has a `command` field.
                    let kind = match hook.get("type") {
                        None => "command",
                        Some(Value::String(t)) => t.as_str(),
                        Some(other) => {
                            return Err(err(
                                ev,
                                format!("hook `type` must be a string, found {}", kind_of(other)),
                            ));
                        }
                    };
                    if kind != "command" {
                        warnings.push(format!(
                            "{source}: `{name}` hook of type `{kind}` is not supported yet (only `command`), it will not run"
                        ));
                        continue;
                    }
                    let command = match hook.get("command") {
                        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
                        _ => return Err(err(ev, "a command hook has no `command`".to_string())),
                    };
                    let timeout = match hook.get("timeout") {
                        None | Some(Value::Null) => DEFAULT_TIMEOUT,
                        Some(Value::Number(n)) => match n.as_f64() {
                            Some(secs) if secs > 0.0 && secs.is_finite() => {
                                Duration::from_secs_f64(secs.min(MAX_TIMEOUT.as_secs_f64()))
                            }
                            _ => {
                                return Err(err(
                                    ev,
                                    format!(
                                        "hook `{command}`: `timeout` must be a positive number of seconds"
                                    ),
                                ));
                            }
                        },
                        Some(other) => {
                            return Err(err(
                                ev,
                                format!(
                                    "hook `{command}`: `timeout` must be a number of seconds, found {}",
                                    kind_of(other)
                                ),
                            ));
                        }
                    };
                    if hook.get("async") == Some(&Value::Bool(true)) && !warned_async {
                        warned_async = true;
                        warnings.push(format!(
                            "{source}: `async` hooks are not supported yet; they run as ordinary hooks and are waited for"
                        ));
                    }
                    if hook.get("if").is_some() && !warned_if {
                        warned_if = true;
                        warnings.push(format!(
                            "{source}: the hook condition `if` is not supported yet; such hooks run for every event their matcher selects"
                        ));
                    }
                    commands.push(HookCommand {
                        command,
                        timeout,
                        source: source.to_string(),
                        env: Vec::new(),
                    });
                }
                if !commands.is_empty() {
                    set.groups
                        .entry(event)
                        .or_default()
                        .push(Group { matcher, commands });
                }
            }
        }
        Ok((set, warnings))
    }

    /// Every command with its event, in event order.
    pub fn commands(&self) -> Vec<(HookEvent, &HookCommand)> {
        self.groups
            .iter()
            .flat_map(|(event, groups)| {
                groups
                    .iter()
                    .flat_map(move |g| g.commands.iter().map(move |c| (*event, c)))
            })
            .collect()
    }

    /// Adds `other`'s hooks after this set's.
    pub fn extend(&mut self, other: HookSet) {
        for (event, groups) in other.groups {
            self.groups.entry(event).or_default().extend(groups);
        }
    }

    /// Whether no event has a hook.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The events with at least one hook, in [`HookEvent::ALL`] order.
    pub fn events(&self) -> Vec<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .filter(|e| self.groups.contains_key(e))
            .collect()
    }

    /// The commands for `event` whose matcher matches `subject` (a tool
    /// name, an agent type, the SessionStart source, the PreCompact trigger,
    /// the Notification type; `None` for events without a subject, where
    /// every hook applies). Identical command strings appear once, the first
    /// configured one kept.
    pub fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<HookCommand> {
        let mut out: Vec<HookCommand> = Vec::new();
        for group in self.groups.get(&event).into_iter().flatten() {
            if let Some(subject) = subject
                && !group.matcher.matches(subject)
            {
                continue;
            }
            for command in &group.commands {
                if !out.iter().any(|c| c.command == command.command) {
                    out.push(command.clone());
                }
            }
        }
        out
    }

    /// This set with its `Stop` hooks filed under `SubagentStop` (a
    /// definition's own hooks, per Claude Code), after any already there.
    pub fn stop_as_subagent_stop(mut self) -> HookSet {
        if let Some(stop) = self.groups.remove(&HookEvent::Stop) {
            self.groups
                .entry(HookEvent::SubagentStop)
                .or_default()
                .extend(stop);
        }
        self
    }
}

/// A JSON value's kind, for error messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl HookSet {
    /// The hooks of the settings files that apply (an untrusted project's
    /// are already gone), each labelled with its file, and warnings for
    /// what cannot run. `disableAllHooks` in any file that applies turns
    /// them all off.
    pub fn from_settings(settings: &Settings) -> (HookSet, Vec<String>) {
        let mut set = HookSet::default();
        let mut warnings = Vec::new();
        if let Some(off) = settings.json.iter().find(|j| j.settings.disable_all_hooks) {
            if settings.json.iter().any(|j| j.settings.hooks.is_some()) {
                warnings.push(format!(
                    "{}: disableAllHooks is set, so no hook runs",
                    off.path.display()
                ));
            }
            return (set, warnings);
        }
        for j in &settings.json {
            let Some(value) = &j.settings.hooks else {
                continue;
            };
            let source = format!("{} ({})", j.scope.label(), j.path.display());
            match HookSet::parse(value, &source) {
                Ok((hooks, w)) => {
                    set.extend(hooks);
                    warnings.extend(w);
                }
                Err(e) => warnings.push(format!("{e}; the hooks of this file will not run")),
            }
        }
        (set, warnings)
    }
}

impl HookSet {
    /// The hooks of the enabled plugins (`hooks/hooks.json`, manifest paths
    /// and inline objects), with `CLAUDE_PLUGIN_ROOT` and
    /// `CLAUDE_PLUGIN_DATA` in their environment (so `${CLAUDE_PLUGIN_ROOT}`
    /// in a command means the plugin's folder). None when a settings file has `disableAllHooks`.
    pub fn from_plugins(
        plugins: &crate::plugins::PluginSet,
        settings: &Settings,
    ) -> (HookSet, Vec<String>) {
        use crate::plugins::ComponentConfig;
        let mut set = HookSet::default();
        let mut warnings = Vec::new();
        if settings.json.iter().any(|j| j.settings.disable_all_hooks) {
            return (set, warnings);
        }
        for plugin in &plugins.plugins {
            for config in &plugin.hooks {
                let (value, source) = match config {
                    ComponentConfig::File(path) => {
                        let source = format!("plugin {} ({})", plugin.id, path.display());
                        let text = match crate::small_file::read_small_text(path, 1024 * 1024) {
                            Ok(t) => t,
                            Err(e) => {
                                warnings.push(format!("{source}: {e}; its hooks will not run"));
                                continue;
                            }
                        };
                        match serde_json::from_str::<Value>(&text) {
                            Ok(v) => (v, source),
                            Err(e) => {
                                warnings.push(format!(
                                    "{source}: not valid JSON ({e}); its hooks will not run"
                                ));
                                continue;
                            }
                        }
                    }
                    ComponentConfig::Inline(v) => {
                        (v.clone(), format!("plugin {} (manifest hooks)", plugin.id))
                    }
                };
                // `hooks/hooks.json` holds `{"hooks": {…}}`; an inline value may be the events.
                let events = match value.get("hooks") {
                    Some(inner @ Value::Object(_)) => inner.clone(),
                    _ => value,
                };
                match HookSet::parse(&events, &source) {
                    Ok((mut hooks, w)) => {
                        let env = plugin.env();
                        for groups in hooks.groups.values_mut() {
                            for group in groups {
                                for c in &mut group.commands {
                                    // The shell expands `${CLAUDE_PLUGIN_ROOT}` from the
                                    // environment: the same result as text substitution,
                                    // without splicing a path into the command line.
                                    c.env = env.clone();
                                }
                            }
                        }
                        set.extend(hooks);
                        warnings.extend(w);
                    }
                    Err(e) => warnings.push(format!("{e}; the hooks of this file will not run")),
                }
            }
        }
        (set, warnings)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: Value) -> (HookSet, Vec<String>) {
        HookSet::parse(&value, "test settings").expect("valid hooks")
    }

    fn one(event: &str, matcher: Value, command: &str) -> Value {
        let mut entry = json!({"hooks": [{"type": "command", "command": command}]});
        if !matcher.is_null()
            && let Some(obj) = entry.as_object_mut()
        {
            obj.insert("matcher".into(), matcher);
        }
        json!({ event: [entry] })
    }

    fn names(set: &HookSet, event: HookEvent, subject: Option<&str>) -> Vec<String> {
        set.matching(event, subject)
            .into_iter()
            .map(|c| c.command)
            .collect()
    }

    #[test]
    fn matchers() {
        let cases: &[(Value, &[&str], &[&str])] = &[
            (json!("Bash"), &["Bash"], &["bash", "BashOutput", "MyBash"]),
            (
                json!("Edit|Write"),
                &["Edit", "Write"],
                &["MultiEdit", "Edit|Write", "Read"],
            ),
            (
                json!("Edit, Write ,Read"),
                &["Edit", "Write", "Read"],
                &["Glob"],
            ),
            (
                json!("mcp__.*"),
                &["mcp__github__search", "x_mcp__y"],
                &["Bash"],
            ),
            (
                json!("^Notebook.*Edit$"),
                &["NotebookEdit"],
                &["NotebookEditX"],
            ),
            (json!("*"), &["Bash", "anything"], &[]),
            (json!(""), &["Bash"], &[]),
            (Value::Null, &["Bash"], &[]),
            (json!("code-reviewer"), &["code-reviewer"], &["code"]),
        ];
        for (matcher, yes, no) in cases {
            let (set, warnings) = parse(one("PreToolUse", matcher.clone(), "hook"));
            assert!(warnings.is_empty(), "{warnings:?}");
            for subject in *yes {
                assert_eq!(
                    names(&set, HookEvent::PreToolUse, Some(subject)),
                    ["hook"],
                    "{matcher} should match {subject}"
                );
            }
            for subject in *no {
                assert!(
                    names(&set, HookEvent::PreToolUse, Some(subject)).is_empty(),
                    "{matcher} should not match {subject}"
                );
            }
            // Without a subject every hook of the event applies.
            assert_eq!(names(&set, HookEvent::PreToolUse, None), ["hook"]);
            assert!(names(&set, HookEvent::PostToolUse, Some("Bash")).is_empty());
        }
    }

    #[test]
    fn invalid_regex_is_an_error_naming_it() {
        let e = HookSet::parse(&one("PreToolUse", json!("Bash("), "x"), "user settings")
            .expect_err("invalid regex");
        let text = e.to_string();
        assert!(
            text.starts_with("user settings: hooks for `PreToolUse`: invalid matcher `Bash(`"),
            "{text}"
        );
    }

    #[test]
    fn shape_errors_name_the_event() {
        let cases = [
            (json!([]), "expected an object of event names, found a list"),
            (
                json!({"Stop": {"hooks": []}}),
                "hooks for `Stop`: expected a list of entries, found an object",
            ),
            (
                json!({"Stop": [{"matcher": "*"}]}),
                "hooks for `Stop`: an entry has no `hooks` list",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command"}]}]}),
                "hooks for `PreToolUse`: a command hook has no `command`",
            ),
            (
                json!({"Stop": [{"hooks": [{"command": "x", "timeout": "60"}]}]}),
                "`timeout` must be a number of seconds, found a string",
            ),
            (
                json!({"Stop": [{"matcher": 3, "hooks": []}]}),
                "`matcher` must be a string, found a number",
            ),
        ];
        for (value, expected) in cases {
            let text = HookSet::parse(&value, "src")
                .expect_err("shape error")
                .to_string();
            assert!(text.contains(expected), "{text} lacks {expected}");
        }
    }

    #[test]
    fn warnings_for_what_does_not_run() {
        let (set, warnings) = parse(json!({
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "a"}]}],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "b"}]}],
            "Stop": [{"hooks": [
                {"type": "prompt", "prompt": "is it done?"},
                {"type": "http", "url": "http://localhost"},
                {"type": "command", "command": "c", "async": true},
                {"type": "command", "command": "d", "async": true},
            ]}],
        }));
        assert_eq!(warnings.len(), 5, "{warnings:#?}");
        assert!(warnings[0].contains("`PostToolUseFailure` is not supported yet, it will not run"));
        assert!(warnings[1].contains("`PermissionRequest` is not supported yet"));
        assert!(warnings[2].contains("of type `prompt` is not supported yet"));
        assert!(warnings[3].contains("of type `http`"));
        assert!(warnings[4].contains("`async`"));
        assert!(warnings.iter().all(|w| w.starts_with("test settings: ")));
        // The async hooks still run, as ordinary ones.
        assert_eq!(names(&set, HookEvent::Stop, None), ["c", "d"]);
        assert_eq!(set.events(), [HookEvent::Stop]);
    }

    #[test]
    fn timeouts_default_and_cap() {
        let (set, _) = parse(json!({"Stop": [{"hooks": [
            {"type": "command", "command": "a"},
            {"type": "command", "command": "b", "timeout": 5},
            {"type": "command", "command": "c", "timeout": 0.5},
            {"type": "command", "command": "d", "timeout": 99999},
        ]}]}));
        let timeouts: Vec<Duration> = set
            .matching(HookEvent::Stop, None)
            .iter()
            .map(|c| c.timeout)
            .collect();
        assert_eq!(
            timeouts,
            [
                Duration::from_secs(600),
                Duration::from_secs(5),
                Duration::from_millis(500),
                Duration::from_secs(3600)
            ]
        );
    }

    #[test]
    fn identical_commands_once_and_sources_merge() {
        let (mut set, _) = parse(json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "same"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "same"},
                                       {"type": "command", "command": "other"}]},
        ]}));
        assert_eq!(
            names(&set, HookEvent::PreToolUse, Some("Bash")),
            ["same", "other"]
        );
        let (agent, _) = HookSet::parse(
            &json!({"Stop": [{"hooks": [{"type": "command", "command": "s"}]}],
                    "PreToolUse": [{"hooks": [{"type": "command", "command": "third"}]}]}),
            "agent definition reviewer",
        )
        .expect("valid");
        let agent = agent.stop_as_subagent_stop();
        assert_eq!(
            agent.events(),
            [HookEvent::PreToolUse, HookEvent::SubagentStop]
        );
        set.extend(agent);
        let got = set.matching(HookEvent::PreToolUse, Some("Read"));
        assert_eq!(
            got.iter().map(|c| c.command.as_str()).collect::<Vec<_>>(),
            ["same", "other", "third"]
        );
        assert_eq!(got[2].source, "agent definition reviewer");
        assert_eq!(names(&set, HookEvent::SubagentStop, Some("x")), ["s"]);
        assert!(names(&set, HookEvent::Stop, None).is_empty());
        assert!(!set.is_empty());
        assert!(HookSet::default().is_empty());
    }
}
