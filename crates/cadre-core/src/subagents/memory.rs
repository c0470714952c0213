//! A definition's `memory`: a folder its agent keeps across sessions, with a
//! `MEMORY.md` whose first lines join the agent's system prompt. Only that
//! agent may write there without asking (the permission policy's
//! `memory_dir`).
//!
//! Where the folder is, by the definition's source and its `memory` scope:
//!
//! | source | `user` | `project` | `local` |
//! |---|---|---|---|
//! | user, managed, `--agents`, built-in | `$CADRE_HOME/agent-memory/<name>/` | `.cadre/agent-memory/<name>/` | `.cadre/agent-memory-local/<name>/` (git-ignored) |
//! | project, trusted folder | `$CADRE_HOME/agent-memory-projects/<project key>/<name>/` | as above | as above |
//! | project, folder not trusted | none (a warning) | as above | as above |
//! | plugin `p:name` | `$CADRE_HOME/agent-memory-plugins/p/name/` | `.cadre/agent-memory/p/name/` | `.cadre/agent-memory-local/p/name/` |
//!
//! So a definition from a project or a plugin never opens the user-scope
//! memory of a definition from another source. The project key is the name
//! of the folder whose `.claude/agents/` or `.cadre/agents/` holds the file,
//! and a hash of its real path: two repositories never share it.
//!
//! Every segment from a file (the name, the plugin's folder) must be one safe
//! path segment ([`crate::path_segment`]); otherwise the agent runs without a
//! memory. Every folder from the base (the data directory or the project) down
//! to the memory folder must be a real folder, no symlink, so the folder
//! always lies under its `agent-memory*` root.

use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

use super::{AgentDefinition, DefinitionSource};
use crate::path_segment::segment_problem;

/// Lines of `MEMORY.md` put in the prompt.
const PROMPT_LINES: usize = 200;
/// Bytes of `MEMORY.md` put in the prompt, at most.
const PROMPT_BYTES: usize = 25 * 1024;
/// Largest `MEMORY.md` read at all.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The root, in the data directory, of project definitions' user-scope memories.
const PROJECTS_ROOT: &str = "agent-memory-projects";
/// The root, in the data directory, of plugin definitions' user-scope memories.
const PLUGINS_ROOT: &str = "agent-memory-plugins";

/// Where a definition's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryScope {
    /// The user's, across projects.
    User,
    /// The project's, shared through the repository.
    Project,
    /// The project's, for this checkout only.
    Local,
}

impl MemoryScope {
    /// The scope a definition's `memory` names.
    pub fn parse(value: &Value) -> Result<MemoryScope, String> {
        match value.as_str().map(str::trim) {
            Some("user") => Ok(MemoryScope::User),
            Some("project") => Ok(MemoryScope::Project),
            Some("local") => Ok(MemoryScope::Local),
            _ => Err(format!("`memory` is user, project or local, not {value}")),
        }
    }
}

/// Why an agent gets no memory folder.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// A name from the file is not one path segment: the agent runs without a memory.
    #[error("no memory folder: {0}; it runs without a memory")]
    NotASegment(String),
    /// A project definition asks for the user's scope in a folder not trusted:
    /// the agent runs without a memory.
    #[error(
        "`memory: user` ignored: a project definition gets a memory in your data directory only in a trusted folder, and this folder is not trusted (answer yes when cadre asks, run `cadre config trust`, or pass --trust); it runs without a memory"
    )]
    UntrustedUserScope,
    /// The folder, or one above it up to its base, is a symlink or no folder:
    /// the agent is not started.
    #[error("its memory folder {} is refused: {why}", dir.display())]
    Unsafe {
        /// The memory folder.
        dir: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The folder cannot be made or read.
    #[error("its memory folder {} cannot be made: {source}", dir.display())]
    Io {
        /// The memory folder.
        dir: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

impl MemoryError {
    /// Whether the agent still starts, without a memory (with a warning).
    pub fn starts_without(&self) -> bool {
        matches!(
            self,
            MemoryError::NotASegment(_) | MemoryError::UntrustedUserScope
        )
    }
}

/// What decides where a session's agents keep their memories.
#[derive(Debug, Clone, Copy)]
pub struct MemoryBases<'a> {
    /// The data directory (`$CADRE_HOME`).
    pub data_dir: &'a Path,
    /// The project directory (the session's).
    pub project: &'a Path,
    /// Whether the project folder is trusted.
    pub project_trusted: bool,
}

/// A memory folder not yet made: a base that is trusted as it is (the data
/// directory or the project) and the folders below it, none from a file
/// unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPlace {
    /// The data directory or the project directory.
    pub base: PathBuf,
    /// The `agent-memory*` root, relative to the base (`.cadre/agent-memory`).
    pub root: PathBuf,
    /// The safe segments below the root.
    pub segments: Vec<String>,
    /// The scope.
    pub scope: MemoryScope,
}

