//! Completion at the prompt: `@path` offers the project's files and
//! directories, `/` at the start offers the slash commands. This decides
//! what the word at the cursor asks for, which candidates match and in what
//! order, and draws the popup; the app owns the popup's state and keys, the
//! loop walks the project (off the UI thread) with [`walk`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_width::UnicodeWidthStr as _;

use crate::app::App;
use crate::commands::COMMAND_NAMES;
use crate::sanitize::clean_line;
use crate::theme::Theme;

/// Entries a walk of the project keeps at most: enough for any project a
/// person types paths of, and a walk of a huge tree stays well under a second.
pub const MAX_WALK_ENTRIES: usize = 20_000;

/// Candidates the popup offers at most (more would hide the transcript).
pub const MAX_SHOWN: usize = 8;

/// Candidates kept for ↑/↓ beyond those shown.
const MAX_CANDIDATES: usize = 50;

/// How long a walk of the project is used before an `@` walks it again (in
/// the background; the old list serves meanwhile): files made a moment ago
/// show up, and typing `@` in a burst walks once.
pub const FILES_FRESH: Duration = Duration::from_secs(10);

/// The completion state the app keeps: the popup, and the project's files
/// from the last walk.
#[derive(Debug, Default)]
pub struct Completer {
    /// The popup, while one is open.
    pub popup: Option<Popup>,
    /// The start of the word whose popup Esc closed: it stays closed until another word.
    dismissed: Option<usize>,
    /// The project's paths from the last walk.
    files: FileList,
    /// When the last walk ended.
    files_at: Option<Instant>,
    /// A walk should start (the loop takes it with [`App::take_walk`]).
    walk_wanted: bool,
    /// A walk runs now.
    walking: bool,
}

impl App {
    /// The directory to walk when the `@` popup needs the project's files
    /// (at most one walk at a time); the loop walks it off the UI thread and
    /// hands the result to [`App::files_walked`].
    pub fn take_walk(&mut self) -> Option<PathBuf> {
        let c = &mut self.completion;
        if !c.walk_wanted || c.walking || self.info.root.as_os_str().is_empty() {
            return None;
        }
        c.walk_wanted = false;
        c.walking = true;
        Some(self.info.root.clone())
    }

    /// The project's paths, from a walk that ended at `now`.
    pub fn files_walked(&mut self, files: impl Into<FileList>, now: Instant) {
        self.completion.files = files.into();
        self.completion.files_at = Some(now);
        self.completion.walking = false;
        // Asked for again while it ran: this walk answers that too.
        self.completion.walk_wanted = false;
        self.refresh_completion(now);
    }

    /// Opens, updates or closes the popup after the prompt changed.
    pub fn refresh_completion(&mut self, now: Instant) {
        let Some(token) = token_at(self.prompt.text(), self.prompt.cursor()) else {
            self.completion.popup = None;
            self.completion.dismissed = None;
            return;
        };
        if self.completion.dismissed == Some(token.start) {
            self.completion.popup = None;
            return;
        }
        self.completion.dismissed = None;
        let candidates = match token.kind {
            Kind::Command => command_matches(&token.query, &self.commands),
            Kind::File => {
                let c = &mut self.completion;
                if !c.walking
                    && c.files_at
                        .is_none_or(|t| now.saturating_duration_since(t) > FILES_FRESH)
                {
                    c.walk_wanted = true;
                }
                c.files.matches(&token.query, MAX_CANDIDATES)
            }
        };
        // The same candidates keep their selection (a walk that found nothing new).
        let selected = match &self.completion.popup {
            Some(p) if p.token == token && p.candidates == candidates => p.selected,
            _ => 0,
        };
        self.completion.popup = (!candidates.is_empty()).then_some(Popup {
            token,
            candidates,
            selected,
        });
    }

