//! What fills an agent's context window, by category, for `/context`: the
//! system prompt, the project's instruction files, the tools (cadre's and
//! MCP servers'), the skills and agent listings the first message carries,
//! and the conversation itself. Each is estimated from its text; the
//! categories always add up to the total the agent reports as in use, so
//! where the provider counted the request, the messages take the rest.

use crate::context::estimate_text_tokens;
use crate::model::{ContentBlock, Message, Role, ToolSpec};
use crate::protocol::{ContextCategory, ContextKind};

/// Where the project's instructions start in a system prompt.
const INSTRUCTIONS_HEADING: &str = "\n\n# Project instructions\n\n";
/// Where the MCP servers' instructions start in a system prompt.
const MCP_HEADING: &str = "\n\n# MCP server instructions";
/// Tool names of MCP servers' tools start so.
const MCP_TOOL_PREFIX: &str = "mcp__";

/// The parts of the request that do not change between requests: the
/// system prompt's sections and the tools. `fixed` is what the agent
/// counts for them (the system prompt absorbs the rounding, so the parts
/// add up to it).
pub(super) fn fixed_categories(
    system: &str,
    tools: &[ToolSpec],
    fixed: u64,
) -> Vec<ContextCategory> {
    // A section runs to the MCP servers' section or the end: instruction
    // files have headings of their own, so the next `# ` is no boundary.
    let section = |heading: &str| -> &str {
        system.find(heading).map_or("", |at| {
            let rest = &system[at + heading.len()..];
            let end = rest.find(MCP_HEADING).unwrap_or(rest.len());
            &rest[..end]
        })
    };
    let instructions = estimate_text_tokens(section(INSTRUCTIONS_HEADING));
    let mcp_instructions = estimate_text_tokens(section(MCP_HEADING));
    let (mut builtin, mut mcp) = (0u64, 0u64);
    for spec in tools {
        let bytes = serde_json::to_string(spec).map_or(0, |s| s.len() as u64);
        if spec.name.starts_with(MCP_TOOL_PREFIX) {
            mcp += bytes;
        } else {
            builtin += bytes;
        }
    }
    let tools_tokens = builtin.div_ceil(4);
    let mcp_tokens = mcp.div_ceil(4) + mcp_instructions;
    let system_tokens = fixed.saturating_sub(instructions + tools_tokens + mcp_tokens);
    vec![
        category(ContextKind::SystemPrompt, system_tokens),
        category(ContextKind::InstructionFiles, instructions),
        category(ContextKind::Tools, tools_tokens),
        category(ContextKind::McpTools, mcp_tokens),
    ]
}

/// The conversation's categories: the skills and agents listings (the
/// reminders the first message carries) and every other message; the
/// messages take what is left of `total` after `fixed`.
pub(super) fn message_categories(
    conversation: &[Message],
    fixed: &[ContextCategory],
    total: u64,
) -> Vec<ContextCategory> {
    let (mut skills, mut agents) = (0u64, 0u64);
    for message in conversation.iter().filter(|m| m.role == Role::User) {
        for block in message.content.iter() {
            let ContentBlock::Text { text } = block else {
                continue;
            };
            if !text.starts_with("<system-reminder>") {
                continue;
            }
            if text.contains(crate::skills::SKILLS_HEADER) {
                skills += estimate_text_tokens(text);
            } else if text.contains(crate::tools::ROSTER_HEADER) {
                agents += estimate_text_tokens(text);
            }
        }
    }
    // What the count leaves after the fixed parts is the conversation's;
    // the listings are carved out of it (never more than there is).
    let fixed_sum: u64 = fixed.iter().map(|c| c.tokens).sum();
    let conversation_tokens = total.saturating_sub(fixed_sum);
    let skills = skills.min(conversation_tokens);
    let agents = agents.min(conversation_tokens - skills);
    vec![
        category(ContextKind::Skills, skills),
        category(ContextKind::Agents, agents),
        category(ContextKind::Messages, conversation_tokens - skills - agents),
    ]
}

fn category(kind: ContextKind, tokens: u64) -> ContextCategory {
    ContextCategory { kind, tokens }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::estimate_message_tokens;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".repeat(100),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn the_system_prompt_sections_and_tools_split_and_add_up_to_the_fixed_count() {
        let system = format!(
            "You are cadre.{INSTRUCTIONS_HEADING}# Rules\n\n{}{MCP_HEADING}\n\n## docs\n\n{}",
            "i".repeat(391),
            "m".repeat(80)
        );
        let tools = [spec("Read"), spec("mcp__docs__search")];
        let fixed = estimate_text_tokens(&system)
            + (serde_json::to_string(&tools.to_vec()).unwrap().len() as u64).div_ceil(4);
        let parts = fixed_categories(&system, &tools, fixed);
        let get = |k: ContextKind| parts.iter().find(|c| c.kind == k).unwrap().tokens;
        assert_eq!(get(ContextKind::InstructionFiles), 100);
        assert!(
            get(ContextKind::McpTools) > get(ContextKind::Tools),
            "{parts:?}"
        );
        assert!(get(ContextKind::SystemPrompt) > 0);
        assert_eq!(parts.iter().map(|c| c.tokens).sum::<u64>(), fixed);
    }

    #[test]
    fn the_listings_are_their_own_categories_and_the_whole_adds_up() {
        let skills = format!(
            "<system-reminder>\n{}\n- a: b\n</system-reminder>",
            crate::skills::SKILLS_HEADER
        );
        let mut first = Message::user_text(skills);
        first.content.push(ContentBlock::Text {
            text: "hello".repeat(40),
        });
        let conversation = vec![first];
        let fixed = vec![category(ContextKind::SystemPrompt, 500)];
        let total = 500 + estimate_message_tokens(&conversation[0]);
        let parts = message_categories(&conversation, &fixed, total);
        assert!(parts[0].tokens > 0, "{parts:?}");
        assert_eq!(parts[1].tokens, 0);
        let sum: u64 = fixed.iter().chain(&parts).map(|c| c.tokens).sum();
        assert_eq!(sum, total);
        // A provider's count larger than the estimate: the messages take it.
        let parts = message_categories(&conversation, &fixed, total + 1000);
        let sum: u64 = fixed.iter().chain(&parts).map(|c| c.tokens).sum();
        assert_eq!(sum, total + 1000);
    }
}
