//! Marketplaces: `.claude-plugin/marketplace.json` catalogues, where they
//! come from (a local folder or file, or a git repository cloned with the
//! machine's `git`), and copying a plugin version into the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::PluginError;
use super::manifest::{resolve_under, valid_plugin_name};
use crate::small_file::read_small_text;

/// Where the catalogue sits inside a marketplace folder.
pub const MARKETPLACE_PATH: &str = ".claude-plugin/marketplace.json";

/// Names Claude Code keeps for Anthropic's own marketplaces. (The one in
/// Claude Code's own repository, `claude-code-plugins`, is not among them:
/// users add it by path or URL like any other.)
const RESERVED_NAMES: &[&str] = &[
    "claude-plugins-official",
    "anthropic-plugins",
    "agent-skills",
];

/// Largest catalogue read.
const MAX_MARKETPLACE_BYTES: u64 = 4 * 1024 * 1024;

/// Where a marketplace (or a plugin of one) comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A local folder holding `.claude-plugin/marketplace.json` (or a plugin).
    Directory(PathBuf),
    /// A local `marketplace.json` file.
    File(PathBuf),
    /// A git repository; `subdir` is a folder inside it (`git-subdir`).
    Git {
        /// Clone URL (or a local path).
        url: String,
        /// Branch or tag.
        git_ref: Option<String>,
        /// Exact commit (wins over `git_ref`).
        sha: Option<String>,
        /// Folder inside the repository.
        subdir: Option<String>,
        /// Written back as `{"source": "github", "repo": …}`.
        github: Option<String>,
    },
    /// A path relative to the marketplace root (plugin entries only).
    Relative(String),
}

impl Source {
    /// Reads a source object (`{"source": "github", "repo": …}`), or a
    /// relative path string for a plugin entry.
    pub fn from_json(v: &Value) -> Result<Source, String> {
        if let Value::String(s) = v {
            return Ok(Source::Relative(s.clone()));
        }
        let Some(o) = v.as_object() else {
            return Err("a source is a path or an object".into());
        };
        let field = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        for k in ["ref", "sha", "url", "path", "repo"] {
            // Passed to git as arguments: one starting with `-` would be an option.
            if field(k).is_some_and(|v| v.starts_with('-') || v.contains('\0')) {
                return Err(format!("`{k}` may not start with `-`"));
            }
        }
        let kind = field("source").ok_or("a source object needs `source`")?;
        let need = |k: &str| field(k).ok_or_else(|| format!("a {kind} source needs `{k}`"));
        Ok(match kind.as_str() {
            "directory" => Source::Directory(PathBuf::from(need("path")?)),
            "file" => Source::File(PathBuf::from(need("path")?)),
            "github" => {
                let repo = need("repo")?;
                Source::Git {
                    url: github_url(&repo),
                    git_ref: field("ref"),
                    sha: field("sha"),
                    subdir: None,
                    github: Some(repo),
                }
            }
            "git" | "url" => {
                let url = need("url")?;
                if kind == "url" && url.ends_with(".json") {
                    return Err("marketplaces served as a plain URL are not supported; add its git repository".into());
                }
                Source::Git {
                    url,
                    git_ref: field("ref"),
                    sha: field("sha"),
                    subdir: None,
                    github: None,
                }
            }
            "git-subdir" => Source::Git {
                url: need("url")?,
                git_ref: field("ref"),
                sha: field("sha"),
                subdir: Some(need("path")?),
                github: None,
            },
            other => {
                return Err(format!(
                    "the source type `{other}` is not supported by cadre"
                ));
            }
        })
    }

