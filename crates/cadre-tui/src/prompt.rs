//! The multi-line prompt: a text buffer and a cursor, edited by keys and
//! pastes. A large paste is kept as one block: the text shows a placeholder
//! (`[Pasted text #1 +120 lines]`) that edits as one character would, and
//! what is sent has the pasted text in its place. An attached image is a
//! chip (`[Image #1]`) that edits the same way and stays in the text sent;
//! the image file goes beside it. Laid out by the view; nothing here knows
//! about the terminal.

/// A paste with more lines than this is kept as a block.
pub const PASTE_BLOCK_LINES: usize = 10;
/// A paste with more characters than this is kept as a block (one long line
/// would otherwise fill the prompt's rows).
pub const PASTE_BLOCK_CHARS: usize = 1000;

/// The prompt's text and cursor (a byte offset on a char boundary, never
/// inside a paste's placeholder).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Prompt {
    text: String,
    cursor: usize,
    /// Pastes kept as blocks whose placeholders are in the text.
    pastes: Vec<PastedBlock>,
    /// Blocks pasted so far (their numbers go on across messages).
    pasted: usize,
    /// Images attached so far (their numbers go on across messages).
    images: usize,
}

/// A large paste or an image chip: its placeholder in the text and what it
/// stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PastedBlock {
    placeholder: String,
    text: String,
    /// For an image chip: the image file's path.
    image: Option<String>,
}