impl MemoryPlace {
    /// The memory folder, as joined (not resolved).
    pub fn dir(&self) -> PathBuf {
        let mut dir = self.base.join(&self.root);
        dir.extend(&self.segments);
        dir
    }
}

/// Where `def`'s memory of `scope` is, or why it has none.
pub fn place(
    def: &AgentDefinition,
    scope: MemoryScope,
    bases: &MemoryBases<'_>,
) -> Result<MemoryPlace, MemoryError> {
    let checked = |segment: &str| match segment_problem(segment) {
        None => Ok(segment.to_string()),
        Some(problem) => Err(MemoryError::NotASegment(format!(
            "{problem}, so it is not one path segment"
        ))),
    };
    let (segments, plugin) = match (def.source, def.name.split_once(':')) {
        (DefinitionSource::Plugin, Some((plugin, name))) => {
            (vec![checked(plugin)?, checked(name)?], true)
        }
        _ => (vec![checked(&def.name)?], false),
    };
    let project_root = |local: bool| -> PathBuf {
        Path::new(".cadre").join(if local {
            "agent-memory-local"
        } else {
            "agent-memory"
        })
    };
    let at = |base: &Path, root: PathBuf, segments: Vec<String>| MemoryPlace {
        base: base.to_path_buf(),
        root,
        segments,
        scope,
    };
    Ok(match scope {
        MemoryScope::Project => at(bases.project, project_root(false), segments),
        MemoryScope::Local => at(bases.project, project_root(true), segments),
        MemoryScope::User if plugin => at(bases.data_dir, PLUGINS_ROOT.into(), segments),
        MemoryScope::User if def.source == DefinitionSource::Project => {
            if !bases.project_trusted {
                return Err(MemoryError::UntrustedUserScope);
            }
            let origin = definition_folder(def).unwrap_or_else(|| bases.project.to_path_buf());
            let origin = std::fs::canonicalize(&origin).unwrap_or(origin);
            let mut keyed = vec![project_key(&origin)];
            keyed.extend(segments);
            at(bases.data_dir, PROJECTS_ROOT.into(), keyed)
        }
        MemoryScope::User => at(bases.data_dir, "agent-memory".into(), segments),
    })
}

/// The user-scope memory folder of the project definition `name` found in
/// `project_root` (its real path) of a trusted folder.
pub fn project_definition_user_dir(data_dir: &Path, project_root: &Path, name: &str) -> PathBuf {
    data_dir
        .join(PROJECTS_ROOT)
        .join(project_key(project_root))
        .join(name)
}

/// The folder whose `.claude/agents/` or `.cadre/agents/` holds `def`'s file.
fn definition_folder(def: &AgentDefinition) -> Option<PathBuf> {
    let path = def.path.as_deref()?;
    path.ancestors().find_map(|dir| {
        let config = dir.parent()?;
        let named = |p: &Path, names: &[&str]| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| names.contains(&n))
        };
        (named(dir, &["agents"]) && named(config, &[".claude", ".cadre"]))
            .then(|| config.parent().map(Path::to_path_buf))
            .flatten()
    })
}

/// One safe segment naming the project folder `root`: its name (readable)
/// and a hash of its whole path (unique).
fn project_key(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let name = if name.is_empty() {
        "project".into()
    } else {
        name
    };
    format!("{name}-{:016x}", fnv1a(root.as_os_str().as_encoded_bytes()))
}

