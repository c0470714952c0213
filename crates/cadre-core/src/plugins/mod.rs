//! Plugins in Claude Code's layout: a folder with an optional
//! `.claude-plugin/plugin.json` whose components (agents, skills,
//! commands, hooks, MCP servers, output styles, `bin/`) join the session
//! while the plugin is enabled. This module finds the enabled plugins and
//! says where each component is; the modules that own a component
//! (`skills`, `hooks`, `mcp`, `subagents`) read it from there.

pub mod install;
pub mod loader;
pub mod manifest;
pub mod marketplace;
pub mod state;

use std::path::PathBuf;

#[cfg(test)]
use std::path::Path;

use serde_json::Value;

pub use loader::{ListedPlugin, LoadOptions};

/// Why a plugin, a catalogue or the install state could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A manifest or catalogue that does not follow the schema.
    #[error("{}: {message}", path.display())]
    Manifest {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An install state or settings file that cannot be read or written.
    #[error("{}: {message}", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A `git` command failed.
    #[error("{0}")]
    Git(String),
    /// Anything else, said in full.
    #[error("{0}")]
    Other(String),
}

/// Folder names under `$CADRE_HOME/plugins/` that hold install state, not a plugin.
pub const RESERVED_DIRS: &[&str] = &["cache", "marketplaces", "data", "repos"];

/// Where a plugin's hooks or MCP servers come from: a file, or inline in its manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum ComponentConfig {
    /// A JSON file (`hooks/hooks.json`, `.mcp.json`, or a manifest path).
    File(PathBuf),
    /// The manifest's own object.
    Inline(Value),
}

/// One enabled plugin and where its components are.
#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    /// Its namespace: `/<name>:<skill>`, `<name>:<agent>`.
    pub name: String,
    /// `<name>@<marketplace>` as `enabledPlugins` keys it.
    pub id: String,
    /// Its folder (`${CLAUDE_PLUGIN_ROOT}`).
    pub root: PathBuf,
    /// Its data folder (`${CLAUDE_PLUGIN_DATA}`), kept across updates.
    pub data_dir: PathBuf,
    /// Folders (or single files) of agent definitions.
    pub agents: Vec<PathBuf>,
    /// Folders holding `<skill>/SKILL.md` (or a skill folder itself).
    pub skills: Vec<PathBuf>,
    /// Folders (or single files) of command `.md` files.
    pub commands: Vec<PathBuf>,
    /// Its hooks.
    pub hooks: Vec<ComponentConfig>,
    /// Its MCP servers.
    pub mcp_servers: Vec<ComponentConfig>,
    /// Folders of output styles.
    pub output_styles: Vec<PathBuf>,
    /// `bin/`, put on the `Bash` tool's PATH.
    pub bin_dir: Option<PathBuf>,
    /// `userConfig` values by key, for `${user_config.KEY}`.
    pub user_config: Vec<(String, String)>,
    /// Its version (manifest, else marketplace entry, else install record).
    pub version: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Components and fields it has that cadre reads but does not apply.
    pub unsupported: Vec<String>,
}

impl Plugin {
    /// A plugin folder read with the default layout only (no manifest read):
    /// the plugins the tests of other modules make.
    #[cfg(test)]
    pub(crate) fn default_layout(name: &str, id: &str, root: &Path, data_dir: &Path) -> Plugin {
        let existing = |p: PathBuf| if p.exists() { vec![p] } else { Vec::new() };
        Plugin {
            name: name.to_string(),
            id: id.to_string(),
            root: root.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            agents: existing(root.join("agents")),
            skills: existing(root.join("skills")),
            commands: existing(root.join("commands")),
            hooks: Vec::new(),
            mcp_servers: Vec::new(),
            output_styles: existing(root.join("output-styles")),
            bin_dir: Some(root.join("bin")).filter(|b| b.is_dir()),
            user_config: Vec::new(),
            version: None,
            description: None,
            unsupported: Vec::new(),
        }
    }
}

/// The plugins a session loads, and what it could not use.
#[derive(Debug, Clone, Default)]
pub struct PluginSet {
    /// Enabled plugins, in a stable order; names are unique.
    pub plugins: Vec<Plugin>,
    /// One line per problem or unsupported component, naming the file.
    pub warnings: Vec<String>,
    /// Every plugin found, enabled or not, for `cadre plugin list`.
    pub listed: Vec<ListedPlugin>,
}

impl PluginSet {
    /// Every enabled plugin's agent folders and files, with its name.
    pub fn agent_paths(&self) -> Vec<(String, PathBuf)> {
        self.plugins
            .iter()
            .flat_map(|p| p.agents.iter().map(|a| (p.name.clone(), a.clone())))
            .collect()
    }

    /// The enabled plugins' `bin/` folders, in order.
    pub fn bin_dirs(&self) -> Vec<PathBuf> {
        self.plugins
            .iter()
            .filter_map(|p| p.bin_dir.clone())
            .collect()
    }

    /// `PATH` for the `Bash` tool: `base` (the inherited `PATH`), then the
    /// plugins' `bin/` folders; `None` when no plugin has one. After, not
    /// before: a plugin's `git` must not stand in for the one an allow rule
    /// such as `Bash(git status:*)` was written for.
    pub fn command_path(&self, base: Option<&str>) -> Option<String> {
        let bins = self.bin_dirs();
        if bins.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = base
            .filter(|b| !b.is_empty())
            .map(str::to_string)
            .into_iter()
            .collect();
        parts.extend(
            bins.iter()
                .map(|b| b.to_string_lossy().into_owned())
                // A `:` inside a folder name would split it in two.
                .filter(|b| !b.contains(':')),
        );
        Some(parts.join(":"))
    }

    /// The plugin named `name`.
    pub fn get(&self, name: &str) -> Option<&Plugin> {
        self.plugins.iter().find(|p| p.name == name)
    }
}