/// Text made safe for the prompt: line ends as `\n`, control characters
/// other than newlines and tabs dropped (a paste of binary noise stays
/// printable), and bidirectional overrides dropped (they make text read
/// differently than it is).
fn clean(s: &str) -> String {
    s.replace("\r\n", "\n")
        .chars()
        .map(|c| if c == '\r' { '\n' } else { c })
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .filter(|c| !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect()
}

impl Prompt {
    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte offset.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// True when nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Empties it, returning what it held (pasted blocks in full).
    pub fn take(&mut self) -> String {
        let full = self.expanded();
        self.cursor = 0;
        self.text.clear();
        self.pastes.clear();
        full
    }

    /// The text with each paste's placeholder replaced by what was pasted:
    /// what is sent.
    pub fn expanded(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut rest = self.text.as_str();
        loop {
            let next = self
                .pastes
                .iter()
                .filter_map(|p| rest.find(&p.placeholder).map(|at| (at, p)))
                .min_by_key(|(at, _)| *at);
            let Some((at, paste)) = next else {
                out.push_str(rest);
                return out;
            };
            out.push_str(&rest[..at]);
            out.push_str(&paste.text);
            rest = &rest[at + paste.placeholder.len()..];
        }
    }

    /// Inserts text at the cursor, made safe (see [`clean`]).
    pub fn insert(&mut self, s: &str) {
        let clean = clean(s);
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Replaces the text from `start` to the cursor with `with` (a completion).
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        if start <= self.cursor && self.text.is_char_boundary(start) {
            self.remove(start..self.cursor);
            self.insert(with);
        }
    }

    /// Inserts pasted text: a large paste as one block behind a placeholder,
    /// anything else as if typed.
    pub fn paste(&mut self, s: &str) {
        let clean = clean(s);
        let lines = clean.lines().count();
        let chars = clean.chars().count();
        if lines <= PASTE_BLOCK_LINES && chars <= PASTE_BLOCK_CHARS {
            self.text.insert_str(self.cursor, &clean);
            self.cursor += clean.len();
            return;
        }
        self.pasted += 1;
        let size = if lines > 1 {
            format!("+{lines} lines")
        } else {
            format!("{chars} chars")
        };
        let placeholder = format!("[Pasted text #{} {size}]", self.pasted);
        self.text.insert_str(self.cursor, &placeholder);
        self.cursor += placeholder.len();
        self.pastes.push(PastedBlock {
            placeholder,
            text: clean,
            image: None,
        });
    }

    /// Inserts an `[Image #N]` chip at the cursor for the image file at
    /// `path`; returns the chip.
    pub fn attach_image(&mut self, path: String) -> String {
        self.images += 1;
        let placeholder = format!("[Image #{}]", self.images);
        self.text.insert_str(self.cursor, &placeholder);
        self.cursor += placeholder.len();
        self.pastes.push(PastedBlock {
            placeholder: placeholder.clone(),
            text: placeholder.clone(),
            image: Some(path),
        });
        placeholder
    }

    /// The image files of the chips in the text, in the order they appear.
    pub fn image_paths(&self) -> Vec<String> {
        let mut found: Vec<(usize, &String)> = self
            .pastes
            .iter()
            .filter_map(|p| {
                let path = p.image.as_ref()?;
                self.text.find(&p.placeholder).map(|at| (at, path))
            })
            .collect();
        found.sort_by_key(|(at, _)| *at);
        found.into_iter().map(|(_, p)| p.clone()).collect()
    }

    /// The byte range of the placeholder that ends at `at`, if one does.
    fn block_ending_at(&self, at: usize) -> Option<std::ops::Range<usize>> {
        let before = &self.text[..at];
        self.pastes
            .iter()
            .find(|p| before.ends_with(&p.placeholder))
            .map(|p| at - p.placeholder.len()..at)
    }

    /// The byte range of the placeholder that starts at `at`, if one does.
    fn block_starting_at(&self, at: usize) -> Option<std::ops::Range<usize>> {
        let after = &self.text[at..];
        self.pastes
            .iter()
            .find(|p| after.starts_with(&p.placeholder))
            .map(|p| at..at + p.placeholder.len())
    }

    /// Removes `range` from the text (the cursor must be at or after its
    /// end) and forgets the blocks whose placeholders went with it.
    fn remove(&mut self, range: std::ops::Range<usize>) {
        self.cursor -= range.len().min(self.cursor - range.start);
        self.text.replace_range(range, "");
        let text = &self.text;
        self.pastes.retain(|p| text.contains(&p.placeholder));
    }

    /// Moves the cursor out of a placeholder it landed inside (after ↑/↓).
    fn snap(&mut self) {
        for p in &self.pastes {
            let mut from = 0;
            while let Some(at) = self.text[from..].find(&p.placeholder) {
                let start = from + at;
                let end = start + p.placeholder.len();
                if start < self.cursor && self.cursor < end {
                    self.cursor = end;
                    return;
                }
                from = end;
            }
        }
    }

    /// Deletes the character (or pasted block) before the cursor.
    pub fn backspace(&mut self) {
        if let Some(block) = self.block_ending_at(self.cursor) {
            self.remove(block);
        } else if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.remove(self.cursor - c.len_utf8()..self.cursor);
        }
    }

    /// Deletes the character (or pasted block) under the cursor.
    pub fn delete(&mut self) {
        let range = match self.block_starting_at(self.cursor) {
            Some(block) => block,
            None => match self.text[self.cursor..].chars().next() {
                Some(c) => self.cursor..self.cursor + c.len_utf8(),
                None => return,
            },
        };
        self.text.replace_range(range, "");
        let text = &self.text;
        self.pastes.retain(|p| text.contains(&p.placeholder));
    }

    /// Moves one character (or pasted block) left.
    pub fn left(&mut self) {
        if let Some(block) = self.block_ending_at(self.cursor) {
            self.cursor = block.start;
        } else if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves one character (or pasted block) right.
    pub fn right(&mut self) {
        if let Some(block) = self.block_starting_at(self.cursor) {
            self.cursor = block.end;
        } else if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Moves to the start of the line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Moves to the end of the line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Deletes from the start of the line to the cursor.
    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        self.remove(start..self.cursor);
    }

    /// Deletes the word (or pasted block) before the cursor, and the spaces after it.
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = match self.block_ending_at(trimmed.len()) {
            Some(block) => block.start,
            None => trimmed
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |i| i + 1),
        };
        self.remove(start..self.cursor);
    }

    /// Moves to the same column of the line above; false on the first line.
    pub fn up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return false;
        }
        let column = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, start - 1, column);
        self.snap();
        true
    }

    /// Moves to the same column of the line below; false on the last line.
    pub fn down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.text.len() {
            return false;
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = advance(&self.text, next_start, next_end, column);
        self.snap();
        true
    }
}

