//! Output styles: text appended to the main agent's system prompt that
//! changes how it answers (Claude Code's `outputStyle`). The built-ins, then
//! Markdown files with frontmatter (`name`, `description`,
//! `keep-coding-instructions`, `force-for-plugin`) from the user's folders,
//! the project's `.claude/output-styles/` (cwd up to the repository root,
//! closest wins) and the enabled plugins (named `plugin:name`). Subagents
//! never get a style.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::frontmatter::{Split, parse_yaml, split_frontmatter};
use crate::plugins::PluginSet;
use crate::small_file::read_small_text;

/// Largest style file read.
const MAX_STYLE_BYTES: u64 = 256 * 1024;

/// Style files read from one folder at most (a folder of thousands is a mistake).
const MAX_STYLES_PER_DIR: usize = 200;

/// The name of the style that adds nothing.
pub const DEFAULT_STYLE: &str = "Default";

/// Where a style comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StyleSource {
    /// Built into cadre.
    BuiltIn,
    /// A file of the user's or the project's.
    File(PathBuf),
    /// A file of the named plugin.
    Plugin {
        /// The plugin's name.
        plugin: String,
        /// The file.
        path: PathBuf,
    },
}

impl std::fmt::Display for StyleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StyleSource::BuiltIn => f.write_str("built-in"),
            StyleSource::File(path) => write!(f, "{}", path.display()),
            StyleSource::Plugin { plugin, path } => {
                write!(f, "plugin {plugin} ({})", path.display())
            }
        }
    }
}

/// One output style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    /// Its name (`plugin:name` for a plugin's).
    pub name: String,
    /// What the picker says of it.
    pub description: String,
    /// The text appended to the system prompt.
    pub prompt: String,
    /// Keep cadre's coding instructions in the prompt.
    pub keep_coding_instructions: bool,
    /// A plugin's style that applies whenever the plugin is enabled.
    pub force_for_plugin: bool,
    /// Where it comes from.
    pub source: StyleSource,
}

impl OutputStyle {
    /// True for the style that changes nothing.
    pub fn is_default(&self) -> bool {
        self.source == StyleSource::BuiltIn && self.name == DEFAULT_STYLE
    }
}

/// The folders style files are read from (besides the plugins').
#[derive(Debug, Clone)]
pub struct StyleDirs {
    /// The user's home (for `~/.claude/output-styles/`).
    pub home_dir: Option<PathBuf>,
    /// cadre's data directory (`$CADRE_HOME/output-styles/`).
    pub data_dir: PathBuf,
    /// The working directory (its `.claude/output-styles/` and its parents'
    /// up to the repository root).
    pub cwd: PathBuf,
}

/// Every style found, and the files that could not be read.
#[derive(Debug, Clone, Default)]
pub struct OutputStyles {
    /// Built-ins first, then files in the order found; names are unique
    /// (a later file of the same name replaced the earlier).
    pub styles: Vec<OutputStyle>,
    /// One line per file skipped, naming it.
    pub warnings: Vec<String>,
}

/// The built-in styles: (name, description, prompt).
const BUILT_INS: &[(&str, &str, &str)] = &[
    (
        DEFAULT_STYLE,
        "cadre's own way: finish the task, say briefly what changed",
        "",
    ),
    (
        "Explanatory",
        "Does the task and explains its choices with short insights along the way",
        "# Output style: Explanatory

Besides doing the task, help the user understand the code and your choices. Before and after a change that is not obvious, add a short insight block:

`★ Insight ─────────────────────────────────────`
two or three points specific to this codebase or this change (why this approach, a trade-off, a pattern the project uses)
`─────────────────────────────────────────────────`

Keep insights about this code, not general programming lessons; never let them replace the work itself.",
    ),
    (
        "Learning",
        "Works with the user: explains, and leaves small meaningful parts for them to write",
        "# Output style: Learning

Teach while you work. Explain your choices with short insights about this codebase, as in the Explanatory style. When a change has a small part that shapes the result (a decision in business logic, an error-handling choice, a key algorithm step of 2 to 10 lines), do not write it yourself: write everything around it, leave a `TODO(human)` comment where that part goes, and then ask the user to write it, saying what to consider and where the marker is. Ask for one such part at a time and wait for it before going on.",
    ),
    (
        "Concise",
        "Short answers: the result and nothing else",
        "# Output style: Concise

Answer as briefly as the task allows. No preamble, no restating the question, no summary of what you are about to do. After a change, one or two lines: what changed and where. Use lists only when they are shorter than prose.",
    ),
];

impl OutputStyles {
    /// The built-ins, then the files of `dirs` and of the enabled `plugins`.
    /// Later sources replace a style of the same name: the user's home,
    /// then the data directory, then the project's folders from the
    /// repository root down to `cwd` (so the closest wins).
    pub fn load(dirs: &StyleDirs, plugins: &PluginSet) -> OutputStyles {
        let mut out = OutputStyles {
            styles: BUILT_INS
                .iter()
                .map(|(name, description, prompt)| OutputStyle {
                    name: (*name).to_string(),
                    description: (*description).to_string(),
                    prompt: (*prompt).to_string(),
                    keep_coding_instructions: true,
                    force_for_plugin: false,
                    source: StyleSource::BuiltIn,
                })
                .collect(),
            warnings: Vec::new(),
        };
        let mut folders = Vec::new();
        if let Some(home) = &dirs.home_dir {
            folders.push(home.join(".claude").join("output-styles"));
        }
        folders.push(dirs.data_dir.join("output-styles"));
        let project = crate::project_root::project_dirs(&dirs.cwd);
        for dir in project.closest_first.iter().rev() {
            folders.push(dir.join(".claude").join("output-styles"));
        }
        for folder in folders {
            for path in style_files(&folder) {
                match read_style(&path, None) {
                    Ok(style) => out.insert(style),
                    Err(why) => out.warnings.push(why),
                }
            }
        }
        for plugin in &plugins.plugins {
            for place in &plugin.output_styles {
                let files = if place.is_file() {
                    vec![place.clone()]
                } else {
                    style_files(place)
                };
                for path in files {
                    match read_style(&path, Some(&plugin.name)) {
                        Ok(style) => out.insert(style),
                        Err(why) => out.warnings.push(why),
                    }
                }
            }
        }
        out
    }

