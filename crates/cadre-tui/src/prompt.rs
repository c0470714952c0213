//! The multi-line prompt: a text buffer and a cursor, edited by keys and
//! pastes. Laid out by the view; nothing here knows about the terminal.

/// The prompt's text and cursor (a byte offset on a char boundary).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Prompt {
    text: String,
    cursor: usize,
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

    /// Empties it, returning what it held.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Inserts text at the cursor. Control characters other than newlines
    /// and tabs are dropped (a paste of binary noise stays printable).
    pub fn insert(&mut self, s: &str) {
        let clean: String = s
            .replace("\r\n", "\n")
            .chars()
            .map(|c| if c == '\r' { '\n' } else { c })
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Moves one character left.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves one character right.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
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
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes the word before the cursor (and the spaces after it).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
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
}
