//! MCP prompts as commands: `/mcp__<server>__<prompt> args…`. The words
//! typed after the command are split like a shell would (quotes group),
//! given to the prompt's declared arguments in order or by `name=value`, and
//! the messages the server returns become the text of the user's message.

use serde_json::{Map, Value};

use super::content::convert_result;

/// One argument a prompt declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArg {
    /// Its name.
    pub name: String,
    /// What the server says it is (capped, harness-like text escaped).
    pub description: String,
    /// The prompt cannot run without it.
    pub required: bool,
}

/// A prompt a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPrompt {
    /// Its name on its server.
    pub name: String,
    /// What the server says it does (capped, harness-like text escaped).
    pub description: String,
    /// Its arguments, in the order the server declares them.
    pub arguments: Vec<PromptArg>,
}

/// `mcp__<server>__<prompt>`, the prompt's command name (no slash), with
/// whitespace in the prompt's name made `_` as Claude Code does.
pub fn command_name(server: &str, prompt: &str) -> String {
    let clean: String = prompt
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    format!("mcp__{server}__{clean}")
}

/// `text` split into words as a shell would: whitespace separates, single
/// and double quotes group (and are removed), a backslash outside single
/// quotes takes the next character as it is. `Err`: a quote left open.
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word that is only quotes (`""`) is still a word.
    let mut started = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            '\'' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                started = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        words.push(word);
    }
    Ok(words)
}

/// The usage line of `command` with `arguments`: `/cmd <required> [optional]`.
pub fn usage(command: &str, arguments: &[PromptArg]) -> String {
    let mut line = format!("/{command}");
    for a in arguments {
        if a.required {
            line.push_str(&format!(" <{}>", a.name));
        } else {
            line.push_str(&format!(" [{}]", a.name));
        }
    }
    line
}

/// The arguments of a prompt call from `typed`, the text after the command:
/// a `name=value` word whose name the prompt declares sets that argument;
/// every other word fills the next declared argument not yet set, in
/// order; words beyond the last argument join the last one filled in order
/// (so an unquoted sentence fills a one-argument prompt). `Err`: a quote
/// left open, an argument given twice, words for a prompt without
/// arguments, or a required argument missing (named, with the usage).
pub fn map_arguments(
    command: &str,
    declared: &[PromptArg],
    typed: &str,
) -> Result<Map<String, Value>, String> {
    let words = split_words(typed)?;
    let mut values: Vec<Option<String>> = vec![None; declared.len()];
    let mut positional = Vec::new();
    for word in words {
        let named = word.split_once('=').and_then(|(name, value)| {
            declared
                .iter()
                .position(|a| a.name == name)
                .map(|i| (i, value.to_string()))
        });
        match named {
            Some((i, value)) => {
                if values[i].is_some() {
                    return Err(format!(
                        "the argument `{}` is given twice ({})",
                        declared[i].name,
                        usage(command, declared)
                    ));
                }
                values[i] = Some(value);
            }
            None => positional.push(word),
        }
    }
    let mut last_filled = None;
    for word in positional {
        match values.iter().position(Option::is_none) {
            Some(i) => {
                values[i] = Some(word);
                last_filled = Some(i);
            }
            None => match last_filled {
                Some(i) => {
                    if let Some(v) = values[i].as_mut() {
                        v.push(' ');
                        v.push_str(&word);
                    }
                }
                None if declared.is_empty() => {
                    return Err(format!("/{command} takes no arguments"));
                }
                None => {
                    return Err(format!("too many arguments ({})", usage(command, declared)));
                }
            },
        }
    }
    let mut map = Map::new();
    for (arg, value) in declared.iter().zip(values) {
        match value {
            Some(v) => {
                map.insert(arg.name.clone(), Value::String(v));
            }
            None if arg.required => {
                return Err(format!(
                    "missing the required argument `{}` ({})",
                    arg.name,
                    usage(command, declared)
                ));
            }
            None => {}
        }
    }
    Ok(map)
}

