//! The HTTP client shared by every agent of a session: sends a request in the
//! configured wire format, streams the reply, retries transient failures, and
//! keeps the API key out of every error it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::anthropic::{self, AnthropicDecoder};
use super::openai::{self, OpenAiDecoder};
use super::sse::{MAX_EVENT_BYTES, SseParser};
use super::text_calls::{self, StreamHold};
use super::{
    ClientConfig, ContentBlock, Message, ModelError, ModelRequest, ModelResponse, ModelWire,
    Provider, Role, StopReason, StreamDelta, TEXT_MODE_TEMPERATURE, ToolCallMode,
};

/// Longest we honour a server's `retry-after`, so a bad header cannot stall a run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// First backoff when the server gives no `retry-after`; doubles per try.
const BASE_BACKOFF: Duration = Duration::from_millis(200);
/// Longest backoff between tries.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Sent with every request.
const USER_AGENT: &str = concat!("cadre/", env!("CARGO_PKG_VERSION"));

/// True for failures another model may not have: overload, unavailability,
/// and a model the server does not know.
fn model_unavailable(error: &ModelError) -> bool {
    match error {
        ModelError::RetriesExhausted { status, .. } => matches!(status, 429 | 503 | 529),
        ModelError::Status { status, message } => {
            matches!(status, 503 | 529)
                || (*status == 404 && message.to_ascii_lowercase().contains("model"))
        }
        ModelError::Api { kind, .. } => kind.contains("overloaded") || kind.contains("not_found"),
        _ => false,
    }
}