    /// A key while the popup is open; true when it took the key.
    pub fn completion_key(&mut self, key: KeyEvent, now: Instant) -> bool {
        let Some(popup) = &mut self.completion.popup else {
            return false;
        };
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Up => popup.select(-1),
            KeyCode::Down => popup.select(1),
            KeyCode::Esc => {
                self.completion.dismissed = Some(popup.token.start);
                self.completion.popup = None;
            }
            KeyCode::Tab => self.accept_completion(now),
            // A command typed out in full runs, as without the popup.
            KeyCode::Enter
                if plain
                    && popup.token.kind == Kind::Command
                    && popup
                        .candidates
                        .iter()
                        .any(|c| c.text == self.prompt.text().trim_end()) =>
            {
                return false;
            }
            KeyCode::Enter if plain => self.accept_completion(now),
            _ => return false,
        }
        true
    }

    /// Replaces the word with the selected candidate: a file or command is
    /// followed by a space (the word is done), a directory is not (its
    /// entries show next).
    fn accept_completion(&mut self, now: Instant) {
        let Some(popup) = self.completion.popup.take() else {
            return;
        };
        let Some(chosen) = popup.chosen() else {
            return;
        };
        let mut text = match popup.token.kind {
            Kind::File => format!("@{}", chosen.text),
            Kind::Command => chosen.text.clone(),
        };
        if !text.ends_with('/') {
            text.push(' ');
        }
        self.prompt.replace_before_cursor(popup.token.start, &text);
        self.refresh_completion(now);
    }
}

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A path after `@`.
    File,
    /// A slash command at the start of the prompt.
    Command,
}

/// The word at the cursor that completion would replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it completes.
    pub kind: Kind,
    /// Byte offset of its `@` or `/`.
    pub start: usize,
    /// What follows the `@` or `/` up to the cursor.
    pub query: String,
}

/// One candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The text it puts in the prompt (`src/main.rs`, `src/`, `/help`).
    pub text: String,
    /// A few words about it (commands only).
    pub detail: String,
}

/// The open popup: its word, candidates and the one selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    /// The word it completes.
    pub token: Token,
    /// Candidates, best first.
    pub candidates: Vec<Candidate>,
    /// The selected candidate's index.
    pub selected: usize,
}

impl Popup {
    /// Moves the selection by `step`, wrapping around.
    pub fn select(&mut self, step: isize) {
        let n = self.candidates.len() as isize;
        if n > 0 {
            self.selected = (self.selected as isize + step).rem_euclid(n) as usize;
        }
    }

    /// The selected candidate.
    pub fn chosen(&self) -> Option<&Candidate> {
        self.candidates.get(self.selected)
    }
}

/// The word at `cursor` in `text` when it asks for completion: `@…` anywhere
/// (after a space or at the start), `/…` as the prompt's first word.
pub fn token_at(text: &str, cursor: usize) -> Option<Token> {
    let before = text.get(..cursor)?;
    let start = before.rfind(|c: char| c.is_whitespace()).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    // Only at the word's end: completing in the middle would cut the rest off.
    let after = &text[cursor..];
    if after.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    if let Some(query) = word.strip_prefix('@') {
        return Some(Token {
            kind: Kind::File,
            start,
            query: query.to_string(),
        });
    }
    if start == 0
        && !word.starts_with("//")
        && let Some(query) = word.strip_prefix('/')
    {
        return Some(Token {
            kind: Kind::Command,
            start,
            query: query.to_string(),
        });
    }
    None
}

/// The commands whose name matches `query` (prefix matches first), with
/// their descriptions: the front end's own, then the session's skills and
/// commands (with their argument hints).
pub fn command_matches(
    query: &str,
    session: &[cadre_core::protocol::CommandEntry],
) -> Vec<Candidate> {
    let query = query.to_lowercase();
    let own = COMMAND_NAMES
        .iter()
        .map(|(name, detail)| (name.to_string(), detail.to_string()));
    let theirs = session.iter().map(|c| {
        let detail: String = c.description.chars().take(60).collect();
        let detail = match &c.argument_hint {
            Some(hint) => format!("{hint} {detail}"),
            None => detail,
        };
        (format!("/{}", c.name), format!("{detail} ({})", c.label))
    });
    let mut ranked: Vec<(u8, usize, String, String)> = own
        .chain(theirs)
        .enumerate()
        .filter_map(|(i, (name, detail))| {
            let bare = name.trim_start_matches('/').to_lowercase();
            let rank = if bare.starts_with(&query) {
                0
            } else if bare.contains(&query) {
                1
            } else {
                return None;
            };
            Some((rank, i, name, detail))
        })
        .collect();
    ranked.sort_by(|a, b| (a.0, &a.2).cmp(&(b.0, &b.2)).then(a.1.cmp(&b.1)));
    ranked.dedup_by(|a, b| a.2 == b.2);
    ranked
        .into_iter()
        .map(|(_, _, name, detail)| Candidate { text: name, detail })
        .collect()
}