/// The text of a `GetPromptResult` (as JSON): each message's content as a
/// tool result's would be (text as text, embedded resources as their text
/// under their URI, resource links as a line, images and audio as a
/// placeholder naming them), messages separated by a blank line, whichever
/// their role.
pub fn prompt_text(result: &Value) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    messages
        .iter()
        .filter_map(|m| m.get("content"))
        .map(|content| convert_result(&serde_json::json!({"content": [content]})).text)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arg(name: &str, required: bool) -> PromptArg {
        PromptArg {
            name: name.into(),
            description: String::new(),
            required,
        }
    }

    fn greet() -> Vec<PromptArg> {
        vec![arg("name", true), arg("style", false)]
    }

    #[test]
    fn words_split_like_a_shell_with_quotes_grouping() {
        assert_eq!(
            split_words(r#"Bob "very warm" 'it''s' a\ b "" x"#).unwrap(),
            vec!["Bob", "very warm", "its", "a b", "", "x"]
        );
        assert_eq!(
            split_words(r#""say \"hi\" \n""#).unwrap(),
            vec![r#"say "hi" \n"#]
        );
        assert!(split_words("  ").unwrap().is_empty());
        assert!(split_words("'open").is_err());
        assert!(split_words("\"open").is_err());
    }

    #[test]
    fn words_fill_arguments_in_order_and_by_name() {
        let m = map_arguments("mcp__s__greet", &greet(), "Bob").unwrap();
        assert_eq!(Value::Object(m), json!({"name": "Bob"}));
        let m = map_arguments("mcp__s__greet", &greet(), "Bob 'very warm'").unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"name": "Bob", "style": "very warm"})
        );
        // By name, in any order; positional words fill what is left.
        let m = map_arguments("mcp__s__greet", &greet(), "style=brief Ann").unwrap();
        assert_eq!(Value::Object(m), json!({"name": "Ann", "style": "brief"}));
        let m = map_arguments("mcp__s__greet", &greet(), "\"name=Ann Lee\"").unwrap();
        assert_eq!(Value::Object(m), json!({"name": "Ann Lee"}));
        // A `=` in a word that names no argument is text.
        let m = map_arguments("mcp__s__greet", &greet(), "a=b").unwrap();
        assert_eq!(Value::Object(m), json!({"name": "a=b"}));
        // Words past the last argument join the last one filled in order.
        let m = map_arguments("mcp__s__greet", &greet(), "Bob in a warm way").unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"name": "Bob", "style": "in a warm way"})
        );
    }

    #[test]
    fn a_missing_required_argument_or_a_bad_call_is_a_clear_error() {
        let e = map_arguments("mcp__s__greet", &greet(), "").unwrap_err();
        assert!(e.contains("`name`"), "{e}");
        assert!(e.contains("/mcp__s__greet <name> [style]"), "{e}");
        let e = map_arguments("mcp__s__greet", &greet(), "style=x").unwrap_err();
        assert!(e.contains("missing the required argument `name`"), "{e}");
        let e = map_arguments("mcp__s__greet", &greet(), "name=a name=b").unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        let e = map_arguments("mcp__s__none", &[], "extra").unwrap_err();
        assert!(e.contains("takes no arguments"), "{e}");
        assert!(map_arguments("mcp__s__none", &[], "  ").unwrap().is_empty());
        let e = map_arguments("mcp__s__greet", &greet(), "name=a style=b c").unwrap_err();
        assert!(e.contains("too many arguments"), "{e}");
        assert!(map_arguments("mcp__s__greet", &greet(), "'Bob").is_err());
    }

    #[test]
    fn command_names_make_spaces_underscores() {
        assert_eq!(command_name("gh", "daily report"), "mcp__gh__daily_report");
        assert_eq!(command_name("gh", "review"), "mcp__gh__review");
    }

    #[test]
    fn prompt_messages_become_one_text() {
        let text = prompt_text(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Read the note."}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "mem://note", "text": "42"}}},
            {"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}},
            {"role": "assistant", "content": {"type": "text", "text": "Noted."}}
        ]}));
        assert_eq!(
            text,
            "Read the note.\n\n[resource mem://note]\n42\n\n[image image/png: 3 bytes]\n\nNoted."
        );
    }
}
