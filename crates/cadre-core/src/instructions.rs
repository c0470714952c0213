//! Project instructions as Claude Code finds them: the user's own files, then
//! `AGENTS.md`, `CLAUDE.md` and `CLAUDE.local.md` from the repository root down
//! to the working directory, each followed by the files it imports with
//! `@path`; files in subdirectories come later, when the agent reads there.
//!
//! A project's files come from whoever wrote the repository, so what they
//! bring in is bounded: a project file (or an import of one) that resolves,
//! symlinks followed, outside the project is used only once the user
//! approved it ([`approvals`]) or trusted the run (`--trust`); nothing in
//! cadre's data directory is ever imported, whoever asks. The user's own
//! files may import anything else.

pub mod approvals;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::small_file::read_small_text;

/// Largest part of one file that goes into a prompt: every request carries it.
pub const MAX_FILE_BYTES: usize = 40 << 10;
/// Largest total of all files in one prompt (~40k tokens).
pub const MAX_TOTAL_BYTES: usize = 160 << 10;
/// How many levels of `@path` imports are followed below a file.
pub const MAX_IMPORT_DEPTH: usize = 5;
/// Larger files are refused unread (they are cut to [`MAX_FILE_BYTES`] anyway).
pub const MAX_READ_BYTES: u64 = 4 << 20;
/// The project files looked for in each directory, in prompt order.
const PROJECT_NAMES: [(&str, InstructionKind); 3] = [
    ("AGENTS.md", InstructionKind::Project),
    ("CLAUDE.md", InstructionKind::Project),
    ("CLAUDE.local.md", InstructionKind::Local),
];

/// Why a file is in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstructionKind {
    /// The user's own, for every project (`~/.claude/CLAUDE.md`, `$CADRE_HOME/AGENTS.md`).
    User,
    /// Checked into the project (`AGENTS.md`, `CLAUDE.md`).
    Project,
    /// The user's private file for this project (`CLAUDE.local.md`).
    Local,
    /// Beside a file the agent read, in a subdirectory of the working directory.
    Nested,
    /// Named by an `@path` import in this file.
    ImportedBy(PathBuf),
}

impl InstructionKind {
    /// How the prompt describes the file's origin.
    fn describe(&self) -> String {
        match self {
            InstructionKind::User => "the user's own instructions, for all projects".into(),
            InstructionKind::Project => "project instructions, checked into the codebase".into(),
            InstructionKind::Local => {
                "the user's private instructions for this project, not checked in".into()
            }
            InstructionKind::Nested => "instructions for the files in its directory".into(),
            InstructionKind::ImportedBy(by) => format!("imported by {}", by.display()),
        }
    }
}

/// One file that went into the prompt.
#[derive(Debug, Clone)]
pub struct InstructionFile {
    /// Where it is (as found, not canonicalised, so the user recognises it).
    pub path: PathBuf,
    /// Why it is there.
    pub kind: InstructionKind,
    /// The text used (cut, with a marker, when over a cap).
    pub text: String,
    /// Its size on disk in bytes.
    pub size: usize,
    /// Whether a cap cut it.
    pub cut: bool,
}

/// What was loaded, in prompt order, and what went wrong on the way.
#[derive(Debug, Clone, Default)]
pub struct LoadedInstructions {
    /// The files, in the order the prompt shows them.
    pub files: Vec<InstructionFile>,
    /// Problems for the user: cycles, missing imports, unreadable files, cuts,
    /// and one naming every file below that was not used.
    pub warnings: Vec<String>,
    /// Files a project file brings in from outside the project that were not
    /// used, for want of the user's approval (what the question lists).
    pub outside_skipped: Vec<SkippedFile>,
    /// Files refused because they are in cadre's data directory.
    pub data_dir_refused: Vec<SkippedFile>,
}

/// A file an instruction file names that was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// As named (the import's path, or the instruction file found).
    pub path: PathBuf,
    /// Where it resolves, symlinks followed (what an approval records).
    pub resolved: PathBuf,
    /// The file importing it; `None` for an instruction file that is itself
    /// a link out of the project.
    pub importer: Option<PathBuf>,
}

