//! Parsing a Markdown file's YAML frontmatter and the `--agents` JSON into a
//! definition.

use std::path::Path;

use serde_json::{Map, Value};

use crate::frontmatter::{
    QuoteReason, Split, fold_unindented_continuations, parse_yaml, quote_colon_values,
    split_frontmatter,
};

use super::fields::{FieldReader, blank_definition, name_problem, scalar_string};
use super::{DefinitionIssue, IssueLevel, ParseOutcome};
use crate::subagents::{AgentDefinition, DefinitionSource};

/// The file line of a YAML error (the frontmatter starts on file line 2) and
/// its message without the location suffix.
fn yaml_error(err: &serde_saphyr::Error) -> (Option<usize>, String) {
    let line = err
        .location()
        .map(|loc| loc.line())
        .filter(|line| *line > 0)
        .and_then(|line| usize::try_from(line).ok())
        .map(|line| line + 1);
    let rendered = err.render_with_options(serde_saphyr::render_options! {
        formatter: &serde_saphyr::UserMessageFormatter,
        snippets: serde_saphyr::SnippetMode::Off,
        line_offset: 1,
    });
    let message = match rendered.rfind(" at line ") {
        Some(i) if line.is_some() => rendered[..i].to_string(),
        _ => rendered,
    };
    (line, format!("invalid YAML in frontmatter: {message}"))
}

/// The file line (1-based) of a top-level `key:` in the frontmatter.
fn key_line(frontmatter: &str, key: &str) -> Option<usize> {
    frontmatter
        .split('\n')
        .position(|line| {
            line.strip_prefix(key)
                .and_then(|rest| rest.trim_start().strip_prefix(':'))
                .is_some()
                || line
                    .strip_prefix(['"', '\''])
                    .and_then(|rest| rest.strip_prefix(key))
                    .is_some_and(|rest| rest.starts_with(['"', '\'']))
        })
        .map(|index| index + 2)
}

/// Collects issues for one file.
struct Issues<'a> {
    path: &'a Path,
    list: Vec<DefinitionIssue>,
}

impl Issues<'_> {
    fn push(&mut self, level: IssueLevel, line: Option<usize>, message: impl Into<String>) {
        self.list.push(DefinitionIssue {
            path: Some(self.path.to_path_buf()),
            level,
            line,
            message: message.into(),
        });
    }
}

/// Parses one definition file's text. `path` is recorded in the definition
/// and its issues; `source` is where it was found.
pub fn parse_definition(text: &str, path: &Path, source: DefinitionSource) -> ParseOutcome {
    let mut issues = Issues {
        path,
        list: Vec::new(),
    };
    let definition = parse_into(text, path, source, &mut issues);
    ParseOutcome {
        definition,
        issues: issues.list,
    }
}

