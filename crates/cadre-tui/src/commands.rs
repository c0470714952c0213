//! Slash commands typed at the TUI's prompt. They run in the front end and
//! are never sent to the model; an unknown one says so.

/// What a submitted prompt asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Nothing (blank).
    Empty,
    /// A message for the model.
    Message(String),
    /// `/help`.
    Help,
    /// `/exit` or `/quit`.
    Exit,
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// A `/word` that is no command.
    Unknown(String),
}

/// The commands, as `/help` lists them.
pub const HELP: &str = "\
/compact [focus]  summarise the conversation now to free context; the focus says what to keep
/help             this list
/exit, /quit      leave (Ctrl+C twice too)
Keys: Enter sends · Shift+Enter or Ctrl+J new line · Esc interrupts the turn · Ctrl+B sends the
running subagents to the background · Ctrl+O verbose tool output · Shift+Tab permission mode · PgUp/PgDn scroll
A message starting with // is sent starting with /.";

/// Reads a submitted prompt: a command when it starts with `/` (`//`
/// escapes one), otherwise a message (sent as typed, minus surrounding blanks).
pub fn parse_command(text: &str) -> Command {
    let text = text.trim();
    if text.is_empty() {
        return Command::Empty;
    }
    if let Some(escaped) = text.strip_prefix("//") {
        return Command::Message(format!("/{escaped}"));
    }
    let Some(command) = text.strip_prefix('/') else {
        return Command::Message(text.to_string());
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    match name {
        "exit" | "quit" => Command::Exit,
        "help" => Command::Help,
        "compact" => {
            let focus = rest.trim();
            Command::Compact((!focus.is_empty()).then(|| focus.to_string()))
        }
        _ => Command::Unknown(format!("/{name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_starts_a_command_and_two_escape_it() {
        assert_eq!(parse_command(" \n "), Command::Empty);
        assert_eq!(
            parse_command("fix it\nplease"),
            Command::Message("fix it\nplease".into())
        );
        assert_eq!(parse_command("/help"), Command::Help);
        assert_eq!(parse_command("/quit"), Command::Exit);
        assert_eq!(parse_command("/compact"), Command::Compact(None));
        assert_eq!(
            parse_command("/compact keep the parser"),
            Command::Compact(Some("keep the parser".into()))
        );
        assert_eq!(parse_command("/foo bar"), Command::Unknown("/foo".into()));
        assert_eq!(parse_command("//foo"), Command::Message("/foo".into()));
    }
}
