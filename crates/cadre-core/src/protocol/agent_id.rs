//! Which agent an event is about: the session's top-level agent or one of
//! its children.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// An agent's id: [`AgentId::MAIN`] for a session's top-level agent, a
/// generated id for each child (its log is `<session>.agents/<id>.jsonl`).
/// On the wire it is the plain string.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct AgentId(Cow<'static, str>);

impl AgentId {
    /// The top-level agent of every session.
    pub const MAIN: AgentId = AgentId(Cow::Borrowed(super::MAIN_AGENT));

    /// The id `id`.
    pub fn new(id: impl Into<String>) -> AgentId {
        AgentId(Cow::Owned(id.into()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the session's top-level agent.
    pub fn is_main(&self) -> bool {
        self.0 == super::MAIN_AGENT
    }
}

impl Default for AgentId {
    fn default() -> Self {
        AgentId::MAIN
    }
}

impl Deref for AgentId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for AgentId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for AgentId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for AgentId {
    fn from(id: String) -> Self {
        AgentId::new(id)
    }
}

impl From<&str> for AgentId {
    fn from(id: &str) -> Self {
        AgentId::new(id)
    }
}

impl From<&String> for AgentId {
    fn from(id: &String) -> Self {
        AgentId::new(id.as_str())
    }
}

impl From<AgentId> for String {
    fn from(id: AgentId) -> Self {
        id.0.into_owned()
    }
}

impl PartialEq<str> for AgentId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AgentId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for AgentId {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl PartialEq<AgentId> for str {
    fn eq(&self, other: &AgentId) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<AgentId> for &str {
    fn eq(&self, other: &AgentId) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<AgentId> for String {
    fn eq(&self, other: &AgentId) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_id_is_main_on_the_wire_and_compares_with_text() {
        assert_eq!(
            serde_json::to_string(&AgentId::MAIN).unwrap_or_default(),
            "\"main\""
        );
        assert!(AgentId::MAIN.is_main());
        let child: AgentId = serde_json::from_str("\"a1b2\"").unwrap_or_default();
        assert_eq!(child, "a1b2");
        assert!(!child.is_main());
        assert_eq!(AgentId::from("main"), AgentId::MAIN);
    }
}
