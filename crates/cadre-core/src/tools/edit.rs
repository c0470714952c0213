//! `Edit`: exact string replacement in a file the agent has read.

use std::io::{self, Read as _};
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::exact;
use super::util::{self, atomic_write, cut_line};
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Lines of context shown around the first change.
const SNIPPET_CONTEXT: usize = 2;
/// Most lines shown in the confirmation snippet.
const SNIPPET_MAX_LINES: usize = 16;

/// Replaces text in a file.
pub struct EditTool;

/// The arguments of a `Edit` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file to edit (absolute, or relative to the project directory)
    file_path: String,
    /// The exact text to replace
    old_string: String,
    /// The replacement text (must differ from old_string)
    new_string: String,
    /// Replace every occurrence of old_string (default false: it must occur exactly once)
    #[schemars(extend("default" = false))]
    replace_all: Option<bool>,
}

impl TypedTool for EditTool {
    type Input = Args;
    const NAME: &'static str = "Edit";
    const DESCRIPTION: &'static str = "Replace exact text in a file. `old_string` must match the file byte for byte \
         (including indentation, without the line-number prefix Read shows) and occur exactly \
         once, unless `replace_all` is true; include surrounding lines to make it unique.\n\
         The file must have been Read first in this session and not changed since. The rest \
         of the file is left untouched.";
    const EFFECT: ToolEffect = ToolEffect::Edit;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            if args.old_string == args.new_string {
                return ToolOutput::error(
                    "old_string and new_string are identical; there is nothing to change",
                );
            }
            // The resolved path, as the permission decision saw it; reads
            // and writes follow no symlink from here on.
            let path = ctx.resolve(&args.file_path);
            if let Some(refused) = ctx.refusal(self, &path) {
                return refused;
            }
            let shown = path.display().to_string();
            match exact::kind(&path) {
                Ok(Some(kind)) if kind.is_dir() => {
                    return ToolOutput::error(format!("{shown} is a directory, not a file"));
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    if args.old_string.is_empty() {
                        ctx.before_change(&args.file_path, &path);
                        return create(ctx, &path, args.new_string).await;
                    }
                    return ToolOutput::error(format!("file not found: {shown}"));
                }
                Err(e) => return ToolOutput::error(format!("cannot read {shown}: {e}")),
            }
            if let Some(why) = ctx.file_state.check_fresh(&path) {
                return ToolOutput::error(why);
            }
            ctx.before_change(&args.file_path, &path);
            let p = path.clone();
            let through_editor = ctx.editor_files.is_some()
                && (super::editor_files::reading_editor(ctx, &path).is_some()
                    || super::editor_files::writing_editor(ctx, &path).is_some());
            let out = if through_editor {
                edit_in_editor(ctx, &path, &args).await
            } else {
                util::blocking(move || edit(&p, &args)).await
            };
            if !out.is_error {
                ctx.file_state.record_write(&path);
                ctx.after_change(&path);
            }
            out
        })
    }
}

/// `old_string` empty and no file: create it with `content`, like Claude Code.
async fn create(ctx: &ToolContext, path: &Path, content: String) -> ToolOutput {
    let bytes = content.len();
    let out = match super::editor_files::write_text(ctx, path, content, true).await {
        Ok(()) => ToolOutput::ok(format!("Created {} ({bytes} bytes)", path.display())),
        Err(e) => ToolOutput::error(e),
    };
    if !out.is_error {
        ctx.file_state.record_write(path);
        ctx.after_change(path);
    }
    out
}