impl SkippedFile {
    /// `path (imported by X)`, or `path -> target` for a link, as shown to the user.
    pub fn describe(&self) -> String {
        let shown = if self.resolved == self.path {
            self.path.display().to_string()
        } else {
            format!("{} -> {}", self.path.display(), self.resolved.display())
        };
        match &self.importer {
            Some(by) => format!("{shown} (imported by {})", by.display()),
            None => shown,
        }
    }
}

/// Which files outside the project a project's instruction files may bring in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OutsideImports {
    /// None of them: each is skipped and named in one warning.
    #[default]
    None,
    /// Those the user approved (resolved paths).
    Approved(BTreeSet<PathBuf>),
    /// Every one (the user trusted this run with `--trust`).
    All,
}

impl OutsideImports {
    fn allows(&self, resolved: &Path) -> bool {
        match self {
            OutsideImports::None => false,
            OutsideImports::Approved(files) => files.contains(resolved),
            OutsideImports::All => true,
        }
    }
}

/// Set once by the binary for `--trust`: every outside import of this run is
/// approved. Process-wide because instructions are read in many places (the
/// main prompt, each child's, files beside a `Read`) from a working
/// directory alone, and the flag holds for the whole run.
static OUTSIDE_APPROVED_FOR_RUN: AtomicBool = AtomicBool::new(false);

/// Approves every outside import for the rest of this process (`--trust`).
pub fn approve_outside_imports_for_this_run() {
    OUTSIDE_APPROVED_FOR_RUN.store(true, Ordering::SeqCst);
}

/// The project a session in `cwd` reads instructions from: the repository
/// root (outside a repository, `cwd`), resolved.
pub fn project_root(cwd: &Path) -> PathBuf {
    let dirs = crate::project_root::project_dirs(cwd);
    let root = dirs
        .closest_first
        .last()
        .cloned()
        .unwrap_or_else(|| cwd.to_path_buf());
    root.canonicalize().unwrap_or(root)
}

/// What a session in `cwd` may import from outside its project: everything
/// after `--trust`, else what the user approved for it (recorded in
/// `data_dir`), else nothing. A broken answers file approves nothing.
pub fn outside_imports(cwd: &Path, data_dir: Option<&Path>) -> OutsideImports {
    if OUTSIDE_APPROVED_FOR_RUN.load(Ordering::SeqCst) {
        return OutsideImports::All;
    }
    let Some(data_dir) = data_dir else {
        return OutsideImports::None;
    };
    match approvals::ImportApprovals::load(data_dir) {
        Ok(answers) => OutsideImports::Approved(answers.approved(&project_root(cwd))),
        Err(_) => OutsideImports::None,
    }
}

impl LoadedInstructions {
    /// The files as one prompt block, each labelled with its path; `None` when empty.
    pub fn render(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let blocks: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                format!(
                    "Contents of {} ({}):\n\n{}",
                    f.path.display(),
                    f.kind.describe(),
                    f.text
                )
            })
            .collect();
        Some(blocks.join("\n\n"))
    }
}

/// Where instruction files are looked for.
#[derive(Debug, Clone)]
pub struct InstructionSources {
    /// The working directory (project files from here up to the repository root).
    pub cwd: PathBuf,
    /// The home directory: `~/.claude/CLAUDE.md`, and `~/` in imports.
    pub home_dir: Option<PathBuf>,
    /// `$CADRE_HOME`: `AGENTS.md` there; nothing under it is ever imported.
    pub data_dir: Option<PathBuf>,
    /// Which files outside the project the project's files may bring in.
    pub outside: OutsideImports,
}

