//! Plan mode is read-only whatever allow rules or session approvals say.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::rules::{RuleKind, RuleSet, parse_rule};
use super::{Decision, PermissionMode, PermissionPolicy, PermissionTracker, ToolEffect};
use serde_json::{Map, Value};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn policy(mode: PermissionMode, allow: &[&str], dir: &std::path::Path) -> PermissionPolicy {
    let mut rules = RuleSet::new();
    for r in allow {
        rules.add(parse_rule(RuleKind::Allow, r, None).unwrap());
    }
    PermissionPolicy::new(mode, rules, dir, &dir.join(".data"), true)
}

#[test]
fn plan_mode_denies_changes_that_rules_and_approvals_allow() {
    let dir = tempfile::tempdir().unwrap();
    let tracker = PermissionTracker::default();
    for r in ["Bash(touch:*)", "Edit(**)", "TodoWrite"] {
        tracker.allow(PermissionPolicy::parse_session_rule(r).unwrap());
    }
    let calls = [
        ("Bash", ToolEffect::Execute, json!({"command": "touch x"})),
        (
            "Write",
            ToolEffect::Edit,
            json!({"file_path": "docs/x.md", "content": "x"}),
        ),
        (
            "Edit",
            ToolEffect::Edit,
            json!({"file_path": "docs/x.md", "old_string": "a", "new_string": "b"}),
        ),
        ("mcp__s__t", ToolEffect::Network, json!({})),
    ];
    let allow = ["Bash(touch:*)", "Edit(docs/**)", "mcp__s__t"];
    for (mode, want_denied) in [
        (PermissionMode::Plan, true),
        (PermissionMode::Default, false),
    ] {
        let p = policy(mode, &allow, dir.path());
        for (tool, effect, input) in &calls {
            let got = p.decide(&tracker, tool, *effect, &object(input.clone()), dir.path());
            assert_eq!(
                got == Decision::Deny("plan mode is read-only".into()),
                want_denied,
                "{mode} {tool}: {got:?}"
            );
        }
    }
    // Reads and spawns still run in plan mode.
    let p = policy(PermissionMode::Plan, &[], dir.path());
    for (tool, input) in [
        ("Read", json!({"file_path": "a.txt"})),
        ("Grep", json!({"pattern": "x"})),
        (
            "Agent",
            json!({"description": "d", "prompt": "p", "subagent_type": "Explore"}),
        ),
    ] {
        assert_eq!(
            p.decide(
                &tracker,
                tool,
                ToolEffect::ReadOnly,
                &object(input),
                dir.path()
            ),
            Decision::Allow,
            "{tool}"
        );
    }
}
