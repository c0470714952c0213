//! A definition's `memory`: a folder its agent keeps across sessions, with a
//! `MEMORY.md` whose first lines join the agent's system prompt. `user` keeps
//! it in `$CADRE_HOME/agent-memory/<name>/`, `project` in
//! `.cadre/agent-memory/<name>/`, `local` in `.cadre/agent-memory-local/<name>/`
//! (git-ignored). Only that agent may write there without asking (the
//! permission policy's `memory_dir`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Lines of `MEMORY.md` put in the prompt.
const PROMPT_LINES: usize = 200;
/// Bytes of `MEMORY.md` put in the prompt, at most.
const PROMPT_BYTES: usize = 25 * 1024;
/// Largest `MEMORY.md` read at all.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

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

    /// The folder of agent `name`'s memory.
    pub fn dir(self, name: &str, data_dir: &Path, project: &Path) -> PathBuf {
        match self {
            MemoryScope::User => data_dir.join("agent-memory").join(name),
            MemoryScope::Project => project.join(".cadre").join("agent-memory").join(name),
            MemoryScope::Local => project.join(".cadre").join("agent-memory-local").join(name),
        }
    }
}

/// Makes the folder (the local scope's parent git-ignored) and returns it
/// resolved, with the prompt section that tells the agent about it.
pub fn open(scope: MemoryScope, dir: &Path) -> std::io::Result<(PathBuf, String)> {
    std::fs::create_dir_all(dir)?;
    if scope == MemoryScope::Local
        && let Some(parent) = dir.parent()
    {
        let ignore = parent.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "# Agent memory for this checkout only.\n*\n")?;
        }
    }
    let dir = std::fs::canonicalize(dir)?;
    let file = dir.join("MEMORY.md");
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
        dir = dir.display(),
        file = file.display(),
    );
    if text.trim().is_empty() {
        section.push_str("MEMORY.md is empty so far.");
    } else {
        section.push_str(&format!("MEMORY.md now:\n\n{}", text.trim_end()));
    }
    Ok((dir, section))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_name_their_folders_and_the_prompt_holds_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, project) = (tmp.path().join("data"), tmp.path().join("proj"));
        assert_eq!(
            MemoryScope::parse(&json!("project")),
            Ok(MemoryScope::Project)
        );
        assert!(MemoryScope::parse(&json!("team")).is_err());
        assert_eq!(
            MemoryScope::User.dir("rev", &data, &project),
            data.join("agent-memory/rev")
        );
        let local = MemoryScope::Local.dir("rev", &data, &project);
        assert_eq!(local, project.join(".cadre/agent-memory-local/rev"));
        std::fs::create_dir_all(&local).unwrap();
        let lines: Vec<String> = (0..300).map(|i| format!("line {i}")).collect();
        std::fs::write(local.join("MEMORY.md"), lines.join("\n")).unwrap();
        let (dir, section) = open(MemoryScope::Local, &local).unwrap();
        assert!(dir.is_absolute());
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
}
