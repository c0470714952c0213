//! Rules granted for a while rather than configured: a skill's
//! `allowed-tools`, which run without asking while the skill is active (from
//! its load until the end of the agent's turn). Each agent has its own.

use std::sync::Mutex;

use super::rules::RuleSet;

/// The allow rules active skills grant one agent.
#[derive(Debug, Default)]
pub struct ActiveGrants {
    rules: Mutex<RuleSet>,
}

impl ActiveGrants {
    /// Adds allow rules until [`ActiveGrants::clear`].
    pub fn grant(&self, rules: impl IntoIterator<Item = super::rules::Rule>) {
        if let Ok(mut set) = self.rules.lock() {
            set.extend(rules);
        }
    }

    /// Ends every grant (the agent's turn ended).
    pub fn clear(&self) {
        if let Ok(mut set) = self.rules.lock() {
            *set = RuleSet::new();
        }
    }

    /// The rules granted now.
    pub fn rules(&self) -> RuleSet {
        self.rules.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
