//! `Read`: a text file's lines, numbered like `cat -n`, streamed so a huge file
//! is never loaded whole; an image as image content fitted to the model
//! APIs' limits; a PDF's text page by page (and the PDF itself, for
//! providers that take documents).

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::exact;
use super::util::{self, cut_line, find_newline};
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes kept of one line: enough for `MAX_LINE_CHARS` chars of any width.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 4;
/// A NUL byte in this many leading bytes marks a file as binary.
const BINARY_PROBE: usize = 8192;
/// Past this size, lines after the shown range are not counted.
const COUNT_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// Output room kept for the closing note, so the output cap never cuts it.
const NOTE_ROOM: usize = 128;

/// Reads a text file.
pub struct ReadTool;

/// The arguments of a `Read` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file to read (absolute, or relative to the project directory)
    file_path: String,
    /// Line number to start reading from (1-based; 0 also means the first line). Only for files too long to read at once
    #[schemars(range(min = 0))]
    offset: Option<u64>,
    /// Number of lines to read (default 2000)
    #[schemars(range(min = 1))]
    limit: Option<u64>,
    /// PDF files only: the pages to read, as "3" or "1-5" (at most 20 pages a call). Required for PDFs of more than 20 pages
    pages: Option<String>,
}

impl TypedTool for ReadTool {
    type Input = Args;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Read a file. Output lines are numbered like `cat -n` (number, tab, line); the \
         number and tab are not part of the file.\n\
         By default up to 2000 lines from the start are shown; use `offset` (1-based line to \
         start at) and `limit` (number of lines) to page through long files. Lines longer than \
         2000 characters are cut.\n\
         Images (PNG, JPEG, GIF, WebP) are shown to you as images, scaled down when large. \
         PDFs are returned as text page by page; use `pages` (\"1-5\", at most 20 pages a call) \
         for long ones.\n\
         Read a file before editing or overwriting it. To list a directory use Glob.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if limit == 0 {
                return ToolOutput::invalid_arguments("limit must be at least 1");
            }
            let offset = args.offset.unwrap_or(1).max(1);
            let pages = args.pages;
            let path = ctx.resolve(&args.file_path);
            if let Some(refused) = ctx.refusal(self, &path) {
                return refused;
            }
            let cap = ctx.output_cap;
            let p = path.clone();
            let out = match super::editor_files::reading_editor(ctx, &path) {
                // The editor's text, unsaved changes included.
                Some(editor) => match editor.read_text(&path).await {
                    Ok(text) => {
                        util::blocking(move || {
                            let size = text.len() as u64;
                            scan(
                                io::Cursor::new(text.into_bytes()),
                                &p,
                                offset,
                                limit,
                                cap,
                                size,
                            )
                            .unwrap_or_else(|e| {
                                ToolOutput::error(format!("cannot read {}: {e}", p.display()))
                            })
                        })
                        .await
                    }
                    Err(e) => ToolOutput::error(e),
                },
                None => {
                    util::blocking(move || read_file(&p, offset, limit, cap, pages.as_deref()))
                        .await
                }
            };
            if !out.is_error {
                ctx.file_state.record(&path);
                let dirs = crate::instructions::nested_dirs(&ctx.cwd, &path);
                let dirs = ctx.file_state.claim_instruction_dirs(dirs);
                if !dirs.is_empty() {
                    let cwd = ctx.cwd.clone();
                    let reminder =
                        util::blocking(move || ToolOutput::ok(nested_reminder(&cwd, &dirs))).await;
                    if !reminder.is_error {
                        return ToolOutput {
                            content: out.content + &reminder.content,
                            ..out
                        };
                    }
                }
            }
            out
        })
    }
}