fn edit(path: &Path, args: &Args) -> ToolOutput {
    let shown = path.display();
    let read = || -> io::Result<Vec<u8>> {
        let mut file = exact::open_read(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let bytes = match read() {
        Ok(b) => b,
        Err(e) => return ToolOutput::error(format!("cannot read {shown}: {e}")),
    };
    match replaced(path, &bytes, args) {
        Ok(r) => finish(path, r),
        Err(out) => out,
    }
}

/// A file's new content and where the first replacement starts.
struct Replaced {
    content: Vec<u8>,
    first: usize,
    new_len: usize,
    count: usize,
}

/// `bytes` with the edit applied, or why it cannot be.
fn replaced(path: &Path, bytes: &[u8], args: &Args) -> Result<Replaced, ToolOutput> {
    let shown = path.display();
    let old = args.old_string.as_bytes();
    let new = args.new_string.as_bytes();

    if old.is_empty() {
        if !bytes.is_empty() {
            return Err(ToolOutput::error(format!(
                "old_string is empty; give the exact text to replace in {shown} (to replace the \
                 whole file use Write)"
            )));
        }
        return Ok(Replaced {
            content: new.to_vec(),
            first: 0,
            new_len: new.len(),
            count: 1,
        });
    }

    let positions = find_all(bytes, old);
    match positions.len() {
        0 => {
            let mut msg = format!("old_string not found in {shown}");
            if bytes.windows(2).any(|w| w == b"\r\n") && !args.old_string.contains("\r\n") {
                msg.push_str(" (note: the file uses CRLF line endings)");
            }
            if looks_numbered(&args.old_string) {
                msg.push_str(" (note: do not include the line-number prefix that Read shows)");
            }
            msg.push_str("; Read the file again and copy the text exactly");
            return Err(ToolOutput::error(msg));
        }
        n if n > 1 && args.replace_all != Some(true) => {
            return Err(ToolOutput::error(format!(
                "old_string occurs {n} times in {shown}; include more surrounding context to \
                 make it unique, or set replace_all to true to replace every occurrence"
            )));
        }
        _ => {}
    }

    let mut out =
        Vec::with_capacity(bytes.len() + positions.len() * new.len().saturating_sub(old.len()));
    let mut last = 0;
    for &pos in &positions {
        out.extend_from_slice(&bytes[last..pos]);
        out.extend_from_slice(new);
        last = pos + old.len();
    }
    out.extend_from_slice(&bytes[last..]);
    Ok(Replaced {
        content: out,
        first: positions.first().copied().unwrap_or(0),
        new_len: new.len(),
        count: positions.len(),
    })
}

/// Writes the result and builds the confirmation.
fn finish(path: &Path, r: Replaced) -> ToolOutput {
    if let Err(e) = atomic_write(path, &r.content) {
        return ToolOutput::error(format!("cannot write {}: {e}", path.display()));
    }
    confirmation(path, &r)
}

/// What the model is told of an edit made.
fn confirmation(path: &Path, r: &Replaced) -> ToolOutput {
    let count = r.count;
    let plural = if count == 1 { "" } else { "s" };
    let mut msg = format!("Edited {}: {count} replacement{plural}\n", path.display());
    msg.push_str(&snippet(&r.content, r.first, r.new_len));
    ToolOutput::ok(msg)
}

/// The edit through the editor: its text as the base (unsaved changes
/// included) when it reads, the result into its buffer when it writes.
async fn edit_in_editor(ctx: &ToolContext, path: &Path, args: &Args) -> ToolOutput {
    let shown = path.display();
    let base = match super::editor_files::reading_editor(ctx, path) {
        Some(editor) => editor.read_text(path).await,
        // The disk, following no symlink, as the plain edit reads it.
        None => exact::open_read(path)
            .and_then(|mut f| {
                let mut text = String::new();
                f.read_to_string(&mut text).map(|_| text)
            })
            .map_err(|e| format!("cannot read {shown}: {e}")),
    };
    let base = match base {
        Ok(text) => text,
        Err(e) => return ToolOutput::error(e),
    };
    let r = match replaced(path, base.as_bytes(), args) {
        Ok(r) => r,
        Err(out) => return out,
    };
    // Text with text replaced in it is text.
    let Ok(text) = String::from_utf8(r.content.clone()) else {
        return ToolOutput::error(format!("cannot write {shown}: the result is not UTF-8"));
    };
    match super::editor_files::write_text(ctx, path, text, false).await {
        Ok(()) => confirmation(path, &r),
        Err(e) => ToolOutput::error(e),
    }
}

/// A few numbered lines of `content` around the change at `start..start+len`.
fn snippet(content: &[u8], start: usize, len: usize) -> String {
    let before = &content[..start.min(content.len())];
    let first_line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let end = (start + len).min(content.len());
    let changed_lines = content[start.min(end)..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let last_line = first_line + changed_lines;
    let from = first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
    let to = last_line + SNIPPET_CONTEXT;

    let text = String::from_utf8_lossy(content);
    let mut out = String::new();
    let mut shown = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if n < from {
            continue;
        }
        if n > to {
            break;
        }
        if shown == SNIPPET_MAX_LINES {
            out.push_str("   ...\n");
            break;
        }
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{n:>6}\t{}\n", cut_line(line, 500)));
        shown += 1;
    }
    out
}

/// Start offsets of the non-overlapping occurrences of `needle` in `hay`.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    if let Ok(text) = std::str::from_utf8(hay)
        && let Ok(pat) = std::str::from_utf8(needle)
    {
        return text.match_indices(pat).map(|(i, _)| i).collect();
    }
    let mut found = Vec::new();
    let mut pos = 0;
    while pos + needle.len() <= hay.len() {
        match hay[pos..].windows(needle.len()).position(|w| w == needle) {
            Some(i) => {
                found.push(pos + i);
                pos += i + needle.len();
            }
            None => break,
        }
    }
    found
}

/// Whether `s` starts like Read's `cat -n` output (`   12\t...`).
fn looks_numbered(s: &str) -> bool {
    let trimmed = s.trim_start_matches(' ');
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && trimmed[digits..].starts_with('\t')
}

#[cfg(test)]
mod tests {
    use super::super::ReadTool;
    use super::super::util::test_support;
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        EditTool.execute(ctx, &crate::tools::object(input)).await
    }

    async fn read(ctx: &ToolContext, path: &str) {
        let out = ReadTool
            .execute(ctx, &crate::tools::object(json!({ "file_path": path })))
            .await;
        assert!(!out.is_error, "{}", out.content);
    }

    #[tokio::test]
    async fn replaces_once_preserving_bytes() {
        let (_d, ctx) = test_support::ctx();
        let f = ctx.cwd.join("a.txt");
        std::fs::write(&f, b"l1\nl2\nfoo bar\r\nl4\nl5\nl6\nl7\n\xc3\xa9\xff").unwrap();
        read(&ctx, "a.txt").await;
        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "foo", "new_string": "baz\nqux"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read(&f).unwrap(),
            b"l1\nl2\nbaz\nqux bar\r\nl4\nl5\nl6\nl7\n\xc3\xa9\xff"
        );
        assert!(out.content.starts_with("Edited "), "{}", out.content);
        assert!(out.content.contains("1 replacement\n"), "{}", out.content);
        assert!(out.content.contains("     1\tl1\n"), "{}", out.content);
        assert!(
            out.content.contains("     3\tbaz\n     4\tqux bar\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains("     6\tl5\n"), "{}", out.content);
        assert!(!out.content.contains("l6"), "{}", out.content);
        // The edit was recorded: a second edit needs no new Read.
        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "l7", "new_string": "seven"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
    }

    #[tokio::test]
    async fn replace_all_and_ambiguity() {
        let (_d, ctx) = test_support::ctx();
        let f = ctx.cwd.join("a.txt");
        std::fs::write(&f, "x x x\n").unwrap();
        read(&ctx, "a.txt").await;
        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("old_string occurs 3 times in "),
            "{}",
            out.content
        );
        assert!(out.content.contains("replace_all"));
        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "x", "new_string": "yy", "replace_all": true}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("3 replacements"));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "yy yy yy\n");
    }

    #[tokio::test]
    async fn refuses_unread_and_stale_files() {
        let (_d, ctx) = test_support::ctx();
        let f = ctx.cwd.join("a.txt");
        std::fs::write(&f, "hello\n").unwrap();
        let args = json!({"file_path": "a.txt", "old_string": "hello", "new_string": "bye"});
        let out = run(&ctx, args.clone()).await;
        assert!(out.is_error);
        assert!(out.content.contains("has not been read"), "{}", out.content);

        read(&ctx, "a.txt").await;
        std::fs::write(&f, "hello world\n").unwrap();
        let out = run(&ctx, args.clone()).await;
        assert!(out.is_error);
        assert!(out.content.contains("changed on disk"), "{}", out.content);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hello world\n");
    }

    #[tokio::test]
    async fn errors() {
        let (_d, ctx) = test_support::ctx();
        std::fs::write(ctx.cwd.join("a.txt"), "a\r\nb\r\n").unwrap();
        read(&ctx, "a.txt").await;

        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "zz", "new_string": "y"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("old_string not found in "),
            "{}",
            out.content
        );

        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "a\nb", "new_string": "y"}),
        )
        .await;
        assert!(out.content.contains("CRLF"), "{}", out.content);

        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "a", "new_string": "a"}),
        )
        .await;
        assert!(out.is_error);
        assert!(out.content.contains("identical"), "{}", out.content);

        let out = run(
            &ctx,
            json!({"file_path": "a.txt", "old_string": "", "new_string": "a"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("old_string is empty"),
            "{}",
            out.content
        );

        let out = run(
            &ctx,
            json!({"file_path": "nope.txt", "old_string": "x", "new_string": "y"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("file not found: "),
            "{}",
            out.content
        );

        for bad in [
            json!({"file_path": "a.txt", "old_string": "a"}),
            json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}),
            json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "extra": true}),
        ] {
            let out = run(&ctx, bad).await;
            assert!(
                out.content.starts_with("invalid_arguments: "),
                "{}",
                out.content
            );
        }
    }

    #[tokio::test]
    async fn empty_old_string_creates_missing_file() {
        let (_d, ctx) = test_support::ctx();
        let out = run(
            &ctx,
            json!({"file_path": "new/f.txt", "old_string": "", "new_string": "hi\n"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(ctx.cwd.join("new/f.txt")).unwrap(),
            "hi\n"
        );
    }

    #[test]
    fn find_all_is_non_overlapping() {
        assert_eq!(find_all(b"aaaa", b"aa"), vec![0, 2]);
        assert_eq!(find_all(b"\xffaa\xffaa", b"aa"), vec![1, 4]);
        assert!(find_all(b"abc", b"").is_empty());
    }

    #[test]
    fn numbered_prefix_detection() {
        assert!(looks_numbered("     3\tfoo"));
        assert!(!looks_numbered("foo"));
        assert!(!looks_numbered("  42 apples"));
    }
}
