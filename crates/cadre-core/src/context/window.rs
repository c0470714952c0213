//! Context windows of known models.

use crate::model::Provider;

/// The window assumed for a model cadre does not know and no config names.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The context window of a known model id (dated ids match their family).
pub fn builtin_context_window(provider: Provider, model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    match provider {
        Provider::Anthropic => m.starts_with("claude-").then_some(200_000),
        Provider::OpenAI => {
            if m.starts_with("gpt-4.1") {
                Some(1_047_576)
            } else if m.starts_with("gpt-4o") {
                Some(128_000)
            } else {
                None
            }
        }
    }
}
