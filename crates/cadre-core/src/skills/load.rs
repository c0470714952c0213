//! Finding skills and commands, and which wins for a name. Claude Code's
//! current rule: a skill beats a command of the same name; among skills (and
//! among commands) the user's own beat the project's, and in a project the
//! folder closest to the working directory wins. (Its older commands page
//! had the project beat the user; the current one does not.) Plugins'
//! skills and commands are namespaced and never clash.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{PluginVars, Skill, SkillKind, SkillSet};
use crate::frontmatter::{Split, parse_yaml_lenient, split_frontmatter};
use crate::small_file::read_small_text;

/// Largest `SKILL.md` or command file read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Longest description (with `when_to_use`) kept in the list the model sees.
const MAX_DESCRIPTION_CHARS: usize = 1536;
/// How deep command folders are walked.
const MAX_COMMAND_DEPTH: usize = 8;
/// Most files read from one commands folder.
const MAX_COMMAND_FILES: usize = 2000;
/// Skills folders' reserved name.
const RESERVED_SKILL_DIR: &str = "synced";

/// One folder to read, and what it holds.
struct Source {
    dir: PathBuf,
    scope: &'static str,
    kind: SkillKind,
    plugin: Option<PluginVars>,
    /// Where its files must really lie (a project's or a plugin's folder),
    /// so a link in a cloned repository cannot bring another file's text
    /// into a prompt.
    within: Option<PathBuf>,
}

impl SkillSet {
    /// Reads every skill and command folder for a session in `cwd`, then
    /// those of the enabled `plugins`.
    pub fn load(
        cwd: &Path,
        data_dir: &Path,
        home: Option<&Path>,
        plugins: &crate::plugins::PluginSet,
    ) -> SkillSet {
        let project = crate::project_root::project_dirs(cwd).closest_first;
        let project_root = project.last().and_then(|d| d.canonicalize().ok());
        let source = |dir: PathBuf, scope, kind| Source {
            dir,
            scope,
            kind,
            plugin: None,
            within: (scope == "project").then(|| project_root.clone()).flatten(),
        };
        let mut sources = Vec::new();
        for kind in [SkillKind::Skill, SkillKind::Command] {
            let folder = match kind {
                SkillKind::Skill => "skills",
                SkillKind::Command => "commands",
            };
            sources.push(source(data_dir.join(folder), "user", kind));
            if let Some(home) = home {
                sources.push(source(home.join(".claude").join(folder), "user", kind));
            }
            for dir in &project {
                sources.push(source(dir.join(".cadre").join(folder), "project", kind));
                sources.push(source(dir.join(".claude").join(folder), "project", kind));
            }
        }
        for plugin in &plugins.plugins {
            let vars = PluginVars {
                name: plugin.name.clone(),
                root: plugin.root.clone(),
                data: plugin.data_dir.clone(),
                user_config: plugin.user_config.clone(),
            };
            for (dirs, kind) in [
                (&plugin.skills, SkillKind::Skill),
                (&plugin.commands, SkillKind::Command),
            ] {
                for dir in dirs {
                    sources.push(Source {
                        dir: dir.clone(),
                        scope: "plugin",
                        kind,
                        plugin: Some(vars.clone()),
                        within: plugin.root.canonicalize().ok(),
                    });
                }
            }
        }
        let mut set = SkillSet::default();
        for source in sources {
            let found = match source.kind {
                SkillKind::Skill => skill_files(&source.dir),
                SkillKind::Command => command_files(&source.dir),
            };
            for (file, dir, sub) in found {
                match read_skill(&file, &dir, &source, sub.as_deref()) {
                    Ok((skill, unsupported)) => {
                        if !unsupported.is_empty() {
                            set.warnings.push(format!(
                                "{}: {} not applied by cadre (see docs/commands.md)",
                                file.display(),
                                unsupported.join(", ")
                            ));
                        }
                        set.add(skill);
                    }
                    Err(why) => set.warnings.push(format!(
                        "{} {}: {why}",
                        match source.kind {
                            SkillKind::Skill => "skill",
                            SkillKind::Command => "command",
                        },
                        file.display()
                    )),
                }
            }
        }
        // cadre's own commands come last: any file of the same name wins,
        // a plugin's by its bare name too (`/review` of `tools:review`).
        for skill in super::builtin::skills(cwd) {
            let by_plugin = set
                .skills
                .iter()
                .find(|s| s.bare_name() == Some(skill.name.as_str()))
                .map(|s| s.file.clone());
            match by_plugin {
                Some(winner) => set.shadowed.push((skill.name, skill.file, winner)),
                None => set.add(skill),
            }
        }
        set
    }

