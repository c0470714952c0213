//! The main agent's side of `/name` messages and `@mentions`: a message
//! that starts with skills or commands gets their rendered text after it
//! (their commands run first, under the `Bash` policy, never asking); a
//! `context: fork` skill runs as a child and its report follows; an MCP
//! server's prompt is fetched; mentioned files and MCP resources the
//! policy lets this agent read without asking are attached. The typed text
//! stays the message's first block, so going back to it finds it.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::model::ToolImage;
use crate::permissions::{Decision, ToolEffect};
use crate::protocol::Event;
use crate::skills::invoke::{Mention, mentions, render_for};
use crate::skills::render::Vars;
use crate::skills::{Invocation, Skill, SkillSet, parse_invocation};
use crate::tools::ToolInput;

/// Most bytes of one mentioned MCP resource attached.
const MAX_RESOURCE_BYTES: usize = 256 * 1024;

fn object(value: Value) -> ToolInput {
    match value {
        Value::Object(map) => map,
        _ => ToolInput::new(),
    }
}

impl Agent {
    /// Gives this agent the session's skills and commands, so messages
    /// that start with `/name` use them; `session_id` is `${CLAUDE_SESSION_ID}`.
    pub fn with_commands(mut self, skills: Arc<SkillSet>, session_id: &str) -> Self {
        self.commands = Some(skills);
        self.session_id = session_id.to_string();
        self
    }

    fn vars(&self, skill: &Skill) -> Vars {
        Vars {
            session_id: self.session_id.clone(),
            project_dir: self.ctx.cwd.clone(),
            effort: skill.effort.clone().or_else(|| self.effort.clone()),
        }
    }

