//! Admission: where an agent stands in the runtime (its `Spawner`), and
//! the per-turn cap a batch must fit before anything is asked or started.

use super::{BatchCall, BatchFailure, Parent, SubagentRuntime};
use crate::subagents::agent_tool::AgentArgs;
use crate::tools::{Caller, Delegation, SpawnCall, ToolInput, ToolOutput, parse_args};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

/// Where a parent stands when it spawns: its place in the runtime, which
/// its `Agent` and `SendMessage` calls reach through the tool context.
pub struct Spawner {
    /// The shared runtime.
    pub runtime: Arc<SubagentRuntime>,
    /// The parent's depth (main = 0).
    pub depth: u32,
    /// Types this parent may spawn (`tools: Agent(a, b)`); `None` = any.
    pub allowed_types: Option<Vec<String>>,
    /// Children started in the parent's current turn.
    pub started_this_turn: AtomicUsize,
    /// Tasks of children whose reports went back to the parent before their
    /// ends were filed: the parent's turn waits for them before it ends.
    pub closings: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Spawner {
    /// A spawner for the top-level agent.
    pub fn main(runtime: Arc<SubagentRuntime>, allowed_types: Option<Vec<String>>) -> Spawner {
        Spawner {
            runtime,
            depth: 0,
            allowed_types,
            started_this_turn: AtomicUsize::new(0),
            closings: Default::default(),
        }
    }

    /// A spawner for a child at `depth` that may start `allowed_types`.
    pub(super) fn child(
        runtime: Arc<SubagentRuntime>,
        depth: u32,
        allowed_types: Option<Vec<String>>,
    ) -> Self {
        Spawner {
            runtime,
            depth,
            allowed_types,
            started_this_turn: AtomicUsize::new(0),
            closings: Default::default(),
        }
    }

    /// Keeps the task of a child whose report is back, filing its end, for
    /// the parent's turn to wait on before it ends.
    pub(super) fn keep_closing(&self, run: tokio::task::JoinHandle<()>) {
        match self.closings.lock() {
            Ok(mut c) => c.push(run),
            Err(poisoned) => poisoned.into_inner().push(run),
        }
    }
}

impl Delegation for Spawner {
    fn default_type(&self) -> String {
        self.runtime.settings.default_type.clone()
    }

    fn check_turn_cap(&self, count: usize) -> Result<(), String> {
        let cap = self.runtime.settings.max_per_turn;
        let already = self.started_this_turn.load(Ordering::SeqCst);
        if already + count > cap {
            return Err(format!(
                "denied: this reply asks for {count} subagents, which would exceed the limit of {cap} per turn; {already} were already started this turn, and nothing from this batch was started"
            ));
        }
        Ok(())
    }

    fn spawn<'a>(
        &'a self,
        caller: &'a Caller,
        calls: Vec<SpawnCall>,
        total: usize,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<ToolOutput>, String>> {
        Box::pin(async move {
            let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
            let mut slots = Vec::new();
            let mut batch = Vec::new();
            for (k, call) in calls.into_iter().enumerate() {
                match parse_args::<AgentArgs>(&call.input) {
                    Ok(args) => {
                        slots.push(k);
                        batch.push(BatchCall {
                            index: call.index,
                            args,
                        });
                    }
                    Err(out) => outputs[k] = Some(out),
                }
            }
            if !batch.is_empty() {
                let parent = Parent {
                    agent_id: &caller.agent_id,
                    caller,
                    spawner: self,
                };
                let outs = self
                    .runtime
                    .run_batch(&parent, batch, total, cancel)
                    .await
                    .map_err(|BatchFailure(e)| e)?;
                for (k, out) in slots.into_iter().zip(outs) {
                    outputs[k] = Some(out);
                }
            }
            Ok(outputs
                .into_iter()
                .map(|o| o.unwrap_or_else(|| ToolOutput::error("not run")))
                .collect())
        })
    }

    fn send_message<'a>(
        &'a self,
        owner: &'a str,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.runtime.send_message(owner, input))
    }

    fn roster(&self) -> Option<String> {
        self.runtime.roster(self.allowed_types.as_deref())
    }

    fn turn_started(&self) {
        self.started_this_turn.store(0, Ordering::SeqCst);
    }

    fn turn_ending(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let closings = match self.closings.lock() {
                Ok(mut c) => std::mem::take(&mut *c),
                Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
            };
            for closing in closings {
                let _ = closing.await;
            }
        })
    }

    fn background_now(&self) {
        self.runtime.background_now();
    }

    fn resume_team(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(self.runtime.clone().resume_team())
    }
}
