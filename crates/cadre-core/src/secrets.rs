//! The one place that knows the process's secret values (the API keys read at
//! start-up) and takes them out of text: every tool result, task output file,
//! task report and model error passes through [`redact`] before it is logged,
//! stored or sent. The binary registers the keys; nothing here reads the
//! environment.

use std::borrow::Cow;
use std::sync::RwLock;

/// Environment variables holding model keys (every provider's `key_env`).
pub const KEY_VARS: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// What replaces a secret in text.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: redacting every occurrence of a
/// few characters would mangle ordinary output, and no real key is that short.
pub const MIN_SECRET_LEN: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Variables beyond [`KEY_VARS`] that hold a key cadre uses (a search
/// service's, say): the commands cadre starts never inherit them either.
static SECRET_VARS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Marks the variable `name` as holding a key: from now on it is removed
/// from the environment of every command cadre starts.
pub fn register_var(name: &str) {
    let mut vars = SECRET_VARS.write().unwrap_or_else(|e| e.into_inner());
    if !vars.iter().any(|v| v == name) {
        vars.push(name.to_string());
    }
}

/// Every variable holding a key: the model keys, then the registered ones.
pub fn secret_vars() -> Vec<String> {
    let mut names: Vec<String> = KEY_VARS.iter().map(|s| s.to_string()).collect();
    names.extend(
        SECRET_VARS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned(),
    );
    names
}

/// Adds `value` to the secrets redacted from now on (ignored if too short).
pub fn register(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|s| s == value) {
        secrets.push(value.to_string());
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// The length of the longest registered secret (0 when there is none).
pub fn longest() -> usize {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    secrets.first().map_or(0, String::len)
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    redact_with(text, &secrets)
}

/// `text` with each of `secrets` replaced by [`REDACTED`].
pub fn redact_with<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for s in secrets {
        if s.len() >= MIN_SECRET_LEN && out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), REDACTED));
        }
    }
    out
}

/// Redacts a stream written in pieces, so a secret split across two pieces
/// is still caught: it holds back the unfinished last word of each piece
/// until the next one (or [`StreamRedactor::finish`]) shows how it continues.
#[derive(Debug, Default)]
pub struct StreamRedactor {
    pending: Vec<u8>,
}

impl StreamRedactor {
    /// Takes the next piece and returns the text now safe to write.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        // A character cut in two waits for its other half.
        let complete = match std::str::from_utf8(&self.pending) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.pending.len(),
        };
        let incomplete = self.pending.split_off(complete);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        let redacted = redact(&text).into_owned();
        // Hold back the tail that could be the start of a secret: keys hold
        // no whitespace, so only the last run of non-space characters (and
        // at most one byte less than the longest secret) waits; whole lines
        // are never delayed.
        let keep = longest().saturating_sub(1);
        let word_start = redacted
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let mut cut = redacted.len().saturating_sub(keep).max(word_start);
        while !redacted.is_char_boundary(cut) {
            cut -= 1;
        }
        self.pending = redacted.as_bytes()[cut..].to_vec();
        self.pending.extend_from_slice(&incomplete);
        redacted[..cut].to_string()
    }

    /// Returns whatever is still held back.
    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        redact(&text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_replaced() {
        let secrets = vec!["sk-abcdefgh123".to_string()];
        assert_eq!(
            redact_with("a sk-abcdefgh123 b sk-abcdefgh123", &secrets),
            "a [redacted] b [redacted]"
        );
        assert!(matches!(redact_with("clean", &secrets), Cow::Borrowed(_)));
        // Too short to be a key: left alone.
        assert_eq!(redact_with("abc", &["abc".to_string()]), "abc");
    }

    #[test]
    fn a_secret_split_across_pieces_is_caught() {
        register("sk-stream-secret-0001");
        let mut r = StreamRedactor::default();
        let mut out = r.push(b"before sk-str");
        out.push_str(&r.push(b"eam-secret-0001 after"));
        out.push_str(&r.finish());
        assert_eq!(out, "before [redacted] after");
        // Complete lines pass at once.
        assert_eq!(r.push(b"line one\n"), "line one\n");
        assert_eq!(r.push(b"partial"), "");
        assert_eq!(r.finish(), "partial");
    }
}