impl InstructionSources {
    /// The sources of a session in `cwd`: `$HOME`, `data_dir`, and the
    /// outside imports approved for it ([`outside_imports`]).
    pub fn for_session(cwd: &Path, data_dir: Option<PathBuf>) -> InstructionSources {
        InstructionSources {
            cwd: cwd.to_path_buf(),
            home_dir: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            outside: outside_imports(cwd, data_dir.as_deref()),
            data_dir,
        }
    }
}

/// Reads every instruction file for a session in `sources.cwd`: the user's
/// first (as Claude Code puts them), then the project's outermost first, each
/// followed by its imports.
pub fn load(sources: &InstructionSources) -> LoadedInstructions {
    let mut loader = Loader::new(sources);
    if let Some(home) = &sources.home_dir {
        loader.add_top(
            &home.join(".claude").join("CLAUDE.md"),
            InstructionKind::User,
        );
    }
    if let Some(data) = &sources.data_dir {
        loader.add_top(&data.join("AGENTS.md"), InstructionKind::User);
    }
    let dirs = crate::project_root::project_dirs(&sources.cwd);
    for dir in dirs.closest_first.iter().rev() {
        for (name, kind) in &PROJECT_NAMES {
            loader.add_top(&dir.join(name), kind.clone());
        }
    }
    loader.finish()
}

/// The directories strictly below `cwd` down to the one holding `file`,
/// outermost first: where a read of `file` finds instructions the prompt
/// does not already carry. Empty when `file` is not below `cwd`.
pub fn nested_dirs(cwd: &Path, file: &Path) -> Vec<PathBuf> {
    let Some(parent) = file.parent() else {
        return Vec::new();
    };
    let Ok(below) = parent.strip_prefix(cwd) else {
        return Vec::new();
    };
    let mut dir = cwd.to_path_buf();
    let mut out = Vec::new();
    for part in below.components() {
        match part {
            std::path::Component::Normal(name) => {
                dir.push(name);
                out.push(dir.clone());
            }
            // `..` or the like: not plainly below `cwd`, so nothing.
            _ => return Vec::new(),
        }
    }
    out
}

/// The instruction files in `dirs` (outermost first, below `sources.cwd`),
/// with their imports, under the same rules as [`load`].
pub fn load_nested(dirs: &[PathBuf], sources: &InstructionSources) -> LoadedInstructions {
    let mut loader = Loader::new(sources);
    for dir in dirs {
        for (name, _) in &PROJECT_NAMES {
            loader.add_top(&dir.join(name), InstructionKind::Nested);
        }
    }
    loader.finish()
}

/// Reads files and follows their imports, once each, within the caps.
struct Loader {
    home_dir: Option<PathBuf>,
    /// The data directory, resolved: never read from, but for the user's `AGENTS.md`.
    data_dir: Option<PathBuf>,
    /// The project root, resolved: a project file's imports stay below it unless approved.
    project_root: PathBuf,
    outside: OutsideImports,
    out: LoadedInstructions,
    /// Canonical paths already loaded: a second mention adds nothing.
    seen: HashSet<PathBuf>,
    total: usize,
}

impl Loader {
    fn new(sources: &InstructionSources) -> Loader {
        let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        Loader {
            home_dir: sources.home_dir.clone(),
            data_dir: sources.data_dir.as_deref().map(resolved),
            project_root: project_root(&sources.cwd),
            outside: sources.outside.clone(),
            out: LoadedInstructions::default(),
            seen: HashSet::new(),
            total: 0,
        }
    }

