//! Which provider, endpoint, key and model a client talks to.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A wire format / API family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions API (also Ollama, vLLM, llama.cpp, OpenRouter…).
    #[serde(alias = "openai")]
    OpenAI,
}

impl Provider {
    /// The lower-case name used in flags and config.
    pub fn as_str(&self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAI => "openai",
        }
    }

    /// The official endpoint (Anthropic's without `/v1`, OpenAI's with it, as their SDKs take them).
    pub fn default_base_url(&self) -> &'static str {
        match self {
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::OpenAI => "https://api.openai.com/v1",
        }
    }

    /// The environment variable holding this provider's key.
    pub fn key_env(&self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::OpenAI => "OPENAI_API_KEY",
        }
    }

    /// The model used when nothing chooses one.
    pub fn default_model(&self) -> &'static str {
        match self {
            Provider::Anthropic => "claude-sonnet-4-5",
            Provider::OpenAI => "gpt-4.1",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" => Ok(Provider::OpenAI),
            other => Err(format!(
                "unknown provider '{other}' (expected anthropic or openai)"
            )),
        }
    }
}

/// Everything a client needs to reach a model. `Debug` hides the key.
#[derive(Clone)]
pub struct ClientConfig {
    /// API family.
    pub provider: Provider,
    /// Endpoint base URL, as the provider's SDK takes it.
    pub base_url: String,
    /// API key, if any (none needed on loopback).
    pub api_key: Option<String>,
    /// Concrete model id.
    pub model: String,
    /// Output token ceiling per request.
    pub max_tokens: u32,
    /// Total tries for a transient failure (first try included).
    pub max_attempts: u32,
    /// Longest silence of the server (before the headers or between chunks) before a try is abandoned.
    pub stream_idle_timeout: std::time::Duration,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("max_attempts", &self.max_attempts)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .finish()
    }
}

/// True when `url`'s host is a loopback address, where local servers need no key.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
        assert!(is_loopback_url("http://localhost:11434/v1"));
        assert!(is_loopback_url("http://[::1]:3000"));
        assert!(is_loopback_url("http://127.5.5.5"));
        assert!(!is_loopback_url("https://api.anthropic.com"));
        assert!(!is_loopback_url("http://10.0.0.1:8080"));
        assert!(!is_loopback_url("http://127.0.0.1.evil.com/"));
    }

    #[test]
    fn debug_hides_key() {
        let cfg = ClientConfig {
            provider: Provider::Anthropic,
            base_url: "x".into(),
            api_key: Some("sk-secret".into()),
            model: "m".into(),
            max_tokens: 1,
            max_attempts: 1,
            stream_idle_timeout: std::time::Duration::from_secs(1),
        };
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }
}