/// A model client. Cheap to clone; clones share the connection pool.
#[derive(Clone, Debug)]
pub struct ModelClient {
    http: reqwest::Client,
    config: ClientConfig,
    /// Where requests go: built from the parsed base URL the key check saw.
    endpoint: url::Url,
    /// The run's spending cap, shared by every agent that uses a clone.
    spend: Option<std::sync::Arc<SpendCap>>,
    /// Models to move to, in order, when the one in use is overloaded or gone.
    fallbacks: std::sync::Arc<[String]>,
    /// Models in `auto` tool-call mode whose server failed to parse their
    /// calls: they get their tools in the prompt from then on.
    text_calls_learned: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

/// A spending cap shared by the agents of a run (`--max-budget-usd`).
#[derive(Debug)]
pub struct SpendCap {
    cap_nanodollars: u64,
    spent: std::sync::atomic::AtomicU64,
}

impl SpendCap {
    /// A cap of `usd` dollars.
    pub fn new(usd: f64) -> SpendCap {
        SpendCap {
            cap_nanodollars: (usd * 1e9).max(0.0) as u64,
            spent: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The cap in dollars.
    pub fn usd(&self) -> f64 {
        self.cap_nanodollars as f64 / 1e9
    }
}

enum Decoder {
    Anthropic(AnthropicDecoder),
    OpenAi(OpenAiDecoder),
}

impl Decoder {
    fn new(p: Provider) -> Self {
        match p {
            Provider::Anthropic => Decoder::Anthropic(AnthropicDecoder::default()),
            Provider::OpenAI => Decoder::OpenAi(OpenAiDecoder::default()),
        }
    }
    /// `Ok(true)` when the event carried reply content.
    fn on_event(
        &mut self,
        data: &str,
        emit: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ModelError> {
        match self {
            Decoder::Anthropic(d) => d.on_event(data, emit),
            Decoder::OpenAi(d) => d.on_event(data, emit),
        }
    }
    /// Whether the wire's last event arrived.
    fn is_complete(&self) -> bool {
        match self {
            Decoder::Anthropic(d) => d.is_complete(),
            Decoder::OpenAi(d) => d.is_complete(),
        }
    }
    fn finish(self) -> Result<ModelResponse, ModelError> {
        match self {
            Decoder::Anthropic(d) => d.finish(),
            Decoder::OpenAi(d) => d.finish(),
        }
    }
}

/// How one try ended.
enum Attempt {
    Done(ModelResponse),
    Retry(Retry),
}

/// A try that failed in a way worth another.
struct Retry {
    /// HTTP status, 0 for a transport or stream failure.
    status: u16,
    /// What went wrong.
    message: String,
    /// How long to wait, when the failure says (`retry-after`, or at once).
    wait: Option<Duration>,
    /// Whether text was already streamed to the caller.
    streamed: bool,
    /// The connection was stale: try again at once, on a new one.
    at_once: bool,
    /// The server failed to parse the model's tool call (or the tools).
    tool_parse: bool,
}

impl Attempt {
    fn retry(status: u16, message: String) -> Attempt {
        Attempt::Retry(Retry {
            status,
            message,
            wait: None,
            streamed: false,
            at_once: false,
            tool_parse: false,
        })
    }
}

/// True for a server's failure to parse a tool call the model wrote, or the
/// tools it was given (llama.cpp: "Failed to parse input at pos …", "Failed
/// to parse tool call arguments as JSON", "Failed to parse tools: …").
fn is_tool_parse_error(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("failed to parse")
        && ["input at pos", "tool", "arguments", "function"]
            .iter()
            .any(|k| m.contains(k))
}

impl ModelClient {
    /// A client for `config`. Fails if the HTTP stack cannot be built or a key is missing.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let base = super::parse_base_url(&config.base_url)
            .map_err(|e| ModelError::Config(format!("bad base URL: {e}")))?;
        let endpoint = endpoint_url(&base, config.provider);
        if config.api_key.is_none() && !super::url_is_loopback(&base) {
            return Err(ModelError::Config(format!(
                "no API key: set {} (a key is only optional for a server on loopback)",
                config.provider.key_env()
            )));
        }
        let plain_http = base.scheme() == "http";
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .user_agent(USER_AGENT)
            // A model API never redirects a POST; following one could carry
            // the key (`x-api-key` is not among the headers reqwest strips)
            // to another host.
            .redirect(reqwest::redirect::Policy::none())
            // `localhost` is loopback by fiat, never a DNS answer.
            .resolve_to_addrs("localhost", &LOCALHOST_ADDRS);
        if plain_http {
            // No TLS is ever spoken: skip loading the system's CA roots (milliseconds at start-up).
            builder = builder.tls_certs_only(Vec::<reqwest::Certificate>::new());
        }
        let http = builder.build().map_err(|e| {
            ModelError::Config(if plain_http {
                format!("cannot build the HTTP client: {}", error_chain(&e))
            } else {
                format!(
                    "cannot set up TLS for {}: {} (no usable CA root certificates were found; \
                     install the system's CA certificates or set SSL_CERT_FILE to a PEM bundle)",
                    config.base_url,
                    error_chain(&e)
                )
            })
        })?;
        Ok(ModelClient {
            http,
            config,
            endpoint,
            spend: None,
            fallbacks: std::sync::Arc::from(Vec::new()),
            text_calls_learned: Default::default(),
        })
    }

    /// The client's configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The same client whose agents all count their spending against `cap`.
    pub fn with_spend_cap(mut self, cap: Option<std::sync::Arc<SpendCap>>) -> ModelClient {
        self.spend = cap;
        self
    }

    /// The same client with models to fall back to, in order.
    pub fn with_fallbacks(mut self, models: Vec<String>) -> ModelClient {
        self.fallbacks = models.into();
        self
    }

    /// The HTTP client, for questions to the same server.
    pub(super) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Counts a request's cost against the run's cap.
    pub fn record_spend(&self, nanodollars: u64) {
        if let Some(cap) = &self.spend {
            cap.spent.fetch_add(nanodollars, Ordering::Relaxed);
        }
    }

    /// The cap in dollars when the run has spent it all.
    pub fn budget_exhausted(&self) -> Option<f64> {
        let cap = self.spend.as_ref()?;
        (cap.spent.load(Ordering::Relaxed) >= cap.cap_nanodollars).then(|| cap.usd())
    }

    /// The model to move to after `error` on the model in use: the next
    /// fallback, when the error says the model is overloaded or unavailable.
    pub fn fallback_after(&self, error: &ModelError) -> Option<String> {
        if self.fallbacks.is_empty() || !model_unavailable(error) {
            return None;
        }
        let next = match self.fallbacks.iter().position(|m| *m == self.config.model) {
            Some(i) => i + 1,
            None => 0,
        };
        self.fallbacks.get(next).cloned()
    }

    /// The same endpoint and key with another model.
    pub fn with_model(&self, model: &str) -> ModelClient {
        let mut c = self.clone();
        c.config.model = model.to_string();
        c
    }

    /// True when the endpoint is the provider's own API (not a proxy or a
    /// local server): built-in model aliases and prices hold only there.
    pub fn is_provider_api(&self) -> bool {
        super::is_provider_api(self.config.provider, &self.config.base_url)
    }

    /// What the configuration says of the model in use.
    fn wire(&self) -> ModelWire {
        self.config
            .models
            .get(&self.config.model)
            .copied()
            .unwrap_or_default()
    }

    /// Output tokens per request for the model in use.
    pub fn max_tokens(&self) -> u32 {
        self.wire().max_tokens.unwrap_or(self.config.max_tokens)
    }

    /// How the model in use is offered its tools and makes its calls:
    /// configured, else `auto` for a loopback server on the OpenAI wire
    /// (where small local models write calls as text), else `native`.
    pub fn tool_call_mode(&self) -> ToolCallMode {
        if self.config.provider != Provider::OpenAI {
            return ToolCallMode::Native;
        }
        let loopback = super::url_is_loopback(&self.endpoint);
        let mode = self.wire().tool_calls.unwrap_or(if loopback {
            ToolCallMode::Auto
        } else {
            ToolCallMode::Native
        });
        let learned = self
            .text_calls_learned
            .lock()
            .is_ok_and(|l| l.contains(&self.config.model));
        match mode {
            ToolCallMode::Auto if learned => ToolCallMode::Text,
            other => other,
        }
    }

    /// The request body: tools in the prompt when `in_text`, and the
    /// configured (or `text` mode's) temperature.
    fn encode(
        &self,
        req: &ModelRequest,
        in_text: bool,
        wire: &ModelWire,
    ) -> Result<Vec<u8>, ModelError> {
        let mut body = match self.config.provider {
            Provider::Anthropic => anthropic::request_bytes(req, true),
            Provider::OpenAI => openai::request_bytes_as(
                req,
                true,
                self.openai_limit_key(),
                in_text.then(|| text_calls::family_of(&req.model)),
            ),
        }
        .map_err(|e| ModelError::Protocol(format!("cannot encode request: {e}")))?;
        let temperature = wire
            .temperature
            .or(in_text.then_some(TEXT_MODE_TEMPERATURE));
        if let Some(t) = temperature
            && body.last() == Some(&b'}')
        {
            body.pop();
            body.extend_from_slice(b",\"temperature\":");
            serde_json::to_writer(&mut body, &t)
                .map_err(|e| ModelError::Protocol(format!("cannot encode request: {e}")))?;
            body.push(b'}');
        }
        Ok(body)
    }

    /// How the output token ceiling is named on the OpenAI wire.
    fn openai_limit_key(&self) -> openai::TokenLimitKey {
        if self.is_provider_api() {
            openai::TokenLimitKey::MaxCompletionTokens
        } else {
            openai::TokenLimitKey::MaxTokens
        }
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        self.endpoint.to_string()
    }

    /// Replaces every occurrence of the API key (and of every registered
    /// secret) in `text`.
    pub fn redact(&self, text: &str) -> String {
        let text = &*crate::secrets::redact(text);
        match &self.config.api_key {
            Some(key) if key.len() >= 4 && text.contains(key.as_str()) => {
                text.replace(key.as_str(), "[redacted]")
            }
            _ => text.to_string(),
        }
    }

    /// A reply quoting the key (a server echoing the request's headers) has
    /// it replaced, so it reaches no log and no later request.
    fn redact_reply(&self, mut resp: ModelResponse) -> ModelResponse {
        if let Ok(json) = serde_json::to_string(&resp.message) {
            let clean = self.redact(&json);
            if clean != json
                && let Ok(message) = serde_json::from_str(&clean)
            {
                resp.message = message;
            }
        }
        resp
    }

    fn redact_error(&self, e: ModelError) -> ModelError {
        match e {
            ModelError::Connect { url, detail } => ModelError::Connect {
                url,
                detail: self.redact(&detail),
            },
            ModelError::Status { status, message } => ModelError::Status {
                status,
                message: self.redact(&message),
            },
            ModelError::RetriesExhausted {
                status,
                attempts,
                message,
            } => ModelError::RetriesExhausted {
                status,
                attempts,
                message: self.redact(&message),
            },
            ModelError::StreamEndedEarly { detail } => ModelError::StreamEndedEarly {
                detail: self.redact(&detail),
            },
            ModelError::Api { kind, message } => ModelError::Api {
                kind: self.redact(&kind),
                message: self.redact(&message),
            },
            ModelError::Protocol(m) => ModelError::Protocol(self.redact(&m)),
            ModelError::DeadlineExceeded {
                seconds,
                attempts,
                last,
            } => ModelError::DeadlineExceeded {
                seconds,
                attempts,
                last: last.map(|l| self.redact(&l)),
            },
            other => other,
        }
    }

    pub(super) fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/json"));
        let bad_key = |_| {
            ModelError::Config("the API key contains characters not allowed in a header".into())
        };
        match self.config.provider {
            Provider::Anthropic => {
                h.insert(
                    "anthropic-version",
                    HeaderValue::from_static(anthropic::API_VERSION),
                );
                if let Some(key) = &self.config.api_key {
                    let mut v = HeaderValue::from_str(key).map_err(bad_key)?;
                    v.set_sensitive(true);
                    h.insert("x-api-key", v);
                }
            }
            Provider::OpenAI => {
                if let Some(key) = &self.config.api_key {
                    let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(bad_key)?;
                    v.set_sensitive(true);
                    h.insert("authorization", v);
                }
            }
        }
        Ok(h)
    }

    /// Sends `req`, streaming deltas to `on_delta`, and returns the whole reply.
    /// Transient failures are retried (at most `max_attempts` tries in all):
    /// error statuses, connections that fail or break, streams that stall for
    /// longer than the idle timeout or carry a server error. A reply is only
    /// ever returned whole; text a failed try streamed is announced as discarded.
    pub async fn stream(
        &self,
        req: &ModelRequest,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let wire = self.wire();
        let mode = self.tool_call_mode();
        // Text is read for calls in `auto` and `text` modes alone.
        let reads_text_calls = mode != ToolCallMode::Native && !req.tools.is_empty();
        let mut in_text = mode == ToolCallMode::Text && !req.tools.is_empty();
        // Shared by every try: a retry does not copy the body.
        let mut body = bytes::Bytes::from(self.encode(req, in_text, &wire)?);
        let headers = self.headers()?;
        let first_byte = wire
            .first_byte_timeout_s
            .map_or(self.config.first_byte_timeout, Duration::from_secs);
        let max = self.config.max_attempts.max(1);
        let mut attempt = 1;
        let mut retried_at_once = false;
        // Idle timeouts bound each try; this bounds them all together, so a
        // dead server cannot hold a run for tries × idle timeout.
        let limit = wire
            .request_deadline_s
            .map_or(self.config.request_deadline, Duration::from_secs);
        let deadline = tokio::time::Instant::now() + limit;
        let mut last_failure: Option<String> = None;
        let past_deadline = |attempts: u32, last: Option<String>| ModelError::DeadlineExceeded {
            seconds: limit.as_secs(),
            attempts,
            last,
        };
        loop {
            // Text that may be a call written as text is held back until it is decided.
            let mut hold = StreamHold::default();
            let mut shown = |d: StreamDelta| match d {
                StreamDelta::Text(t) if reads_text_calls => {
                    let now = hold.push(&t);
                    if !now.is_empty() {
                        on_delta(StreamDelta::Text(now));
                    }
                }
                other => on_delta(other),
            };
            let tried = self.try_once(
                &body,
                &headers,
                &mut shown,
                first_byte,
                reads_text_calls && !in_text,
            );
            let result = tokio::select! {
                r = tokio::time::timeout_at(deadline, tried) => match r {
                    Ok(r) => r,
                    Err(_) => return Err(self.redact_error(past_deadline(attempt, last_failure))),
                },
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let retry = match result {
                Ok(Attempt::Done(resp)) => {
                    let rest = hold.finish();
                    if !rest.is_empty() {
                        on_delta(StreamDelta::Text(rest));
                    }
                    let resp = if reads_text_calls {
                        read_text_calls(resp)
                    } else {
                        resp
                    };
                    return Ok(self.redact_reply(resp));
                }
                Ok(Attempt::Retry(r)) => r,
                Err(e) => return Err(self.redact_error(e)),
            };
            let mut message = self.redact(&retry.message);
            let mut wait_hint = match (retry.at_once, retried_at_once) {
                (true, false) => Some(Duration::ZERO),
                (true, true) => None,
                (false, _) => retry.wait,
            };
            if retry.tool_parse && !in_text {
                // The server could not parse the call the model wrote: the
                // model gets its tools in the prompt from now on, and cadre
                // reads its calls itself.
                in_text = true;
                body = bytes::Bytes::from(self.encode(req, true, &wire)?);
                if let Ok(mut learned) = self.text_calls_learned.lock() {
                    learned.insert(self.config.model.clone());
                }
                message = format!(
                    "{message}; the server could not parse the model's tool call, so its tools now go in the prompt and cadre reads its calls (tool_calls = \"text\")"
                );
                wait_hint = Some(Duration::ZERO);
            }
            // Only one retry at once: a server that keeps dropping requests gets the backoff.
            retried_at_once |= retry.at_once;
            if attempt >= max {
                return Err(ModelError::RetriesExhausted {
                    status: retry.status,
                    attempts: attempt,
                    message,
                });
            }
            let wait = wait_hint
                .unwrap_or_else(|| {
                    BASE_BACKOFF
                        .saturating_mul(2u32.saturating_pow(attempt - 1))
                        .min(MAX_BACKOFF)
                })
                .min(MAX_RETRY_AFTER);
            // A try that could only start after the deadline is not made.
            if tokio::time::Instant::now() + wait >= deadline {
                return Err(past_deadline(attempt, Some(message)));
            }
            last_failure = Some(message.clone());
            attempt += 1;
            on_delta(StreamDelta::Retrying {
                attempt,
                status: (retry.status != 0).then_some(retry.status),
                wait_ms: wait.as_millis() as u64,
                reason: message,
                discarded_text: retry.streamed,
            });
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            }
        }
    }

    /// One try. `first_byte` bounds the wait for the headers and the first
    /// reply event; `text_calls_read` says a server's failure to parse a tool
    /// call is worth a try with the tools in the prompt.
    async fn try_once(
        &self,
        body: &bytes::Bytes,
        headers: &HeaderMap,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        first_byte: Duration,
        text_calls_read: bool,
    ) -> Result<Attempt, ModelError> {
        let idle = self.config.stream_idle_timeout;
        let stalled = |when: &str| {
            format!(
                "the model server sent no reply data for {} s {when} (stream_idle_timeout_s)",
                idle.as_secs_f64()
            )
        };
        // The wait for the first data is the idle timeout unless a longer
        // one was given (a local server, `first_byte_timeout_s`).
        let no_first_byte = |when: &str| {
            if first_byte == idle {
                return stalled(when);
            }
            format!(
                "the model server sent nothing for {} s (first_byte_timeout_s; a local server may still be processing the prompt)",
                first_byte.as_secs_f64()
            )
        };
        let sent = tokio::time::timeout(
            first_byte,
            self.http
                // The parsed URL, not its text: nothing parsed again per request.
                .post(self.endpoint.clone())
                .headers(headers.clone())
                .body(body.clone())
                .send(),
        )
        .await;
        let resp = match sent {
            Ok(Ok(r)) => r,
            Err(_) => {
                return Ok(Attempt::retry(
                    0,
                    no_first_byte("before the response headers"),
                ));
            }
            // Nothing was received: a connection failure is safe to retry.
            Ok(Err(e)) if e.is_connect() || e.is_timeout() => {
                return Ok(Attempt::retry(
                    0,
                    format!("{}: {}", self.endpoint, error_chain(&e)),
                ));
            }
            // The request went out on a connection that broke before any response:
            // typically a kept-alive connection the server had already closed.
            // The pool drops that connection, so try again at once on a new one.
            Ok(Err(e)) if !e.is_builder() && !e.is_redirect() && !e.is_status() => {
                return Ok(Attempt::Retry(Retry {
                    status: 0,
                    message: format!("{}: {}", self.endpoint, error_chain(&e)),
                    wait: None,
                    streamed: false,
                    at_once: true,
                    tool_parse: false,
                }));
            }
            Ok(Err(e)) => {
                return Err(ModelError::Connect {
                    url: self.endpoint(),
                    detail: error_chain(&e),
                });
            }
        };
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let wait = retry_after(resp.headers());
            let resp_location = location(resp.headers());
            // An error body is only for the message: a stalled one is left unread.
            let text = match read_body(resp, idle, ERROR_BODY_LIMIT).await {
                Ok(bytes) | Err(BodyError::TooLarge(bytes)) => {
                    String::from_utf8_lossy(&bytes).into_owned()
                }
                Err(_) => String::new(),
            };
            // Redacted before any cut, which could leave part of a key behind.
            let text = self.redact(&text);
            let message = match self.config.provider {
                Provider::Anthropic => anthropic::error_message(&text),
                Provider::OpenAI => openai::error_message(&text),
            }
            .unwrap_or_else(|| text.chars().take(500).collect());
            let message = redirect_note(status, resp_location.as_deref(), message);
            let tool_parse = text_calls_read && is_tool_parse_error(&message);
            if ModelError::is_retryable_status(status) || tool_parse {
                return Ok(Attempt::Retry(Retry {
                    status,
                    message: format!("HTTP {status}: {message}"),
                    wait,
                    streamed: false,
                    at_once: false,
                    tool_parse,
                }));
            }
            return Err(ModelError::Status { status, message });
        }
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            // Media types are case-insensitive.
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_sse {
            // Some servers ignore `stream: true`; accept a whole JSON reply
            // (computed whole, so the first-byte wait holds for all of it).
            let bytes = match read_body(resp, first_byte.max(idle), MAX_EVENT_BYTES).await {
                Ok(b) => b,
                Err(BodyError::Stalled) => {
                    return Ok(Attempt::retry(0, stalled("in the middle of the reply")));
                }
                Err(BodyError::Broken(detail)) => {
                    return Ok(Attempt::retry(
                        0,
                        format!("the reply ended early: the connection broke ({detail})"),
                    ));
                }
                Err(BodyError::TooLarge(_)) => {
                    return Err(ModelError::Protocol(format!(
                        "the reply is larger than {MAX_EVENT_BYTES} bytes"
                    )));
                }
            };
            let v: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| ModelError::Protocol(format!("response is not JSON ({e})")))?;
            let r = match self.config.provider {
                Provider::Anthropic => anthropic::decode_full(&v),
                Provider::OpenAI => openai::decode_full(&v),
            }?;
            let text = r.message.text();
            if !text.is_empty() {
                on_delta(StreamDelta::Text(text));
            }
            return Ok(Attempt::Done(r));
        }
        let streamed = AtomicBool::new(false);
        let mut emit = |d: StreamDelta| {
            if matches!(&d, StreamDelta::Text(t) if !t.is_empty()) {
                streamed.store(true, Ordering::Relaxed);
            }
            on_delta(d);
        };
        let failed = |message: String| {
            Ok(Attempt::Retry(Retry {
                status: 0,
                tool_parse: text_calls_read && is_tool_parse_error(&message),
                message,
                wait: None,
                streamed: streamed.load(Ordering::Relaxed),
                at_once: false,
            }))
        };
        let mut decoder = Decoder::new(self.config.provider);
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        let mut chunks = resp.bytes_stream();
        // The idle clock restarts on an event that carries reply content, not
        // on any byte: a server trickling comments, blank lines, pings or one
        // endless event keeps the connection busy without ever progressing.
        // Until the first such event the first-byte wait holds.
        let mut deadline = tokio::time::Instant::now() + first_byte;
        let mut started = false;
        loop {
            let chunk = match tokio::time::timeout_at(deadline, chunks.next()).await {
                Err(_) if !started => return failed(no_first_byte("in the middle of the reply")),
                Err(_) => return failed(stalled("in the middle of the reply")),
                Ok(None) => break,
                Ok(Some(Ok(c))) => c,
                Ok(Some(Err(e))) => {
                    return failed(format!(
                        "the reply stream ended early: the connection broke ({})",
                        error_chain(&e)
                    ));
                }
            };
            parser
                .push(&chunk, &mut events)
                .map_err(|e| ModelError::Protocol(e.to_string()))?;
            let mut progressed = false;
            for ev in events.drain(..) {
                let result = if ev.event == "error" {
                    Err(stream_error(&self.redact(&ev.data)))
                } else if ev.data.is_empty() || ev.event == "ping" {
                    // A keep-alive, on either wire: no reply content.
                    Ok(false)
                } else {
                    decoder.on_event(&ev.data, &mut emit)
                };
                match result {
                    Ok(progress) => progressed |= progress,
                    Err(e @ ModelError::Api { .. })
                        if e.is_transient_api_error()
                            || (text_calls_read && is_tool_parse_error(&e.to_string())) =>
                    {
                        return failed(e.to_string());
                    }
                    Err(e) => return Err(e),
                }
            }
            if progressed {
                started = true;
                deadline = tokio::time::Instant::now() + idle;
            }
            if decoder.is_complete() {
                // The reply is whole at its last event; the body's end (the
                // chunked terminator) is read off the turn's path so the
                // connection still goes back to the pool.
                drain_body(chunks, idle);
                break;
            }
        }
        match decoder.finish() {
            Ok(r) => Ok(Attempt::Done(r)),
            Err(e @ ModelError::StreamEndedEarly { .. }) => failed(e.to_string()),
            Err(e) => Err(e),
        }
    }
}

