//! cadre's core: model clients, tools, the agent loop, configuration.
//! Front ends drive it through operations and read its events; it never prints.

pub mod agent;
pub mod archive;
pub mod background;
pub mod config;
pub mod context;
pub mod driver;
pub mod frontmatter;
pub mod hooks;
pub mod instructions;
pub mod mcp;
pub mod model;
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
pub mod tool_names;
pub mod tools;
pub mod worktrees;