    /// The source as Claude Code writes it.
    pub fn to_json(&self) -> Value {
        match self {
            Source::Directory(p) => json!({"source": "directory", "path": p}),
            Source::File(p) => json!({"source": "file", "path": p}),
            Source::Relative(p) => json!(p),
            Source::Git {
                url,
                git_ref,
                sha,
                subdir,
                github,
            } => {
                let mut v = match (github, subdir) {
                    (Some(repo), _) => json!({"source": "github", "repo": repo}),
                    (None, Some(path)) => json!({"source": "git-subdir", "url": url, "path": path}),
                    (None, None) => json!({"source": "git", "url": url}),
                };
                if let Some(r) = git_ref {
                    v["ref"] = json!(r);
                }
                if let Some(s) = sha {
                    v["sha"] = json!(s);
                }
                v
            }
        }
    }

    /// What `cadre plugin marketplace add ARG` means: an existing local
    /// folder with a catalogue or a `.json` file, else a git URL (or a
    /// local repository), else `owner/repo[@ref]` on GitHub.
    pub fn parse_arg(arg: &str, cwd: &Path) -> Result<Source, String> {
        let local = cwd.join(arg);
        if local.exists() {
            let real = local
                .canonicalize()
                .map_err(|e| format!("{}: {e}", local.display()))?;
            if real.is_file() {
                return Ok(Source::File(real));
            }
            // A folder holding a catalogue is read in place, as Claude Code
            // reads a local path, whether or not it is a git checkout.
            if real.join(MARKETPLACE_PATH).is_file() {
                return Ok(Source::Directory(real));
            }
            return Ok(Source::Git {
                url: real.to_string_lossy().into_owned(),
                git_ref: None,
                sha: None,
                subdir: None,
                github: None,
            });
        }
        let (base, git_ref) = match arg.rsplit_once('#') {
            Some((b, r)) if !r.is_empty() => (b, Some(r.to_string())),
            _ => (arg, None),
        };
        if base.contains("://") || base.starts_with("git@") || base.ends_with(".git") {
            return Ok(Source::Git {
                url: base.to_string(),
                git_ref,
                sha: None,
                subdir: None,
                github: None,
            });
        }
        let (repo, git_ref) = match arg.split_once('@') {
            Some((r, v)) if !v.is_empty() => (r, Some(v.to_string())),
            _ => (arg, None),
        };
        let word = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        match repo.split_once('/') {
            Some((owner, name)) if word(owner) && word(name) => Ok(Source::Git {
                url: github_url(repo),
                git_ref,
                sha: None,
                subdir: None,
                github: Some(repo.to_string()),
            }),
            _ => Err(format!(
                "{arg}: not a local folder or file, a git URL, or owner/repo"
            )),
        }
    }
}

fn github_url(repo: &str) -> String {
    format!("https://github.com/{repo}.git")
}

/// One plugin of a catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct MarketplaceEntry {
    /// Its name (the plugin's namespace and the first half of its id).
    pub name: String,
    /// Where it is.
    pub source: Source,
    /// `version`, when the entry gives one.
    pub version: Option<String>,
    /// `description`.
    pub description: Option<String>,
}

/// A parsed `marketplace.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marketplace {
    /// Its name.
    pub name: String,
    /// The folder relative plugin sources are resolved from.
    pub root: PathBuf,
    /// `metadata.pluginRoot`, for bare source names.
    pub plugin_root: Option<String>,
    /// Its plugins.
    pub plugins: Vec<MarketplaceEntry>,
    /// Entries skipped, and other notes, naming the file.
    pub warnings: Vec<String>,
}

/// Whether `name` can be a marketplace name.
pub fn valid_marketplace_name(name: &str) -> bool {
    valid_plugin_name(name) && !RESERVED_NAMES.contains(&name)
}