    /// The text blocks that follow the user's message `text`: rendered
    /// skills, a forked skill's report, an MCP prompt's messages, mentioned
    /// files and resources. `Err` aborts the message with what to tell the
    /// user; nothing is sent then.
    pub(super) async fn expand_message(
        &self,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<(Vec<String>, Vec<ToolImage>), String> {
        if self.is_child() || text.trim().is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let empty = SkillSet::default();
        let set = self.commands.as_deref().unwrap_or(&empty);
        let mut blocks = Vec::new();
        match parse_invocation(set, text) {
            Invocation::None => {}
            Invocation::Unknown(name) => {
                return Err(format!(
                    "unknown command /{name}: no skill, command or MCP prompt has that name"
                ));
            }
            Invocation::NotUserInvocable(name) => {
                return Err(format!(
                    "/{name} is for the model only (user-invocable: false)"
                ));
            }
            Invocation::Inline { skills, args } => {
                for skill in skills {
                    blocks.push(self.use_inline(skill, &args).await?);
                }
            }
            Invocation::Fork { skill, args } => {
                blocks.push(self.use_forked(skill, &args, cancel).await?);
            }
            Invocation::McpPrompt { name, args } => {
                blocks.push(self.use_mcp_prompt(&name, &args).await?);
            }
        }
        let mut seen = Vec::new();
        let mut images = Vec::new();
        for source in std::iter::once(text).chain(blocks.clone().iter().map(String::as_str)) {
            for mention in mentions(source) {
                if seen.contains(&mention) {
                    continue;
                }
                seen.push(mention.clone());
                if let Some((block, found)) = self.attach(&mention, cancel).await {
                    blocks.push(block);
                    images.extend(found);
                }
            }
        }
        Ok((blocks, images))
    }

    /// Image files the user attached to their next message (pasted or
    /// dropped in the full screen): the user chose them, so no permission
    /// is asked.
    pub fn attach_images(&mut self, paths: Vec<std::path::PathBuf>) {
        self.pending_images.extend(paths);
    }

    /// The images attached with [`Self::attach_images`], read and fitted to
    /// the model's limits; one that cannot be read is reported and left out.
    pub(super) async fn take_attached_images(&mut self) -> Vec<ToolImage> {
        let paths = std::mem::take(&mut self.pending_images);
        if paths.is_empty() {
            return Vec::new();
        }
        let read = tokio::task::spawn_blocking(move || {
            paths
                .into_iter()
                .map(|path| {
                    let shown = path.display().to_string();
                    (shown, read_image(&path))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut images = Vec::new();
        for (shown, got) in read {
            match got {
                Ok(image) => images.push(image),
                Err(why) => self.events.emit(Event::Warning {
                    message: format!("the image {shown} was not attached: {why}"),
                }),
            }
        }
        images
    }

    /// An MCP server's prompt: the text of the messages it returns. Servers
    /// start with the session; one still starting gets its start-up time
    /// before its prompt counts as unknown.
    async fn use_mcp_prompt(&self, name: &str, args: &str) -> Result<String, String> {
        let Some(hub) = self.mcp.as_ref() else {
            return Err(format!(
                "unknown command /{name}: this session has no MCP server"
            ));
        };
        hub.settled().await;
        match hub.run_prompt_command(name, args).await {
            Some(Ok(text)) => Ok(text),
            Some(Err(e)) => Err(format!("/{name}: {e}")),
            None => Err(format!(
                "unknown command /{name}: no MCP server has that prompt"
            )),
        }
    }

    /// One inline skill: its rendered text, its `allowed-tools` and
    /// `model` granted for the rest of the turn.
    async fn use_inline(&self, skill: &Skill, args: &str) -> Result<String, String> {
        let vars = self.vars(skill);
        let (text, granted, skipped) =
            render_for(skill, args, &vars, &self.ctx, &self.tracker).await?;
        crate::skills::grant_note(&self.ctx, skill, granted, skipped, &vars);
        if let Some(model) = &skill.model {
            self.ctx.grants.set_model(model);
        }
        Ok(text)
    }

    /// A `context: fork` skill: its rendered text runs as a child of its
    /// agent type, in the foreground; the child's report is what follows.
    async fn use_forked(
        &self,
        skill: &Skill,
        args: &str,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let agent_type = skill.fork_agent.clone().unwrap_or_default();
        let Some(tool) = self.tools.get("Agent") else {
            return Err(format!(
                "/{}: it runs as a subagent, and this session cannot start one",
                skill.name
            ));
        };
        let vars = self.vars(skill);
        let (prompt, _, _) = render_for(skill, args, &vars, &self.ctx, &self.tracker).await?;
        let input = crate::skills::invoke::fork_input(skill, prompt);
        if let Some(why) = crate::skills::invoke::fork_refusal(
            &self.policy,
            &self.tracker,
            &input,
            &self.ctx.grants.rules(),
        ) {
            return Err(format!("/{}: {why}", skill.name));
        }
        if let Err(out) = tool.validate(&input) {
            return Err(format!("/{}: {}", skill.name, out.content));
        }
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.child_token();
        ctx.caller = Some(Arc::new(self.caller()));
        let out = tool.execute(&ctx, &input).await;
        if out.is_error {
            return Err(format!("/{}: {}", skill.name, out.content));
        }
        Ok(format!(
            "The skill /{} ran as a {agent_type} subagent. Its report:\n\n{}",
            skill.name, out.content
        ))
    }

    /// The block a mention adds, if the policy lets this agent read it
    /// without asking; a refusal is reported, a path that is no file is
    /// left as text.
    async fn attach(
        &self,
        mention: &Mention,
        cancel: &CancellationToken,
    ) -> Option<(String, Vec<ToolImage>)> {
        match mention {
            Mention::Path(path) => {
                let tool = self.tools.get("Read")?;
                let expanded = match path.strip_prefix("~/") {
                    Some(rest) => std::env::var_os("HOME")
                        .map(std::path::PathBuf::from)?
                        .join(rest),
                    None => self.ctx.cwd.join(path),
                };
                if !expanded.is_file() {
                    return None;
                }
                let input = object(json!({"file_path": expanded.display().to_string()}));
                let decided = crate::permissions::decided_path("Read", &input, &self.ctx.cwd);
                let decision = self.policy.decide_pre_approved(
                    &self.tracker,
                    "Read",
                    tool.effect(),
                    &input,
                    decided.as_deref(),
                    false,
                    &self.ctx.grants.rules(),
                );
                if let Some(why) = refusal(decision) {
                    self.events.emit(Event::Warning {
                        message: format!("@{path} was not attached: {why}"),
                    });
                    return None;
                }
                let mut ctx = self.ctx.clone();
                ctx.cancel = cancel.child_token();
                ctx.decided_path = decided;
                let out = tool.execute(&ctx, &input).await;
                if out.is_error {
                    self.events.emit(Event::Warning {
                        message: format!("@{path} was not attached: {}", out.content),
                    });
                    return None;
                }
                // An image goes as itself after the text; a PDF's document
                // block stays behind (its text is here).
                let images = out
                    .images
                    .into_iter()
                    .filter(|i| !i.is_document())
                    .collect();
                Some((
                    format!(
                        "<system-reminder>\nThe user mentioned @{path}; the Read tool gave:\n{}\n</system-reminder>",
                        out.content
                    ),
                    images,
                ))
            }
            Mention::Resource { server, uri } => {
                let hub = self.mcp.as_ref()?;
                hub.server(server)?;
                hub.settled().await;
                let input = object(json!({"server": server, "uri": uri}));
                if let Some(rule) = crate::mcp::resources::server_denied(&self.ctx, server) {
                    self.events.emit(Event::Warning {
                        message: format!(
                            "@{server}:{uri} was not attached: denied by the rule {rule}"
                        ),
                    });
                    return None;
                }
                let decision = self.policy.decide_pre_approved(
                    &self.tracker,
                    crate::mcp::READ_RESOURCE_TOOL,
                    // The user named it: a read, as a mentioned file is.
                    ToolEffect::ReadOnly,
                    &input,
                    None,
                    false,
                    &self.ctx.grants.rules(),
                );
                if let Some(why) = refusal(decision) {
                    self.events.emit(Event::Warning {
                        message: format!("@{server}:{uri} was not attached: {why}"),
                    });
                    return None;
                }
                match hub.read_resource_text(server, uri).await {
                    Ok(text) => {
                        let text = crate::tools::cap_output(text, MAX_RESOURCE_BYTES);
                        Some((
                            format!(
                                "<system-reminder>\nThe user mentioned the MCP resource {uri} of the server {server}:\n{text}\n</system-reminder>"
                            ),
                            Vec::new(),
                        ))
                    }
                    Err(e) => {
                        self.events.emit(Event::Warning {
                            message: format!("@{server}:{uri} was not attached: {e}"),
                        });
                        None
                    }
                }
            }
        }
    }
}

/// The image file at `path`, fitted to the model's limits.
fn read_image(path: &std::path::Path) -> Result<ToolImage, String> {
    use crate::media;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    if meta.len() > media::MAX_IMAGE_FILE_BYTES {
        return Err(format!("larger than {} bytes", media::MAX_IMAGE_FILE_BYTES));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let Some(media::MediaKind::Image(media_type)) = media::sniff(&bytes) else {
        return Err("not a PNG, JPEG, GIF or WebP image".into());
    };
    media::prepare_image(&bytes, media_type)
        .map(|p| p.image)
        .map_err(|e| e.to_string())
}

/// Why a decision is not a plain allow (a mention never asks).
fn refusal(decision: Decision) -> Option<String> {
    match decision {
        Decision::Allow => None,
        Decision::Deny(why) => Some(why),
        Decision::Ask { reason, .. } => Some(format!(
            "{reason} (a mention is attached only where no question is needed)"
        )),
    }
}
