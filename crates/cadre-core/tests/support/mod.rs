//! Builds a main agent on the public API, talking to a `cadre-mock` server
//! on 127.0.0.1, for tests of the agent loop and of notice delivery. Every
//! way of building an agent is in [`agent`], so a change to the setup types
//! touches one place.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cadre_core::agent::{Agent, AgentSetup, TurnLimits};
use cadre_core::background::BackgroundWork;
use cadre_core::model::{ClientConfig, ModelClient, Provider};
use cadre_core::permissions::rules::RuleSet;
use cadre_core::permissions::{ApprovalGate, Headless, PermissionPolicy};
use cadre_core::protocol::{Event, EventSink, PermissionMode};
use cadre_core::tools::{ToolContext, ToolRegistry};
use cadre_mock::{MockServer, Record};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;

/// A project directory, a data directory and a mock serving `script`.
pub struct World {
    pub project: TempDir,
    pub data: TempDir,
    pub mock: MockServer,
    pub provider: Provider,
}

impl World {
    pub async fn new(script: &str, provider: Provider) -> World {
        World {
            project: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            mock: MockServer::start(script, None).await.expect("mock starts"),
            provider,
        }
    }

    pub fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.project.path().join(rel), text).unwrap();
    }

    /// The main agent, its event receiver, with `max_requests` per turn and
    /// the session's background work if given. Transient failures are not
    /// retried by the client, so a failure the mock injects reaches the loop.
    pub fn agent(
        &self,
        max_requests: u32,
        background: Option<Arc<BackgroundWork>>,
    ) -> (Agent, UnboundedReceiver<Event>) {
        self.agent_with(max_requests, background, None, None, None)
    }

    /// [`Self::agent`] with a context window of `window` tokens (the
    /// built-in table's otherwise) and a log.
    pub fn agent_with(
        &self,
        max_requests: u32,
        background: Option<Arc<BackgroundWork>>,
        window: Option<u64>,
        log: Option<Arc<cadre_core::session::SessionLog>>,
        pre_compact: Option<Arc<dyn cadre_core::context::PreCompactHook>>,
    ) -> (Agent, UnboundedReceiver<Event>) {
        // The binary installs the TLS provider at start; a test does it here.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (events, rx) = EventSink::channel();
        let base_url = match self.provider {
            Provider::Anthropic => self.mock.url(),
            Provider::OpenAI => format!("{}/v1", self.mock.url()),
        };
        let client = ModelClient::new(ClientConfig {
            provider: self.provider,
            base_url,
            api_key: None,
            model: "mock-model".into(),
            max_tokens: 1024,
            max_attempts: 1,
            stream_idle_timeout: std::time::Duration::from_secs(60),
            request_deadline: std::time::Duration::from_secs(600),
            first_byte_timeout: std::time::Duration::from_secs(60),
            models: Default::default(),
        })
        .expect("client");
        let mut ctx = ToolContext::new(self.project.path().to_path_buf());
        ctx.background = background.map(|w| w as Arc<dyn cadre_core::tools::BackgroundTasks>);
        let policy = Arc::new(PermissionPolicy::new(
            PermissionMode::Default,
            RuleSet::new(),
            self.project.path(),
            self.data.path(),
            false,
        ));
        ctx.policy = Some(policy.clone());
        let gate = Arc::new(ApprovalGate::new(Arc::new(Headless), events.clone()));
        let agent = Agent::new(AgentSetup {
            id: "main".into(),
            label: None,
            hooks: None,
            effort: None,
            context: {
                let mut table = cadre_core::context::ModelTable::default();
                table.set(
                    client.config().provider,
                    &client.config().model,
                    cadre_core::context::ModelOverride {
                        context_window: window,
                        prices: None,
                        images: None,
                    },
                );
                let mut policy = cadre_core::context::ContextPolicy::new(
                    Arc::new(table),
                    client.config().provider,
                    &client.config().model,
                );
                policy.pre_compact = pre_compact;
                policy
            },
            client,
            tools: ToolRegistry::builtin(),
            ctx,
            system: "You are the test agent.".into(),
            limits: TurnLimits {
                max_requests,
                max_tool_calls: 100,
            },
            events,
            policy,
            gate,
            log,
        });
        (agent, rx)
    }

    /// The requests the mock received, in arrival order, each checked for
    /// tool pairing (every call answered by exactly one result).
    pub fn records(&self) -> Vec<Record> {
        let mut records = self.mock.records();
        records.sort_by_key(|r| r.t_start_ms);
        for (i, r) in records.iter().enumerate() {
            let errors = cadre_mock::tool_pairing_errors(&r.body);
            assert!(errors.is_empty(), "request {i}: {errors:?}\n{}", r.body);
        }
        records
    }
}

/// Every event sent so far.
pub fn drain(rx: &mut UnboundedReceiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// The tool results a request carried, as (content, is_error), in order.
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str() {
            Some("tool") => {
                let c = m["content"].as_str().unwrap_or("");
                out.push((
                    c.trim_start_matches("Error: ").to_string(),
                    c.starts_with("Error: "),
                ));
            }
            Some("user") => {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_result" {
                        out.push((
                            b["content"].as_str().unwrap_or("").to_string(),
                            b["is_error"].as_bool().unwrap_or(false),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The text of every user message of a request, one message a line.
pub fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect()
}