impl Marketplace {
    /// Reads the catalogue of a marketplace folder (or a catalogue file).
    pub fn read(location: &Path) -> Result<Marketplace, PluginError> {
        let (file, root) = if location.is_file() {
            // A file source: its folder is the root unless the file sits in
            // `.claude-plugin/`, whose parent is.
            let parent = location.parent().unwrap_or(Path::new("/"));
            let root = if parent.file_name().is_some_and(|n| n == ".claude-plugin") {
                parent.parent().unwrap_or(parent)
            } else {
                parent
            };
            (location.to_path_buf(), root.to_path_buf())
        } else {
            (location.join(MARKETPLACE_PATH), location.to_path_buf())
        };
        let bad = |message: String| PluginError::Manifest {
            path: file.clone(),
            message,
        };
        let text = read_small_text(&file, MAX_MARKETPLACE_BYTES).map_err(|e| bad(e.to_string()))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`name` (a string) is required".into()))?
            .to_string();
        if !valid_marketplace_name(&name) {
            return Err(bad(format!(
                "`name` {name:?} is not a usable marketplace name (letters, digits, `-` and `_`; not a reserved name)"
            )));
        }
        let entries = v
            .get("plugins")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`plugins` (a list) is required".into()))?;
        let plugin_root = v
            .get("metadata")
            .and_then(|m| m.get("pluginRoot"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut out = Marketplace {
            name,
            root,
            plugin_root,
            plugins: Vec::new(),
            warnings: Vec::new(),
        };
        for entry in entries {
            let entry_name = entry.get("name").and_then(Value::as_str).unwrap_or("");
            if !valid_plugin_name(entry_name) {
                out.warnings.push(format!(
                    "{}: plugin entry {entry_name:?} skipped: not a plugin name",
                    file.display()
                ));
                continue;
            }
            let source = match entry.get("source").map(Source::from_json) {
                Some(Ok(s)) => s,
                Some(Err(why)) => {
                    out.warnings.push(format!(
                        "{}: plugin {entry_name} skipped: {why}",
                        file.display()
                    ));
                    continue;
                }
                None => {
                    out.warnings.push(format!(
                        "{}: plugin {entry_name} skipped: no `source`",
                        file.display()
                    ));
                    continue;
                }
            };
            let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_string);
            out.plugins.push(MarketplaceEntry {
                name: entry_name.to_string(),
                source,
                version: text("version"),
                description: text("description"),
            });
        }
        Ok(out)
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&MarketplaceEntry> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// The folder of a relative entry, checked to stay inside the marketplace.
    pub fn local_dir(&self, rel: &str) -> Result<PathBuf, String> {
        let rel = match (&self.plugin_root, rel.starts_with("./") || rel == ".") {
            // A bare name resolves under `metadata.pluginRoot`.
            (Some(pr), false) => format!("{}/{rel}", pr.trim_end_matches('/')),
            _ => rel.to_string(),
        };
        match resolve_under(&self.root, &rel)? {
            Some(dir) if dir.is_dir() => Ok(dir),
            _ => Err(format!(
                "`{rel}` is not a folder of the marketplace ({})",
                self.root.display()
            )),
        }
    }
}

/// Runs `git` with `args`; its error output on failure.
pub fn git(args: &[&str], dir: Option<&Path>) -> Result<String, PluginError> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    // No prompts for credentials, the repository's own hooks never run,
    // and no transport that runs a command (`ext::`).
    cmd.args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "protocol.ext.allow=never",
    ])
    .args(args)
    .env("GIT_TERMINAL_PROMPT", "0")
    .stdin(std::process::Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| PluginError::Git(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(PluginError::Git(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Clones `url` into `dest` (which must not exist) at `git_ref` / `sha`.
pub fn git_clone(
    url: &str,
    git_ref: Option<&str>,
    sha: Option<&str>,
    dest: &Path,
) -> Result<String, PluginError> {
    let dest_s = dest.to_string_lossy();
    let mut args = vec!["clone", "--quiet", "--no-recurse-submodules"];
    if let (Some(r), None) = (git_ref, sha) {
        args.extend(["--branch", r]);
    }
    args.extend(["--", url, &dest_s]);
    git(&args, None)?;
    if let Some(sha) = sha {
        git(&["checkout", "--quiet", "--detach", sha], Some(dest))?;
    }
    git(&["rev-parse", "HEAD"], Some(dest))
}

/// Brings the clone at `dir` to the newest commit of `git_ref` (or of the
/// remote's default branch); returns the commit.
pub fn git_update(dir: &Path, git_ref: Option<&str>) -> Result<String, PluginError> {
    git(
        &["fetch", "--quiet", "origin", git_ref.unwrap_or("HEAD")],
        Some(dir),
    )?;
    git(&["reset", "--quiet", "--hard", "FETCH_HEAD"], Some(dir))?;
    git(&["rev-parse", "HEAD"], Some(dir))
}

/// Copies the plugin folder `from` to `to` (which must not exist): files
/// and folders only; links and `.git` are left out, so a copy never
/// reaches outside its own folder.
pub fn copy_plugin(from: &Path, to: &Path) -> Result<Vec<String>, PluginError> {
    let io = |p: &Path, e: std::io::Error| PluginError::State {
        path: p.to_path_buf(),
        message: e.to_string(),
    };
    let mut skipped = Vec::new();
    let tmp = to.with_file_name(format!(
        ".{}.{}.tmp",
        to.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    super::state::create_private_dir(&tmp)?;
    let mut stack = vec![(from.to_path_buf(), tmp.clone(), 0usize)];
    while let Some((src, dst, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&src).map_err(|e| io(&src, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io(&src, e))?;
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let path = entry.path();
            let target = dst.join(&name);
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            if kind.is_dir() && depth < 32 {
                std::fs::create_dir(&target).map_err(|e| io(&target, e))?;
                stack.push((path, target, depth + 1));
            } else if kind.is_file() {
                std::fs::copy(&path, &target).map_err(|e| io(&target, e))?;
            } else {
                skipped.push(path.display().to_string());
            }
        }
    }
    if let Some(parent) = to.parent() {
        super::state::create_private_dir(parent)?;
    }
    std::fs::rename(&tmp, to).map_err(|e| io(to, e))?;
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_local_folders_git_urls_and_github_repos() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("m/.claude-plugin")).unwrap();
        std::fs::write(dir.path().join("m/.claude-plugin/marketplace.json"), "{}").unwrap();
        assert!(matches!(
            Source::parse_arg("m", dir.path()),
            Ok(Source::Directory(_))
        ));
        assert!(matches!(
            Source::parse_arg("https://example.com/x.git#v1", dir.path()),
            Ok(Source::Git { git_ref: Some(r), .. }) if r == "v1"
        ));
        let gh = Source::parse_arg("acme/tools@main", dir.path()).unwrap();
        assert_eq!(
            gh.to_json(),
            json!({"source": "github", "repo": "acme/tools", "ref": "main"})
        );
        assert!(
            Source::parse_arg("../../etc", dir.path()).is_err()
                || dir.path().join("../../etc").exists()
        );
        assert!(Source::parse_arg("just-a-word", dir.path()).is_err());
    }

    #[test]
    fn catalogues_resolve_entries_inside_their_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
        std::fs::create_dir_all(root.join("plugins/fmt")).unwrap();
        std::fs::write(
            root.join(MARKETPLACE_PATH),
            r#"{"name": "tools", "owner": {"name": "x"}, "plugins": [
                {"name": "fmt", "source": "./plugins/fmt", "version": "1.0.0"},
                {"name": "evil", "source": "../outside"},
                {"name": "../bad", "source": "./x"}]}"#,
        )
        .unwrap();
        let m = Marketplace::read(root).unwrap();
        assert_eq!(m.name, "tools");
        assert_eq!(m.plugins.len(), 2);
        assert!(m.warnings[0].contains("../bad"));
        assert!(m.local_dir("./plugins/fmt").is_ok());
        assert!(m.local_dir("../outside").is_err());
        std::fs::write(
            root.join(MARKETPLACE_PATH),
            r#"{"name": "claude-plugins-official", "plugins": []}"#,
        )
        .unwrap();
        assert!(Marketplace::read(root).is_err());
    }
}
