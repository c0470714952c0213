//! cadre's core: model clients, tools, the agent loop, configuration.
//! Front ends drive it through operations and read its events; it never prints.
//!
//! # Running a session
//!
//! 1. Load the merged [`config::Settings`] for the project folder.
//! 2. Say what the front end decides in a [`driver::SessionOverrides`]
//!    (model, keys, permission rules, `--agent`, …); what it leaves unset
//!    the settings decide.
//! 3. [`driver::SessionBuilder::from_settings`] builds the model client,
//!    permission policy, sandbox, MCP servers, hooks, skills and plugins
//!    once; its `warnings` are what the user should hear.
//! 4. Open a session log ([`driver::create_log`]) and an event channel
//!    ([`protocol::EventSink::channel`]), then
//!    [`driver::SessionBuilder::open_session`]; run the [`driver::Session`],
//!    submit [`protocol::Op`]s through its [`driver::SessionHandle`] and read
//!    the [`protocol::Event`]s until the channel ends.
//!
//! A binary installs a rustls crypto provider before the first model client
//! is built (`cadre` uses ring's).
//!
//! ```no_run
//! use cadre_core::config::{Settings, SettingsPaths, data_dir, ensure_private_dir};
//! use cadre_core::driver::{
//!     ApiKeys, Lifetime, SessionBuilder, SessionOverrides, create_log,
//! };
//! use cadre_core::protocol::{Event, EventSink, MAIN_AGENT, Op};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let cwd = std::env::current_dir()?;
//! let home = data_dir()?;
//! ensure_private_dir(&home)?;
//! // An untrusted folder: its project files may only narrow what the user allows.
//! let settings = Settings::load_with(&SettingsPaths {
//!     data_dir: home.clone(),
//!     home_dir: std::env::var_os("HOME").map(Into::into),
//!     project: cwd.clone(),
//!     managed_dir: None,
//!     trusted: false,
//!     extra: None,
//!     sources: None,
//! })?;
//! let mut overrides = SessionOverrides::new(cwd, home);
//! overrides.model = Some("sonnet".into());
//! overrides.keys = ApiKeys::new().with("ANTHROPIC_API_KEY", std::env::var("ANTHROPIC_API_KEY")?);
//! let builder = SessionBuilder::from_settings(settings, overrides)?;
//!
//! let model = builder.client.config();
//! let opened = create_log(&builder.home, &builder.cwd, &model.provider.to_string(), &model.model)?;
//! let (sink, mut events) = EventSink::channel();
//! let (session, handle) = builder
//!     .open_session(
//!         &opened.id,
//!         opened.log.clone(),
//!         opened.messages.clone(),
//!         builder.warnings.clone(),
//!         sink,
//!         // No one answers questions here: calls that would ask are refused.
//!         false,
//!         Lifetime::AfterTask { wait_for_background: false },
//!     )
//!     .await?;
//! handle.submit(Op::UserMessage { text: "Summarise README.md".into() });
//! // The front end renders events as they come; this one keeps the answer.
//! let mut answer = String::new();
//! let run = session.run();
//! tokio::pin!(run);
//! loop {
//!     tokio::select! {
//!         _ = &mut run => break,
//!         Some(event) = events.recv() => {
//!             // Subagents' turns end too; the main agent's carries the answer.
//!             if let Event::TurnEnded { agent, final_text, .. } = event
//!                 && agent == MAIN_AGENT
//!             {
//!                 answer = final_text;
//!             }
//!         }
//!     }
//! }
//! // Events still on their way once the session has ended.
//! while let Some(event) = events.recv().await {
//!     if let Event::TurnEnded { agent, final_text, .. } = event
//!         && agent == MAIN_AGENT
//!     {
//!         answer = final_text;
//!     }
//! }
//! # let _ = answer;
//! # Ok(())
//! # }
//! ```

#![warn(unreachable_pub)]

pub mod agent;
pub mod archive;
pub mod background;
pub mod checkpoints;
pub mod config;
pub mod context;
pub mod driver;
pub mod frontmatter;
pub mod hooks;
pub mod instructions;
pub mod mcp;
pub mod media;
pub mod model;
pub mod output_styles;
pub mod path_segment;
pub mod permissions;
pub mod plugins;
pub mod project_root;
pub mod protocol;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod skills;
pub mod small_file;
pub mod structured;
pub mod subagents;
pub mod tasks;
pub mod teams;
pub mod tool_names;
pub mod tools;
pub mod worktrees;
