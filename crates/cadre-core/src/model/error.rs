//! What can go wrong talking to a model, and which failures are worth a retry.

use thiserror::Error;

/// A failed model request. Messages never contain the API key: every text
/// that came from the network is passed through the client's redaction first.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// The server could not be reached.
    #[error("could not reach the model server at {url}: {detail}")]
    Connect {
        /// Endpoint URL.
        url: String,
        /// Transport detail.
        detail: String,
    },
    /// The server answered with an error status.
    #[error("the model server answered HTTP {status}: {message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Error text from the body.
        message: String,
    },
    /// Transient failures persisted through every try.
    #[error("the model server kept failing; gave up after {attempts} tries: {message}")]
    RetriesExhausted {
        /// Last HTTP status (0 for a transport failure).
        status: u16,
        /// Tries made.
        attempts: u32,
        /// Last error text.
        message: String,
    },
    /// The request took longer than its overall deadline, tries and waits
    /// between them included; no further try is made.
    #[error(
        "the model request did not complete within {seconds} s (request_deadline_s); gave up after {attempts} tries{}",
        last.as_deref().map(|l| format!(": {l}")).unwrap_or_default()
    )]
    DeadlineExceeded {
        /// The deadline in seconds.
        seconds: u64,
        /// Tries started.
        attempts: u32,
        /// What the last failed try said, if one failed.
        last: Option<String>,
    },
    /// The reply stream stopped before the provider's end-of-message marker.
    #[error("the model's reply stream ended early, before it was complete ({detail})")]
    StreamEndedEarly {
        /// What we had seen and how it ended.
        detail: String,
    },
    /// The provider sent an error event inside the stream.
    #[error("the model server reported an error mid-reply: {kind}: {message}")]
    Api {
        /// Provider error type.
        kind: String,
        /// Provider message.
        message: String,
    },
    /// The reply did not follow the wire format.
    #[error("the model server sent a reply cadre cannot read: {0}")]
    Protocol(String),
    /// The client was misconfigured.
    #[error("model client configuration: {0}")]
    Config(String),
    /// The user interrupted the request.
    #[error("interrupted")]
    Cancelled,
}

impl ModelError {
    /// True for statuses that the providers document as transient.
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 429 | 500 | 502 | 503 | 529)
    }

    /// True for an error event mid-stream that another try may not hit
    /// (overload, a server error such as llama.cpp's failed tool-call parse);
    /// false for the kinds that say the request itself is wrong.
    pub fn is_transient_api_error(&self) -> bool {
        match self {
            ModelError::Api { kind, .. } => !matches!(
                kind.as_str(),
                "invalid_request_error"
                    | "authentication_error"
                    | "permission_error"
                    | "not_found_error"
                    | "request_too_large"
                    | "exceed_context_size_error"
                    | "invalid_request"
            ),
            _ => false,
        }
    }
}