/// The offset `column` characters after `from`, but not past `limit`.
fn advance(text: &str, from: usize, limit: usize, column: usize) -> usize {
    text[from..limit]
        .char_indices()
        .nth(column)
        .map_or(limit, |(i, _)| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_by_characters_and_lines() {
        let mut p = Prompt::default();
        p.insert("héllo");
        p.left();
        p.backspace();
        assert_eq!(p.text(), "hélo");
        p.end();
        p.insert("\nsecond line");
        assert!(p.up());
        assert_eq!(&p.text()[p.cursor()..], "\nsecond line");
        assert!(p.down());
        assert!(!p.down());
        assert_eq!(&p.text()[p.cursor()..], "nd line");
        p.end();
        p.delete_word();
        assert_eq!(p.text(), "hélo\nsecond ");
        p.kill_to_line_start();
        assert_eq!(p.text(), "hélo\n");
        assert_eq!(p.take(), "hélo\n");
        assert!(p.is_empty());
    }

    #[test]
    fn pasted_control_characters_are_dropped() {
        let mut p = Prompt::default();
        p.insert("a\u{1b}[31mb\r\nc\u{0}\td");
        assert_eq!(p.text(), "a[31mb\nc\td");
    }

    #[test]
    fn a_large_paste_is_one_block_that_edits_whole_and_sends_in_full() {
        let mut p = Prompt::default();
        p.insert("see ");
        let pasted: String = (1..=120).map(|i| format!("line {i}\r\n")).collect();
        p.paste(&pasted);
        p.insert(" thanks");
        assert_eq!(p.text(), "see [Pasted text #1 +120 lines] thanks");
        let full = p.expanded();
        assert!(full.starts_with("see line 1\nline 2\n"), "{full}");
        assert!(full.ends_with("line 120\n thanks"), "{full}");
        // ← and → step over it; Delete and Backspace take it whole.
        for _ in 0..7 {
            p.left();
        }
        p.left();
        assert_eq!(p.cursor(), 4);
        p.right();
        assert_eq!(&p.text()[p.cursor()..], " thanks");
        p.backspace();
        assert_eq!(p.text(), "see  thanks");
        assert_eq!(p.expanded(), "see  thanks");
        // The next block is #2; a short paste is plain text; one long line is counted in chars.
        p.paste("short\npaste");
        p.paste(&"x".repeat(1500));
        assert!(
            p.text().contains("short\npaste[Pasted text #2 1500 chars]"),
            "{}",
            p.text()
        );
        p.delete_word();
        assert!(
            !p.text().contains("Pasted"),
            "Ctrl+W takes the block whole: {}",
            p.text()
        );
        p.paste(&"y".repeat(1001));
        let full = p.take();
        assert!(full.contains(&"y".repeat(1001)), "take gives the full text");
        assert!(full.ends_with(" thanks") && p.is_empty());
        p.paste(&"w".repeat(2000));
        p.kill_to_line_start();
        assert!(
            p.is_empty() && p.expanded().is_empty(),
            "Ctrl+U takes it whole"
        );
    }

    #[test]
    fn up_and_down_never_leave_the_cursor_inside_a_block() {
        let mut p = Prompt::default();
        p.insert("0123456789\n");
        p.paste(&"z\n".repeat(20));
        p.insert("\nabc");
        p.up();
        assert_eq!(
            p.text()[..p.cursor()].lines().last(),
            Some("[Pasted text #1 +20 lines]")
        );
        p.insert("!");
        assert!(p.expanded().contains("z\n!\nabc"), "{}", p.expanded());
    }
}
