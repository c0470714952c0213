//! `cadre-mock`: a scripted model server speaking the Anthropic Messages API and the
//! OpenAI Chat Completions API (JSON and SSE streaming) over real HTTP on 127.0.0.1.
//!
//! A YAML [`Script`] lists rules; the first rule whose `when` holds answers a request,
//! with reply k for a request that already contains k assistant turns. See the crate
//! README for the full script format.

mod extract;
mod pairing;
mod script;
mod server;
mod template;
mod wire;

use std::path::PathBuf;

pub use extract::{RequestInfo, count_assistant_turns, request_info};
pub use pairing::tool_pairing_errors;
pub use script::{
    DEFAULT_ARGS_CHUNK_CHARS, DEFAULT_TEXT_CHUNK_CHARS, Failure, Reply, Rule, Script, ToolCall,
    Usage, When, parse_script,
};
pub use server::{MockServer, Record, Wire};

/// Errors from parsing a script or starting the server.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The script is not valid YAML or does not fit the script format.
    #[error("invalid script: {0}")]
    Yaml(#[source] serde_saphyr::Error),
    /// The script parsed but breaks a constraint.
    #[error("invalid script: {0}")]
    Invalid(String),
    /// The record file could not be opened.
    #[error("cannot open record file {}: {source}", path.display())]
    Record {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The listening socket could not be bound.
    #[error("cannot bind 127.0.0.1:{port}: {source}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}
