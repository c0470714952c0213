//! The permission decision as a table: mode × tool effect × rule (kind and
//! scope) × where the rule comes from. The expected outcomes are DESIGN §5's
//! and Claude Code's (permission modes): deny beats ask beats allow, deny
//! rules hold in every mode, plan is read-only whatever rules say, dontAsk
//! turns every question into a denial, bypassPermissions runs everything, and
//! a project file may add ask and deny rules but not allow rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cadre_core::config::Settings;
use cadre_core::permissions::rules::{RuleKind, RuleSet, parse_rule};
use cadre_core::permissions::{
    Decision, PermissionMode, PermissionPolicy, PermissionTracker, ToolEffect,
};
use serde_json::{Value, json};

/// The modes, in the order of the columns below.
const MODES: [PermissionMode; 5] = [
    PermissionMode::Default,
    PermissionMode::AcceptEdits,
    PermissionMode::Plan,
    PermissionMode::DontAsk,
    PermissionMode::BypassPermissions,
];

/// One call per effect (in `ToolEffect::ALL` order), with a rule naming its
/// whole tool, a pattern that matches the call and one that does not.
struct Probe {
    effect: ToolEffect,
    tool: &'static str,
    input: Value,
    whole_tool: &'static str,
    pattern: &'static str,
    other_pattern: &'static str,
}

fn probes() -> Vec<Probe> {
    vec![
        Probe {
            effect: ToolEffect::ReadOnly,
            tool: "Read",
            input: json!({"file_path": "src/a.rs"}),
            whole_tool: "Read",
            pattern: "Read(src/**)",
            other_pattern: "Read(docs/**)",
        },
        Probe {
            effect: ToolEffect::Edit,
            tool: "Edit",
            input: json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"}),
            whole_tool: "Edit",
            pattern: "Edit(src/**)",
            other_pattern: "Edit(docs/**)",
        },
        Probe {
            effect: ToolEffect::Execute,
            tool: "Bash",
            input: json!({"command": "git status -s"}),
            whole_tool: "Bash",
            pattern: "Bash(git status:*)",
            other_pattern: "Bash(git push:*)",
        },
        Probe {
            effect: ToolEffect::Network,
            tool: "mcp__web__fetch",
            input: json!({"url": "http://127.0.0.1/"}),
            whole_tool: "mcp__web__fetch",
            pattern: "mcp__web__*",
            other_pattern: "mcp__mail__*",
        },
        Probe {
            effect: ToolEffect::Mcp,
            tool: "mcp__github__create_issue",
            input: json!({"title": "t"}),
            whole_tool: "mcp__github",
            pattern: "mcp__github__create_issue",
            other_pattern: "mcp__github__search",
        },
        Probe {
            effect: ToolEffect::McpReadOnly,
            tool: "mcp__github__search",
            input: json!({"query": "q"}),
            whole_tool: "mcp__github__*",
            pattern: "mcp__github__search",
            other_pattern: "mcp__github__create_issue",
        },
    ]
}

/// Which part of the call the rule names.
#[derive(Debug, Clone, Copy)]
enum Scope {
    /// Every call of the tool (`Bash`).
    WholeTool,
    /// A pattern the call matches (`Bash(git status:*)`).
    Pattern,
    /// A pattern of the same tool the call does not match (`Bash(git push:*)`).
    OtherPattern,
}

/// Where the rule comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// `--allow`, `--ask`, `--deny`.
    Flag,
    /// `[permissions]` of the user's config file.
    User,
    /// `[permissions]` of the project's `.cadre/config.toml`.
    Project,
    /// This agent's "yes for the session" approvals (only ever allow).
    Session,
}

use RuleKind::{Allow, Ask, Deny};
use Scope::{OtherPattern, Pattern, WholeTool};
use Source::{Flag, Project, Session, User};

