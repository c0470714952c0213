//! A skill's body made into the text a use sends, as Claude Code does it:
//! arguments and variables substituted, then `` !`cmd` `` and ```` ```! ````
//! blocks replaced by their commands' output (one pass; output is not read
//! again). The commands run through a [`ShellRunner`], which decides them
//! by the session's `Bash` policy and never asks.

use std::path::PathBuf;

use futures::future::BoxFuture;

use super::Skill;

/// What a body's `${…}` variables stand for.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    /// `${CLAUDE_SESSION_ID}`.
    pub session_id: String,
    /// `${CLAUDE_PROJECT_DIR}`.
    pub project_dir: PathBuf,
    /// `${CLAUDE_EFFORT}`.
    pub effort: Option<String>,
}

/// A message's arguments split as a shell would (`"hello world" b` is two);
/// unbalanced quotes fall back to splitting on whitespace.
pub fn split_arguments(args: &str) -> Vec<String> {
    shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_string).collect())
}

/// `body` with `$ARGUMENTS`, `$ARGUMENTS[N]`, `$N` (0-based), the named
/// `$name`s of `skill.arguments` and the `${CLAUDE_…}` variables replaced.
/// An index past the arguments stays as written; `\$1` is a literal `$1`.
/// When the body has no `$ARGUMENTS`, non-empty arguments are appended as
/// `ARGUMENTS: …`.
pub fn substitute(skill: &Skill, body: &str, args: &str, vars: &Vars) -> String {
    let list = split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut saw_arguments = false;
    let mut rest = body;
    while let Some(i) = rest.find(['$', '\\']) {
        out.push_str(&rest[..i]);
        let here = &rest[i..];
        if let Some(after) = here.strip_prefix("\\$") {
            // `\$1`: the placeholder stays literal (variables still expand).
            if !after.starts_with('{') && placeholder_len(skill, after).is_some() {
                out.push('$');
                rest = after;
                continue;
            }
            out.push('\\');
            rest = &here[1..];
            continue;
        }
        if let Some(after) = here.strip_prefix("\\\\") {
            out.push_str("\\\\");
            rest = after;
            continue;
        }
        if let Some(after) = here.strip_prefix('\\') {
            out.push('\\');
            rest = after;
            continue;
        }
        let after = &here[1..];
        if let Some((len, value)) = variable(skill, after, vars) {
            out.push_str(&value);
            rest = &after[len..];
            continue;
        }
        match placeholder_len(skill, after) {
            Some((len, Placeholder::All)) => {
                saw_arguments = true;
                out.push_str(args);
                rest = &after[len..];
            }
            Some((len, Placeholder::Index(n, indexed))) => {
                saw_arguments |= indexed;
                match list.get(n) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&here[..=len]),
                }
                rest = &after[len..];
            }
            Some((len, Placeholder::Named(n))) => {
                out.push_str(list.get(n).map(String::as_str).unwrap_or(""));
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if !saw_arguments && !args.trim().is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args.trim());
    }
    out
}

enum Placeholder {
    /// `$ARGUMENTS`.
    All,
    /// `$ARGUMENTS[N]` (true) or `$N` (false).
    Index(usize, bool),
    /// A named argument, by position.
    Named(usize),
}

