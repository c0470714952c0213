//! Which `Agent` call started each child, for front ends that show a
//! child's work under its call (`parent_tool_use_id` in stream-json, child
//! sessions in ACP). A reply's `Agent` calls are numbered from 1 as its
//! batch's children are; a child's parent is the agent above it in its path.

use std::collections::HashMap;

use cadre_core::model::{ContentBlock, Message};
use cadre_core::protocol::{ChildTag, MAIN_AGENT};

/// Each agent's `Agent` (or `Task`) calls of its latest reply, in order.
#[derive(Debug, Default)]
pub struct AgentCalls {
    calls: HashMap<String, Vec<String>>,
}

impl AgentCalls {
    /// Remembers the `Agent` calls of `agent`'s reply `message`.
    pub fn record(&mut self, agent: &str, message: &Message) {
        let calls = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, .. } if name == "Agent" || name == "Task" => {
                    Some(id.clone())
                }
                _ => None,
            })
            .collect();
        self.calls.insert(agent.to_string(), calls);
    }

    /// The parent of the child at `path` (1-based `index` in its batch), and
    /// the call of the parent's that started it, when it was seen.
    pub fn parent_of(&self, index: usize, path: &[ChildTag]) -> (String, Option<String>) {
        let parent = match path.len() {
            0 | 1 => MAIN_AGENT.to_string(),
            n => path[n - 2].agent_id.to_string(),
        };
        let call = self
            .calls
            .get(&parent)
            .and_then(|calls| calls.get(index.saturating_sub(1)))
            .cloned();
        (parent, call)
    }
}
