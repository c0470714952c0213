//! `Grep`: regex search over file contents, ripgrep-style (gitignore-aware
//! walking, binary files skipped).

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::exact;
use super::util::{self, SearchScope, cut_line, display_path};
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Longer matched or context lines are cut.
const MAX_LINE_CHARS: usize = 1000;

/// Searches file contents.
pub struct GrepTool;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

/// The arguments of a `Grep` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Regular expression to search for
    pattern: String,
    /// File or directory to search (default: the project directory)
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `*.{ts,tsx}`
    glob: Option<String>,
    /// What to return (default files_with_matches)
    output_mode: Option<OutputMode>,
    /// Case-insensitive search
    #[serde(rename = "-i")]
    case_insensitive: Option<bool>,
    /// Show line numbers in content mode (default true)
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Lines of context after each match (content mode)
    #[serde(rename = "-A")]
    after: Option<u64>,
    /// Lines of context before each match (content mode)
    #[serde(rename = "-B")]
    before: Option<u64>,
    /// Lines of context before and after each match (content mode)
    #[serde(rename = "-C")]
    context: Option<u64>,
    /// Return at most this many lines (content) or entries (other modes)
    head_limit: Option<u64>,
    /// Let the pattern match across lines; `.` matches newlines (default false)
    multiline: Option<bool>,
    /// Only search files of this type, e.g. `rust`, `py`, `js`, `ts`, `go`
    #[serde(rename = "type")]
    file_type: Option<String>,
}

impl TypedTool for GrepTool {
    type Input = Args;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str = "Search file contents with a regular expression (Rust regex syntax, like ripgrep). \
         Skips .gitignore'd and binary files.\n\
         output_mode: `files_with_matches` (default; paths, most recently modified first), \
         `content` (matching lines as `path:line:text`, with -A/-B/-C context lines as \
         `path-line-text`), or `count` (`path:count`).\n\
         Narrow with `path`, `glob` (e.g. `*.{ts,tsx}`) or `type` (e.g. `rust`, `py`); cap \
         output with head_limit. Set multiline for patterns spanning lines (`.` then matches \
         newlines too).";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let plan = match Plan::new(ctx, args) {
                Ok(p) => p,
                Err(e) => return e,
            };
            util::blocking(move || plan.run()).await
        })
    }
}

/// Everything one search needs, checked and built.
struct Plan {
    matcher: RegexMatcher,
    searcher: Searcher,
    walker: ignore::WalkBuilder,
    scope: std::sync::Arc<SearchScope>,
    mode: OutputMode,
    line_numbers: bool,
    context: bool,
    head_limit: Option<usize>,
    cwd: PathBuf,
    cancel: tokio_util::sync::CancellationToken,
    cap: usize,
}

