//! How a `Bash(...)` rule matches a command line.
//!
//! Shell commands are split into their simple commands (on `&&`, `||`, `;`,
//! `|`, `&`, newlines, subshell parentheses and substitutions) by a small
//! quote-aware lexer that reads as bash does (see `shell`): a deny or ask rule
//! matches when it matches any of them, while allow rules must cover every
//! one. Commands with command or process substitution or output redirection
//! to a file (`>file`, `&>file`, `>&file`), and commands the lexer is not sure
//! it reads as bash does, are only allowed by `Bash` / `Bash(*)`; for the
//! latter, and for commands that run code their words don't show (a shell
//! reading stdin, `source`, `python3 -c`, ...), deny and ask rules also match
//! any run of words in a loose reading.
//! Deny and ask rules see through wrappers (`timeout`, `env`, `sudo`,
//! `find -exec`, `sh -c`, ...); allow rules only through the ones Claude Code
//! strips (`timeout`, `time`, `nice`, `nohup`, `stdbuf`), and only when every
//! option is understood (see `wrappers`).

use super::rules::{Call, RuleError};
use super::shell::{ShellParse, loose_tokens, parse_shell};
use super::wrappers::{allow_view, deny_any, runs_unseen_code};

#[derive(Debug, Clone)]
pub(super) enum BashPattern {
    /// `Bash` or `Bash(*)`.
    Any,
    /// `Bash(prefix:*)`. `words` is the prefix split into shell words; `None`
    /// when it is not a single simple command (then only the whole command
    /// text can match).
    Prefix {
        text: String,
        words: Option<Vec<String>>,
    },
    /// `Bash(command)`.
    Exact {
        text: String,
        words: Option<Vec<String>>,
    },
}

pub(super) fn parse_bash_spec(orig: &str, spec: &str) -> Result<BashPattern, RuleError> {
    if spec == "*" {
        return Ok(BashPattern::Any);
    }
    let (text, prefix) = match spec.strip_suffix(":*") {
        Some(prefix) => (prefix.trim(), true),
        None => (spec, false),
    };
    if text.is_empty() {
        return Err(RuleError::EmptyPrefix { rule: orig.into() });
    }
    let parsed = parse_shell(text);
    if parsed.malformed {
        return Err(RuleError::BadCommand { rule: orig.into() });
    }
    let words = match <[Vec<String>; 1]>::try_from(parsed.segments) {
        Ok([words]) => Some(words),
        Err(_) => None,
    };
    let text = text.to_string();
    Ok(if prefix {
        BashPattern::Prefix { text, words }
    } else {
        BashPattern::Exact { text, words }
    })
}

impl BashPattern {
    /// Deny/ask semantics: matches the whole command text or any reading of
    /// any sub-command (through assignments, keywords, wrappers, `find -exec`
    /// and shell strings), and for a command the lexer is unsure about also
    /// any run of words in its loose reading.
    pub(super) fn matches_any_part(&self, call: &Call<'_>) -> bool {
        let (text, words, prefix) = match self {
            BashPattern::Any => return true,
            BashPattern::Prefix { text, words } => (text, words, true),
            BashPattern::Exact { text, words } => (text, words, false),
        };
        let Some(command) = call.command else {
            return false;
        };
        let whole = command.trim();
        let whole_match = if prefix {
            whole.strip_prefix(text.as_str()).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace())
            })
        } else {
            whole == text
        };
        if whole_match {
            return true;
        }
        let (Some(words), Some(shell)) = (words, &call.shell) else {
            return false;
        };
        deny_match(command, shell, words, prefix, 0)
    }

    /// Allow semantics for one sub-command: taken literally, or with Claude
    /// Code's wrappers (`timeout 5`, `nice -n 5`, ...) stripped.
    pub(super) fn matches_segment(&self, segment: &[String]) -> bool {
        let literal = |segment: &[String]| match self {
            BashPattern::Any => true,
            BashPattern::Prefix { words, .. } => {
                words.as_ref().is_some_and(|w| segment.starts_with(w))
            }
            BashPattern::Exact { words, .. } => {
                words.as_ref().is_some_and(|w| segment == w.as_slice())
            }
        };
        literal(segment) || allow_view(segment).is_some_and(literal)
    }
}

/// How deep shell strings inside shell strings (`sh -c "eval '...'"`) are read.
const MAX_NESTING: usize = 4;

/// Whether a deny/ask rule's `words` match any reading of `shell` (the
/// parse of `text`).
fn deny_match(
    text: &str,
    shell: &ShellParse,
    words: &[String],
    prefix: bool,
    depth: usize,
) -> bool {
    let matches = |name: &str, args: &[String]| {
        let Some((command, rule_args)) = words.split_first() else {
            return false;
        };
        name == command
            && if prefix {
                args.starts_with(rule_args)
            } else {
                args == rule_args
            }
    };
    let mut nested = |inner: &str| {
        if depth >= MAX_NESTING {
            // Too deep to read: its loose reading decides.
            return loose_match(inner, words);
        }
        deny_match(inner, &parse_shell(inner), words, prefix, depth + 1)
    };
    if shell
        .segments
        .iter()
        .any(|segment| deny_any(segment, &matches, &mut nested))
    {
        return true;
    }
    if !(shell.unsure || shell.malformed || shell.segments.iter().any(|s| runs_unseen_code(s))) {
        return false;
    }
    if loose_match(text, words) {
        return true;
    }
    // Another plausible reading: every backslash-newline joined.
    let joined = text.replace("\\\n", "");
    depth < MAX_NESTING
        && joined != text
        && deny_match(&joined, &parse_shell(&joined), words, prefix, depth + 1)
}

/// Whether the rule's words occur in order, anywhere, in a loose reading of
/// `text` (tokens split at every shell operator, quote and path separator).
fn loose_match(text: &str, words: &[String]) -> bool {
    let [wanted, ..] = loose_tokens(&words.join(" "));
    if wanted.is_empty() {
        return false;
    }
    loose_tokens(text)
        .iter()
        .any(|tokens| tokens.windows(wanted.len()).any(|w| w == wanted.as_slice()))
}