/// The instruction files in `dirs` (subdirectories of the working directory
/// the agent reads in for the first time), as a reminder after the lines
/// read; empty when there are none.
fn nested_reminder(cwd: &Path, dirs: &[std::path::PathBuf]) -> String {
    let sources =
        crate::instructions::InstructionSources::for_session(cwd, crate::config::data_dir().ok());
    let loaded = crate::instructions::load_nested(dirs, &sources);
    match loaded.render() {
        Some(text) => format!(
            "\n\n<system-reminder>\nInstruction files from the directories of the file just read; they apply to work in those directories.\n\n{text}\n</system-reminder>"
        ),
        None => String::new(),
    }
}

/// The file at `path`: an image or PDF as media, anything else as the
/// numbered lines `offset..offset+limit`; or why not.
fn read_file(path: &Path, offset: u64, limit: u64, cap: usize, pages: Option<&str>) -> ToolOutput {
    let shown = path.display();
    // Opened exactly where the decision was made; the type is checked on
    // what was opened, not on a name that could change in between.
    let opened = exact::open_read(path).and_then(|f| f.metadata().map(|m| (f, m)));
    let (file, meta) = match opened {
        Ok(fm) => fm,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("file not found: {shown}"));
        }
        Err(e) => return ToolOutput::error(format!("cannot read {shown}: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory, not a file; use Glob to list the files in it"
        ));
    }
    if !meta.is_file() {
        return ToolOutput::error(format!("{shown} is not a regular file"));
    }
    let mut file = file;
    let mut head = Vec::with_capacity(16);
    if let Err(e) = (&mut file).take(16).read_to_end(&mut head) {
        return ToolOutput::error(format!("cannot read {shown}: {e}"));
    }
    let media = crate::media::sniff(&head);
    if pages.is_some() && media != Some(crate::media::MediaKind::Pdf) {
        return ToolOutput::invalid_arguments("pages is for PDF files only");
    }
    if let Some(kind) = media {
        return read_media(
            io::Cursor::new(head).chain(file),
            path,
            meta.len(),
            kind,
            pages,
        );
    }
    match scan(
        io::Cursor::new(head).chain(file),
        path,
        offset,
        limit,
        cap,
        meta.len(),
    ) {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("cannot read {shown}: {e}")),
    }
}

