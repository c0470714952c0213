//! `Write`: creates or overwrites a file (overwriting only what the agent has read).

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::exact;
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Writes a whole file.
pub struct WriteTool;

/// The arguments of a `Write` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file to write (absolute, or relative to the project directory)
    file_path: String,
    /// The complete new content of the file
    content: String,
}

impl TypedTool for WriteTool {
    type Input = Args;
    const NAME: &'static str = "Write";
    const DESCRIPTION: &'static str = "Write a file, creating it (and missing parent directories) or replacing its whole \
         content.\n\
         An existing file must have been Read first in this session and not changed since. \
         To change part of an existing file prefer Edit, which sends only the difference.";
    const EFFECT: ToolEffect = ToolEffect::Edit;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // The resolved path, as the permission decision saw it; the
            // write follows no symlink from here on.
            let path = ctx.resolve(&args.file_path);
            if let Some(refused) = ctx.refusal(self, &path) {
                return refused;
            }
            let existed = match exact::kind(&path) {
                Ok(Some(kind)) if kind.is_dir() => {
                    return ToolOutput::error(format!("{} is a directory", path.display()));
                }
                Ok(Some(_)) => true,
                Ok(None) => false,
                Err(e) => {
                    return ToolOutput::error(format!("cannot write {}: {e}", path.display()));
                }
            };
            if existed && let Some(why) = ctx.file_state.check_fresh(&path) {
                return ToolOutput::error(why);
            }
            let bytes = args.content.len();
            ctx.before_change(&args.file_path, &path);
            let out = match super::editor_files::write_text(ctx, &path, args.content, true).await {
                Ok(()) => ToolOutput::ok(format!(
                    "Wrote {bytes} bytes to {} ({})",
                    path.display(),
                    if existed {
                        "overwrote existing file"
                    } else {
                        "created new file"
                    }
                )),
                Err(e) => ToolOutput::error(e),
            };
            if !out.is_error {
                ctx.file_state.record_write(&path);
                ctx.after_change(&path);
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::ReadTool;
    use super::super::util::test_support;
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        WriteTool.execute(ctx, &crate::tools::object(input)).await
    }

    #[tokio::test]
    async fn creates_with_parent_dirs_and_records() {
        let (_d, ctx) = test_support::ctx();
        let out = run(&ctx, json!({"file_path": "x/y/z.txt", "content": "hello"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.starts_with("Wrote 5 bytes to "),
            "{}",
            out.content
        );
        assert!(out.content.contains("created"));
        let f = ctx.cwd.join("x/y/z.txt");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hello");
        // Recorded: a second write needs no Read.
        let out = run(&ctx, json!({"file_path": "x/y/z.txt", "content": "bye"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("overwrote"));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "bye");
    }

    #[tokio::test]
    async fn existing_file_must_be_read_and_fresh() {
        let (_d, ctx) = test_support::ctx();
        let f = ctx.cwd.join("a.txt");
        std::fs::write(&f, "orig").unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt", "content": "new"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("has not been read"), "{}", out.content);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "orig");

        let read = ReadTool
            .execute(&ctx, &crate::tools::object(json!({"file_path": "a.txt"})))
            .await;
        assert!(!read.is_error);
        std::fs::write(&f, "changed elsewhere").unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt", "content": "new"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("changed on disk"), "{}", out.content);

        ReadTool
            .execute(&ctx, &crate::tools::object(json!({"file_path": "a.txt"})))
            .await;
        let out = run(&ctx, json!({"file_path": "a.txt", "content": "new"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
    }

    #[tokio::test]
    async fn errors() {
        let (_d, ctx) = test_support::ctx();
        std::fs::create_dir(ctx.cwd.join("dir")).unwrap();
        let out = run(&ctx, json!({"file_path": "dir", "content": "x"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("is a directory"));
        for bad in [
            json!({"file_path": "a"}),
            json!({"file_path": "a", "content": 1}),
            json!({"file_path": "a", "content": "", "mode": "x"}),
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