    /// Adds `skill` unless one of its name is already in (then it is
    /// recorded as shadowed).
    fn add(&mut self, skill: Skill) {
        match self.get(&skill.name) {
            None => self.skills.push(skill),
            Some(winner) => {
                let winner = winner.file.clone();
                self.shadowed.push((skill.name, skill.file, winner));
            }
        }
    }
}

/// The `SKILL.md` files of a skills folder (each `<name>/SKILL.md`, or the
/// folder's own `SKILL.md` for a plugin whose root is its one skill), with
/// the folder each names.
fn skill_files(root: &Path) -> Vec<(PathBuf, PathBuf, Option<String>)> {
    let own = root.join("SKILL.md");
    if own.is_file() {
        return vec![(own, root.to_path_buf(), None)];
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter()
        .filter(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.eq_ignore_ascii_case(RESERVED_SKILL_DIR) && !n.starts_with('.'))
        })
        .map(|d| (d.join("SKILL.md"), d))
        .filter(|(f, _)| f.is_file())
        .map(|(f, d)| (f, d, None))
        .collect()
}

/// The `.md` files under a commands folder (or the one file it is), in a
/// stable order, each with its subfolder (which only labels it).
fn command_files(root: &Path) -> Vec<(PathBuf, PathBuf, Option<String>)> {
    if root.is_file() {
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        return vec![(root.to_path_buf(), dir, None)];
    }
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths.into_iter().rev() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let hidden = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| n.starts_with('.'));
            if hidden {
                continue;
            }
            // Folders that are links are not followed: a link can loop.
            if meta.is_dir() {
                if depth < MAX_COMMAND_DEPTH {
                    stack.push((path, depth + 1));
                }
            } else if path.extension().is_some_and(|e| e == "md") && out.len() < MAX_COMMAND_FILES {
                let sub = path
                    .parent()
                    .and_then(|p| p.strip_prefix(root).ok())
                    .map(|p| p.to_string_lossy().into_owned())
                    .filter(|s| !s.is_empty());
                out.push((path, dir.clone(), sub));
            }
        }
    }
    out
}