/// An image or PDF of `size` bytes, read whole from `file`.
fn read_media(
    file: impl Read,
    path: &Path,
    size: u64,
    kind: crate::media::MediaKind,
    pages: Option<&str>,
) -> ToolOutput {
    use crate::media::{self, MediaKind};
    let shown = path.display();
    let max = match kind {
        MediaKind::Image(_) => media::MAX_IMAGE_FILE_BYTES,
        MediaKind::Pdf => media::MAX_PDF_FILE_BYTES,
    };
    if size > max {
        return ToolOutput::error(format!(
            "{shown} is {size} bytes; Read takes images and PDFs of up to {max} bytes"
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    if let Err(e) = file.take(max + 1).read_to_end(&mut bytes) {
        return ToolOutput::error(format!("cannot read {shown}: {e}"));
    }
    match kind {
        MediaKind::Image(media_type) => match media::prepare_image(&bytes, media_type) {
            Ok(prepared) => ToolOutput {
                content: prepared.describe(&shown.to_string()),
                is_error: false,
                images: vec![prepared.image],
            },
            Err(e) => ToolOutput::error(format!("cannot read {shown}: {e}")),
        },
        MediaKind::Pdf => match media::pdf_text(&bytes, pages) {
            Ok(text) => {
                let (first, last) = text.shown;
                let mut content = format!(
                    "[PDF {shown}: {} page{}; pages {first}-{last} as text]\n",
                    text.total_pages,
                    if text.total_pages == 1 { "" } else { "s" }
                );
                content.push_str(&text.render());
                // The whole document too, where the provider reads PDFs itself
                // (charts, scans), when it was read whole and is small.
                let whole = first == 1 && last == text.total_pages;
                let images = if whole && bytes.len() <= media::MAX_DOCUMENT_BYTES {
                    vec![crate::model::ToolImage {
                        media_type: media::PDF_MEDIA_TYPE.to_string(),
                        data: media::base64_encode(&bytes),
                    }]
                } else {
                    Vec::new()
                };
                ToolOutput {
                    content,
                    is_error: false,
                    images,
                }
            }
            Err(media::MediaError::Pages(why)) => ToolOutput::invalid_arguments(why),
            Err(e) => ToolOutput::error(format!("cannot read {shown}: {e}")),
        },
    }
}

fn scan(
    file: impl Read,
    path: &Path,
    offset: u64,
    limit: u64,
    cap: usize,
    size: u64,
) -> io::Result<ToolOutput> {
    let shown = path.display();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut probe = Vec::with_capacity(BINARY_PROBE);
    (&mut reader)
        .take(BINARY_PROBE as u64)
        .read_to_end(&mut probe)?;
    if probe.contains(&0) {
        return Ok(ToolOutput::error(format!(
            "{shown} is a binary file ({size} bytes); Read shows text files only"
        )));
    }
    if probe.is_empty() {
        return Ok(ToolOutput::ok(format!("[file {shown} is empty]")));
    }
    // Read on from the start again without reopening the path.
    let mut reader = io::Cursor::new(probe).chain(reader);

    let end = offset.saturating_add(limit); // exclusive
    let mut out = String::new();
    let mut line = Vec::new();
    let mut line_no: u64 = 0;
    let mut first_shown: Option<u64> = None;
    let mut last_shown: u64 = 0;
    let mut cap_hit = false;
    let mut bytes_seen: u64 = 0;
    let mut counted_all = true;
    loop {
        let want = !cap_hit && line_no + 1 >= offset && line_no + 1 < end;
        if !want && line_no + 1 >= end && bytes_seen > COUNT_LIMIT_BYTES {
            counted_all = false;
            break;
        }
        line.clear();
        let keep = if want { MAX_LINE_BYTES } else { 0 };
        let Some(len) = next_line(&mut reader, &mut line, keep)? else {
            break;
        };
        bytes_seen += len;
        line_no += 1;
        if !want {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let overflowed = usize::try_from(len).unwrap_or(usize::MAX) > line.len();
        let rendered = if overflowed {
            // Only the line's head was kept: cut it and give the full length.
            let head = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((i, _)) => &text[..i],
                None => text,
            };
            format!("{line_no:>6}\t{head}… [line cut; {len} bytes long]\n")
        } else {
            format!("{line_no:>6}\t{}\n", cut_line(text, MAX_LINE_CHARS))
        };
        if first_shown.is_some() && out.len() + rendered.len() > cap.saturating_sub(NOTE_ROOM) {
            cap_hit = true;
            continue;
        }
        out.push_str(&rendered);
        first_shown.get_or_insert(line_no);
        last_shown = line_no;
    }

    let Some(first) = first_shown else {
        return Ok(ToolOutput::ok(format!(
            "[file {shown} has {line_no} lines; offset {offset} is past the end]"
        )));
    };
    if last_shown < line_no || !counted_all {
        let total = if counted_all {
            format!("{line_no} lines")
        } else {
            format!("more than {line_no} lines")
        };
        out.push_str(&format!(
            "[file has {total}; showing {first}-{last_shown}; use offset to read more]"
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// Reads one line (through its `\n`, if any), keeping at most `keep` of its
/// bytes in `buf`. Returns the line's full length, or `None` at end of file.
fn next_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<Option<u64>> {
    let mut total: u64 = 0;
    loop {
        let (done, used) = {
            let chunk = match reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Ok((total > 0).then_some(total));
            }
            let (done, used) = match find_newline(chunk) {
                Some(i) => (true, i + 1),
                None => (false, chunk.len()),
            };
            let room = keep.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..used.min(room)]);
            (done, used)
        };
        reader.consume(used);
        total += used as u64;
        if done {
            return Ok(Some(total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::util::test_support;
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        ReadTool.execute(ctx, &crate::tools::object(input)).await
    }

    #[tokio::test]
    async fn reads_numbered_lines_and_records() {
        let (_d, ctx) = test_support::ctx();
        let f = ctx.cwd.join("a.txt");
        std::fs::write(&f, "one\ntwo\r\nthree").unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
        assert!(ctx.file_state.check_fresh(&f).is_none());
    }

    #[tokio::test]
    async fn offset_and_limit_with_note() {
        let (_d, ctx) = test_support::ctx();
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        std::fs::write(ctx.cwd.join("a.txt"), text).unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt", "offset": 3, "limit": 2})).await;
        assert_eq!(
            out.content,
            "     3\tl3\n     4\tl4\n[file has 10 lines; showing 3-4; use offset to read more]"
        );
        let out = run(&ctx, json!({"file_path": "a.txt", "offset": 9})).await;
        assert_eq!(out.content, "     9\tl9\n    10\tl10\n");
        let out = run(&ctx, json!({"file_path": "a.txt", "offset": 50})).await;
        assert!(!out.is_error);
        assert!(out.content.contains("past the end"), "{}", out.content);
        let out = run(&ctx, json!({"file_path": "a.txt", "limit": 0})).await;
        assert!(out.content.starts_with("invalid_arguments: "));
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let (_d, ctx) = test_support::ctx();
        std::fs::write(ctx.cwd.join("a.txt"), "x".repeat(5000)).unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt"})).await;
        assert!(!out.is_error);
        assert!(out.content.contains(&"x".repeat(2000)));
        assert!(!out.content.contains(&"x".repeat(2001)));
        assert!(out.content.contains("[line cut, 3000 more chars]"));
        std::fs::write(
            ctx.cwd.join("b.txt"),
            format!("{}\nnext\n", "y".repeat(20_000)),
        )
        .unwrap();
        let out = run(&ctx, json!({"file_path": "b.txt"})).await;
        assert!(
            out.content.contains("[line cut; 20001 bytes long]"),
            "{}",
            out.content
        );
        assert!(out.content.ends_with("     2\tnext\n"));
    }

    #[tokio::test]
    async fn output_cap_stops_early_with_note() {
        let (_d, mut ctx) = test_support::ctx();
        ctx.output_cap = 100;
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(ctx.cwd.join("a.txt"), text).unwrap();
        let out = run(&ctx, json!({"file_path": "a.txt"})).await;
        assert!(out.content.len() < 200, "{}", out.content);
        assert!(
            out.content.contains("[file has 100 lines; showing 1-"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn errors() {
        let (_d, ctx) = test_support::ctx();
        let out = run(&ctx, json!({"file_path": "nope.txt"})).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("file not found: "),
            "{}",
            out.content
        );
        assert!(ctx.file_state.paths().is_empty());

        let out = run(&ctx, json!({"file_path": "."})).await;
        assert!(out.is_error);
        assert!(out.content.contains("is a directory"), "{}", out.content);

        std::fs::write(ctx.cwd.join("b.bin"), b"ab\0cd").unwrap();
        let out = run(&ctx, json!({"file_path": "b.bin"})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("binary file (5 bytes)"),
            "{}",
            out.content
        );

        std::fs::write(ctx.cwd.join("e.txt"), b"").unwrap();
        let out = run(&ctx, json!({"file_path": "e.txt"})).await;
        assert!(!out.is_error);
        assert!(out.content.contains("is empty"));
    }

    #[tokio::test]
    async fn strict_args() {
        let (_d, ctx) = test_support::ctx();
        for bad in [
            json!({"file_path": "a", "bogus": 1}),
            json!({"file_path": 3}),
            json!({"file_path": "a", "offset": "3"}),
            json!({}),
        ] {
            let out = run(&ctx, bad).await;
            assert!(out.is_error);
            assert!(
                out.content.starts_with("invalid_arguments: "),
                "{}",
                out.content
            );
        }
    }
}
