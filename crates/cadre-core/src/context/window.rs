//! Context windows of known models.
//!
//! Figures from the providers' model pages (Anthropic's "Models overview" and
//! per-model pages, OpenAI's model pages). A model whose window could not be
//! confirmed is left out: it gets [`DEFAULT_CONTEXT_WINDOW`], or what
//! `[models.<provider>.<id>] context_window` says.

use crate::model::Provider;

/// The window assumed for a model cadre does not know and no config names.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The context window of a known model id (dated ids match their family).
pub fn builtin_context_window(provider: Provider, model: &str) -> Option<u64> {
    let family = model_family(model);
    let window = match provider {
        Provider::Anthropic => match family.as_str() {
            // Opus 4.6 and later, and Sonnet 4.6, take 1M tokens natively.
            "claude-opus-4-8" | "claude-opus-4-7" | "claude-opus-4-6" | "claude-sonnet-4-6" => {
                1_000_000
            }
            // Sonnet 4 and 4.5 reach 1M only with a beta header cadre does not send.
            "claude-opus-4-5" | "claude-opus-4-1" | "claude-opus-4" | "claude-opus-4-0"
            | "claude-sonnet-4-5" | "claude-sonnet-4" | "claude-sonnet-4-0"
            | "claude-haiku-4-5" | "claude-3-7-sonnet" | "claude-3-5-sonnet"
            | "claude-3-5-haiku" => 200_000,
            _ => return None,
        },
        Provider::OpenAI => match family.as_str() {
            "gpt-4.1" | "gpt-4.1-mini" | "gpt-4.1-nano" => 1_047_576,
            "gpt-4o" | "gpt-4o-mini" => 128_000,
            "o3" | "o4-mini" => 200_000,
            // 400,000 in all, of which at most 272,000 input: the conversation
            // must fit in the input part.
            "gpt-5" | "gpt-5-mini" | "gpt-5-nano" => 272_000,
            _ => return None,
        },
    };
    Some(window)
}

/// A model id without its date or `-latest` suffix, lowercased:
/// `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`, `gpt-4o-2024-08-06` →
/// `gpt-4o`, `claude-3-5-sonnet@20241022` → `claude-3-5-sonnet`.
pub(super) fn model_family(model: &str) -> String {
    let m = model.trim().to_ascii_lowercase();
    if let Some(base) = m.strip_suffix("-latest") {
        return base.to_string();
    }
    if let Some((base, date)) = m.rsplit_once('@')
        && is_date(date)
    {
        return base.to_string();
    }
    // `-YYYYMMDD` (Anthropic) or `-YYYY-MM-DD` (OpenAI).
    if let Some((base, date)) = m.rsplit_once('-')
        && date.len() == 8
        && is_date(date)
    {
        return base.to_string();
    }
    let b = m.as_bytes();
    if b.len() > 11 {
        let tail = &b[b.len() - 11..];
        let digits: Vec<u8> = [&tail[1..5], &tail[6..8], &tail[9..11]].concat();
        if tail[0] == b'-'
            && tail[5] == b'-'
            && tail[8] == b'-'
            && is_date(&String::from_utf8_lossy(&digits))
        {
            // The tail is ASCII, so this cut is on a character boundary.
            return m[..m.len() - 11].to_string();
        }
    }
    m
}

/// Eight digits that start like a year of this era (20xx).
fn is_date(s: &str) -> bool {
    s.len() == 8 && s.starts_with("20") && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_ids_match_their_family() {
        assert_eq!(
            model_family("claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(
            model_family("claude-3-5-sonnet-latest"),
            "claude-3-5-sonnet"
        );
        assert_eq!(
            model_family("claude-3-5-sonnet@20241022"),
            "claude-3-5-sonnet"
        );
        assert_eq!(model_family("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(model_family("GPT-4.1-mini-2025-04-14"), "gpt-4.1-mini");
        assert_eq!(model_family("o3-2025-04-16"), "o3");
        // Version numbers are not dates.
        assert_eq!(model_family("claude-opus-4-1"), "claude-opus-4-1");
        assert_eq!(model_family("qwen2.5-coder-32b"), "qwen2.5-coder-32b");
    }

    #[test]
    fn known_windows() {
        let a = |m| builtin_context_window(Provider::Anthropic, m);
        let o = |m| builtin_context_window(Provider::OpenAI, m);
        assert_eq!(a("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(a("claude-opus-4-6"), Some(1_000_000));
        assert_eq!(a("claude-sonnet-4-6"), Some(1_000_000));
        assert_eq!(a("claude-opus-4-20250514"), Some(200_000));
        assert_eq!(a("claude-3-7-sonnet-20250219"), Some(200_000));
        assert_eq!(a("claude-haiku-4-5-20251001"), Some(200_000));
        assert_eq!(o("gpt-4.1-2025-04-14"), Some(1_047_576));
        assert_eq!(o("gpt-4o-mini"), Some(128_000));
        assert_eq!(o("o4-mini-2025-04-16"), Some(200_000));
        assert_eq!(o("gpt-5-mini-2025-08-07"), Some(272_000));
    }

    #[test]
    fn unknown_ids_and_wrong_providers_give_none() {
        assert_eq!(
            builtin_context_window(Provider::Anthropic, "claude-next"),
            None
        );
        assert_eq!(builtin_context_window(Provider::Anthropic, "gpt-4o"), None);
        assert_eq!(
            builtin_context_window(Provider::OpenAI, "claude-opus-4-1"),
            None
        );
        assert_eq!(builtin_context_window(Provider::OpenAI, "o3-pro"), None);
        assert_eq!(builtin_context_window(Provider::OpenAI, "llama3"), None);
        assert_eq!(builtin_context_window(Provider::OpenAI, ""), None);
    }
}