    /// The result, with one warning naming every file not used.
    fn finish(mut self) -> LoadedInstructions {
        let list = |files: &[SkippedFile]| {
            files
                .iter()
                .map(SkippedFile::describe)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.out.outside_skipped.is_empty() {
            parts.push(format!(
                "outside the project, not approved: {} (cadre asks about them when it starts interactively; --trust approves them for one run)",
                list(&self.out.outside_skipped)
            ));
        }
        if !self.out.data_dir_refused.is_empty() {
            parts.push(format!(
                "in cadre's data directory, which is never imported: {}",
                list(&self.out.data_dir_refused)
            ));
        }
        if !parts.is_empty() {
            self.out.warnings.push(format!(
                "instruction files not used, so not sent to the model: {}",
                parts.join("; ")
            ));
        }
        self.out
    }

    /// A file looked for by name: its absence is normal.
    fn add_top(&mut self, path: &Path, kind: InstructionKind) {
        let mut stack = Vec::new();
        let from_user = kind == InstructionKind::User;
        self.add(path, kind, &mut stack, from_user);
    }

    /// Whether `resolved` may be read for a file named `path`; records why
    /// not. `from_user`: it is one of the user's own files or imported by one.
    fn admits(
        &mut self,
        path: &Path,
        resolved: &Path,
        kind: &InstructionKind,
        from_user: bool,
    ) -> bool {
        let importer = match kind {
            InstructionKind::ImportedBy(by) => Some(by.clone()),
            _ => None,
        };
        let skipped = || SkippedFile {
            path: path.to_path_buf(),
            resolved: resolved.to_path_buf(),
            importer: importer.clone(),
        };
        // Only the user's own AGENTS.md is read from the data directory: it
        // holds config, logs and answers that no prompt should carry.
        let top_user_file = *kind == InstructionKind::User;
        if !top_user_file
            && let Some(data) = &self.data_dir
            && resolved.starts_with(data)
        {
            let file = skipped();
            if !self.out.data_dir_refused.contains(&file) {
                self.out.data_dir_refused.push(file);
            }
            return false;
        }
        if from_user || resolved.starts_with(&self.project_root) || self.outside.allows(resolved) {
            return true;
        }
        if !self
            .out
            .outside_skipped
            .iter()
            .any(|f| f.resolved == resolved)
        {
            self.out.outside_skipped.push(skipped());
        }
        false
    }

    /// Loads `path` and then its imports; `stack` holds the canonical paths of
    /// the files importing it, outermost first.
    fn add(
        &mut self,
        path: &Path,
        kind: InstructionKind,
        stack: &mut Vec<PathBuf>,
        from_user: bool,
    ) {
        let importer = match &kind {
            InstructionKind::ImportedBy(by) => Some(by.clone()),
            _ => None,
        };
        let canonical = match std::fs::canonicalize(path) {
            Ok(c) => c,
            Err(_) => {
                if let Some(by) = &importer {
                    self.out.warnings.push(format!(
                        "{}: imports {}, which does not exist; the import is skipped",
                        by.display(),
                        path.display()
                    ));
                }
                return;
            }
        };
        if stack.contains(&canonical) {
            let by = importer.as_deref().unwrap_or(path);
            self.out.warnings.push(format!(
                "{}: import cycle: it imports {}, which imports it back; the import is refused",
                by.display(),
                path.display()
            ));
            return;
        }
        if self.seen.contains(&canonical) {
            return;
        }
        if !self.admits(path, &canonical, &kind, from_user) {
            return;
        }
        self.seen.insert(canonical.clone());
        // Read by the name found, so a warning names the file the user wrote.
        let text = match read_small_text(path, MAX_READ_BYTES) {
            Ok(text) => text,
            Err(e) if e.is_not_found() => return,
            Err(e) => {
                self.out
                    .warnings
                    .push(format!("{e}; its instructions are not used"));
                return;
            }
        };
        let size = text.len();
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let room = MAX_TOTAL_BYTES.saturating_sub(self.total);
        if room == 0 {
            self.out.warnings.push(format!(
                "{}: not used: the instruction files before it already fill the {} kB total",
                path.display(),
                MAX_TOTAL_BYTES >> 10
            ));
            return;
        }
        let cap = MAX_FILE_BYTES.min(room);
        let (kept, cut) = if text.len() > cap {
            let why = if cap == MAX_FILE_BYTES {
                format!("only its first {} kB are used", MAX_FILE_BYTES >> 10)
            } else {
                format!(
                    "only its first {} bytes fit in the {} kB total for instructions",
                    cap,
                    MAX_TOTAL_BYTES >> 10
                )
            };
            self.out
                .warnings
                .push(format!("{}: {size} bytes; {why}", path.display()));
            let head = &text[..floor_char_boundary(text, cap)];
            (format!("{head}\n[… cut here: {why}]"), true)
        } else {
            (text.to_string(), false)
        };
        self.total += kept.len();
        let imports = if cut {
            find_imports(&text[..floor_char_boundary(text, cap)])
        } else {
            find_imports(text)
        };
        self.out.files.push(InstructionFile {
            path: path.to_path_buf(),
            kind,
            text: kept,
            size,
            cut,
        });
        if imports.is_empty() {
            return;
        }
        if stack.len() >= MAX_IMPORT_DEPTH {
            self.out.warnings.push(format!(
                "{}: its imports are not followed: imports nest at most {MAX_IMPORT_DEPTH} levels deep",
                path.display()
            ));
            return;
        }
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        stack.push(canonical);
        for import in imports {
            let target = self.resolve(&base, &import);
            self.add(
                &target,
                InstructionKind::ImportedBy(path.to_path_buf()),
                stack,
                from_user,
            );
        }
        stack.pop();
    }

    /// An import's path: `~/` from home, absolute as is, else from `base`
    /// (the importing file's directory).
    fn resolve(&self, base: &Path, import: &str) -> PathBuf {
        if let Some(rest) = import.strip_prefix("~/")
            && let Some(home) = &self.home_dir
        {
            return home.join(rest);
        }
        let p = Path::new(import);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    }
}

/// The largest index `<= at` on a char boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The `@path` imports in `text`, in order: an `@` at the start of a line or
/// after white space, followed by a path; never inside fenced code blocks,
/// indented code or code spans.
pub fn find_imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut previous_blank = true;
    for line in text.lines() {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if indent <= 3
            && let Some((ch, run)) = fence_marker(trimmed)
        {
            fence = match fence {
                None => Some((ch, run)),
                Some((open, len))
                    if open == ch && run >= len && trimmed[run..].trim().is_empty() =>
                {
                    None
                }
                still => still,
            };
            previous_blank = false;
            continue;
        }
        let blank = line.trim().is_empty();
        let indented_code = previous_blank && (indent >= 4 || line.starts_with('\t')) && !blank;
        previous_blank = blank;
        if fence.is_some() || indented_code {
            continue;
        }
        imports_in_line(line, &mut out);
    }
    out
}

