//! `Glob`: files matching a glob pattern, newest first, honouring .gitignore.

use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use futures::future::BoxFuture;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::util::{self, SearchScope, display_path};
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;
use crate::permissions::glob_plan;

/// Most paths returned.
const MAX_RESULTS: usize = 1000;

/// Finds files by name pattern.
pub struct GlobTool;

/// The arguments of a `Glob` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Glob pattern to match file paths against, e.g. `**/*.rs`
    pattern: String,
    /// Directory to search in (default: the project directory)
    path: Option<String>,
}

impl TypedTool for GlobTool {
    type Input = Args;
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str = "Find files whose path matches a glob pattern such as `**/*.rs` or `src/**/*.{ts,tsx}` \
         (matched against the path relative to the search directory; `*` does not cross `/`).\n\
         Files ignored by .gitignore are skipped. Returns matching file paths, most recently \
         modified first, at most 1000. Use Grep to search file contents.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (root, pattern) = glob_plan(&ctx.cwd, args.path.as_deref(), &args.pattern);
            if let Some(refused) = ctx.refusal(self, &root) {
                return refused;
            }
            if pattern.is_empty() {
                return ToolOutput::invalid_arguments("pattern is empty");
            }
            let matcher = match GlobBuilder::new(&pattern).literal_separator(true).build() {
                Ok(g) => g.compile_matcher(),
                Err(e) => {
                    return ToolOutput::invalid_arguments(format!("invalid glob pattern: {e}"));
                }
            };
            match std::fs::metadata(&root) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return ToolOutput::error(format!("{} is not a directory", root.display()));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return ToolOutput::error(format!("path not found: {}", root.display()));
                }
                Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", root.display())),
            }
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let scope = SearchScope::new(ctx, "Glob", root);
            util::blocking(move || {
                let mut found = match walk(&scope, &matcher, &cancel) {
                    Some(f) => f,
                    None => return ToolOutput::error("interrupted"),
                };
                if found.is_empty() {
                    return ToolOutput::ok("No files found");
                }
                // Newest first; ties by path so the order is stable.
                found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                let total = found.len();
                let mut out: String = found
                    .iter()
                    .take(MAX_RESULTS)
                    .map(|(_, p)| display_path(&cwd, p) + "\n")
                    .collect();
                if total > MAX_RESULTS {
                    out.push_str(&format!(
                        "[{total} files matched; showing the {MAX_RESULTS} most recently \
                         modified; narrow the pattern or path]"
                    ));
                }
                // Capped once, with every other result, when the call is finished.
                ToolOutput::ok(out)
            })
            .await
        })
    }
}

/// Matching files under `root` with their modification times; `None` if cancelled.
fn walk(
    scope: &std::sync::Arc<SearchScope>,
    matcher: &globset::GlobMatcher,
    cancel: &CancellationToken,
) -> Option<Vec<(SystemTime, PathBuf)>> {
    let mut found = Vec::new();
    let root = &scope.root;
    let walker = scope.walker().build();
    for (i, entry) in walker.enumerate() {
        if i % 256 == 0 && cancel.is_cancelled() {
            return None;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        // A file the scope lets this search see (a symlink's target, checked).
        let Some(real) = scope.file(&entry) else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if !matcher.is_match(rel) {
            continue;
        }
        let mtime = std::fs::symlink_metadata(&real)
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((mtime, entry.into_path()));
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use crate::tools::Tool;
    use serde_json::json;
    use std::time::Duration;

    use super::super::util::test_support;
    use super::*;
    use std::path::Path;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        GlobTool.execute(ctx, &crate::tools::object(input)).await
    }

    fn touch(path: &Path, age_secs: u64) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, "x").unwrap();
        let t = SystemTime::now() - Duration::from_secs(age_secs);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[tokio::test]
    async fn newest_first_and_gitignore() {
        let (_d, ctx) = test_support::ctx();
        let root = &ctx.cwd;
        touch(&root.join("old.rs"), 300);
        touch(&root.join("src/new.rs"), 10);
        touch(&root.join("src/mid.rs"), 100);
        touch(&root.join("src/notes.txt"), 5);
        touch(&root.join("target/gen.rs"), 1);
        touch(&root.join(".hidden/h.rs"), 200);
        touch(&root.join(".git/x.rs"), 1);
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();

        let out = run(&ctx, json!({"pattern": "**/*.rs"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "src/new.rs\nsrc/mid.rs\n.hidden/h.rs\nold.rs\n"
        );

        // `*` does not cross directories.
        let out = run(&ctx, json!({"pattern": "*.rs"})).await;
        assert_eq!(out.content, "old.rs\n");

        // With a path: matched relative to it, shown relative to cwd.
        let out = run(&ctx, json!({"pattern": "*.{rs,txt}", "path": "src"})).await;
        assert_eq!(out.content, "src/notes.txt\nsrc/new.rs\nsrc/mid.rs\n");

        // Absolute pattern.
        let pat = format!("{}/src/*.txt", root.display());
        let out = run(&ctx, json!({"pattern": pat})).await;
        assert_eq!(out.content, "src/notes.txt\n");

        let out = run(&ctx, json!({"pattern": "**/*.py"})).await;
        assert_eq!(out.content, "No files found");
    }

    #[tokio::test]
    async fn caps_results_at_1000() {
        let (_d, ctx) = test_support::ctx();
        for i in 0..1005 {
            std::fs::write(ctx.cwd.join(format!("f{i}.txt")), "").unwrap();
        }
        let out = run(&ctx, json!({"pattern": "*.txt"})).await;
        assert_eq!(out.content.lines().count(), 1001);
        assert!(
            out.content.contains("[1005 files matched"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn errors() {
        let (_d, ctx) = test_support::ctx();
        let out = run(&ctx, json!({"pattern": "**/*.rs", "path": "missing"})).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("path not found: "),
            "{}",
            out.content
        );
        let out = run(&ctx, json!({"pattern": "a[", "path": "."})).await;
        assert!(
            out.content.starts_with("invalid_arguments: invalid glob"),
            "{}",
            out.content
        );
        for bad in [
            json!({}),
            json!({"pattern": 1}),
            json!({"pattern": "*", "x": 1}),
        ] {
            let out = run(&ctx, bad).await;
            assert!(
                out.content.starts_with("invalid_arguments: "),
                "{}",
                out.content
            );
        }
    }
}
