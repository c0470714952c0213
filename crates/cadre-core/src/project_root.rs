//! Where the project is: the working directory and its parents up to the
//! repository root. Shared by everything that reads project files from more
//! than one level (agent definitions, project instructions).

use std::path::{Path, PathBuf};

/// The directories from `cwd` up to the repository root, closest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectDirs {
    /// `cwd` (made absolute) and its parents up to the root; `cwd` alone
    /// outside a repository.
    pub closest_first: Vec<PathBuf>,
    /// Whether the last entry holds `.git` (a directory, or a file for a
    /// worktree or submodule).
    pub in_repository: bool,
}

/// `cwd` and its parents up to the first one holding `.git`; without one,
/// only `cwd`.
pub fn project_dirs(cwd: &Path) -> ProjectDirs {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    for (index, dir) in ancestors.iter().enumerate() {
        if dir.join(".git").exists() {
            return ProjectDirs {
                closest_first: ancestors[..=index]
                    .iter()
                    .map(|d| d.to_path_buf())
                    .collect(),
                in_repository: true,
            };
        }
    }
    ProjectDirs {
        closest_first: vec![cwd.clone()],
        in_repository: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_first_git_marker() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let found = project_dirs(&root.join("a/b"));
        assert!(found.in_repository);
        assert_eq!(
            found.closest_first,
            vec![root.join("a/b"), root.join("a"), root.clone()]
        );
        // Outside any repository: only the directory itself.
        std::fs::remove_dir(root.join(".git")).unwrap();
        let alone = project_dirs(&root.join("a/b"));
        if !alone.in_repository {
            assert_eq!(alone.closest_first, vec![root.join("a/b")]);
        }
    }
}
