//! Tool dispatch: a reply's calls scheduled as their tools say (shared,
//! exclusive, batch), each announced, decided, logged and run; results in
//! the order the model asked.

use super::permission::CallToPermit;
use super::{Agent, LogFailure, summary};
use crate::model::{ContentBlock, ToolCall};
use crate::permissions::ToolEffect;
use crate::protocol::Event;
use crate::session::{CallStatus, RecordBody};
use crate::tools::{
    BatchPosition, Caller, Refusal, Scheduling, Tool, ToolInput, ToolOutput, canonical_tool_name,
    cap_output, parse_input,
};
use futures::future::join_all;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

impl Agent {
    /// How `call` may be scheduled: as its tool says; an unknown tool's
    /// call runs alone (it only gets an error back).
    pub(super) fn scheduling(&self, call: &ToolCall) -> Scheduling {
        self.tools
            .get(&call.name)
            .map_or(Scheduling::Exclusive, |t| t.scheduling())
    }

    /// Runs a reply's tool calls: consecutive shared and batch calls together
    /// (the neighbouring calls of a batch tool handed to it at once), each
    /// exclusive call alone; results come back in the order the model asked.
    pub(super) async fn run_tools(
        &self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> (Vec<ContentBlock>, Option<LogFailure>) {
        let mut results = Vec::with_capacity(calls.len());
        let mut failure: Option<LogFailure> = None;
        let scheduling: Vec<Scheduling> = calls.iter().map(|c| self.scheduling(c)).collect();
        // A batch's calls are numbered among the reply's calls to their tool:
        // (1-based number, how many) for each batch call.
        let batch_tool = |k: usize| {
            (scheduling[k] == Scheduling::Batch)
                .then(|| self.tools.get(&calls[k].name))
                .flatten()
        };
        let tool_of: Vec<Option<String>> = (0..calls.len())
            .map(|k| batch_tool(k).map(|t| t.name().to_string()))
            .collect();
        let numbering: Vec<(usize, usize)> = (0..calls.len())
            .map(|k| {
                let same = |m: &usize| tool_of[*m].is_some() && tool_of[*m] == tool_of[k];
                (
                    (0..=k).filter(same).count(),
                    (0..calls.len()).filter(same).count(),
                )
            })
            .collect();
        let mut i = 0;
        while i < calls.len() {
            let mut j = i + 1;
            if scheduling[i] != Scheduling::Exclusive {
                while j < calls.len() && scheduling[j] != Scheduling::Exclusive {
                    j += 1;
                }
            }
            let group = &calls[i..j];
            let outputs: Vec<Result<ToolOutput, LogFailure>> = if failure.is_some() {
                group
                    .iter()
                    .map(|_| {
                        Ok(ToolOutput::error(
                            "not run: the session log could not be written",
                        ))
                    })
                    .collect()
            } else {
                // The group's batch calls, by tool, in the order asked.
                let mut batches: Vec<(Arc<dyn Tool>, Vec<usize>)> = Vec::new();
                for k in i..j {
                    if let Some(tool) = batch_tool(k) {
                        match batches.iter_mut().find(|(t, _)| t.name() == tool.name()) {
                            Some((_, ks)) => ks.push(k - i),
                            None => batches.push((tool, vec![k - i])),
                        }
                    }
                }
                let in_batch = |k: usize| batches.iter().any(|(_, ks)| ks.contains(&k));
                let singles = group
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !in_batch(*k))
                    .map(|(k, c)| async move { vec![(k, self.run_one(c, cancel).await)] });
                let mut runs: Vec<futures::future::BoxFuture<'_, _>> =
                    singles.map(|f| Box::pin(f) as _).collect();
                for (tool, ks) in &batches {
                    let (first_index, total) = numbering[i + ks[0]];
                    let position = BatchPosition { first_index, total };
                    let members: Vec<&ToolCall> = ks.iter().map(|&k| &group[k]).collect();
                    let tool = tool.clone();
                    let ks = ks.clone();
                    runs.push(Box::pin(async move {
                        let outs = self
                            .run_batch(tool.as_ref(), &members, position, cancel)
                            .await;
                        ks.into_iter().zip(outs).collect::<Vec<_>>()
                    }));
                }
                let mut done: Vec<(usize, Result<ToolOutput, LogFailure>)> =
                    join_all(runs).await.into_iter().flatten().collect();
                done.sort_by_key(|(k, _)| *k);
                done.into_iter().map(|(_, r)| r).collect()
            };
            for (call, output) in group.iter().zip(outputs) {
                let output = output.unwrap_or_else(|e| {
                    let text = format!("not run: {}", e.0);
                    failure.get_or_insert(e);
                    ToolOutput::error(text)
                });
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: output.content,
                    is_error: output.is_error,
                    images: output.images,
                });
            }
            i = j;
        }
        (results, failure)
    }

    /// Announces a call: the canonical name, and the arguments parsed once
    /// (an object, or the `invalid_arguments` result the model gets instead);
    /// the policy decides on exactly that object and the tool runs it.
    pub(super) fn begin_call(&self, call: &ToolCall) -> (String, Result<ToolInput, ToolOutput>) {
        let tool_name = self.tools.get(&call.name).map_or_else(
            || canonical_tool_name(&call.name).to_string(),
            |t| t.name().to_string(),
        );
        let parsed = parse_input(&call.input);
        let shown = shown_input(call, &parsed);
        self.events.emit(Event::ToolCallStarted {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool_name.clone(),
            summary: summary::argument_summary(&tool_name, &shown),
            input: shown,
        });
        (tool_name, parsed)
    }

    /// Records a denial.
    pub(super) fn denied(
        &self,
        call: &ToolCall,
        tool: &str,
        reason: String,
    ) -> (ToolOutput, CallStatus) {
        self.events.emit(Event::ToolCallDenied {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool.to_string(),
            reason: reason.clone(),
        });
        (ToolOutput::error(reason), CallStatus::Denied)
    }

    /// Caps, logs and announces a call's result.
    pub(super) async fn finish_call(
        &self,
        call: &ToolCall,
        tool: String,
        output: ToolOutput,
        status: CallStatus,
        started: Instant,
    ) -> Result<ToolOutput, LogFailure> {
        let output = ToolOutput {
            // Redacted before the cap, so a key cut in two cannot slip through.
            // A result too long for the model's window alone is cut too.
            content: crate::context::cut_to_tokens(
                &cap_output(
                    crate::secrets::redact(&output.content).into_owned(),
                    self.ctx.output_cap,
                ),
                self.context.single_input_tokens(),
            )
            .into_owned(),
            is_error: output.is_error,
            images: output.images,
        };
        // Not waited for: the next request goes out while it is written, and
        // the next record awaited (a call's start, the turn's end) reports a failure.
        self.write_log_unawaited(RecordBody::ToolResult {
            call_id: call.id.clone(),
            content: output.content.clone(),
            is_error: output.is_error,
            status,
            images: output.images.clone(),
        })?;
        let summary =
            summary::argument_summary(&tool, &shown_input(call, &parse_input(&call.input)));
        self.events.emit(Event::ToolCallEnded {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            summary,
            tool,
            is_error: output.is_error,
            outcome: summary::outcome_summary(&output),
            output_bytes: output.content.len(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        Ok(output)
    }

    /// The status of a call that ran.
    pub(super) fn ran(output: ToolOutput) -> (ToolOutput, CallStatus) {
        let status = if output.is_error {
            CallStatus::Error
        } else {
            CallStatus::Ok
        };
        (output, status)
    }

    /// Decides, asks if needed, logs and runs one call.
    pub(super) async fn run_one(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, LogFailure> {
        let (tool_name, input) = self.begin_call(call);
        let started = Instant::now();
        // Checked before anything decides on the call: an invalid one gets its
        // argument error, never a hook's verdict, a denial or a question.
        let input = match (self.tools.get(&call.name), input) {
            (Some(tool), Ok(input)) => tool.validate(&input).map(|()| input),
            (_, input) => input,
        };
        let (output, status) = match (self.tools.get(&call.name), input) {
            _ if cancel.is_cancelled() => (
                ToolOutput::error("not run: interrupted by the user"),
                CallStatus::NotRun,
            ),
            (None, _) => (
                ToolOutput::error(format!(
                    "unknown tool '{}'; available tools: {}",
                    call.name,
                    self.tools.names().join(", ")
                )),
                CallStatus::Error,
            ),
            // Malformed arguments never reach the policy or the tool.
            (Some(_), Err(out)) => (out, CallStatus::Error),
            (Some(tool), Ok(input)) => match self
                .pre_tool_use(call, &tool_name, input.clone(), cancel)
                .await
            {
                Err(reason) => self.denied(call, &tool_name, reason),
                // Arguments a hook rewrote are checked as the model's were.
                Ok((hooked, verdict)) => match rewritten_invalid(tool.as_ref(), &input, &hooked) {
                    Some(out) => (out, CallStatus::Error),
                    None => {
                        let updated = hooked != input;
                        let input = hooked;
                        // Resolved with the same function the policy uses, at the same moment.
                        let decided =
                            crate::permissions::decided_path(&tool_name, &input, &self.ctx.cwd);
                        match self
                            .permit(
                                CallToPermit {
                                    call_id: &call.id,
                                    tool: &tool_name,
                                    effect: tool.effect(),
                                    input: &input,
                                    path: decided.as_deref(),
                                },
                                verdict,
                                cancel,
                            )
                            .await
                        {
                            Err(reason) => self.denied(call, &tool_name, reason),
                            Ok(()) => {
                                let start = RecordBody::ToolStart {
                                    call_id: call.id.clone(),
                                    tool: tool_name.clone(),
                                    input: logged_input(call, updated.then_some(&input)),
                                };
                                // A call that changes something is on disk before it
                                // runs; one that only reads is handed over and runs at
                                // once (lost in a crash, it had no effect to account for).
                                if tool.effect() == ToolEffect::ReadOnly {
                                    self.write_log_unawaited(start)?;
                                } else {
                                    self.write_log(start).await?;
                                }
                                let mut ctx = self.ctx.clone();
                                ctx.cancel = cancel.child_token();
                                ctx.decided_path = decided;
                                ctx.call_id = Some(call.id.clone());
                                ctx.board_hooks = self.board_hooks(&ctx.cancel);
                                // WebFetch's summary goes through this agent's client.
                                ctx.caller = Some(Arc::new(self.caller()));
                                let output = tool.execute(&ctx, &input).await;
                                let output = self
                                    .post_tool_use(call, &tool_name, &input, output, cancel)
                                    .await;
                                Self::ran(output)
                            }
                        }
                    }
                },
            },
        };
        self.finish_call(call, tool_name, output, status, started)
            .await
    }

    /// Runs one call that comes from outside the model (a client of `cadre
    /// mcp serve`) the way a model's call runs: arguments checked, hooks,
    /// the permission policy (a question goes to this agent's approval
    /// source), the log, the tool, its output capped. Each such call counts
    /// as a turn of its own for the per-turn subagent cap.
    pub async fn call_tool(
        &self,
        name: &str,
        input: &ToolInput,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        if let Some(delegation) = &self.ctx.delegation {
            delegation.turn_started();
        }
        let call = ToolCall {
            id: format!("call_{}", uuid::Uuid::now_v7().simple()),
            name: name.to_string(),
            input: serde_json::to_string(input).unwrap_or_else(|_| "{}".to_string()),
        };
        let (results, failure) = self.run_tools(std::slice::from_ref(&call), cancel).await;
        if let Some(LogFailure(e)) = failure {
            return ToolOutput::error(format!(
                "not run: the session log could not be written: {e}"
            ));
        }
        match results.into_iter().next() {
            Some(ContentBlock::ToolResult {
                content,
                is_error,
                images,
                ..
            }) => ToolOutput {
                content,
                is_error,
                images,
            },
            _ => ToolOutput::error("not run"),
        }
    }

    /// What the model is told about this agent's tools, in registry order:
    /// short descriptions for a model whose window is small.
    pub fn tool_specs(&self) -> crate::model::ToolSpecs {
        self.tools
            .model_specs(self.context.profile.context_window < crate::tools::SMALL_WINDOW)
    }

    /// The calling agent as a batch tool sees it.
    pub(super) fn caller(&self) -> Caller {
        Caller {
            agent_id: self.id.to_string(),
            tools: self.tools.clone(),
            last_request: self.last_request.clone(),
            client: self.client.clone(),
            mode: self.policy.mode,
            tool_rules: self.policy.only.clone(),
            fork: self.is_fork(),
            events: self.events.clone(),
            place: crate::tools::AgentPlace {
                cwd: self.ctx.cwd.clone(),
                project_dir: self.policy.project_dir.clone(),
                sandbox: self.ctx.sandbox.clone(),
            },
        }
    }

    /// Runs one batch tool's calls of a group: the tool admits them first
    /// (before anything is asked or started), each admitted call then passes
    /// the permission policy and gets its `tool_start`, and the tool runs
    /// those together; one `tool_result` per call goes to this agent's log.
    pub(super) async fn run_batch(
        &self,
        tool: &dyn Tool,
        calls: &[&ToolCall],
        position: BatchPosition,
        cancel: &CancellationToken,
    ) -> Vec<Result<ToolOutput, LogFailure>> {
        let started = Instant::now();
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.child_token();
        ctx.caller = Some(Arc::new(self.caller()));
        // Arguments are checked before the tool admits or anything decides.
        let begun: Vec<(String, Result<ToolInput, ToolOutput>)> = calls
            .iter()
            .map(|c| {
                let (name, input) = self.begin_call(c);
                (name, input.and_then(|i| tool.validate(&i).map(|()| i)))
            })
            .collect();
        let mut outcome: Vec<Option<(ToolOutput, CallStatus)>> = vec![None; calls.len()];
        // The calls whose arguments parsed, in order, with their slot.
        let (mut slots, mut inputs): (Vec<usize>, Vec<ToolInput>) = begun
            .iter()
            .enumerate()
            .filter_map(|(k, (_, input))| input.as_ref().ok().map(|i| (k, i.clone())))
            .unzip();
        for (k, (_, input)) in begun.iter().enumerate() {
            if let Err(out) = input {
                outcome[k] = Some((out.clone(), CallStatus::Error));
            }
        }
        let refusals = tool.admit_batch(&ctx, &mut inputs);
        let mut admitted: Vec<(usize, ToolInput)> = Vec::new();
        for ((k, input), refusal) in slots.drain(..).zip(inputs).zip(refusals) {
            match refusal {
                Some(Refusal::Invalid(out)) => outcome[k] = Some((out, CallStatus::Error)),
                Some(Refusal::Denied(reason)) => {
                    outcome[k] = Some(self.denied(calls[k], tool.name(), reason))
                }
                None => admitted.push((k, input)),
            }
        }
        let mut ready: Vec<(usize, ToolInput)> = Vec::new();
        for (k, input) in admitted {
            if cancel.is_cancelled() {
                outcome[k] = Some((
                    ToolOutput::error("not run: interrupted by the user"),
                    CallStatus::NotRun,
                ));
                continue;
            }
            let (input, verdict) = match self
                .pre_tool_use(calls[k], tool.name(), input.clone(), cancel)
                .await
            {
                Err(reason) => {
                    outcome[k] = Some(self.denied(calls[k], tool.name(), reason));
                    continue;
                }
                Ok((hooked, verdict)) => {
                    // Arguments a hook rewrote are checked as the model's were.
                    if let Some(out) = rewritten_invalid(tool, &input, &hooked) {
                        outcome[k] = Some((out, CallStatus::Error));
                        continue;
                    }
                    let updated = hooked != input;
                    ((hooked, updated), verdict)
                }
            };
            let (input, updated) = input;
            let decided = crate::permissions::decided_path(tool.name(), &input, &self.ctx.cwd);
            match self
                .permit(
                    CallToPermit {
                        call_id: &calls[k].id,
                        tool: tool.name(),
                        effect: tool.effect(),
                        input: &input,
                        path: decided.as_deref(),
                    },
                    verdict,
                    cancel,
                )
                .await
            {
                Err(reason) => outcome[k] = Some(self.denied(calls[k], tool.name(), reason)),
                Ok(()) => {
                    // Handed over now, waited for together below: a batch of
                    // 32 calls costs one wait, not 32.
                    if let Err(e) = self.write_log_unawaited(RecordBody::ToolStart {
                        call_id: calls[k].id.clone(),
                        tool: tool.name().to_string(),
                        input: logged_input(calls[k], updated.then_some(&input)),
                    }) {
                        return calls.iter().map(|_| Err(LogFailure(e.0.clone()))).collect();
                    }
                    ready.push((k, input));
                }
            }
        }
        if !ready.is_empty() {
            // Every call of the batch is in the log before any of them runs.
            if let Err(e) = self.log_written().await {
                return calls.iter().map(|_| Err(LogFailure(e.0.clone()))).collect();
            }
            let (slots, inputs): (Vec<usize>, Vec<ToolInput>) = ready.into_iter().unzip();
            match tool.execute_batch(&ctx, position, &inputs).await {
                Ok(outs) => {
                    for ((k, out), input) in slots.into_iter().zip(outs).zip(&inputs) {
                        let out = self
                            .post_tool_use(calls[k], tool.name(), input, out, cancel)
                            .await;
                        outcome[k] = Some(Self::ran(out));
                    }
                }
                Err(e) => {
                    // This agent's own log still works: record why nothing
                    // usable came back, then stop the turn.
                    for ((call, (name, _)), out) in calls.iter().zip(begun).zip(outcome) {
                        let (out, status) = out.unwrap_or_else(|| {
                            (
                                ToolOutput::error(format!("not run: {e}")),
                                CallStatus::Error,
                            )
                        });
                        if let Err(f) = self.finish_call(call, name, out, status, started).await {
                            return calls.iter().map(|_| Err(LogFailure(f.0.clone()))).collect();
                        }
                    }
                    return calls.iter().map(|_| Err(LogFailure(e.clone()))).collect();
                }
            }
        }
        let mut results = Vec::with_capacity(calls.len());
        for ((call, (name, _)), out) in calls.iter().zip(begun).zip(outcome) {
            let (output, status) =
                out.unwrap_or_else(|| (ToolOutput::error("not run"), CallStatus::NotRun));
            results.push(self.finish_call(call, name, output, status, started).await);
        }
        results
    }
}

/// The argument error of `after`, when a PreToolUse hook rewrote `before`
/// into arguments the tool refuses.
fn rewritten_invalid(tool: &dyn Tool, before: &ToolInput, after: &ToolInput) -> Option<ToolOutput> {
    (before != after)
        .then(|| tool.validate(after).err())
        .flatten()
}

/// A call's arguments as events show them: the parsed object, or the raw
/// text when it is not one.
fn shown_input(call: &ToolCall, parsed: &Result<ToolInput, ToolOutput>) -> Value {
    match parsed {
        Ok(args) => Value::Object(args.clone()),
        Err(_) => Value::String(call.input.clone()),
    }
}

/// The input a `tool_start` record keeps: as the model wrote it, or as a
/// PreToolUse hook replaced it.
fn logged_input(call: &ToolCall, updated: Option<&ToolInput>) -> String {
    updated
        .and_then(|i| serde_json::to_string(i).ok())
        .unwrap_or_else(|| call.input.clone())
}