/// The placeholder at the start of `after` (the text after a `$`), and its length.
fn placeholder_len(skill: &Skill, after: &str) -> Option<(usize, Placeholder)> {
    if let Some(tail) = after.strip_prefix("ARGUMENTS") {
        if let Some(inner) = tail.strip_prefix('[')
            && let Some(close) = inner.find(']')
            && let Ok(n) = inner[..close].trim().parse::<usize>()
        {
            return Some(("ARGUMENTS[".len() + close + 1, Placeholder::Index(n, true)));
        }
        if !tail.starts_with(is_ident_char) {
            return Some(("ARGUMENTS".len(), Placeholder::All));
        }
    }
    let digits = after.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let n = after[..digits].parse::<usize>().ok()?;
        return Some((digits, Placeholder::Index(n, false)));
    }
    let word: String = after.chars().take_while(|c| is_ident_char(*c)).collect();
    if word.is_empty() {
        return None;
    }
    skill
        .arguments
        .iter()
        .position(|a| *a == word)
        .map(|n| (word.len(), Placeholder::Named(n)))
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The `${…}` variable at the start of `after`, its length and its value;
/// `None` for an unknown one (left as written).
fn variable(skill: &Skill, after: &str, vars: &Vars) -> Option<(usize, String)> {
    let inner = after.strip_prefix('{')?;
    let close = inner.find('}')?;
    let name = &inner[..close];
    let plugin = skill.plugin.as_ref();
    let value = match name {
        "CLAUDE_SESSION_ID" => vars.session_id.clone(),
        "CLAUDE_EFFORT" => vars.effort.clone().unwrap_or_default(),
        "CLAUDE_SKILL_DIR" => skill.dir.display().to_string(),
        "CLAUDE_PROJECT_DIR" => vars.project_dir.display().to_string(),
        "CLAUDE_PLUGIN_ROOT" => plugin?.root.display().to_string(),
        "CLAUDE_PLUGIN_DATA" => plugin?.data.display().to_string(),
        _ => {
            let key = name.strip_prefix("user_config.")?;
            plugin?
                .user_config
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())?
        }
    };
    Some((close + 2, value))
}

/// A command in a body that runs before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellPiece {
    /// Where it is in the body (byte range), placeholder included.
    pub start: usize,
    /// End of the range.
    pub end: usize,
    /// The placeholder as written, for messages (`` !`git status` ``).
    pub pattern: String,
    /// The command.
    pub command: String,
}

/// The `` !`cmd` `` placeholders (at a line's start or after whitespace)
/// and ```` ```! ```` blocks of `text`, in order.
pub fn shell_pieces(text: &str) -> Vec<ShellPiece> {
    let mut pieces = Vec::new();
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let start = offset;
        offset += line.len();
        if line.trim_end().trim_start() == "```!" || line.trim_start().starts_with("```!") {
            // A fenced block: every line up to the closing fence is the command.
            let mut command = String::new();
            let mut end = offset;
            let mut closed = false;
            for next in lines.by_ref() {
                offset += next.len();
                end = offset;
                if next.trim() == "```" {
                    closed = true;
                    break;
                }
                command.push_str(next);
            }
            if closed && !command.trim().is_empty() {
                pieces.push(ShellPiece {
                    start,
                    end,
                    pattern: text[start..end].trim_end().to_string(),
                    command: command.trim_end().to_string(),
                });
            }
            continue;
        }
        let bytes = line.as_bytes();
        let mut i = 0;
        while let Some(found) = line[i..].find("!`") {
            let at = i + found;
            let boundary = at == 0 || bytes.get(at - 1).is_some_and(u8::is_ascii_whitespace);
            let Some(close) = line[at + 2..].find('`') else {
                break;
            };
            let end = at + 2 + close + 1;
            let command = &line[at + 2..at + 2 + close];
            if boundary && !command.trim().is_empty() {
                pieces.push(ShellPiece {
                    start: start + at,
                    end: start + end,
                    pattern: line[at..end].to_string(),
                    command: command.to_string(),
                });
            }
            i = end;
        }
    }
    pieces
}

/// Runs a body's commands: `Ok` with the output to put in its place, or
/// `Err` with the message that aborts the whole use.
pub trait ShellRunner: Send + Sync {
    /// Runs `piece`'s command.
    fn run<'a>(&'a self, piece: &'a ShellPiece) -> BoxFuture<'a, Result<String, String>>;
}