    fn insert(&mut self, style: OutputStyle) {
        match self.styles.iter_mut().find(|s| s.name == style.name) {
            Some(old) => *old = style,
            None => self.styles.push(style),
        }
    }

    /// The style named `name` (exactly, else ignoring case).
    pub fn get(&self, name: &str) -> Option<&OutputStyle> {
        self.styles.iter().find(|s| s.name == name).or_else(|| {
            self.styles
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case(name))
        })
    }

    /// The style the session uses: the first plugin style forced for its
    /// plugin, else the one `chosen` names (`outputStyle`), else none. A
    /// name that matches no style is a warning. `None` also for `Default`.
    pub fn choose(&self, chosen: Option<&str>, warnings: &mut Vec<String>) -> Option<&OutputStyle> {
        if let Some(forced) = self.styles.iter().find(|s| s.force_for_plugin) {
            return Some(forced);
        }
        let name = chosen?.trim();
        if name.is_empty() {
            return None;
        }
        match self.get(name) {
            Some(style) if style.is_default() => None,
            Some(style) => Some(style),
            None => {
                warnings.push(format!(
                    "outputStyle \"{name}\" ignored: no such output style (known: {})",
                    self.names().join(", ")
                ));
                None
            }
        }
    }

    /// Every style's name, in order.
    pub fn names(&self) -> Vec<String> {
        self.styles.iter().map(|s| s.name.clone()).collect()
    }
}

/// The `.md` files directly in `folder`, sorted (none when it is missing).
fn style_files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .take(MAX_STYLES_PER_DIR)
        .collect();
    files.sort();
    files
}

/// Reads one style file; `plugin` names the plugin it belongs to.
fn read_style(path: &Path, plugin: Option<&str>) -> Result<OutputStyle, String> {
    let skip = |why: String| format!("output style {} skipped: {why}", path.display());
    let text = read_small_text(path, MAX_STYLE_BYTES).map_err(|e| skip(e.to_string()))?;
    let (fields, body) = match split_frontmatter(&text) {
        Split::None => (Value::Object(Default::default()), text.trim().to_string()),
        Split::Unclosed => return Err(skip("its frontmatter has no closing `---`".into())),
        Split::Found { frontmatter, body } => {
            let fields = parse_yaml(&frontmatter).map_err(|e| skip(e.to_string()))?;
            (fields, body)
        }
    };
    let text_field = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let flag = |key: &str| match fields.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.trim() == "true",
        _ => false,
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = text_field("name").unwrap_or(stem);
    if name.contains(['\n', '\r']) {
        return Err(skip("its name spans lines".into()));
    }
    let description = text_field("description").unwrap_or_default();
    let (name, source) = match plugin {
        Some(plugin) => (
            format!("{plugin}:{name}"),
            StyleSource::Plugin {
                plugin: plugin.to_string(),
                path: path.to_path_buf(),
            },
        ),
        None => (name, StyleSource::File(path.to_path_buf())),
    };
    Ok(OutputStyle {
        name,
        description,
        prompt: body,
        keep_coding_instructions: flag("keep-coding-instructions"),
        force_for_plugin: plugin.is_some() && flag("force-for-plugin"),
        source,
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
    fn files_replace_built_ins_and_the_closest_project_folder_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let cwd = root.join("sub");
        write(
            &dir.path().join("home/.claude/output-styles/mine.md"),
            "---\nname: Mine\ndescription: my own\nkeep-coding-instructions: true\n---\nBe mine.",
        );
        write(
            &root.join(".claude/output-styles/a.md"),
            "---\nname: Shared\n---\nfrom the root",
        );
        write(
            &cwd.join(".claude/output-styles/b.md"),
            "---\nname: Shared\n---\nfrom sub",
        );
        write(
            &cwd.join(".claude/output-styles/plain.md"),
            "No frontmatter.",
        );
        let styles = OutputStyles::load(
            &StyleDirs {
                home_dir: Some(dir.path().join("home")),
                data_dir: dir.path().join("data"),
                cwd: cwd.clone(),
            },
            &PluginSet::default(),
        );
        assert!(styles.warnings.is_empty(), "{:?}", styles.warnings);
        let mine = styles.get("mine").unwrap();
        assert_eq!(mine.prompt, "Be mine.");
        assert!(mine.keep_coding_instructions);
        assert_eq!(styles.get("Shared").unwrap().prompt, "from sub");
        let plain = styles.get("plain").unwrap();
        assert!(!plain.keep_coding_instructions);
        let mut warnings = Vec::new();
        assert_eq!(styles.choose(Some("Default"), &mut warnings), None);
        assert_eq!(
            styles
                .choose(Some("concise"), &mut warnings)
                .map(|s| s.name.as_str()),
            Some("Concise")
        );
        assert_eq!(styles.choose(Some("Nope"), &mut warnings), None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
