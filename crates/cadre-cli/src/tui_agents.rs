//! `/agents` in the full-screen front end: the definitions as `cadre agents
//! list` knows them, handed to the TUI's pane as plain data, and a
//! definition as `cadre agents show` prints it plus the prompt a child
//! starts from.

use std::path::Path;
use std::sync::Arc;

use cadre_core::agent::ProjectContext;
use cadre_core::subagents::AgentDefinition;
use cadre_core::subagents::catalog::{CatalogCache, DefinitionCatalog};
use cadre_core::subagents::definition::IssueLevel;
use cadre_core::subagents::session_tools;
use cadre_core::subagents::spec::child_system_prompt;
use cadre_tui::pane::Pane;
use cadre_tui::panes::agents::{
    AgentCatalog, AgentEntry, AgentsListing, AgentsPane, BrokenDefinition, NewAgentPlaces,
};

use crate::PermissionArgs;
use cadre_core::driver::SessionBuilder;

/// The `/agents` pane over the runtime's definition sources.
pub fn pane(runtime: &SessionBuilder, perms: &PermissionArgs) -> Box<dyn Pane> {
    let catalog = Catalog {
        cache: CatalogCache::new(runtime.sources.clone()),
        last: None,
        perms: perms.clone(),
        settings: runtime.settings.clone(),
        cwd: runtime.cwd.clone(),
    };
    let user_dir = runtime.sources.data_dir.join("agents");
    let places = NewAgentPlaces {
        project_dir: runtime.cwd.join(".cadre").join("agents"),
        user_shown: shown(&user_dir, &runtime.cwd),
        user_dir,
        project_shown: ".cadre/agents".into(),
        known_tools: session_tools()
            .names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        // The pane fills it in from its list.
        existing: Vec::new(),
    };
    Box::new(AgentsPane::new(Box::new(catalog), places))
}

/// The definitions as the files are now, re-read only when they changed.
struct Catalog {
    cache: CatalogCache,
    /// The catalog last handed out.
    last: Option<Arc<DefinitionCatalog>>,
    perms: PermissionArgs,
    settings: cadre_core::config::Settings,
    cwd: std::path::PathBuf,
}

impl AgentCatalog for Catalog {
    fn changed(&mut self) -> Option<AgentsListing> {
        let catalog = match self.cache.get() {
            Ok(c) => c,
            Err(e) => {
                self.last = None;
                return Some(AgentsListing {
                    error: Some(format!("--agents: {e}")),
                    ..AgentsListing::default()
                });
            }
        };
        if self.last.as_ref().is_some_and(|l| Arc::ptr_eq(l, &catalog)) {
            return None;
        }
        self.last = Some(catalog.clone());
        Some(listing(&catalog, &self.cwd))
    }

    fn show(&self, name: &str) -> String {
        let mut out = Vec::new();
        let result = crate::agents::write_show(
            &mut out,
            name,
            self.cache.sources(),
            &self.perms,
            &self.settings,
        );
        let mut text = String::from_utf8_lossy(&out).trim_end().to_string();
        if let Err(e) = result {
            text.push_str(&format!("\nerror: {e:#}"));
            return text;
        }
        let Ok(catalog) = self.cache.get() else {
            return text;
        };
        if let Some(def) = catalog.get(name) {
            text.push_str("\n\nsystem prompt (the child's first instructions):\n\n");
            text.push_str(&child_system_prompt(
                def,
                &ProjectContext::read_now(&self.cwd),
            ));
        }
        text
    }
}

/// The catalog as the list shows it.
fn listing(catalog: &DefinitionCatalog, cwd: &Path) -> AgentsListing {
    let entries = catalog
        .entries()
        .into_iter()
        .map(|entry| {
            let d = &entry.definition;
            AgentEntry {
                name: d.name.clone(),
                source: d.source.as_str().to_string(),
                file: d.path.as_deref().map(|p| shown(p, cwd)),
                description: d.description.lines().next().unwrap_or("").to_string(),
                color: d.color.clone(),
                overrides: entry.shadows.iter().map(|s| origin(s, cwd)).collect(),
            }
        })
        .collect();
    let broken = catalog
        .issues()
        .iter()
        .filter(|i| i.level == IssueLevel::Error)
        .map(|i| BrokenDefinition {
            place: match (&i.path, i.line) {
                (Some(p), Some(line)) => format!("{}:{line}", shown(p, cwd)),
                (Some(p), None) => shown(p, cwd),
                (None, _) => "--agents".into(),
            },
            message: i.message.clone(),
        })
        .collect();
    AgentsListing {
        entries,
        broken,
        error: None,
    }
}

/// `user (~/.cadre/agents/x.md)`, or `built-in`.
fn origin(def: &AgentDefinition, cwd: &Path) -> String {
    match &def.path {
        Some(p) => format!("{} ({})", def.source.as_str(), shown(p, cwd)),
        None => def.source.as_str().to_string(),
    }
}

/// A path relative to the project when inside it, with the home directory as `~`.
fn shown(path: &Path, cwd: &Path) -> String {
    if let Ok(rest) = path.strip_prefix(cwd) {
        return rest.display().to_string();
    }
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}