/// A reply with no call of its own, whose text holds calls written as text:
/// the calls become tool calls (ids are given later, by `unique_call_ids`),
/// the text around them stays the reply's text. Text that looks like a call
/// but cannot be read is named in `text_call_problem`.
fn read_text_calls(mut resp: ModelResponse) -> ModelResponse {
    if !resp.message.tool_calls().is_empty() {
        return resp;
    }
    let text = resp.message.text();
    let parsed = text_calls::parse_reply(&text);
    if parsed.calls.is_empty() {
        resp.text_call_problem = parsed.problem;
        return resp;
    }
    let mut blocks: Vec<ContentBlock> = resp
        .message
        .content
        .iter()
        .filter(|b| !matches!(b, ContentBlock::Text { .. }))
        .cloned()
        .collect();
    if !parsed.text.trim().is_empty() {
        blocks.insert(0, ContentBlock::Text { text: parsed.text });
    }
    blocks.extend(parsed.calls.into_iter().map(|c| ContentBlock::ToolUse {
        id: String::new(),
        name: c.name,
        input: c.arguments,
    }));
    resp.message = Message {
        role: Role::Assistant,
        content: blocks.into(),
    };
    resp.stop_reason = StopReason::ToolUse;
    resp
}

/// Reads what is left of a streamed body after the reply's last event, in
/// the background and for at most `idle`: a fully read body returns its
/// connection to the pool, a body that never ends is dropped with it.
fn drain_body<S>(mut chunks: S, idle: Duration)
where
    S: futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send + Unpin + 'static,
{
    tokio::spawn(async move {
        let _ = tokio::time::timeout(idle, async {
            while let Some(Ok(_)) = chunks.next().await {}
        })
        .await;
    });
}

