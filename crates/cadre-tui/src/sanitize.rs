//! Text from the model or from tools made safe to draw: escape sequences
//! never reach the terminal, control characters become visible, tabs become
//! spaces, and a line too long to be useful is cut with a marker. The line
//! front end and `exec` use [`visible_controls`], the same rule for a
//! terminal that scrolls: text as it is, each control shown in caret notation.

use std::borrow::Cow;

/// Characters of one logical line kept for display; a 100 kB line would
/// otherwise wrap into thousands of rows and push everything else away.
pub const MAX_LINE_CHARS: usize = 2000;

/// Spaces a tab stands for.
const TAB: &str = "    ";

/// One line of text made safe to draw (no newline inside: use [`clean_lines`]).
pub fn clean_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_LINE_CHARS * 4));
    let mut kept = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if kept >= MAX_LINE_CHARS {
            let rest = 1 + chars.count();
            out.push_str(&format!(" … [{rest} more characters]"));
            break;
        }
        match c {
            '\u{1b}' => {
                skip_escape(&mut chars);
                out.push('␛');
                kept += 1;
            }
            '\t' => {
                out.push_str(TAB);
                kept += TAB.len();
            }
            // C0, DEL and C1 controls (including a lone carriage return):
            // shown as a replacement, never written raw.
            c if c.is_control() => {
                out.push('�');
                kept += 1;
            }
            c if is_bidi_override(c) => {
                out.push('�');
                kept += 1;
            }
            c => {
                out.push(c);
                kept += 1;
            }
        }
    }
    out
}

/// True for a bidirectional override or isolate: it can make text read
/// differently than it is.
pub fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// True for a character [`visible_controls`] shows instead of writing: every
/// C0, DEL and C1 control but newline and tab, and the bidirectional overrides.
pub fn shown_not_written(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_override(c)
}

/// Text for a terminal that scrolls (the line front end, `exec` writing to a
/// terminal): unchanged but that each control character other than newline
/// and tab is shown visibly, so no escape sequence (a window title, the
/// clipboard, a hyperlink, a clear screen) is ever obeyed: ESC as `^[`, a
/// carriage return as `^M`, DEL as `^?`, C1 controls and bidirectional
/// overrides as `<U+009B>`. Each character is judged alone, so a stream may
/// be cleaned piece by piece, however it was split.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(shown_not_written) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !shown_not_written(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            // C0: caret notation, as `cat -v` shows it.
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Text split into safe lines (`\r\n` and `\n` end a line).
pub fn clean_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|l| clean_line(l.strip_suffix('\r').unwrap_or(l)))
        .collect()
}

/// Skips the rest of an escape sequence whose ESC was just read: CSI
/// (`ESC [ … final`), OSC/DCS/APC/PM/SOS (up to BEL or `ESC \`), or one
/// character for any other.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']' | 'P' | '_' | '^' | 'X') => {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                    chars.next();
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_pass_through() {
        assert_eq!(clean_line("a\u{1b}[31mred\u{1b}[0m b"), "a␛red␛ b");
        assert_eq!(
            clean_line("t\u{1b}]0;title\u{7}x\u{1b}]8;;http://x\u{1b}\\y"),
            "t␛x␛y"
        );
        assert_eq!(clean_line("\u{1b}c reset"), "␛ reset");
        assert!(!clean_line("\u{1b}[2J\u{1b}[H\u{9b}31m").contains('\u{1b}'));
        assert!(!clean_line("\u{9b}31m").contains('\u{9b}'));
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(clean_line("a\rb\u{8}c\u{7}\u{0}"), "a�b�c��");
        assert_eq!(clean_line("\tx"), "    x");
        assert_eq!(clean_line("x\u{202e}y"), "x�y");
        assert_eq!(clean_lines("one\r\ntwo\nthree"), ["one", "two", "three"]);
    }

    #[test]
    fn a_scrolling_terminal_sees_controls_in_caret_notation() {
        assert_eq!(
            visible_controls("t\u{1b}]0;title\u{7}x\u{1b}]52;c;aGk=\u{1b}\\"),
            "t^[]0;title^Gx^[]52;c;aGk=^[\\"
        );
        assert_eq!(visible_controls("a\rb\u{7f}\u{0}"), "a^Mb^?^@");
        assert_eq!(
            visible_controls("\u{9b}2J x\u{202e}y"),
            "<U+009B>2J x<U+202E>y"
        );
        // Newlines, tabs and everything printable stay as they are.
        let plain = "one\n\ttwo ✓ ünï\n";
        assert!(matches!(visible_controls(plain), Cow::Borrowed(p) if p == plain));
    }

    #[test]
    fn a_huge_line_is_cut_with_a_marker() {
        let line = "x".repeat(100_000);
        let shown = clean_line(&line);
        assert!(shown.starts_with(&"x".repeat(MAX_LINE_CHARS)));
        assert!(shown.ends_with(&format!(
            " … [{} more characters]",
            100_000 - MAX_LINE_CHARS
        )));
    }
}