impl Plan {
    fn new(ctx: &ToolContext, args: Args) -> Result<Plan, ToolOutput> {
        let multiline = args.multiline.unwrap_or(false);
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(args.case_insensitive.unwrap_or(false))
            .multi_line(true);
        if multiline {
            builder.dot_matches_new_line(true);
        } else {
            builder.line_terminator(Some(b'\n'));
        }
        let matcher = builder.build(&args.pattern).map_err(|e| {
            let hint = if !multiline && args.pattern.contains("\\n") {
                " (set multiline to true to match across lines)"
            } else {
                ""
            };
            ToolOutput::invalid_arguments(format!("invalid regex: {e}{hint}"))
        })?;

        let root = match &args.path {
            Some(p) if !p.is_empty() => ctx.resolve(p),
            _ => ctx.resolve("."),
        };
        if let Some(refused) = ctx.refusal(&GrepTool, &root) {
            return Err(refused);
        }
        let meta = match std::fs::metadata(&root) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ToolOutput::error(format!(
                    "path not found: {}",
                    root.display()
                )));
            }
            Err(e) => {
                return Err(ToolOutput::error(format!(
                    "cannot read {}: {e}",
                    root.display()
                )));
            }
        };
        let scope = SearchScope::new(ctx, "Grep", root.clone());
        let mut walker = scope.walker();
        if let Some(name) = args.file_type.as_deref().filter(|t| !t.is_empty()) {
            let types = TypesBuilder::new()
                .add_defaults()
                .select(name)
                .build()
                .map_err(|_| {
                    ToolOutput::invalid_arguments(format!(
                        "unknown file type '{name}' (try e.g. rust, py, js, ts, go, java, c, cpp)"
                    ))
                })?;
            walker.types(types);
        }
        if let Some(glob) = args.glob.as_deref().filter(|g| !g.is_empty()) {
            let dir = if meta.is_dir() {
                root.clone()
            } else {
                root.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            let mut ob = OverrideBuilder::new(dir);
            let overrides = ob.add(glob).and_then(|b| b.build()).map_err(|e| {
                ToolOutput::invalid_arguments(format!("invalid glob '{glob}': {e}"))
            })?;
            walker.overrides(overrides);
        }

        let mode = args.output_mode.unwrap_or_default();
        let (before, after) = if mode == OutputMode::Content {
            let c = args.context.unwrap_or(0);
            (args.before.unwrap_or(c), args.after.unwrap_or(c))
        } else {
            (0, 0)
        };
        let before = usize::try_from(before).unwrap_or(usize::MAX);
        let after = usize::try_from(after).unwrap_or(usize::MAX);
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .multi_line(multiline)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(before)
            .after_context(after)
            .build();
        Ok(Plan {
            matcher,
            searcher,
            walker,
            scope,
            mode,
            line_numbers: args.line_numbers.unwrap_or(true),
            context: before > 0 || after > 0,
            head_limit: args
                .head_limit
                .filter(|&n| n > 0)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            cwd: ctx.cwd.clone(),
            cancel: ctx.cancel.clone(),
            cap: ctx.output_cap,
        })
    }

    fn run(mut self) -> ToolOutput {
        let mut out = Collector {
            lines: Vec::new(),
            bytes: 0,
            limit: self.head_limit,
            cap: self.cap,
            full: None,
        };
        let mut files: Vec<(SystemTime, PathBuf)> = Vec::new();
        for (i, entry) in self.walker.build().enumerate() {
            if i % 64 == 0 && self.cancel.is_cancelled() {
                return ToolOutput::error("interrupted");
            }
            let Ok(entry) = entry else { continue };
            // A file the scope lets this search see, opened exactly there.
            let Some(real) = self.scope.file(&entry) else {
                continue;
            };
            let Some((file, meta)) = exact::open_read(&real)
                .and_then(|f| f.metadata().map(|m| (f, m)))
                .ok()
                .filter(|(_, m)| m.is_file())
            else {
                continue;
            };
            let shown = display_path(&self.cwd, entry.path());
            match self.mode {
                OutputMode::Content => {
                    let mut sink = ContentSink {
                        path: &shown,
                        line_numbers: self.line_numbers,
                        separate: self.context,
                        started: false,
                        out: &mut out,
                    };
                    let _ = self.searcher.search_file(&self.matcher, &file, &mut sink);
                }
                OutputMode::FilesWithMatches => {
                    let mut sink = CountSink {
                        count: 0,
                        first_only: true,
                    };
                    let _ = self.searcher.search_file(&self.matcher, &file, &mut sink);
                    if sink.count > 0 {
                        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                        files.push((mtime, entry.into_path()));
                    }
                }
                OutputMode::Count => {
                    let mut sink = CountSink {
                        count: 0,
                        first_only: false,
                    };
                    let _ = self.searcher.search_file(&self.matcher, &file, &mut sink);
                    if sink.count > 0 {
                        out.push(format!("{shown}:{}", sink.count));
                    }
                }
            }
            if out.full.is_some() {
                break;
            }
        }
        if self.mode == OutputMode::FilesWithMatches {
            files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            for (_, p) in &files {
                if !out.push(display_path(&self.cwd, p)) {
                    break;
                }
            }
        }
        if out.lines.is_empty() {
            return ToolOutput::ok("No matches found");
        }
        let mut text = out.lines.join("\n");
        text.push('\n');
        match out.full {
            Some(Full::HeadLimit) => text.push_str("[head_limit reached; more results may exist]"),
            Some(Full::Cap) => text.push_str(
                "[output truncated at the size limit; narrow the search or use head_limit]",
            ),
            None => {}
        }
        ToolOutput::ok(text)
    }
}