/// The project's paths with what matching needs worked out once per walk
/// (matching runs on every key, over up to [`MAX_WALK_ENTRIES`] paths).
#[derive(Debug, Default)]
pub struct FileList {
    entries: Vec<FileEntry>,
    /// The first [`MAX_CANDIDATES`] entries in the order an empty query ranks them.
    top: Vec<usize>,
    /// The last query (lower case) and the indices of every entry it matched.
    last: std::sync::Mutex<Option<(String, Vec<usize>)>>,
}

#[derive(Debug, Clone)]
struct FileEntry {
    path: String,
    /// `path` in lower case.
    lower: String,
    /// Where its last component starts in `lower` (a directory's trailing `/` excluded).
    name_start: usize,
    /// How many directories up it is from the root.
    depth: usize,
}

impl From<Vec<String>> for FileList {
    fn from(paths: Vec<String>) -> FileList {
        let entries = paths
            .into_iter()
            .map(|path| {
                let lower = path.to_lowercase();
                let trimmed = lower.trim_end_matches('/');
                let name_start = trimmed.rfind('/').map_or(0, |i| i + 1);
                let depth = trimmed.matches('/').count();
                FileEntry {
                    path,
                    lower,
                    name_start,
                    depth,
                }
            })
            .collect::<Vec<FileEntry>>();
        let mut top: Vec<usize> = (0..entries.len()).collect();
        let order = |a: &usize, b: &usize| {
            let (a, b) = (&entries[*a], &entries[*b]);
            (a.depth, a.path.len(), &a.path).cmp(&(b.depth, b.path.len(), &b.path))
        };
        if top.len() > MAX_CANDIDATES {
            top.select_nth_unstable_by(MAX_CANDIDATES - 1, order);
            top.truncate(MAX_CANDIDATES);
        }
        top.sort_by(order);
        FileList {
            entries,
            top,
            last: std::sync::Mutex::default(),
        }
    }
}

