//! Skills and custom commands, which Claude Code merged into one thing: a
//! skill is a folder holding `SKILL.md` (its files beside it), a command a
//! Markdown file under a `commands/` folder; both become `/name`, take
//! arguments into their body, may run `` !`cmd` `` lines before sending,
//! and the model loads either through the `Skill` tool. Found in
//! `.cadre/` and `.claude/` from the working directory up to the
//! repository root, in `$CADRE_HOME` and `~/.claude/`, and in enabled
//! plugins (named `plugin:name`). [`SkillSet::load`] says which wins for a
//! name; [`render`] builds the text a use sends; [`invoke`] reads a
//! message's leading `/name` tokens.

mod builtin;
pub mod invoke;
mod load;
pub mod render;
mod tool;

use std::path::PathBuf;

pub use invoke::{Invocation, parse_invocation};
pub(crate) use tool::grant_note;
pub use tool::{SKILLS_HEADER, SkillTool};

/// Where a skill or command was written: which kind of file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillKind {
    /// A `SKILL.md` in a folder of its own.
    Skill,
    /// A `commands/**/*.md` file (the legacy layout; it behaves the same).
    Command,
}

/// A plugin's folders, for `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginVars {
    /// The plugin's name (its namespace).
    pub name: String,
    /// Its folder.
    pub root: PathBuf,
    /// Its data folder.
    pub data: PathBuf,
    /// Its `userConfig` values, for `${user_config.KEY}`.
    pub user_config: Vec<(String, String)>,
}

/// One skill or command.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its name (`/name`, the `Skill` tool's `skill`).
    pub name: String,
    /// When to use it (its `description`, else its body's first paragraph).
    pub description: String,
    /// Its instructions, before any substitution.
    pub body: String,
    /// Its folder (`${CLAUDE_SKILL_DIR}`: bundled files are relative to it).
    pub dir: PathBuf,
    /// The file it was read from.
    pub file: PathBuf,
    /// `allowed-tools`, as written.
    pub allowed_tools: Vec<String>,
    /// `disallowed-tools`, as written: refused while it is active.
    pub disallowed_tools: Vec<String>,
    /// `model`: as written, or the model id once the session resolved it
    /// ([`SkillSet::resolve_models`]); `None` for `inherit`.
    pub model: Option<String>,
    /// `effort`, as written.
    pub effort: Option<String>,
    /// `disable-model-invocation: true`: only the user may invoke it.
    pub user_only: bool,
    /// `user-invocable` (default true): `false` hides it from `/`.
    pub user_invocable: bool,
    /// `argument-hint`, shown beside `/name`.
    pub argument_hint: Option<String>,
    /// `arguments`: names for `$name`, by position.
    pub arguments: Vec<String>,
    /// `context: fork`: the agent type its rendered body runs as.
    pub fork_agent: Option<String>,
    /// Where it was found: `project`, `user` or `plugin`.
    pub scope: &'static str,
    /// A skill folder or a command file.
    pub kind: SkillKind,
    /// How menus label it: `project`, `project:frontend`, `user`, a plugin's name.
    pub label: String,
    /// The plugin it came with.
    pub plugin: Option<PluginVars>,
    /// Its `allowed-tools` were dropped: a project's, in a folder not trusted.
    pub held_back: bool,
}

impl Skill {
    /// Its full text as an agent gets it without arguments: where its files
    /// are, then its body (no substitution, no commands run).
    pub fn loaded_text(&self) -> String {
        format!(
            "Skill {}. Its files are in {}; paths in it are relative to that folder.\n\n{}",
            self.name,
            self.dir.display(),
            self.body.trim()
        )
    }

    /// The name a user types after the plugin's namespace (`/name` for
    /// `plugin:name`), when it has one.
    pub fn bare_name(&self) -> Option<&str> {
        self.plugin
            .as_ref()
            .and_then(|_| self.name.split_once(':').map(|(_, n)| n))
    }
}

/// The skills and commands found, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    /// By precedence; names are unique.
    pub skills: Vec<Skill>,
    /// One line per file that was skipped, naming it.
    pub warnings: Vec<String>,
    /// Definitions a higher-precedence one of the same name hides:
    /// (name, the hidden one's file, the file that wins).
    pub shadowed: Vec<(String, PathBuf, PathBuf)>,
}

impl SkillSet {
    /// In a folder not trusted, project skills' `allowed-tools` would widen
    /// permissions from a file the user has not vouched for: they are
    /// dropped, and the warning names those skills.
    pub fn hold_back_untrusted(&mut self, trusted: bool) -> Option<String> {
        if trusted {
            return None;
        }
        let mut held = Vec::new();
        for skill in &mut self.skills {
            if skill.scope == "project" && !skill.allowed_tools.is_empty() {
                skill.allowed_tools.clear();
                skill.held_back = true;
                held.push(skill.name.clone());
            }
        }
        (!held.is_empty()).then(|| {
            format!(
                "the allowed-tools of the project skills {} do not apply: this folder is not trusted (answer yes when cadre asks, run `cadre config trust`, or pass --trust)",
                held.join(", ")
            )
        })
    }

    /// The project skills whose `allowed-tools` need the folder trusted,
    /// with those tools, for the trust question.
    pub fn needing_trust(&self) -> Vec<(String, Vec<String>)> {
        self.skills
            .iter()
            .filter(|s| s.scope == "project" && !s.allowed_tools.is_empty())
            .map(|s| (s.name.clone(), s.allowed_tools.clone()))
            .collect()
    }

    /// Turns each skill's `model` into the id `resolve` gives for it
    /// (`inherit` keeps the session's model).
    pub fn resolve_models(&mut self, resolve: impl Fn(&str) -> String) {
        for skill in &mut self.skills {
            skill.model = match skill.model.as_deref().map(str::trim) {
                None | Some("") | Some("inherit") => None,
                Some(name) => Some(resolve(name)),
            };
        }
    }

    /// The skill named exactly `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skill `/name` runs: the one named so, else the one plugin
    /// skill whose bare name it is (a bare name two plugins share is
    /// ambiguous and runs neither).
    pub fn lookup(&self, name: &str) -> Option<&Skill> {
        if let Some(skill) = self.get(name) {
            return Some(skill);
        }
        let mut bare = self.skills.iter().filter(|s| s.bare_name() == Some(name));
        match (bare.next(), bare.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// The skills the model may invoke itself.
    pub fn for_model(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| !s.user_only)
    }

    /// The skills a user may run with `/name`.
    pub fn for_user(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.user_invocable)
    }

    /// What front ends list and complete: each user-invocable skill and command.
    pub fn menu(&self) -> Vec<crate::protocol::CommandEntry> {
        self.for_user()
            .map(|s| crate::protocol::CommandEntry {
                name: s.name.clone(),
                description: s.description.clone(),
                argument_hint: s.argument_hint.clone(),
                label: s.label.clone(),
            })
            .collect()
    }
}