/// `text` with each of its shell pieces replaced by its command's output,
/// run in order; the first failure aborts.
pub async fn run_shell_pieces(text: &str, runner: &dyn ShellRunner) -> Result<String, String> {
    let pieces = shell_pieces(text);
    if pieces.is_empty() {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for piece in &pieces {
        out.push_str(&text[at..piece.start]);
        let output = runner.run(piece).await?;
        out.push_str(output.trim_end_matches('\n'));
        // A block's closing fence ended its line.
        if text[piece.start..piece.end].ends_with('\n') {
            out.push('\n');
        }
        at = piece.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{SkillKind, SkillSet};

    fn skill(arguments: &[&str]) -> Skill {
        let mut set = SkillSet::default();
        set.skills.push(Skill {
            name: "x".into(),
            description: String::new(),
            body: String::new(),
            dir: PathBuf::from("/skills/x"),
            file: PathBuf::from("/skills/x/SKILL.md"),
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            model: None,
            effort: None,
            user_only: false,
            user_invocable: true,
            argument_hint: None,
            arguments: arguments.iter().map(|a| a.to_string()).collect(),
            fork_agent: None,
            scope: "project",
            kind: SkillKind::Command,
            label: "project".into(),
            plugin: None,
            held_back: false,
        });
        set.skills.remove(0)
    }

    fn vars() -> Vars {
        Vars {
            session_id: "s-1".into(),
            project_dir: PathBuf::from("/proj"),
            effort: None,
        }
    }

    #[test]
    fn arguments_substitute_zero_based_with_shell_quoting() {
        let s = skill(&[]);
        let out = substitute(
            &s,
            "all=$ARGUMENTS first=$0 second=$1 third=$2 idx=$ARGUMENTS[1]",
            "a 'b c'",
            &vars(),
        );
        assert_eq!(out, "all=a 'b c' first=a second=b c third=$2 idx=b c");
    }

    #[test]
    fn arguments_are_appended_when_the_body_names_none() {
        let s = skill(&[]);
        assert_eq!(
            substitute(&s, "Do it.", "fast now", &vars()),
            "Do it.\n\nARGUMENTS: fast now"
        );
        assert_eq!(substitute(&s, "Do it.", "", &vars()), "Do it.");
    }

    #[test]
    fn named_arguments_escapes_and_variables() {
        let s = skill(&["issue", "branch"]);
        let out = substitute(
            &s,
            "fix $issue on $branch ($missing) \\$1 $$ ${CLAUDE_SESSION_ID} ${CLAUDE_SKILL_DIR} ${CLAUDE_PROJECT_DIR} ${CLAUDE_PLUGIN_ROOT} $ARGUMENTS",
            "12",
            &vars(),
        );
        assert_eq!(
            out,
            "fix 12 on  ($missing) $1 $$ s-1 /skills/x /proj ${CLAUDE_PLUGIN_ROOT} 12"
        );
    }

    #[test]
    fn shell_pieces_are_found_at_line_starts_and_after_spaces_only() {
        let text = "Status: !`git status`\nKEY=!`no`\n!`echo a`\n```!\necho b\necho c\n```\nend";
        let pieces = shell_pieces(text);
        let commands: Vec<&str> = pieces.iter().map(|p| p.command.as_str()).collect();
        assert_eq!(commands, ["git status", "echo a", "echo b\necho c"]);
        assert_eq!(pieces[0].pattern, "!`git status`");
    }

    struct Echo;
    impl ShellRunner for Echo {
        fn run<'a>(&'a self, piece: &'a ShellPiece) -> BoxFuture<'a, Result<String, String>> {
            Box::pin(async move {
                if piece.command == "fail" {
                    Err(format!("failed {}", piece.pattern))
                } else {
                    Ok(format!("<{}>\n", piece.command))
                }
            })
        }
    }

    #[tokio::test]
    async fn shell_output_replaces_each_piece_once() {
        let text = "a !`one` b\n```!\ntwo\n```\nc !`$0`";
        let out = run_shell_pieces(text, &Echo).await.unwrap();
        assert_eq!(out, "a <one> b\n<two>\nc <$0>");
        assert_eq!(
            run_shell_pieces("x !`fail`", &Echo).await.unwrap_err(),
            "failed !`fail`"
        );
    }
}