/// FNV-1a, 64 bits: a hash that stays the same across builds and versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Makes the folder (the local root git-ignored), every folder from the
/// base down a real one, and returns it resolved with the prompt section
/// that tells the agent about it.
pub fn open(place: &MemoryPlace) -> Result<(PathBuf, String), MemoryError> {
    let wanted = place.dir();
    let io = |source| MemoryError::Io {
        dir: wanted.clone(),
        source,
    };
    let unsafe_because = |why: String| MemoryError::Unsafe {
        dir: wanted.clone(),
        why,
    };
    let base = std::fs::canonicalize(&place.base).map_err(io)?;
    let mut dir = base.clone();
    let parts = place
        .root
        .components()
        .map(|c| c.as_os_str().to_os_string())
        .chain(place.segments.iter().map(Into::into));
    for part in parts {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(unsafe_because(format!(
                    "{} is a symlink; a memory folder and the folders above it up to {} must be real folders",
                    dir.display(),
                    base.display()
                )));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(unsafe_because(format!("{} is not a folder", dir.display())));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&dir) {
                Ok(()) => {}
                // Made meanwhile: checked again below.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            },
            Err(e) => return Err(io(e)),
        }
    }
    // A folder swapped for a symlink while they were made shows here.
    let real = std::fs::canonicalize(&dir).map_err(io)?;
    let root = base.join(&place.root);
    if real != dir || !real.starts_with(&root) {
        return Err(unsafe_because(format!(
            "it resolves to {}, outside {}",
            real.display(),
            root.display()
        )));
    }
    if place.scope == MemoryScope::Local {
        let ignore = root.join(".gitignore");
        if std::fs::symlink_metadata(&ignore).is_err() {
            std::fs::write(&ignore, "# Agent memory for this checkout only.\n*\n").map_err(io)?;
        }
    }
    let file = real.join("MEMORY.md");
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(unsafe_because(format!(
            "{} is a symlink, so it is not read",
            file.display()
        )));
    }
    let text = crate::small_file::read_small(&file, MAX_FILE_BYTES)
        .ok()
        .map(|bytes| {
            let text =
                String::from_utf8_lossy(&bytes[..bytes.len().min(PROMPT_BYTES)]).into_owned();
            text.lines()
                .take(PROMPT_LINES)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let mut section = format!(
        "# Your memory\n\nYou have a persistent memory folder, {dir}, kept across sessions; \
         you read and write it without asking. Keep {file} short and current: what you \
         learned that the next run needs (facts about this codebase, decisions, what did \
         not work), not a log of this run. Put longer notes in other files there and list \
         them in MEMORY.md.\n\n",
        dir = real.display(),
        file = file.display(),
    );
    if text.trim().is_empty() {
        section.push_str("MEMORY.md is empty so far.");
    } else {
        section.push_str(&format!("MEMORY.md now:\n\n{}", text.trim_end()));
    }
    Ok((real, section))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::subagents::definition::blank_definition;
    use serde_json::json;

    fn def(name: &str, source: DefinitionSource, path: Option<PathBuf>) -> AgentDefinition {
        blank_definition(name, "d", "p", source, path)
    }

    #[test]
    fn scopes_name_their_folders_and_the_prompt_holds_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, project) = (tmp.path().join("data"), tmp.path().join("proj"));
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let bases = MemoryBases {
            data_dir: &data,
            project: &project,
            project_trusted: false,
        };
        assert_eq!(
            MemoryScope::parse(&json!("project")),
            Ok(MemoryScope::Project)
        );
        assert!(MemoryScope::parse(&json!("team")).is_err());
        let user = def("rev", DefinitionSource::User, None);
        let dir = |d: &AgentDefinition, scope, bases: &MemoryBases<'_>| {
            place(d, scope, bases).map(|p| p.dir())
        };
        assert_eq!(
            dir(&user, MemoryScope::User, &bases).unwrap(),
            data.join("agent-memory/rev")
        );
        let plugin = def("kit:rev", DefinitionSource::Plugin, None);
        assert_eq!(
            dir(&plugin, MemoryScope::User, &bases).unwrap(),
            data.join("agent-memory-plugins/kit/rev")
        );
        let local = dir(&user, MemoryScope::Local, &bases).unwrap();
        assert_eq!(local, project.join(".cadre/agent-memory-local/rev"));
        std::fs::create_dir_all(&local).unwrap();
        let lines: Vec<String> = (0..300).map(|i| format!("line {i}")).collect();
        std::fs::write(local.join("MEMORY.md"), lines.join("\n")).unwrap();
        let (opened, section) = open(&place(&user, MemoryScope::Local, &bases).unwrap()).unwrap();
        assert!(opened.is_absolute());
        assert!(
            section.contains("line 199") && !section.contains("line 200"),
            "{section}"
        );
        assert!(
            project
                .join(".cadre/agent-memory-local/.gitignore")
                .exists()
        );
    }

    #[test]
    fn a_project_definition_keeps_user_memory_of_its_own_only_when_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, project) = (tmp.path().join("data"), tmp.path().join("proj"));
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let file = project.join(".claude/agents/deep/rev.md");
        let rev = def("rev", DefinitionSource::Project, Some(file));
        let mut bases = MemoryBases {
            data_dir: &data,
            project: &project.join("sub"),
            project_trusted: false,
        };
        assert!(matches!(
            place(&rev, MemoryScope::User, &bases),
            Err(MemoryError::UntrustedUserScope)
        ));
        bases.project_trusted = true;
        let real = std::fs::canonicalize(&project).unwrap();
        let own = place(&rev, MemoryScope::User, &bases).unwrap().dir();
        assert_eq!(own, project_definition_user_dir(&data, &real, "rev"));
        assert_ne!(own, data.join("agent-memory/rev"));
        let key = own.parent().unwrap().file_name().unwrap().to_str().unwrap();
        assert!(key.starts_with("proj-") && crate::path_segment::is_safe_segment(key));
        // Another repository's folder of the same name has another key.
        let other = tmp.path().join("elsewhere/proj");
        assert_ne!(project_key(&real), project_key(&other));
    }

    #[test]
    fn names_that_are_no_segment_and_symlinked_folders_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, project) = (tmp.path().join("data"), tmp.path().join("proj"));
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(project.join(".cadre/agent-memory")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        let bases = MemoryBases {
            data_dir: &data,
            project: &project,
            project_trusted: true,
        };
        for name in ["..", "../../.git", "a/b", "."] {
            let d = def(name, DefinitionSource::User, None);
            let err = place(&d, MemoryScope::Project, &bases).unwrap_err();
            assert!(
                matches!(err, MemoryError::NotASegment(_)) && err.starts_without(),
                "{name}"
            );
        }
        let notes = def("notes", DefinitionSource::Project, None);
        std::os::unix::fs::symlink(
            "../../../outside",
            project.join(".cadre/agent-memory/notes"),
        )
        .unwrap();
        let err = open(&place(&notes, MemoryScope::Project, &bases).unwrap()).unwrap_err();
        assert!(
            matches!(&err, MemoryError::Unsafe { .. }) && !err.starts_without(),
            "{err}"
        );
        assert!(err.to_string().contains("is a symlink"), "{err}");
        // A symlink above the folder is refused too.
        std::os::unix::fs::symlink("../outside", project.join(".cadre/agent-memory-local"))
            .unwrap();
        let err = open(&place(&notes, MemoryScope::Local, &bases).unwrap()).unwrap_err();
        assert!(
            err.to_string().contains("agent-memory-local is a symlink"),
            "{err}"
        );
        assert!(!tmp.path().join("outside/notes").exists());
        // So is a MEMORY.md that is a symlink (it would put any file in the prompt).
        let keeper = def("keeper", DefinitionSource::Project, None);
        let kept = project.join(".cadre/agent-memory/keeper");
        std::fs::create_dir_all(&kept).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", kept.join("MEMORY.md")).unwrap();
        let err = open(&place(&keeper, MemoryScope::Project, &bases).unwrap()).unwrap_err();
        assert!(err.to_string().contains("MEMORY.md is a symlink"), "{err}");
    }
}
