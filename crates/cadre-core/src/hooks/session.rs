//! The session's hooks as agents fire them: the hook set of the settings
//! files, what every hook input shares (session id, transcript, project),
//! and each agent's view (a definition's own hooks live only in its child).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{HookEvent, HookOutcome, HookSet, run_hooks};
use crate::protocol::{Event, EventSink, PermissionMode};

/// The settings files' hooks and what every hook input of the session shares.
#[derive(Debug)]
pub struct SessionHooks {
    set: HookSet,
    project_dir: PathBuf,
    env: Vec<(String, String)>,
    project_trusted: bool,
    /// Session id and transcript path, once the session is open.
    session: Mutex<(String, PathBuf)>,
}

impl SessionHooks {
    /// Hooks `set` of a session in `project_dir` (trusted or not: a
    /// project definition's own hooks need trust), run with `env` added.
    pub fn new(
        set: HookSet,
        project_dir: PathBuf,
        env: Vec<(String, String)>,
        project_trusted: bool,
    ) -> SessionHooks {
        SessionHooks {
            set,
            project_dir,
            env,
            project_trusted,
            session: Mutex::new((String::new(), PathBuf::new())),
        }
    }

    /// Records the open session's id and transcript (its log).
    pub fn set_session(&self, id: &str, transcript: &Path) {
        if let Ok(mut s) = self.session.lock() {
            *s = (id.to_string(), transcript.to_path_buf());
        }
    }

    /// Whether the project folder is trusted.
    pub fn project_trusted(&self) -> bool {
        self.project_trusted
    }

    fn session(&self) -> (String, PathBuf) {
        self.session.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// One agent's hooks: the session's plus its definition's own.
#[derive(Debug, Clone)]
pub struct AgentHooks {
    session: Arc<SessionHooks>,
    set: HookSet,
    /// `agent_id` of hook inputs (children only).
    pub agent_id: Option<String>,
    /// `agent_type` of hook inputs (children, and the main agent under `--agent`).
    pub agent_type: Option<String>,
}

/// Where an agent is when it fires a hook.
pub struct FireAt<'a> {
    /// The agent's id, for events.
    pub agent: &'a str,
    /// Its working directory.
    pub cwd: &'a Path,
    /// Its permission mode now.
    pub mode: PermissionMode,
    /// Where its events go.
    pub events: &'a EventSink,
    /// Stops the hooks (they are killed).
    pub cancel: &'a CancellationToken,
}

impl AgentHooks {
    /// The hooks of an agent: the session's, plus `own` (a definition's,
    /// whose `Stop` hooks count as `SubagentStop`).
    pub fn new(
        session: Arc<SessionHooks>,
        own: Option<HookSet>,
        agent_id: Option<String>,
        agent_type: Option<String>,
    ) -> AgentHooks {
        let mut set = session.set.clone();
        if let Some(own) = own {
            set.extend(own.stop_as_subagent_stop());
        }
        AgentHooks {
            session,
            set,
            agent_id,
            agent_type,
        }
    }

    /// The session's hooks, shared with children.
    pub fn session(&self) -> &Arc<SessionHooks> {
        &self.session
    }

    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.set.events().contains(&event)
    }

    /// Records the session's id and transcript for every hook input.
    pub fn set_session(&self, id: &str, transcript: &Path) {
        self.session.set_session(id, transcript);
    }

    /// Runs the hooks of `event` that match `subject`, with the common input
    /// fields plus `extra`; reports each run as events, and each message
    /// for the user as a warning. No matching hook: an empty outcome.
    pub async fn fire(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        extra: Map<String, Value>,
        at: FireAt<'_>,
    ) -> HookOutcome {
        let commands = self.set.matching(event, subject);
        if commands.is_empty() {
            return HookOutcome::default();
        }
        let (session_id, transcript) = self.session.session();
        let mut input = json!({
            "session_id": session_id,
            "transcript_path": transcript.display().to_string(),
            "cwd": at.cwd.display().to_string(),
            "hook_event_name": event.name(),
            "permission_mode": at.mode.as_str(),
        });
        if let Value::Object(map) = &mut input {
            if let Some(id) = &self.agent_id {
                map.insert("agent_id".into(), json!(id));
            }
            if let Some(t) = &self.agent_type {
                map.insert("agent_type".into(), json!(t));
            }
            map.extend(extra);
        }
        for c in &commands {
            at.events.emit(Event::HookStarted {
                agent: at.agent.to_string().into(),
                event,
                command: c.command.clone(),
                source: c.source.clone(),
            });
        }
        let runs = run_hooks(
            &commands,
            &input,
            at.cwd,
            &self.session.project_dir,
            &self.session.env,
            at.cancel,
        )
        .await;
        for run in &runs {
            at.events.emit(Event::HookEnded {
                agent: at.agent.to_string().into(),
                event,
                command: run.command.clone(),
                decision: HookOutcome::decision_of(event, run),
                exit_code: run.exit_code,
                duration_ms: run.duration.as_millis() as u64,
            });
        }
        let outcome = HookOutcome::from_runs(event, &runs);
        for m in &outcome.messages {
            at.events.emit(Event::Warning {
                message: format!("{} hook: {m}", event.name()),
            });
        }
        outcome
    }
}