/// Outcomes per mode (default, acceptEdits, plan, dontAsk,
/// bypassPermissions), each six letters for the effects (read-only, edit,
/// execute, network, MCP, read-only MCP): `A` runs, `?` asks, `D` is denied. Sandboxing is
/// available throughout (without it, commands ask in acceptEdits too).
type Row = [&'static str; 5];

/// No rule applies: the mode alone decides.
const NO_RULE: Row = ["A?????", "AAA???", "ADDDDD", "ADDDDD", "AAAAAA"];
/// An allow rule lets everything run, except that plan mode stays read-only.
/// A read-only MCP tool (`readOnlyHint`) may run in plan mode when allowed.
const ALLOWED: Row = ["AAAAAA", "AAAAAA", "ADDDDA", "AAAAAA", "AAAAAA"];
/// An ask rule asks even for reads; modes that never ask deny instead.
/// bypassPermissions runs everything (DESIGN §5), ask rules included.
const ASKED: Row = ["??????", "??????", "DDDDDD", "DDDDDD", "AAAAAA"];
/// A deny rule holds in every mode.
const DENIED: Row = ["DDDDDD", "DDDDDD", "DDDDDD", "DDDDDD", "DDDDDD"];

/// The rule-bearing rows: kind, scope, source and what follows.
const TABLE: &[(RuleKind, Scope, Source, Row)] = &[
    (Allow, WholeTool, Flag, ALLOWED),
    (Allow, Pattern, Flag, ALLOWED),
    (Allow, OtherPattern, Flag, NO_RULE),
    (Allow, WholeTool, User, ALLOWED),
    (Allow, Pattern, User, ALLOWED),
    (Allow, OtherPattern, User, NO_RULE),
    // A project file cannot widen: its allow rules are dropped on load.
    (Allow, WholeTool, Project, NO_RULE),
    (Allow, Pattern, Project, NO_RULE),
    (Allow, WholeTool, Session, ALLOWED),
    (Allow, Pattern, Session, ALLOWED),
    (Allow, OtherPattern, Session, NO_RULE),
    (Ask, WholeTool, Flag, ASKED),
    (Ask, Pattern, Flag, ASKED),
    (Ask, OtherPattern, Flag, NO_RULE),
    (Ask, WholeTool, User, ASKED),
    (Ask, Pattern, User, ASKED),
    (Ask, WholeTool, Project, ASKED),
    (Ask, Pattern, Project, ASKED),
    (Ask, OtherPattern, Project, NO_RULE),
    (Deny, WholeTool, Flag, DENIED),
    (Deny, Pattern, Flag, DENIED),
    (Deny, OtherPattern, Flag, NO_RULE),
    (Deny, WholeTool, User, DENIED),
    (Deny, Pattern, User, DENIED),
    (Deny, WholeTool, Project, DENIED),
    (Deny, Pattern, Project, DENIED),
    (Deny, OtherPattern, Project, NO_RULE),
];

/// The outcome's letter.
fn letter(decision: &Decision) -> char {
    match decision {
        Decision::Allow => 'A',
        Decision::Ask { .. } => '?',
        Decision::Deny(_) => 'D',
    }
}

/// Temporary home, project and data directories.
struct Dirs {
    _temp: tempfile::TempDir,
    home: std::path::PathBuf,
    project: std::path::PathBuf,
    data: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let (home, project, data) = (root.join("home"), root.join("project"), root.join("data"));
    for dir in [&home, &project.join(".cadre"), &project.join("src"), &data] {
        std::fs::create_dir_all(dir).unwrap();
    }
    Dirs {
        _temp: temp,
        home,
        project,
        data,
    }
}

/// The configured rules and session approvals that hold `rule` as `kind`
/// from `source`: flags are parsed as the command line does, config files
/// are loaded as the session does.
fn rules_from(
    dirs: &Dirs,
    source: Source,
    kind: RuleKind,
    rule: &str,
) -> (RuleSet, PermissionTracker) {
    let mut set = RuleSet::new();
    let tracker = PermissionTracker::default();
    let config = format!("[permissions]\n{} = [{rule:?}]\n", kind.as_str());
    match source {
        Flag => set.add(parse_rule(kind, rule, None).unwrap()),
        Session => tracker.allow(PermissionPolicy::parse_session_rule(rule).unwrap()),
        User | Project => {
            let (user, project) = match source {
                User => (config.as_str(), ""),
                _ => ("", config.as_str()),
            };
            std::fs::write(dirs.home.join("config.toml"), user).unwrap();
            std::fs::write(dirs.project.join(".cadre/config.toml"), project).unwrap();
            let settings = Settings::load(&dirs.home, &dirs.project).unwrap();
            for file in [&settings.user_permissions, &settings.project_permissions] {
                for (kind, texts) in [(Allow, &file.allow), (Ask, &file.ask), (Deny, &file.deny)] {
                    for text in texts {
                        set.add(parse_rule(kind, text, None).unwrap());
                    }
                }
            }
        }
    }
    (set, tracker)
}

/// What the policy decides, as a row of letters.
fn decide_row(dirs: &Dirs, rules: &RuleSet, tracker: &PermissionTracker) -> [String; 5] {
    MODES.map(|mode| {
        let policy = PermissionPolicy::new(mode, rules.clone(), &dirs.project, &dirs.data, true);
        probes()
            .iter()
            .map(|p| {
                let input = p.input.as_object().cloned().unwrap();
                letter(&policy.decide(tracker, p.tool, p.effect, &input, &dirs.project))
            })
            .collect()
    })
}

#[test]
fn the_probes_cover_every_effect_in_order() {
    let effects: Vec<ToolEffect> = probes().iter().map(|p| p.effect).collect();
    assert_eq!(effects, ToolEffect::ALL);
}

#[test]
fn with_no_rule_the_mode_decides() {
    let dirs = dirs();
    let got = decide_row(&dirs, &RuleSet::new(), &PermissionTracker::default());
    assert_eq!(
        got, NO_RULE,
        "modes × effects (read-only, edit, execute, network, MCP, read-only MCP)"
    );
}

#[test]
fn rules_by_kind_scope_and_source() {
    let dirs = dirs();
    let mut failures = Vec::new();
    for &(kind, scope, source, want) in TABLE {
        // Each effect's probe gets the rule written for its own tool.
        let mut got = [const { String::new() }; 5];
        for (e, probe) in probes().iter().enumerate() {
            let rule = match scope {
                WholeTool => probe.whole_tool,
                Pattern => probe.pattern,
                OtherPattern => probe.other_pattern,
            };
            let (set, tracker) = rules_from(&dirs, source, kind, rule);
            let row = decide_row(&dirs, &set, &tracker);
            for (m, letters) in row.iter().enumerate() {
                got[m].push(letters.chars().nth(e).unwrap());
            }
        }
        if got != want {
            failures.push(format!(
                "{kind} {scope:?} from {source:?}: got {got:?}, want {want:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_project_files_allow_rules_are_reported_as_ignored() {
    let dirs = dirs();
    std::fs::write(
        dirs.project.join(".cadre/config.toml"),
        "[permissions]\nallow = [\"Bash\"]\n",
    )
    .unwrap();
    let settings = Settings::load(&dirs.home, &dirs.project).unwrap();
    assert!(settings.project_permissions.allow.is_empty());
    assert!(
        settings
            .warnings
            .iter()
            .any(|w| w.contains("not trusted") && w.contains("permissions.allow (Bash)")),
        "{:?}",
        settings.warnings
    );
}

/// Calls that always ask, whatever allow rules and session approvals say,
/// and deny rules that hold over bypassPermissions.
#[test]
fn what_no_allow_rule_or_mode_lifts() {
    let dirs = dirs();
    let mut rules = RuleSet::new();
    for rule in ["Edit", "Bash"] {
        rules.add(parse_rule(Allow, rule, None).unwrap());
    }
    let tracker = PermissionTracker::default();
    let decide = |mode, tool, effect, input: Value| {
        let policy = PermissionPolicy::new(mode, rules.clone(), &dirs.project, &dirs.data, true);
        let input = input.as_object().cloned().unwrap();
        letter(&policy.decide(&tracker, tool, effect, &input, &dirs.project))
    };
    let git_write = json!({"file_path": ".git/config", "content": "x"});
    let unsandboxed = json!({"command": "ls", "sandbox": false});
    for (mode, want) in [
        (PermissionMode::Default, '?'),
        (PermissionMode::AcceptEdits, '?'),
        (PermissionMode::DontAsk, 'D'),
        (PermissionMode::BypassPermissions, 'A'),
    ] {
        assert_eq!(
            decide(mode, "Write", ToolEffect::Edit, git_write.clone()),
            want,
            "{mode}: a write to .git/"
        );
        assert_eq!(
            decide(mode, "Bash", ToolEffect::Execute, unsandboxed.clone()),
            want,
            "{mode}: a command outside the sandbox"
        );
    }
    // Writes to the data directory are denied even in bypassPermissions.
    let data_write =
        json!({"file_path": dirs.data.join("x").display().to_string(), "content": "x"});
    assert_eq!(
        decide(
            PermissionMode::BypassPermissions,
            "Write",
            ToolEffect::Edit,
            data_write
        ),
        'D'
    );
}
