//! Model clients: provider-neutral types, the two wire formats, and the
//! streaming HTTP client with retries.

mod anthropic;
mod client;
mod config;
mod error;
mod openai;
mod reply;
mod served;
mod server_tools;
mod sse;
mod text_calls;
mod types;

pub use anthropic::message_json;
pub use client::{ModelClient, SpendCap};

/// The start of the error a run ends with when its spending cap is reached
/// (so the result can say `error_max_budget_usd`).
pub const BUDGET_EXHAUSTED: &str = "the run reached its spending cap";
pub use config::{
    ClientConfig, ModelWire, Provider, TEXT_MODE_TEMPERATURE, ToolCallMode, is_loopback_url,
    is_provider_api, parse_base_url, url_is_loopback,
};
pub use error::ModelError;
pub use reply::unique_call_ids;
pub(crate) use server_tools::is_server_block;
pub use server_tools::{SearchHit, ServerToolRun, ServerWebSearch, server_tool_runs};
pub use types::*;
