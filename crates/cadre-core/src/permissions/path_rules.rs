//! How a path rule (`Read(src/**)`, `Edit(//tmp/**)`, `Read(~/.ssh/**)`)
//! matches a call's path: gitignore-style globs, relative to the project or
//! absolute.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::rules::{Call, RuleError};

#[derive(Debug, Clone)]
pub(super) struct PathGlob {
    /// Matched against the absolute path; otherwise against the path relative
    /// to the project directory.
    absolute: bool,
    matcher: GlobMatcher,
}

impl PathGlob {
    pub(super) fn compile(orig: &str, spec: &str, home: Option<&Path>) -> Result<Self, RuleError> {
        let (absolute, mut glob) = if let Some(rest) = spec.strip_prefix("//") {
            (true, format!("/{rest}"))
        } else if spec == "~" || spec.starts_with("~/") {
            let home = home.ok_or_else(|| RuleError::NoHomeDir { rule: orig.into() })?;
            let home = home.to_str().ok_or_else(|| RuleError::InvalidGlob {
                rule: orig.into(),
                glob: spec.into(),
                message: "the home directory is not valid UTF-8".into(),
            })?;
            let home = globset::escape(home.trim_end_matches('/'));
            (true, format!("{home}{}", &spec[1..]))
        } else {
            (false, relative_glob(spec))
        };
        if absolute && glob.ends_with('/') {
            glob.push_str("**");
        }
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .map_err(|e| RuleError::InvalidGlob {
                rule: orig.into(),
                glob: spec.into(),
                message: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(PathGlob { absolute, matcher })
    }

    /// A path matches when it or one of its parent directories matches
    /// (gitignore-like: a matched directory covers its contents).
    pub(super) fn matches(&self, call: &Call<'_>) -> bool {
        let target = if self.absolute {
            call.abs_path.as_deref()
        } else {
            call.rel_path.as_deref()
        };
        target.is_some_and(|path| {
            path.ancestors()
                .filter(|p| !p.as_os_str().is_empty())
                .any(|p| self.matcher.is_match(p))
        })
    }
}

/// Turns a project-relative gitignore-style pattern into a glob over the
/// relative path: a leading `/` or `./` anchors it at the project root, as does
/// a `/` inside it; otherwise it matches at any depth. A trailing `/` means
/// "everything under this directory".
fn relative_glob(spec: &str) -> String {
    let mut body = spec;
    let mut anchored = false;
    loop {
        if let Some(rest) = body.strip_prefix("./") {
            body = rest;
        } else if let Some(rest) = body.strip_prefix('/') {
            body = rest;
        } else {
            break;
        }
        anchored = true;
    }
    let dir_only = body.ends_with('/');
    let body = body.trim_end_matches('/');
    if body.is_empty() || body == "." {
        return "**".into();
    }
    let mut glob = if anchored || body.contains('/') {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    if dir_only {
        glob.push_str("/**");
    }
    glob
}

/// Lexically resolves `.` and `..` (no file-system access).
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}