/// A boolean frontmatter value as Claude Code reads it: `true/false`,
/// `yes/no`, `on/off`, `1/0`, in any case.
fn flag(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A tool list given as a YAML list or one string, split on commas and on
/// spaces outside parentheses (`Bash(git add:*) Read` is two entries).
pub(crate) fn tool_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(list)) => split_outside_parens(list),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn split_outside_parens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !current.trim().is_empty() {
                out.push(current.trim().to_string());
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// The first paragraph of a body, as a description when none is given.
fn first_paragraph(body: &str) -> String {
    body.split("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty())
        .map(|p| {
            p.lines()
                .map(|l| l.trim_start_matches('#').trim())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn read_skill(
    file: &Path,
    dir: &Path,
    source: &Source,
    sub: Option<&str>,
) -> Result<(Skill, Vec<String>), String> {
    if let Some(within) = &source.within {
        let real = file.canonicalize().map_err(|e| e.to_string())?;
        if !real.starts_with(within) {
            return Err(format!(
                "it links to {}, outside {}; not read",
                real.display(),
                within.display()
            ));
        }
    }
    let text = read_small_text(file, MAX_SKILL_BYTES).map_err(|e| e.to_string())?;
    // Files written on Windows keep their BOM and CRLF line ends.
    let text = text
        .strip_prefix('\u{feff}')
        .unwrap_or(&text)
        .replace("\r\n", "\n");
    let (frontmatter, body) = match split_frontmatter(&text) {
        Split::Found { frontmatter, body } => (frontmatter, body),
        Split::Unclosed => return Err("its frontmatter has no closing `---` line".into()),
        Split::None => (String::new(), text.trim().to_string()),
    };
    let meta = parse_yaml_lenient(&frontmatter)
        .map_err(|e| format!("its frontmatter is not YAML: {e}"))?;
    if !meta.is_object() {
        return Err("its frontmatter is not a map of keys".into());
    }
    let text_field = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    // A skill is named by its folder, a command by its file; `name` is a
    // label there, except in a plugin, where it sets the last segment.
    let own = match source.kind {
        SkillKind::Skill => dir.file_name(),
        SkillKind::Command => file.file_stem(),
    }
    .map(|n| n.to_string_lossy().into_owned())
    .ok_or("it has no name")?;
    // In a plugin a `name` that is one word sets the last segment; anywhere
    // else (and a `name` such as `Writing Rules`) it is only a label.
    let own = match (&source.plugin, text_field("name")) {
        (Some(_), Some(name)) if crate::path_segment::is_safe_segment(name) => name.to_string(),
        _ => own,
    };
    if let Some(problem) = crate::path_segment::segment_problem(&own) {
        return Err(format!("its name cannot be a command: {problem}"));
    }
    let name = match &source.plugin {
        Some(plugin) => format!("{}:{own}", plugin.name),
        None => own,
    };
    let mut description = text_field("description")
        .map(str::to_string)
        .unwrap_or_else(|| first_paragraph(&body));
    if let Some(when) = text_field("when_to_use") {
        description.push_str(" — ");
        description.push_str(when);
    }
    let description: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let arguments = match meta.get("arguments") {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let fork_agent = (text_field("context") == Some("fork"))
        .then(|| text_field("agent").unwrap_or("general-purpose").to_string());
    let label = match (&source.plugin, sub) {
        (Some(p), _) => p.name.clone(),
        (None, Some(sub)) => format!("{}:{sub}", source.scope),
        (None, None) => source.scope.to_string(),
    };
    // Keys cadre reads but does not act on, named once at start-up.
    let mut unsupported = Vec::new();
    if meta.get("hooks").is_some() {
        unsupported.push("`hooks`".to_string());
    }
    if let Some(shell) = text_field("shell").filter(|s| *s != "bash") {
        unsupported.push(format!("`shell: {shell}`"));
    }
    let skill = Skill {
        name,
        description,
        body,
        dir: dir.to_path_buf(),
        file: file.to_path_buf(),
        allowed_tools: tool_list(meta.get("allowed-tools")),
        disallowed_tools: tool_list(meta.get("disallowed-tools")),
        model: text_field("model").map(str::to_string),
        effort: text_field("effort").map(str::to_string),
        user_only: flag(meta.get("disable-model-invocation")).unwrap_or(false),
        user_invocable: flag(meta.get("user-invocable")).unwrap_or(true),
        argument_hint: text_field("argument-hint").map(str::to_string),
        arguments,
        fork_agent,
        scope: source.scope,
        kind: source.kind,
        label,
        plugin: source.plugin.clone(),
        held_back: false,
    };
    Ok((skill, unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::{Plugin, PluginSet};

    use crate::small_file::write_with_dirs as write;

    #[test]
    fn skills_are_found_and_broken_ones_are_named() {
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
            &home.join(".claude/skills/lint/SKILL.md"),
            "---\ndescription: the user's\n---\nOther.\n",
        );
        write(
            &data.join("skills/deploy/SKILL.md"),
            "---\ndescription: Ship it\ndisable-model-invocation: yes\n---\nSteps.\n",
        );
        write(
            &proj.join(".cadre/skills/bad/SKILL.md"),
            "---\ndescription: ok\n\tfoo: [\n---\nx\n",
        );
        let set = SkillSet::load(&proj, &data, Some(&home), &PluginSet::default());
        let pdf = set.get("pdf").unwrap();
        assert_eq!(pdf.description, "Fill PDF forms");
        assert_eq!(pdf.scope, "project");
        assert_eq!(pdf.allowed_tools, ["Bash(python:*)", "Read"]);
        assert!(pdf.loaded_text().contains("Run scripts/fill.py."));
        let deploy = set.get("deploy").unwrap();
        assert!(deploy.user_only && deploy.scope == "user");
        assert_eq!(set.for_model().count(), 2);
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(set.warnings[0].contains("bad/SKILL.md"));
    }

    #[test]
    fn the_user_beats_the_project_and_a_skill_beats_a_command() {
        let tmp = tempfile::tempdir().unwrap();
        let (proj, data, home) = (
            tmp.path().join("p"),
            tmp.path().join("d"),
            tmp.path().join("h"),
        );
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        write(&proj.join(".claude/skills/pdf/SKILL.md"), "project pdf");
        write(&home.join(".claude/skills/pdf/SKILL.md"), "user pdf");
        write(&proj.join(".claude/commands/pdf.md"), "command pdf");
        write(&proj.join(".claude/commands/deploy.md"), "project deploy");
        write(&data.join("commands/deploy.md"), "user deploy");
        write(
            &proj.join(".claude/commands/frontend/test.md"),
            "---\nname: ignored\nargument-hint: '[file]'\nallowed-tools: Bash(git add:*) Bash(git status:*)\n---\nRun the tests.\n\nMore.",
        );
        write(&proj.join(".claude/commands/bad name.md"), "x");
        write(
            &proj.join(".claude/commands/ps.md"),
            "---\nshell: powershell\nhooks:\n  Stop: []\n---\nGet-Item",
        );
        write(&tmp.path().join("secret.txt"), "SECRET");
        std::os::unix::fs::symlink(
            tmp.path().join("secret.txt"),
            proj.join(".claude/commands/leak.md"),
        )
        .unwrap();
        let set = SkillSet::load(&proj, &data, Some(&home), &PluginSet::default());
        assert_eq!(set.get("pdf").unwrap().body, "user pdf");
        assert_eq!(set.get("deploy").unwrap().body, "user deploy");
        let test = set.get("test").unwrap();
        assert_eq!(test.kind, SkillKind::Command);
        assert_eq!(test.label, "project:frontend");
        assert_eq!(test.description, "Run the tests.");
        assert_eq!(test.argument_hint.as_deref(), Some("[file]"));
        assert_eq!(
            test.allowed_tools,
            ["Bash(git add:*)", "Bash(git status:*)"]
        );
        assert!(set.get("ignored").is_none());
        assert!(set.warnings.iter().any(|w| w.contains("bad name.md")));
        assert!(set.get("leak").is_none());
        assert!(set.get("ps").is_some());
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("ps.md")
                    && w.contains("`hooks`, `shell: powershell` not applied")),
            "{:?}",
            set.warnings
        );
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("leak.md") && w.contains("outside")),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn plugin_skills_and_commands_are_namespaced_and_answer_to_their_bare_name() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("plug");
        write(
            &root.join("commands/hello.md"),
            "Hello from ${CLAUDE_PLUGIN_ROOT}",
        );
        write(&root.join("skills/review/SKILL.md"), "Review.");
        let mut plugin =
            Plugin::default_layout("tools", "tools@m", &root, &tmp.path().join("data"));
        plugin.skills = vec![root.join("skills")];
        let set = SkillSet::load(
            tmp.path(),
            &tmp.path().join("d"),
            None,
            &PluginSet {
                plugins: vec![plugin],
                ..PluginSet::default()
            },
        );
        assert!(set.get("tools:hello").is_some());
        assert_eq!(set.lookup("hello").unwrap().name, "tools:hello");
        assert_eq!(set.lookup("review").unwrap().name, "tools:review");
        assert_eq!(set.get("tools:hello").unwrap().label, "tools");
    }
}