/// The largest error body read for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Why a whole body could not be read.
enum BodyError {
    /// Nothing arrived for the idle timeout.
    Stalled,
    /// The connection broke.
    Broken(String),
    /// The body passed the limit; what was read so far.
    TooLarge(Vec<u8>),
}

/// Reads a whole body, giving up when it grows past `limit` or is not
/// complete within `idle` (a body trickled a byte at a time never is).
async fn read_body(
    resp: reqwest::Response,
    idle: Duration,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    let mut chunks = resp.bytes_stream();
    let deadline = tokio::time::Instant::now() + idle;
    loop {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Err(_) => return Err(BodyError::Stalled),
            Ok(None) => return Ok(out),
            Ok(Some(Err(e))) => return Err(BodyError::Broken(error_chain(&e))),
            Ok(Some(Ok(c))) => {
                out.extend_from_slice(&c);
                if out.len() > limit {
                    return Err(BodyError::TooLarge(out));
                }
            }
        }
    }
}

/// The error an `error` event carries: Anthropic's `{"type":"error","error":{…}}`,
/// or llama.cpp's bare `{"code":…,"message":…,"type":…}`.
fn stream_error(data: &str) -> ModelError {
    let v: serde_json::Value = serde_json::from_str(data).unwrap_or(serde_json::Value::Null);
    let err = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
    let text = |k: &str| err.get(k).and_then(serde_json::Value::as_str);
    ModelError::Api {
        kind: text("type").unwrap_or("error").to_string(),
        message: text("message")
            .map(str::to_string)
            .unwrap_or_else(|| data.chars().take(500).collect()),
    }
}

