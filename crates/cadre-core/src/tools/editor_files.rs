//! Files as an editor holds them. A front end that is an editor's agent
//! (`cadre acp`) can serve the file tools' reads and writes itself, so the
//! model sees unsaved buffers and its edits land in them. Every path has
//! passed the permission policy before it gets here.

use std::path::Path;

use futures::future::BoxFuture;

/// Reads and writes of whole text files through the front end.
pub trait EditorFiles: Send + Sync {
    /// Whether reads go through the editor.
    fn reads(&self) -> bool;

    /// Whether writes go through the editor.
    fn writes(&self) -> bool;

    /// The file's text as the editor has it, unsaved changes included.
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>>;

    /// Replaces the file's text (creating it) through the editor.
    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str)
    -> BoxFuture<'a, Result<(), String>>;
}

use std::sync::Arc;

use super::{ToolContext, exact, util};

/// The editor to read `path` through: the context has one that reads, and
/// the path is a regular file cadre could open itself (so the editor is
/// asked for nothing the policy and the no-symlink rule would not give).
pub(super) fn reading_editor<'a>(
    ctx: &'a ToolContext,
    path: &Path,
) -> Option<&'a Arc<dyn EditorFiles>> {
    let editor = ctx.editor_files.as_ref().filter(|e| e.reads())?;
    let regular = exact::open_read(path)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_file());
    regular.then_some(editor)
}

/// The editor to write `path` through: the context has one that writes,
/// and the path is not a symlink (the editor would follow it).
pub(super) fn writing_editor<'a>(
    ctx: &'a ToolContext,
    path: &Path,
) -> Option<&'a Arc<dyn EditorFiles>> {
    let editor = ctx.editor_files.as_ref().filter(|e| e.writes())?;
    let plain = !matches!(exact::kind(path), Ok(Some(k)) if k.is_symlink());
    plain.then_some(editor)
}

/// Writes `text` as the whole of `path`: through the editor when it takes
/// writes, else atomically on disk (parent folders made when `create_dirs`).
pub(super) async fn write_text(
    ctx: &ToolContext,
    path: &Path,
    text: String,
    create_dirs: bool,
) -> Result<(), String> {
    if let Some(editor) = writing_editor(ctx, path) {
        return editor.write_text(path, &text).await;
    }
    let p = path.to_path_buf();
    let out = util::blocking(
        move || match exact::write_atomic(&p, text.as_bytes(), create_dirs) {
            Ok(()) => super::ToolOutput::ok(""),
            Err(e) => super::ToolOutput::error(format!("cannot write {}: {e}", p.display())),
        },
    )
    .await;
    if out.is_error {
        Err(out.content)
    } else {
        Ok(())
    }
}
