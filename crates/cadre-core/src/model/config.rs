//! Which provider, endpoint, key and model a client talks to.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A wire format / API family.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
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

/// How a model's tool calls travel (`[models.<provider>.<id>] tool_calls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallMode {
    /// The API's own tool fields (`tools`, `tool_calls`).
    Native,
    /// Tools described in the system prompt, calls read out of the reply's text.
    Text,
    /// The API's fields, with calls also read out of a reply's text when it
    /// holds none of its own, and a switch to `Text` after the server fails
    /// to parse a call.
    Auto,
}

impl ToolCallMode {
    /// The name used in config.
    pub fn as_str(&self) -> &'static str {
        match self {
            ToolCallMode::Native => "native",
            ToolCallMode::Text => "text",
            ToolCallMode::Auto => "auto",
        }
    }
}

/// What one model's requests carry and may take, beyond the session's
/// defaults (`[models.<provider>.<id>]`): each `None` keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelWire {
    /// How tool calls travel.
    pub tool_calls: Option<ToolCallMode>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output token ceiling per request.
    pub max_tokens: Option<u32>,
    /// Longest wait for the reply's first data (headers and first event).
    pub first_byte_timeout_s: Option<u64>,
    /// Longest a request may take, every try included.
    pub request_deadline_s: Option<u64>,
}

/// Sampling temperature in `text` tool-call mode when none is configured:
/// small models keep to the call syntax better when sampling stays near greedy.
pub const TEXT_MODE_TEMPERATURE: f64 = 0.2;

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
    /// Longest a request may take, every try and wait between tries included.
    pub request_deadline: std::time::Duration,
    /// Longest wait for a reply's first data (its headers, then its first
    /// event): a local server processing a long prompt sends nothing for minutes.
    pub first_byte_timeout: std::time::Duration,
    /// Per model id: what its requests carry beyond these defaults.
    pub models: std::sync::Arc<std::collections::BTreeMap<String, ModelWire>>,
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
            .field("request_deadline", &self.request_deadline)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("models", &self.models)
            .finish()
    }
}

/// Parses an endpoint base URL: `http` or `https`, no user name or password
/// (they only serve to disguise the host, and would be sent as credentials).
pub fn parse_base_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text.trim()).map_err(|e| format!("'{text}' is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("'{text}' must start with http:// or https://"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "'{text}' contains a user name or password; give the server's address alone"
        ));
    }
    if url.host().is_none() {
        return Err(format!("'{text}' has no host"));
    }
    Ok(url)
}

/// True when the parsed `url`'s host *is* loopback: an IPv4 address in
/// 127.0.0.0/8, `::1`, or exactly `localhost`. Spellings the parser turns into
/// those (`0x7f.1`, `2130706433`, percent-encoding, upper case) count, since the
/// parsed value is what is connected to. `localhost.` (which resolvers may send
/// to DNS), `*.localhost`, and IPv4-mapped IPv6 (`::ffff:127.0.0.1`) do not.
pub fn url_is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

/// True when `base_url` is `provider`'s own API: https on its official host
/// (any path), not a proxy, gateway or local server speaking its wire.
pub fn is_provider_api(provider: Provider, base_url: &str) -> bool {
    let (Ok(url), Ok(official)) = (
        parse_base_url(base_url),
        url::Url::parse(provider.default_base_url()),
    ) else {
        return false;
    };
    url.scheme() == "https" && url.host() == official.host() && url.port() == official.port()
}

/// True when `url` parses (see [`parse_base_url`]) to a loopback host, where
/// local servers need no key and a project file may point.
pub fn is_loopback_url(url: &str) -> bool {
    parse_base_url(url).is_ok_and(|u| url_is_loopback(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tricky_spellings_are_decided_on_the_parsed_host() {
        let yes = [
            "http://0x7f.1:8080",
            "http://2130706433/",
            "http://127.1",
            "http://127.0.0.%31:9/",
            "http://LOCALHOST:1",
            "http://%6c%6fcalhost:1",
            "http://[0:0:0:0:0:0:0:1]:1",
            "https://127.255.255.254",
        ];
        for u in yes {
            assert!(is_loopback_url(u), "{u}");
        }
        let no = [
            "http://[::1]@192.0.2.2:8765",
            "http://127.0.0.1@192.0.2.2",
            "http://localhost:x@192.0.2.2",
            "http://user@127.0.0.1:8080",
            "http://:pw@127.0.0.1:8080",
            "http://[::ffff:127.0.0.1]:8080",
            "http://localhost.:8080",
            "http://foo.localhost:8080",
            "http://localhost%2e:8080",
            "http://127.0.0.1%2f@192.0.2.2",
            "http://192.0.2.2#@127.0.0.1",
            "http://192.0.2.2?@127.0.0.1",
            "http://192.0.2.2\\@127.0.0.1",
            "ftp://127.0.0.1",
            "file:///tmp/x",
            "127.0.0.1:8080",
            "http://0.0.0.0:8080",
            "http://[::]:8080",
            "",
        ];
        for u in no {
            assert!(!is_loopback_url(u), "{u}");
        }
        let err = parse_base_url("http://[::1]@192.0.2.2:8765").unwrap_err();
        assert!(err.contains("user name or password"), "{err}");
    }

    #[test]
    fn only_the_official_host_is_the_provider_api() {
        assert!(is_provider_api(
            Provider::OpenAI,
            "https://api.openai.com/v1"
        ));
        assert!(is_provider_api(
            Provider::OpenAI,
            "https://API.openai.com/v1/"
        ));
        assert!(is_provider_api(
            Provider::Anthropic,
            "https://api.anthropic.com"
        ));
        assert!(!is_provider_api(
            Provider::OpenAI,
            "https://api.anthropic.com"
        ));
        assert!(!is_provider_api(
            Provider::OpenAI,
            "http://api.openai.com/v1"
        ));
        assert!(!is_provider_api(
            Provider::OpenAI,
            "http://127.0.0.1:8080/v1"
        ));
        assert!(!is_provider_api(
            Provider::OpenAI,
            "https://openrouter.ai/api/v1"
        ));
        assert!(!is_provider_api(
            Provider::OpenAI,
            "https://api.openai.com:8443/v1"
        ));
    }

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
            request_deadline: std::time::Duration::from_secs(1),
            first_byte_timeout: std::time::Duration::from_secs(1),
            models: Default::default(),
        };
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }
}