/// Why collection stopped.
#[derive(Clone, Copy, Debug)]
enum Full {
    HeadLimit,
    Cap,
}

/// Output lines, bounded by `head_limit` and the byte cap.
struct Collector {
    lines: Vec<String>,
    bytes: usize,
    limit: Option<usize>,
    cap: usize,
    full: Option<Full>,
}

impl Collector {
    /// Adds a line; false (and nothing added) once full.
    fn push(&mut self, line: String) -> bool {
        if self.full.is_some() {
            return false;
        }
        if self.limit.is_some_and(|n| self.lines.len() >= n) {
            self.full = Some(Full::HeadLimit);
            return false;
        }
        if self.bytes + line.len() + 1 > self.cap {
            self.full = Some(Full::Cap);
            return false;
        }
        self.bytes += line.len() + 1;
        self.lines.push(line);
        true
    }
}

/// Renders one line of a file's bytes for display.
fn render(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    cut_line(text, MAX_LINE_CHARS).into_owned()
}

/// Collects `content`-mode lines of one file.
struct ContentSink<'a> {
    path: &'a str,
    line_numbers: bool,
    /// Whether to put `--` between groups (context is on).
    separate: bool,
    started: bool,
    out: &'a mut Collector,
}

impl ContentSink<'_> {
    fn emit(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) -> bool {
        if !self.started {
            self.started = true;
            if self.separate && !self.out.lines.is_empty() && !self.out.push("--".to_string()) {
                return false;
            }
        }
        let text = render(bytes);
        let line = match number.filter(|_| self.line_numbers) {
            Some(n) => format!("{}{sep}{n}{sep}{text}", self.path),
            None => format!("{}{sep}{text}", self.path),
        };
        self.out.push(line)
    }
}

impl Sink for ContentSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number();
        for (i, line) in mat.lines().enumerate() {
            let n = first.map(|f| f + i as u64);
            if !self.emit(':', n, line) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.emit('-', ctx.line_number(), ctx.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        Ok(self.out.push("--".to_string()))
    }
}

/// Counts matching lines; with `first_only`, stops at the first.
struct CountSink {
    count: u64,
    first_only: bool,
}

impl Sink for CountSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += mat.lines().count().max(1) as u64;
        Ok(!self.first_only)
    }
}

#[cfg(test)]
mod tests {
    use crate::tools::Tool;
    use serde_json::json;
    use std::time::Duration;