/// Where `localhost` connects: both loopback addresses (the port is the URL's).
const LOCALHOST_ADDRS: [std::net::SocketAddr; 2] = [
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0),
    std::net::SocketAddr::new(std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), 0),
];

/// The request URL for `provider` under `base` (Anthropic's base has no `/v1`,
/// OpenAI's has it, as their SDKs take them).
fn endpoint_url(base: &url::Url, provider: Provider) -> url::Url {
    let mut url = base.clone();
    let path = base.path().trim_end_matches('/');
    let tail = match provider {
        Provider::Anthropic => "/v1/messages",
        Provider::OpenAI => "/chat/completions",
    };
    url.set_path(&format!("{path}{tail}"));
    url
}

/// A response's `location` header, if readable.
fn location(headers: &HeaderMap) -> Option<String> {
    headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(|s| crate::secrets::redact(s).chars().take(200).collect())
}

/// Says why a redirect was not followed.
fn redirect_note(status: u16, location: Option<&str>, message: String) -> String {
    if !(300..400).contains(&status) {
        return message;
    }
    format!(
        "the server answered with a redirect{}; cadre does not follow redirects (they could carry the API key to another host): set the base URL to the final address",
        location.map(|l| format!(" to {l}")).unwrap_or_default()
    )
}

/// `retry-after-ms` or `retry-after` (seconds), as the providers send them.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = get("retry-after-ms") {
        return Some(Duration::from_millis(ms as u64));
    }
    get("retry-after").map(Duration::from_secs_f64)
}

/// An error and its sources on one line; reqwest's top-level text is too vague alone.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    s
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
