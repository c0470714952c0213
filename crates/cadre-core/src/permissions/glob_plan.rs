//! Where a `Glob` call reaches: the directory it walks, decided here so the
//! permission policy and the tool agree on it.

use std::path::{Component, Path, PathBuf};

use super::resolve_real;

/// The resolved directory a `Glob` call walks (an absolute pattern's own
/// literal prefix, else `path`, else `cwd`) and the pattern relative to it:
/// what the permission decision is made on, and what the tool walks.
pub fn glob_plan(cwd: &Path, path: Option<&str>, pattern: &str) -> (PathBuf, String) {
    let base = match path {
        Some(p) if !p.is_empty() => resolve_real(cwd, p),
        _ => resolve_real(cwd, "."),
    };
    let (root, pattern) = split_pattern(&base, pattern);
    (resolve_real(cwd, root), pattern)
}

/// Splits an absolute pattern like `/src/**/*.rs` into the directory to walk
/// (`/src`) and the pattern relative to it; other patterns walk `base`.
fn split_pattern(base: &Path, pattern: &str) -> (PathBuf, String) {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let p = Path::new(pattern);
    if !p.is_absolute() {
        return (base.to_path_buf(), pattern.to_string());
    }
    let is_glob = |s: &str| s.contains(['*', '?', '[', '{']);
    let mut root = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for comp in p.components() {
        let s = comp.as_os_str().to_string_lossy().into_owned();
        if rest.is_empty() && !is_glob(&s) {
            root.push(comp);
        } else if !matches!(comp, Component::RootDir) {
            rest.push(s);
        }
    }
    if rest.is_empty() {
        // No wildcard at all: match the literal file in its directory.
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        return (dir, globset_escape(&name));
    }
    (root, rest.join("/"))
}

/// Escapes glob metacharacters in a literal name.
fn globset_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_absolute_patterns() {
        let base = Path::new("/base");
        assert_eq!(
            split_pattern(base, "/a/b/**/*.rs"),
            (PathBuf::from("/a/b"), "**/*.rs".to_string())
        );
        assert_eq!(
            split_pattern(base, "./src/*.rs"),
            (PathBuf::from("/base"), "src/*.rs".to_string())
        );
        assert_eq!(
            split_pattern(base, "/a/b.rs"),
            (PathBuf::from("/a"), "b.rs".to_string())
        );
    }
}