impl FileList {
    /// How many paths it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The project's paths that match `query`, best first, at most `limit`.
/// Case does not matter. Ranked: the name starts with the query, then the
/// name contains it, then the whole path contains it, then the query's
/// characters appear in order in the path; within a rank shallower and
/// shorter paths first. An empty query lists the top of the project.
pub fn file_matches(files: &FileList, query: &str, limit: usize) -> Vec<Candidate> {
    files.matches(query, limit)
}

impl FileList {
    /// [`file_matches`], narrowing the last query's hits when this query
    /// extends it (typing on): whatever matches `ab` in any rank matched `a`.
    pub fn matches(&self, query: &str, limit: usize) -> Vec<Candidate> {
        let query = query.to_lowercase();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let (found, hits) = match last.take() {
            Some((q, hits)) if query.starts_with(q.as_str()) => {
                rank(&self.entries, &hits, &query, limit)
            }
            // Everything matches nothing typed; the best are the shallowest, in `top`'s order.
            _ if query.is_empty() => (
                self.top
                    .iter()
                    .take(limit)
                    .filter_map(|&i| self.entries.get(i))
                    .map(|e| Candidate {
                        text: e.path.clone(),
                        detail: String::new(),
                    })
                    .collect(),
                (0..self.entries.len()).collect(),
            ),
            _ => {
                let all: Vec<usize> = (0..self.entries.len()).collect();
                rank(&self.entries, &all, &query, limit)
            }
        };
        *last = Some((query, hits));
        found
    }
}

/// The best `limit` of `pool`'s entries for `query` (lower case), and every hit.
fn rank(
    entries: &[FileEntry],
    pool: &[usize],
    query: &str,
    limit: usize,
) -> (Vec<Candidate>, Vec<usize>) {
    let mut hits = Vec::new();
    let mut ranked: Vec<(u8, usize, usize, &str)> = pool
        .iter()
        .filter_map(|&i| {
            let e = entries.get(i)?;
            // A directory typed out in full offers what is in it, not itself.
            if query.ends_with('/') && e.lower == *query {
                return None;
            }
            let name = e.lower[e.name_start..].trim_end_matches('/');
            let rank = if name.starts_with(query) {
                0
            } else if name.contains(query) {
                1
            } else if e.lower.contains(query) {
                2
            } else if in_order(&e.lower, query) {
                3
            } else {
                return None;
            };
            hits.push(i);
            Some((rank, e.depth, e.path.len(), e.path.as_str()))
        })
        .collect();
    // Only the best `limit` need an order: a short query matches nearly everything.
    if limit == 0 {
        return (Vec::new(), hits);
    }
    if ranked.len() > limit {
        ranked.select_nth_unstable(limit - 1);
        ranked.truncate(limit);
    }
    ranked.sort_unstable();
    let found = ranked
        .into_iter()
        .map(|(.., path)| Candidate {
            text: path.to_string(),
            detail: String::new(),
        })
        .collect();
    (found, hits)
}

/// True when the characters of `needle` appear in `hay` in order.
fn in_order(hay: &str, needle: &str) -> bool {
    // By bytes: UTF-8 keeps a character's bytes together, and it is the
    // loop that runs over every path the other ranks missed.
    let mut at = 0usize;
    let hay = hay.as_bytes();
    for &n in needle.as_bytes() {
        match memchr_from(hay, n, at) {
            Some(i) => at = i + 1,
            None => return false,
        }
    }
    true
}

/// The index of `byte` in `hay` at or after `from`.
fn memchr_from(hay: &[u8], byte: u8, from: usize) -> Option<usize> {
    hay.get(from..)?
        .iter()
        .position(|&b| b == byte)
        .map(|i| from + i)
}

/// The files and directories under `root`, relative, `/`-separated,
/// directories ending in `/`, at most `cap`. `.gitignore`d (and other
/// ignore-file) entries and `.git` are left out; other hidden files stay
/// (`.github/` is something people mention). Unreadable entries are skipped.
pub fn walk(root: &Path, cap: usize) -> Vec<String> {
    let mut out = Vec::new();
    if root.as_os_str().is_empty() {
        return out;
    }
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        // A project that is not (yet) a git repository still means its .gitignore.
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if out.len() >= cap {
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let Some(rel) = rel.to_str() else {
            // A name that is not UTF-8 cannot be typed after `@` anyway.
            continue;
        };
        let mut path = rel.replace(std::path::MAIN_SEPARATOR, "/");
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            path.push('/');
        }
        out.push(path);
    }
    out
}