fn parse_into(
    text: &str,
    path: &Path,
    source: DefinitionSource,
    issues: &mut Issues<'_>,
) -> Option<AgentDefinition> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n");
    let (frontmatter, body) = match split_frontmatter(&text) {
        Split::None => {
            issues.push(
                IssueLevel::Info,
                None,
                "no frontmatter; treated as documentation",
            );
            return None;
        }
        Split::Unclosed => {
            issues.push(
                IssueLevel::Error,
                Some(1),
                "frontmatter is not closed: no second `---` line",
            );
            return None;
        }
        Split::Found { frontmatter, body } => (frontmatter, body),
    };

    let value = match parse_yaml(&frontmatter) {
        Ok(value) => value,
        Err(first) => {
            let (quoted, lines) = quote_colon_values(&frontmatter);
            let retried = (!lines.is_empty()).then(|| parse_yaml(&quoted));
            match retried {
                Some(Ok(value)) => {
                    for (index, reason) in lines {
                        let line = index + 2;
                        let message = match reason {
                            QuoteReason::Colon => {
                                "a value with ': ' was quoted to parse (as Claude Code does)"
                                    .to_string()
                            }
                            QuoteReason::Special(c) => format!(
                                "a value containing '{c}' was quoted to parse (as Claude Code does)"
                            ),
                        };
                        issues.push(IssueLevel::Warning, Some(line), message);
                    }
                    value
                }
                // The quoted text has the same lines, so the retry's error
                // names the line that still fails, not one quoting fixed.
                retried => match fold_unindented_continuations(&frontmatter)
                    .and_then(|folded| parse_yaml(&folded).ok())
                {
                    Some(value) => {
                        issues.push(
                            IssueLevel::Warning,
                            None,
                            "lines under a value that are not indented were read as part of it (as Claude Code does)",
                        );
                        value
                    }
                    None => {
                        let err = match retried {
                            Some(Err(retry)) => retry,
                            _ => first,
                        };
                        let (line, message) = yaml_error(&err);
                        issues.push(IssueLevel::Error, line, message);
                        return None;
                    }
                },
            }
        }
    };
    let mut map = match value {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            issues.push(
                IssueLevel::Error,
                Some(2),
                "frontmatter is not a mapping of `field: value` lines",
            );
            return None;
        }
    };

    let name = match map.remove("name") {
        None | Some(Value::Null) => None,
        Some(value) => match scalar_string(&value) {
            Some(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
            None => {
                issues.push(
                    IssueLevel::Error,
                    key_line(&frontmatter, "name"),
                    "`name` must be a string",
                );
                return None;
            }
        },
    };
    let Some(name) = name else {
        issues.push(IssueLevel::Info, None, "no name: treated as documentation");
        return None;
    };
    if let Some(problem) = name_problem(&name) {
        issues.push(IssueLevel::Error, key_line(&frontmatter, "name"), problem);
        return None;
    }
    let description = match map.remove("description") {
        // A literal two-character `\n` is a newline, as Claude Code reads it.
        Some(value) => scalar_string(&value).map(|s| s.replace("\\n", "\n").trim().to_string()),
        None => None,
    }
    .unwrap_or_default();
    if description.is_empty() {
        issues.push(
            IssueLevel::Error,
            key_line(&frontmatter, "description").or(key_line(&frontmatter, "name")),
            format!("agent `{name}` has no `description` (required with `name`)"),
        );
        return None;
    }

    let mut def = blank_definition(&name, &description, &body, source, Some(path.to_path_buf()));
    let mut reader = FieldReader::default();
    reader.fill(&mut def, &mut map);
    for problem in reader.problems {
        let field = &problem.field;
        issues.push(
            IssueLevel::Warning,
            key_line(&frontmatter, field),
            format!("`{field}`: {}", problem.message),
        );
    }
    // The name becomes the memory folder's name: one that is no path
    // segment (`..`, `a/b`) still loads, without a memory.
    if def.memory.is_some()
        && let Some(problem) = crate::path_segment::segment_problem(&name)
    {
        issues.push(
            IssueLevel::Warning,
            key_line(&frontmatter, "memory"),
            format!(
                "`memory` ignored: no memory folder for this agent: {problem}, so it is not one path segment"
            ),
        );
        def.memory = None;
    }
    for key in def.unknown_fields.keys() {
        issues.push(
            IssueLevel::Warning,
            key_line(&frontmatter, key),
            format!("unknown field `{key}` (kept, ignored)"),
        );
    }
    if def.prompt.is_empty() {
        issues.push(
            IssueLevel::Warning,
            None,
            "empty body: the agent has no system prompt",
        );
    }
    Some(def)
}

/// Parses the `--agents` flag: a JSON object mapping names to definitions,
/// `{"name": {"description": "...", "prompt": "...", "tools": [...], ...}}`
/// with the same (Claude Code) field names as the files. Any problem is an
/// error naming the agent and the field; unknown fields are kept silently.
pub fn definitions_from_json(json: &str) -> Result<Vec<AgentDefinition>, String> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("--agents: invalid JSON: {e}"))?;
    let Value::Object(agents) = value else {
        return Err(
            "--agents: expected a JSON object mapping agent names to definitions".to_string(),
        );
    };
    let mut out = Vec::new();
    for (name, spec) in agents {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err("--agents: an agent has an empty name".to_string());
        }
        if let Some(problem) = name_problem(&name) {
            return Err(format!("--agents: {problem}"));
        }
        let Value::Object(mut map) = spec else {
            return Err(format!("--agents: agent `{name}`: expected an object"));
        };
        if let Some(inner) = map.remove("name")
            && scalar_string(&inner).is_none_or(|inner| inner.trim() != name)
        {
            return Err(format!(
                "--agents: agent `{name}`: field `name`: differs from the key `{name}`"
            ));
        }
        let required = |map: &mut Map<String, Value>, field: &str| -> Result<String, String> {
            match map.remove(field) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
                Some(Value::String(_)) | None | Some(Value::Null) => Err(format!(
                    "--agents: agent `{name}`: field `{field}` is required"
                )),
                Some(_) => Err(format!(
                    "--agents: agent `{name}`: field `{field}`: expected a string"
                )),
            }
        };
        let description = required(&mut map, "description")?;
        let prompt = required(&mut map, "prompt")?;
        let mut def = blank_definition(
            &name,
            description.trim(),
            prompt.trim(),
            DefinitionSource::Flag,
            None,
        );
        let mut reader = FieldReader::default();
        reader.fill(&mut def, &mut map);
        // Claude Code's `--agents` schema has no `color` and drops it
        // unread, so a bad one costs only the colour, not the agent.
        if let Some(problem) = reader.problems.iter().find(|p| p.field != "color") {
            return Err(format!(
                "--agents: agent `{name}`: field `{}`: {}",
                problem.field, problem.message
            ));
        }
        out.push(def);
    }
    Ok(out)
}