    use super::super::util::test_support;
    use super::*;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        GrepTool.execute(ctx, &crate::tools::object(input)).await
    }

    fn write(root: &Path, rel: &str, text: &str, age_secs: u64) {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        let t = SystemTime::now() - Duration::from_secs(age_secs);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    fn fixture() -> (tempfile::TempDir, ToolContext) {
        let (d, ctx) = test_support::ctx();
        let r = &ctx.cwd;
        write(r, "src/a.rs", "fn main() {\n    let foo = 1;\n}\n", 100);
        write(
            r,
            "src/b.rs",
            "// Foo here\nfoo();\nbar\nbaz\nfoo again\n",
            10,
        );
        write(r, "lib.py", "foo = 2\n", 50);
        write(r, "target/out.rs", "foo\n", 1);
        write(r, ".gitignore", "target/\n", 1000);
        std::fs::write(r.join("bin.dat"), b"foo\0bar").unwrap();
        (d, ctx)
    }

    #[tokio::test]
    async fn files_mode_newest_first_respecting_gitignore() {
        let (_d, ctx) = fixture();
        let out = run(&ctx, json!({"pattern": "foo"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "src/b.rs\nlib.py\nsrc/a.rs\n");
    }

    #[tokio::test]
    async fn content_mode() {
        let (_d, ctx) = fixture();
        let out = run(
            &ctx,
            json!({"pattern": "foo", "output_mode": "content", "path": "src"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/a.rs:2:    let foo = 1;\nsrc/b.rs:2:foo();\nsrc/b.rs:5:foo again\n"
        );
        let out = run(
            &ctx,
            json!({"pattern": "foo", "output_mode": "content", "-i": true, "-n": false, "glob": "b.rs"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/b.rs:// Foo here\nsrc/b.rs:foo();\nsrc/b.rs:foo again\n"
        );
        let out = run(
            &ctx,
            json!({"pattern": "^foo\\(", "output_mode": "content", "-C": 1, "path": "src/b.rs"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/b.rs-1-// Foo here\nsrc/b.rs:2:foo();\nsrc/b.rs-3-bar\n"
        );
        let out = run(
            &ctx,
            json!({"pattern": "foo", "output_mode": "content", "-A": 1, "path": "src"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/a.rs:2:    let foo = 1;\nsrc/a.rs-3-}\n--\nsrc/b.rs:2:foo();\nsrc/b.rs-3-bar\n--\nsrc/b.rs:5:foo again\n"
        );
    }

    #[tokio::test]
    async fn count_type_head_limit_multiline() {
        let (_d, ctx) = fixture();
        let out = run(&ctx, json!({"pattern": "foo", "output_mode": "count"})).await;
        assert_eq!(out.content, "lib.py:1\nsrc/a.rs:1\nsrc/b.rs:2\n");
        let out = run(&ctx, json!({"pattern": "foo", "type": "py"})).await;
        assert_eq!(out.content, "lib.py\n");
        let out = run(&ctx, json!({"pattern": "foo", "glob": "*.{rs,txt}"})).await;
        assert_eq!(out.content, "src/b.rs\nsrc/a.rs\n");
        let out = run(&ctx, json!({"pattern": "foo", "head_limit": 1})).await;
        assert!(
            out.content.starts_with("src/b.rs\n[head_limit reached"),
            "{}",
            out.content
        );
        let out = run(
            &ctx,
            json!({"pattern": "bar.baz", "multiline": true, "output_mode": "content"}),
        )
        .await;
        assert_eq!(out.content, "src/b.rs:3:bar\nsrc/b.rs:4:baz\n");
        let out = run(&ctx, json!({"pattern": "bar.baz"})).await;
        assert_eq!(out.content, "No matches found");
    }

    #[tokio::test]
    async fn output_cap_truncates() {
        let (_d, mut ctx) = test_support::ctx();
        ctx.output_cap = 200;
        let text: String = (0..100).map(|i| format!("match {i}\n")).collect();
        write(&ctx.cwd, "a.txt", &text, 0);
        let out = run(&ctx, json!({"pattern": "match", "output_mode": "content"})).await;
        assert!(out.content.len() < 300, "{}", out.content);
        assert!(out.content.contains("[output truncated"), "{}", out.content);
    }

    #[tokio::test]
    async fn errors() {
        let (_d, ctx) = fixture();
        let out = run(&ctx, json!({"pattern": "a("})).await;
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("invalid_arguments: invalid regex: "),
            "{}",
            out.content
        );
        let out = run(&ctx, json!({"pattern": "a\\nb"})).await;
        assert!(out.content.contains("set multiline"), "{}", out.content);
        let out = run(&ctx, json!({"pattern": "a", "type": "nosuchtype"})).await;
        assert!(
            out.content
                .starts_with("invalid_arguments: unknown file type"),
            "{}",
            out.content
        );
        let out = run(&ctx, json!({"pattern": "a", "path": "missing"})).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("path not found: "),
            "{}",
            out.content
        );
        for bad in [
            json!({"pattern": "a", "output_mode": "lines"}),
            json!({"pattern": "a", "-i": "yes"}),
            json!({"pattern": "a", "-x": true}),
            json!({"pattern": "a", "-C": -1}),
            json!({}),
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
