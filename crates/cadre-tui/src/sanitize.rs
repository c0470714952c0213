//! Text from the model or from tools made safe to draw: escape sequences
//! never reach the terminal, control characters become visible, tabs become
//! spaces, and a line too long to be useful is cut with a marker.

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
            // Bidirectional overrides can make text read differently than it is.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
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
