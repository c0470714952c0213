//! The one rule for a name that comes from a file and becomes a path segment
//! (agent memory folders, worktree ids, plugin and command ids). It decides
//! only the spelling; callers still check that the joined path stays under
//! its root.

/// Longest name accepted as a segment; longer ones are refused rather than cut.
pub const MAX_SEGMENT_LEN: usize = 100;

/// Whether `name` is one safe path segment: ASCII letters, digits, `-`, `_`
/// and `.`, at most [`MAX_SEGMENT_LEN`] bytes, and never `.` or `..`.
pub fn is_safe_segment(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SEGMENT_LEN
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Why `name` is not a safe path segment, or `None` when it is one.
pub fn segment_problem(name: &str) -> Option<String> {
    if is_safe_segment(name) {
        return None;
    }
    Some(if name.is_empty() {
        "the name is empty".to_string()
    } else if name == "." || name == ".." {
        format!("`{name}` names a directory, not a folder of its own")
    } else if name.len() > MAX_SEGMENT_LEN {
        format!("`{name}` is longer than {MAX_SEGMENT_LEN} bytes")
    } else {
        format!("`{name}` holds characters other than letters, digits, `-`, `_` and `.`")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_segments_are_words_never_paths() {
        let cases: &[(&str, bool)] = &[
            ("reviewer", true),
            ("code-reviewer_2", true),
            ("v1.2", true),
            ("..x", true),
            (".hidden", true),
            ("", false),
            (".", false),
            ("..", false),
            ("../x", false),
            ("a/b", false),
            ("a\\b", false),
            ("/etc", false),
            ("~", false),
            ("a b", false),
            ("naïve", false),
            ("x\0y", false),
        ];
        for (name, safe) in cases {
            assert_eq!(is_safe_segment(name), *safe, "{name:?}");
            assert_eq!(segment_problem(name).is_none(), *safe, "{name:?}");
        }
        assert!(!is_safe_segment(&"a".repeat(MAX_SEGMENT_LEN + 1)));
        assert!(is_safe_segment(&"a".repeat(MAX_SEGMENT_LEN)));
    }
}