/// Draws the popup just above the prompt (whose top row is `prompt_y`),
/// within `over` (the transcript and panel's area).
pub fn render_popup(frame: &mut Frame<'_>, popup: &Popup, over: Rect, theme: &Theme) {
    if popup.candidates.is_empty() || over.height < 3 {
        return;
    }
    let shown = popup.candidates.len().min(MAX_SHOWN);
    // Keep the selection in view when it is past the first rows.
    let first = (popup.selected + 1).saturating_sub(shown);
    // Details line up in a column after the longest name shown.
    let name_width = popup
        .candidates
        .iter()
        .skip(first)
        .take(shown)
        .map(|c| clean_line(&c.text).width())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line<'static>> = popup
        .candidates
        .iter()
        .enumerate()
        .skip(first)
        .take(shown)
        .map(|(i, c)| {
            let mark = if i == popup.selected { "› " } else { "  " };
            let style = if i == popup.selected {
                theme.bold()
            } else {
                theme.user()
            };
            let mut spans = vec![
                Span::styled(mark, theme.user()),
                Span::styled(clean_line(&c.text), style),
            ];
            if !c.detail.is_empty() {
                let pad = name_width.saturating_sub(clean_line(&c.text).width());
                spans.push(Span::styled(
                    format!("{}  {}", " ".repeat(pad), clean_line(&c.detail)),
                    theme.dim(),
                ));
            }
            Line::from(spans)
        })
        .collect();
    let more = popup.candidates.len().saturating_sub(shown);
    let title = match (popup.token.kind, more) {
        (Kind::File, 0) => " files · Tab accepts · Esc closes ".to_string(),
        (Kind::File, n) => format!(" files · {n} more · Tab accepts · Esc closes "),
        (Kind::Command, _) => " commands · Tab completes · Esc closes ".to_string(),
    };
    // The whole width: transcript text beside the popup would read as part of it.
    let height = (shown as u16 + 1).min(over.height);
    let area = Rect::new(over.x, over.bottom() - height, over.width, height);
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(theme.border())
        .title(Span::styled(title, theme.dim()));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> FileList {
        FileList::from(list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn texts(candidates: &[Candidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn the_word_at_the_cursor_decides_what_is_completed() {
        let t = token_at("look at @src/ma", 15).unwrap();
        assert_eq!(
            (t.kind, t.start, t.query.as_str()),
            (Kind::File, 8, "src/ma")
        );
        let t = token_at("/he", 3).unwrap();
        assert_eq!(
            (t.kind, t.start, t.query.as_str()),
            (Kind::Command, 0, "he")
        );
        assert_eq!(token_at("@", 1).unwrap().query, "");
        // A command only as the first word; `//` sends a message.
        assert_eq!(token_at("x /he", 5), None);
        assert_eq!(token_at("//he", 4), None);
        assert_eq!(token_at("/help me", 8), None);
        // An e-mail address or a word without `@` first is no path.
        assert_eq!(token_at("me@example", 10), None);
        assert_eq!(token_at("plain", 5), None);
        // Not in the middle of a word.
        assert_eq!(token_at("@src/main.rs", 4), None);
        // After a multi-byte space-like character.
        let t = token_at("é\u{3000}@a", "é\u{3000}@a".len()).unwrap();
        assert_eq!(t.query, "a");
    }

    #[test]
    fn names_that_start_with_the_query_come_first_then_names_then_paths() {
        let entries = paths(&[
            "README.md",
            "src/",
            "src/main.rs",
            "src/domain.rs",
            "crates/x/src/main.rs",
            "docs/maintenance.md",
            "smart.txt",
        ]);
        assert_eq!(
            texts(&file_matches(&entries, "ma", 10)),
            [
                "src/main.rs",
                "docs/maintenance.md",
                "crates/x/src/main.rs",
                "smart.txt",
                "src/domain.rs"
            ]
        );
        assert_eq!(
            texts(&file_matches(&entries, "src/ma", 10)),
            ["src/main.rs", "crates/x/src/main.rs", "src/domain.rs"]
        );
        // Case does not matter; characters in order match last.
        assert_eq!(texts(&file_matches(&entries, "RDME", 10)), ["README.md"]);
        assert_eq!(texts(&file_matches(&entries, "", 2)), ["src/", "README.md"]);
        assert!(file_matches(&entries, "zzz", 10).is_empty());
        // Typing on narrows the last hits; a shorter or other query looks at everything again.
        assert_eq!(texts(&entries.matches("m", 10)).len(), 6);
        assert_eq!(texts(&entries.matches("ma", 1)), ["src/main.rs"]);
        assert_eq!(
            texts(&entries.matches("mai", 10)),
            [
                "src/main.rs",
                "docs/maintenance.md",
                "crates/x/src/main.rs",
                "src/domain.rs"
            ]
        );
        assert_eq!(
            texts(&entries.matches("re", 10)),
            ["README.md", "crates/x/src/main.rs"]
        );
        assert_eq!(texts(&entries.matches("m", 10)).len(), 6);
    }

    #[test]
    fn commands_match_by_prefix_then_inside_the_name() {
        let found = command_matches("re", &[]);
        assert_eq!(texts(&found), ["/resume", "/rewind"]);
        assert_eq!(found[0].detail, "continue a past session");
        assert_eq!(texts(&command_matches("it", &[])), ["/exit", "/quit"]);
        assert_eq!(command_matches("", &[]).len(), COMMAND_NAMES.len());
        assert!(command_matches("nothing", &[]).is_empty());
    }

    #[test]
    fn the_walk_leaves_out_ignored_files_and_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("src/main.rs", "fn main() {}"),
            (".gitignore", "secret.txt\ntarget/\n"),
            ("secret.txt", "x"),
            ("target/debug/out", "x"),
            (".git/config", "x"),
            (".github/ci.yml", "x"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let mut found = walk(root, MAX_WALK_ENTRIES);
        found.sort();
        assert_eq!(
            found,
            [
                ".github/",
                ".github/ci.yml",
                ".gitignore",
                "src/",
                "src/main.rs"
            ]
        );
        assert_eq!(walk(root, 2).len(), 2, "the cap holds");
        assert!(walk(Path::new(""), 10).is_empty(), "no root, no walk");
    }
}
