//! What an active skill grants an agent for a while rather than by
//! configuration: its `allowed-tools`, which run without asking, and its
//! `model`, which the agent's requests use, from the skill's load until the
//! end of the agent's turn. Each agent has its own.

use std::sync::Mutex;

use super::rules::RuleSet;

/// The allow rules and model active skills grant one agent.
#[derive(Debug, Default)]
pub struct ActiveGrants {
    rules: Mutex<RuleSet>,
    model: Mutex<Option<String>>,
}

impl ActiveGrants {
    /// Adds allow rules until [`ActiveGrants::clear`].
    pub fn grant(&self, rules: impl IntoIterator<Item = super::rules::Rule>) {
        if let Ok(mut set) = self.rules.lock() {
            set.extend(rules);
        }
    }

    /// Has the agent's requests use `model` until [`ActiveGrants::clear`]
    /// (the skill loaded last wins).
    pub fn set_model(&self, model: &str) {
        if let Ok(mut m) = self.model.lock() {
            *m = Some(model.to_string());
        }
    }

    /// The model an active skill asks for, if any.
    pub fn model(&self) -> Option<String> {
        self.model.lock().ok().and_then(|m| m.clone())
    }

    /// Ends every grant (the agent's turn ended).
    pub fn clear(&self) {
        if let Ok(mut set) = self.rules.lock() {
            *set = RuleSet::new();
        }
        if let Ok(mut m) = self.model.lock() {
            *m = None;
        }
    }

    /// The rules granted now.
    pub fn rules(&self) -> RuleSet {
        self.rules.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
