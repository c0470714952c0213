//! Skills in Claude Code's format: a folder holding `SKILL.md` (frontmatter
//! `name`, `description`, `allowed-tools`, `model`,
//! `disable-model-invocation`; the body is the skill) and any files it
//! bundles. Found in `.cadre/skills/` and `.claude/skills/` from the working
//! directory up to the repository root, then `$CADRE_HOME/skills/`,
//! `~/.claude/skills/` and plugins' `skills/` (named `plugin:skill`); the
//! first found wins for a name. The `Skill` tool loads one on demand (and
//! grants its `allowed-tools` for the turn); a definition's `skills`
//! preloads them.

mod tool;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::frontmatter::{Split, parse_yaml, split_frontmatter};
use crate::small_file::read_small_text;

pub use tool::SkillTool;

/// Largest `SKILL.md` read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Longest description kept in the list the model sees.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// One skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its name (`/name`, the `Skill` tool's `skill`).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its instructions.
    pub body: String,
    /// Its folder (bundled files are relative to it).
    pub dir: PathBuf,
    /// `allowed-tools`, as written.
    pub allowed_tools: Vec<String>,
    /// `model`: as written, or the model id once the session resolved it
    /// ([`SkillSet::resolve_models`]); `None` for `inherit`.
    pub model: Option<String>,
    /// `disable-model-invocation: true`: only the user may invoke it.
    pub user_only: bool,
    /// Where it was found: `project` or `user`.
    pub scope: &'static str,
}

impl Skill {
    /// Its full text as an agent gets it: where its files are, then its body.
    pub fn loaded_text(&self) -> String {
        format!(
            "Skill {}. Its files are in {}; paths in it are relative to that folder.\n\n{}",
            self.name,
            self.dir.display(),
            self.body.trim()
        )
    }
}

/// The skills found, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    /// By precedence; names are unique.
    pub skills: Vec<Skill>,
    /// One line per file that was skipped, naming it.
    pub warnings: Vec<String>,
}

impl SkillSet {
    /// Reads every skill folder for a session in `cwd`, then the skills of
    /// the enabled `plugins`.
    pub fn load(
        cwd: &Path,
        data_dir: &Path,
        home: Option<&Path>,
        plugins: &crate::plugins::PluginSet,
    ) -> SkillSet {
        let mut roots: Vec<(PathBuf, &'static str)> = Vec::new();
        for dir in crate::project_root::project_dirs(cwd).closest_first {
            roots.push((dir.join(".cadre").join("skills"), "project"));
            roots.push((dir.join(".claude").join("skills"), "project"));
        }
        roots.push((data_dir.join("skills"), "user"));
        if let Some(home) = home {
            roots.push((home.join(".claude").join("skills"), "user"));
        }
        // Plugins' skills come last, named `plugin:skill` as their agents are.
        let mut set = SkillSet::default();
        let plugin_roots = plugins.plugins.iter().flat_map(|p| {
            p.skills
                .iter()
                .map(|dir| (dir.clone(), "plugin", Some(p.name.clone())))
        });
        let roots: Vec<(PathBuf, &'static str, Option<String>)> = roots
            .into_iter()
            .map(|(root, scope)| (root, scope, None))
            .chain(plugin_roots)
            .collect();
        for (root, scope, plugin) in roots {
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            dirs.sort();
            for dir in dirs {
                let file = dir.join("SKILL.md");
                if !file.is_file() {
                    continue;
                }
                match read_skill(&file, &dir, scope) {
                    Ok(mut skill) => {
                        if let Some(plugin) = &plugin {
                            skill.name = format!("{plugin}:{}", skill.name);
                        }
                        if set.get(&skill.name).is_none() {
                            set.skills.push(skill);
                        }
                    }
                    Err(why) => set
                        .warnings
                        .push(format!("skill {}: {why}", file.display())),
                }
            }
        }
        set
    }

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

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skills the model may invoke itself.
    pub fn for_model(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| !s.user_only)
    }
}

fn read_skill(file: &Path, dir: &Path, scope: &'static str) -> Result<Skill, String> {
    let text = read_small_text(file, MAX_SKILL_BYTES).map_err(|e| e.to_string())?;
    let (frontmatter, body) = match split_frontmatter(&text) {
        Split::Found { frontmatter, body } => (frontmatter, body),
        Split::Unclosed => return Err("its frontmatter has no closing `---` line".into()),
        Split::None => (String::new(), text.trim().to_string()),
    };
    let meta = parse_yaml(&frontmatter).map_err(|e| format!("its frontmatter is not YAML: {e}"))?;
    let text_field = |key: &str| meta.get(key).and_then(Value::as_str).map(str::trim);
    // Without a `name`, the folder names the skill, as in Claude Code.
    let name = text_field("name")
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or("it has no name")?;
    if name.contains(['/', ' ']) {
        return Err(format!("the name {name:?} has a slash or a space"));
    }
    let description: String = text_field("description")
        .unwrap_or_default()
        .chars()
        .take(MAX_DESCRIPTION_CHARS)
        .collect();
    let allowed_tools = match meta.get("allowed-tools") {
        Some(Value::String(list)) => list
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let user_only = match meta.get("disable-model-invocation") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.trim() == "true",
        _ => false,
    };
    Ok(Skill {
        name,
        description,
        body,
        dir: dir.to_path_buf(),
        allowed_tools,
        model: text_field("model").map(str::to_string),
        user_only,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn skills_are_found_closest_first_and_broken_ones_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let (proj, data, home) = (
            tmp.path().join("p"),
            tmp.path().join("d"),
            tmp.path().join("h"),
        );
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        write(
            &proj.join(".claude/skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: Fill PDF forms\nallowed-tools: Bash(python:*), Read\n---\nRun scripts/fill.py.\n",
        );
        write(
            &home.join(".claude/skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: the user's\n---\nOther.\n",
        );
        write(
            &data.join("skills/deploy/SKILL.md"),
            "---\ndescription: Ship it\ndisable-model-invocation: true\n---\nSteps.\n",
        );
        write(
            &proj.join(".cadre/skills/bad/SKILL.md"),
            "---\nname: [\n---\nx\n",
        );
        let set = SkillSet::load(
            &proj,
            &data,
            Some(&home),
            &crate::plugins::PluginSet::dropped_in(&data),
        );
        let pdf = set.get("pdf").unwrap();
        assert_eq!(pdf.description, "Fill PDF forms");
        assert_eq!(pdf.scope, "project");
        assert_eq!(pdf.allowed_tools, ["Bash(python:*)", "Read"]);
        assert!(pdf.loaded_text().contains("Run scripts/fill.py."));
        let deploy = set.get("deploy").unwrap();
        assert!(deploy.user_only && deploy.scope == "user");
        assert_eq!(set.for_model().count(), 1);
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(set.warnings[0].contains("bad/SKILL.md"));
    }
}