/// The fence character and run length if `line` opens or closes a fence.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.chars().take_while(|c| *c == ch).count();
    (run >= 3).then_some((ch, run))
}

/// Adds the imports of one line, skipping code spans.
fn imports_in_line(line: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            // A span ends at the next run of exactly as many backticks.
            let mut j = i + run;
            let mut close = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let r = chars[j..].iter().take_while(|c| **c == '`').count();
                    if r == run {
                        close = Some(j + r);
                        break;
                    }
                    j += r;
                } else {
                    j += 1;
                }
            }
            i = close.unwrap_or(i + run);
            continue;
        }
        if c == '@' && (i == 0 || chars[i - 1].is_whitespace()) {
            let mut path = String::new();
            let mut j = i + 1;
            while j < chars.len() {
                match chars[j] {
                    '\\' if chars.get(j + 1) == Some(&' ') => {
                        path.push(' ');
                        j += 2;
                    }
                    ch if ch.is_whitespace() => break,
                    ch => {
                        path.push(ch);
                        j += 1;
                    }
                }
            }
            // Punctuation closing a sentence is not part of the path.
            let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            let starts_like_path = path
                .chars()
                .next()
                .is_some_and(|f| f.is_alphanumeric() || matches!(f, '.' | '~' | '/' | '_' | '-'));
            if starts_like_path {
                out.push(path.to_string());
            }
            i = j;
            continue;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::small_file::write_with_dirs as write;

    /// A home, a `$CADRE_HOME` and a repository `repo/a/b` (cwd) in a temp dir.
    fn layout() -> (tempfile::TempDir, InstructionSources) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("repo/.git")).unwrap();
        fs::create_dir_all(r.join("repo/a/b")).unwrap();
        let sources = InstructionSources {
            cwd: r.join("repo/a/b"),
            home_dir: Some(r.join("home")),
            data_dir: Some(r.join("home/.cadre")),
            outside: OutsideImports::None,
        };
        (dir, sources)
    }

    fn paths(loaded: &LoadedInstructions, root: &Path) -> Vec<String> {
        loaded
            .files
            .iter()
            .map(|f| {
                f.path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn discovery_order_user_then_outermost_first() {
        let (dir, sources) = layout();
        let r = dir.path();
        write(&r.join("home/.claude/CLAUDE.md"), "user claude");
        write(&r.join("home/.cadre/AGENTS.md"), "user agents");
        write(&r.join("repo/CLAUDE.md"), "root claude");
        write(&r.join("repo/AGENTS.md"), "root agents");
        write(&r.join("repo/CLAUDE.local.md"), "root local");
        write(&r.join("repo/a/CLAUDE.md"), "middle");
        write(&r.join("repo/a/b/CLAUDE.md"), "cwd claude");
        write(&r.join("repo/a/b/CLAUDE.local.md"), "cwd local");
        // Above the repository root: never read.
        write(&r.join("CLAUDE.md"), "outside");
        let loaded = load(&sources);
        assert_eq!(
            paths(&loaded, r),
            [
                "home/.claude/CLAUDE.md",
                "home/.cadre/AGENTS.md",
                "repo/AGENTS.md",
                "repo/CLAUDE.md",
                "repo/CLAUDE.local.md",
                "repo/a/CLAUDE.md",
                "repo/a/b/CLAUDE.md",
                "repo/a/b/CLAUDE.local.md",
            ]
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let text = loaded.render().unwrap();
        assert!(text.contains(&format!(
            "Contents of {} (the user's private instructions",
            r.join("repo/CLAUDE.local.md").display()
        )));
        assert!(!text.contains("outside"));
        assert!(text.find("user claude").unwrap() < text.find("root agents").unwrap());
    }

    #[test]
    fn without_a_repository_only_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(&r.join("p/CLAUDE.md"), "parent");
        write(&r.join("p/c/CLAUDE.md"), "child");
        let sources = InstructionSources {
            cwd: r.join("p/c"),
            home_dir: None,
            data_dir: None,
            outside: OutsideImports::None,
        };
        let loaded = load(&sources);
        if !crate::project_root::project_dirs(&sources.cwd).in_repository {
            assert_eq!(paths(&loaded, r), ["p/c/CLAUDE.md"]);
        }
    }

    #[test]
    fn a_symlinked_claude_md_is_read_once() {
        let (dir, sources) = layout();
        let r = dir.path();
        write(&r.join("repo/a/b/AGENTS.md"), "shared");
        std::os::unix::fs::symlink("AGENTS.md", r.join("repo/a/b/CLAUDE.md")).unwrap();
        let loaded = load(&sources);
        assert_eq!(paths(&loaded, r), ["repo/a/b/AGENTS.md"]);
    }

    #[test]
    fn imports_relative_nested_home_and_missing() {
        let (dir, mut sources) = layout();
        let r = dir.path();
        write(
            &r.join("repo/CLAUDE.md"),
            "Rules: see @docs/style.md and @~/notes.md, also @missing.md.",
        );
        write(&r.join("repo/docs/style.md"), "style; more in @deeper/x.md");
        write(&r.join("repo/docs/deeper/x.md"), "deep");
        write(&r.join("home/notes.md"), "home notes");
        // Approved, the import from home is followed like the others.
        let notes = r.join("home/notes.md").canonicalize().unwrap();
        sources.outside = OutsideImports::Approved(BTreeSet::from([notes]));
        let loaded = load(&sources);
        assert_eq!(
            paths(&loaded, r),
            [
                "repo/CLAUDE.md",
                "repo/docs/style.md",
                "repo/docs/deeper/x.md",
                "home/notes.md",
            ]
        );
        assert_eq!(
            loaded.files[2].kind,
            InstructionKind::ImportedBy(r.join("repo/docs/style.md"))
        );
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("missing.md, which does not exist"));
    }

    #[test]
    fn a_project_file_imports_from_outside_only_what_was_approved() {
        let (dir, mut sources) = layout();
        let r = dir.path();
        write(
            &r.join("repo/CLAUDE.md"),
            "@~/.ssh/id_rsa @../outside.md @link.md @~/.cadre/config.toml @docs/in.md",
        );
        write(&r.join("repo/docs/in.md"), "inside");
        write(&r.join("home/.ssh/id_rsa"), "PRIVATE KEY");
        write(&r.join("outside.md"), "OUTSIDE");
        write(&r.join("linked.md"), "LINKED");
        std::os::unix::fs::symlink(r.join("linked.md"), r.join("repo/link.md")).unwrap();
        write(&r.join("home/.cadre/config.toml"), "SECRET CONFIG");
        let loaded = load(&sources);
        let text = loaded.render().unwrap();
        assert!(text.contains("inside"), "{text}");
        for secret in ["PRIVATE KEY", "OUTSIDE", "LINKED", "SECRET CONFIG"] {
            assert!(!text.contains(secret), "{secret}: {text}");
        }
        assert_eq!(
            loaded.outside_skipped.len(),
            3,
            "{:?}",
            loaded.outside_skipped
        );
        assert_eq!(loaded.data_dir_refused.len(), 1);
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        for name in ["id_rsa", "outside.md", "link.md", "config.toml"] {
            assert!(
                loaded.warnings[0].contains(name),
                "{name}: {:?}",
                loaded.warnings
            );
        }
        // Approving all: the outside files come in, the data directory's never.
        sources.outside = OutsideImports::All;
        let text = load(&sources).render().unwrap();
        for secret in ["PRIVATE KEY", "OUTSIDE", "LINKED"] {
            assert!(text.contains(secret), "{secret}: {text}");
        }
        assert!(!text.contains("SECRET CONFIG"));
    }

    #[test]
    fn the_users_files_import_anything_but_the_data_directory() {
        let (dir, sources) = layout();
        let r = dir.path();
        write(
            &r.join("home/.claude/CLAUDE.md"),
            "@~/notes.md @~/.cadre/trust.json",
        );
        write(
            &r.join("home/.cadre/AGENTS.md"),
            "user agents @sessions/x.md",
        );
        write(&r.join("home/notes.md"), "HOME NOTES");
        write(&r.join("home/.cadre/trust.json"), "TRUST ANSWERS");
        write(&r.join("home/.cadre/sessions/x.md"), "SESSION LOG");
        // A project file linked into the data directory is refused too.
        std::os::unix::fs::symlink(r.join("home/.cadre/trust.json"), r.join("repo/CLAUDE.md"))
            .unwrap();
        let loaded = load(&sources);
        let text = loaded.render().unwrap();
        assert!(
            text.contains("HOME NOTES") && text.contains("user agents"),
            "{text}"
        );
        for secret in ["TRUST ANSWERS", "SESSION LOG"] {
            assert!(!text.contains(secret), "{secret}: {text}");
        }
        assert_eq!(
            loaded.data_dir_refused.len(),
            3,
            "{:?}",
            loaded.data_dir_refused
        );
        assert!(loaded.outside_skipped.is_empty());
    }

    #[test]
    fn a_cycle_is_refused_with_a_warning() {
        let (dir, sources) = layout();
        let r = dir.path();
        write(&r.join("repo/CLAUDE.md"), "@one.md");
        write(&r.join("repo/one.md"), "one @two.md");
        write(&r.join("repo/two.md"), "two @one.md");
        let loaded = load(&sources);
        assert_eq!(
            paths(&loaded, r),
            ["repo/CLAUDE.md", "repo/one.md", "repo/two.md"]
        );
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("import cycle"));
        assert!(loaded.warnings[0].starts_with(&r.join("repo/two.md").display().to_string()));
    }

    #[test]
    fn imports_stop_after_five_levels() {
        let (dir, sources) = layout();
        let r = dir.path();
        write(&r.join("repo/CLAUDE.md"), "@l1.md");
        for level in 1..=7 {
            write(
                &r.join(format!("repo/l{level}.md")),
                &format!("level {level} @l{}.md", level + 1),
            );
        }
        let loaded = load(&sources);
        // The file and five levels of imports below it.
        assert_eq!(loaded.files.len(), 1 + MAX_IMPORT_DEPTH);
        assert!(loaded.warnings[0].contains("at most 5 levels"));
        assert!(loaded.warnings[0].starts_with(&r.join("repo/l5.md").display().to_string()));
    }

    #[test]
    fn no_imports_inside_code() {
        let text = "real @a.md\n\
                    `@span.md` and ``x `@double.md` y`` then @b.md\n\
                    ```sh\n@fenced.md\n```\n\
                    ~~~~\n@tilde.md\n~~~\n@still-fenced.md\n~~~~\n\
                    \n    @indented.md\n\
                    mail me@example.com, see @c.md.\n\
                    @ alone, @~/home.md";
        assert_eq!(find_imports(text), ["a.md", "b.md", "c.md", "~/home.md"]);
    }

    #[test]
    fn caps_cut_with_a_marker_and_a_warning() {
        let (dir, sources) = layout();
        let r = dir.path();
        // Over the per-file cap, with a multi-byte char at the cut.
        let big = "é".repeat(MAX_FILE_BYTES);
        write(&r.join("repo/CLAUDE.md"), &big);
        // Four more full files overflow the total: the fourth is cut, the rest left out.
        for name in ["AGENTS.md", "CLAUDE.local.md"] {
            write(&r.join("repo").join(name), &"x".repeat(MAX_FILE_BYTES * 2));
        }
        write(&r.join("repo/a/CLAUDE.md"), &"y".repeat(MAX_FILE_BYTES));
        write(&r.join("repo/a/b/CLAUDE.md"), &"z".repeat(MAX_FILE_BYTES));
        write(&r.join("repo/a/b/CLAUDE.local.md"), "never");
        let loaded = load(&sources);
        let used: usize = loaded.files.iter().map(|f| f.text.len()).sum();
        assert!(used <= MAX_TOTAL_BYTES + 4 * 100, "{used}");
        assert!(loaded.files[0].cut && loaded.files[1].cut);
        assert!(loaded.files[1].text.ends_with("first 40 kB are used]"));
        assert_eq!(loaded.files[0].size, MAX_FILE_BYTES * 2);
        let last = loaded.files.last().unwrap();
        assert!(
            last.text.contains("fit in the 160 kB total"),
            "{}",
            last.path.display()
        );
        assert!(!loaded.render().unwrap().contains("never"));
        assert!(
            loaded
                .warnings
                .iter()
                .any(|w| w.contains("CLAUDE.local.md: not used"))
        );
        assert!(
            loaded
                .warnings
                .iter()
                .any(|w| w.contains("only its first 40 kB"))
        );
    }

    #[test]
    fn nested_dirs_below_cwd_only() {
        let cwd = Path::new("/p/repo");
        assert_eq!(
            nested_dirs(cwd, Path::new("/p/repo/src/parser/lex.rs")),
            [
                PathBuf::from("/p/repo/src"),
                PathBuf::from("/p/repo/src/parser")
            ]
        );
        assert!(nested_dirs(cwd, Path::new("/p/repo/main.rs")).is_empty());
        assert!(nested_dirs(cwd, Path::new("/p/other/x.rs")).is_empty());
        assert!(nested_dirs(cwd, Path::new("/p/repo/../other/x.rs")).is_empty());
    }
}
