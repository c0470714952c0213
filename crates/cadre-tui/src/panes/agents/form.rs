//! The `n` form of `/agents`: name, description, tools, model and where,
//! written as a new definition file in Claude Code's format (YAML
//! frontmatter, then the prompt) that the catalog loads as it is.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use cadre_core::tool_names::canonical_tool_name;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::AgentEntry;
use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::theme::Theme;

/// Where new definitions may go, and what the form checks against.
#[derive(Debug, Clone, Default)]
pub struct NewAgentPlaces {
    /// The project's definitions directory (`<project>/.cadre/agents`).
    pub project_dir: PathBuf,
    /// The user's (`$CADRE_HOME/agents`).
    pub user_dir: PathBuf,
    /// How the project directory is shown (`.cadre/agents`).
    pub project_shown: String,
    /// How the user directory is shown (`~/.cadre/agents`).
    pub user_shown: String,
    /// The tool names a definition may list (canonical; aliases are
    /// accepted through the core's alias table).
    pub known_tools: Vec<String>,
    /// The definitions in effect, to say when a name is taken.
    pub existing: Vec<AgentEntry>,
}

/// Which directory a new definition goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The project's `.cadre/agents/` (shared with the project, like any source file).
    Project,
    /// `$CADRE_HOME/agents/` (private to the user: the file 0600, a new directory 0700).
    User,
}

impl Place {
    fn as_str(self) -> &'static str {
        match self {
            Place::Project => "project",
            Place::User => "user",
        }
    }
}

/// The form's fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormField {
    /// `name`.
    Name,
    /// `description`.
    Description,
    /// `tools`, comma-separated.
    Tools,
    /// `model`.
    Model,
    /// Project or user.
    Place,
}

const FIELDS: [FormField; 5] = [
    FormField::Name,
    FormField::Description,
    FormField::Tools,
    FormField::Model,
    FormField::Place,
];

/// A definition to write, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgent {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `tools` as typed (comma-separated; empty: every tool, as the parent).
    pub tools: String,
    /// `model` (empty: the parent's).
    pub model: String,
    /// Where it goes.
    pub place: Place,
}

/// A definition file just written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file.
    pub path: PathBuf,
    /// The file as shown (`.cadre/agents/x.md`).
    pub shown: String,
}

/// Why a name cannot be used, if it cannot: lowercase letters, digits and
/// hyphens, as Claude Code names agents (and not starting with a hyphen).
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a name is required".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some(format!(
            "`{name}`: a name is lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') {
        return Some(format!("`{name}`: a name must not start with a hyphen"));
    }
    None
}

impl NewAgent {
    /// An empty form's values.
    pub fn empty() -> NewAgent {
        NewAgent {
            name: String::new(),
            description: String::new(),
            tools: String::new(),
            model: String::new(),
            place: Place::Project,
        }
    }

    /// The tool names listed, trimmed, empty entries dropped.
    pub fn tool_list(&self) -> Vec<String> {
        self.tools
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The listed tools that name no tool (`Bash(git *)` and `Agent(x)`
    /// are their tool; `mcp__…` names a server's tool, known only when it runs).
    pub fn unknown_tools(&self, known: &[String]) -> Vec<String> {
        self.tool_list()
            .into_iter()
            .filter(|t| {
                let base = t.split('(').next().unwrap_or(t).trim();
                let canonical = canonical_tool_name(base);
                !(base == "*"
                    || base.starts_with("mcp__")
                    || known.iter().any(|k| k == base || k == canonical))
            })
            .collect()
    }

    /// The first problem that keeps it from being written, with its field.
    pub fn problem(&self, places: &NewAgentPlaces) -> Option<(FormField, String)> {
        if let Some(p) = name_problem(&self.name) {
            return Some((FormField::Name, p));
        }
        if self.description.trim().is_empty() {
            return Some((FormField::Description, "a description is required".into()));
        }
        let source = self.place.as_str();
        if let Some(taken) = places
            .existing
            .iter()
            .find(|e| e.name == self.name && e.source == source)
        {
            let place = taken.file.as_deref().unwrap_or(source);
            return Some((
                FormField::Name,
                format!(
                    "{} is already defined in {place}; edit that file or pick another name",
                    self.name
                ),
            ));
        }
        None
    }

    /// The file it goes to.
    pub fn path(&self, places: &NewAgentPlaces) -> PathBuf {
        self.dir(places).join(format!("{}.md", self.name))
    }

    fn dir<'a>(&self, places: &'a NewAgentPlaces) -> &'a Path {
        match self.place {
            Place::Project => &places.project_dir,
            Place::User => &places.user_dir,
        }
    }

    /// The file as shown.
    pub fn shown_path(&self, places: &NewAgentPlaces) -> String {
        let dir = match self.place {
            Place::Project => &places.project_shown,
            Place::User => &places.user_shown,
        };
        let name = if self.name.is_empty() {
            "NAME"
        } else {
            &self.name
        };
        format!("{}/{name}.md", dir.trim_end_matches('/'))
    }

    /// The file's text: Claude Code's frontmatter, then a placeholder
    /// prompt asking to be replaced.
    pub fn file_text(&self) -> String {
        let description = self.description.trim();
        let mut text = format!(
            "---\nname: {}\ndescription: {}\n",
            self.name,
            yaml_scalar(description)
        );
        let tools = self.tool_list();
        if !tools.is_empty() {
            text.push_str(&format!("tools: {}\n", yaml_scalar(&tools.join(", "))));
        }
        let model = self.model.trim();
        if !model.is_empty() {
            text.push_str(&format!("model: {}\n", yaml_scalar(model)));
        }
        text.push_str(&format!(
            "---\nYou are the {} agent. Your task: {description}\n\n\
             This prompt is a placeholder written by /agents: replace it with what the agent \
             should do, how it should work and what it should report back.\n",
            self.name
        ));
        text
    }

    /// Writes the file; never over an existing one. A project file is made
    /// like any source file (the umask decides); a user file is private
    /// (0600, and 0700 for a directory made for it), as cadre's data files are.
    pub fn write(&self, places: &NewAgentPlaces) -> Result<Written, String> {
        if let Some((_, problem)) = self.problem(places) {
            return Err(problem);
        }
        let dir = self.dir(places);
        let path = self.path(places);
        let shown = self.shown_path(places);
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        let mut file = std::fs::OpenOptions::new();
        file.write(true).create_new(true);
        #[cfg(unix)]
        if self.place == Place::User {
            use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
            dirs.mode(0o700);
            file.mode(0o600);
        }
        dirs.create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut opened = file.open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                format!("{shown} already exists; it was not overwritten")
            }
            _ => format!("cannot write {shown}: {e}"),
        })?;
        if let Err(e) = opened.write_all(self.file_text().as_bytes()) {
            // A half-written definition would load broken: take it away.
            drop(opened);
            let _ = std::fs::remove_file(&path);
            return Err(format!("cannot write {shown}: {e}"));
        }
        Ok(Written { path, shown })
    }
}

/// `value` as a YAML scalar on one line: plain when it reads back as the
/// same string, else double-quoted.
fn yaml_scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value.trim() == value
        && !value.starts_with([
            '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%',
            '@', '`',
        ])
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value.chars().any(char::is_control)
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        )
        && value.parse::<f64>().is_err();
    if plain {
        return value.to_string();
    }
    let mut quoted = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The form pane.
pub struct AgentForm {
    places: NewAgentPlaces,
    values: NewAgent,
    focus: FormField,
    /// What keeps it from being written, shown under the fields.
    error: Option<String>,
    /// Unknown tools were pointed out; the next write goes ahead.
    confirmed_unknown: bool,
    /// Tells the list which name was written, to select it.
    created: Arc<Mutex<Option<String>>>,
}

impl AgentForm {
    /// An empty form writing to `places`; the name written goes to `created`.
    pub fn new(places: NewAgentPlaces, created: Arc<Mutex<Option<String>>>) -> AgentForm {
        AgentForm {
            places,
            values: NewAgent::empty(),
            focus: FormField::Name,
            error: None,
            confirmed_unknown: false,
            created,
        }
    }

    /// The values typed so far.
    pub fn values(&self) -> &NewAgent {
        &self.values
    }

    /// The field with the focus.
    pub fn focus(&self) -> FormField {
        self.focus
    }

    /// What keeps it from being written, if anything was tried.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn text_mut(&mut self) -> Option<&mut String> {
        match self.focus {
            FormField::Name => Some(&mut self.values.name),
            FormField::Description => Some(&mut self.values.description),
            FormField::Tools => Some(&mut self.values.tools),
            FormField::Model => Some(&mut self.values.model),
            FormField::Place => None,
        }
    }

    fn step(&mut self, forward: bool) {
        let at = FIELDS.iter().position(|f| *f == self.focus).unwrap_or(0);
        let next = if forward {
            (at + 1) % FIELDS.len()
        } else {
            (at + FIELDS.len() - 1) % FIELDS.len()
        };
        self.focus = FIELDS[next];
    }

    fn edited(&mut self) {
        self.error = None;
        self.confirmed_unknown = false;
    }

    fn submit(&mut self, out: &mut PaneOut) -> PaneStep {
        if let Some((field, problem)) = self.values.problem(&self.places) {
            self.focus = field;
            self.error = Some(problem);
            return PaneStep::Stay;
        }
        let unknown = self.values.unknown_tools(&self.places.known_tools);
        if !unknown.is_empty() && !self.confirmed_unknown {
            self.confirmed_unknown = true;
            self.error = Some(format!(
                "unknown tool(s): {}; a child gets only tools that exist. \
                 Write again (Ctrl+S) to keep them anyway",
                unknown.join(", ")
            ));
            return PaneStep::Stay;
        }
        match self.values.write(&self.places) {
            Ok(written) => {
                *self.created.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(self.values.name.clone());
                out.notices.push(format!(
                    "created agent {} in {}; its prompt is a placeholder: edit the file to give it instructions",
                    self.values.name, written.shown
                ));
                PaneStep::Close
            }
            Err(e) => {
                self.error = Some(e);
                PaneStep::Stay
            }
        }
    }

    fn field_line(&self, field: FormField, theme: &Theme) -> Line<'static> {
        let (label, value) = match field {
            FormField::Name => ("Name", self.values.name.as_str()),
            FormField::Description => ("Description", self.values.description.as_str()),
            FormField::Tools => ("Tools", self.values.tools.as_str()),
            FormField::Model => ("Model", self.values.model.as_str()),
            FormField::Place => ("Where", ""),
        };
        let focused = self.focus == field;
        let label_style = if focused {
            theme.bold().add_modifier(Modifier::REVERSED)
        } else {
            theme.bold()
        };
        let mut spans = vec![
            Span::styled(format!(" {label:<12}"), label_style),
            Span::raw(" "),
        ];
        if field == FormField::Place {
            for place in [Place::Project, Place::User] {
                let chosen = self.values.place == place;
                let style = if chosen {
                    theme.ok().add_modifier(Modifier::BOLD)
                } else {
                    theme.dim()
                };
                let mark = if chosen { "(•) " } else { "( ) " };
                spans.push(Span::styled(format!("{mark}{}  ", place.as_str()), style));
            }
            spans.push(Span::styled(
                format!("→ {}", clean_line(&self.values.shown_path(&self.places))),
                theme.dim(),
            ));
        } else {
            spans.push(Span::raw(clean_line(value)));
            if focused {
                spans.push(Span::styled(
                    " ",
                    Style::new().add_modifier(Modifier::REVERSED),
                ));
            }
        }
        Line::from(spans)
    }

    fn hint(&self, field: FormField) -> &'static str {
        match field {
            FormField::Name => "lowercase letters, digits and hyphens (the subagent_type)",
            FormField::Description => "when to use it: the model reads this to choose it",
            FormField::Tools => "comma-separated, e.g. Read, Grep, Glob; empty: every tool",
            FormField::Model => "e.g. sonnet, haiku or a model id; empty: the parent's model",
            FormField::Place => "Space or ←/→ switches: project (shared) or user (yours)",
        }
    }
}

impl Pane for AgentForm {
    fn title(&self) -> String {
        "New agent".into()
    }

    fn keys_help(&self) -> String {
        "Tab/Shift+Tab field · Enter next (on Where: write) · Ctrl+S write · Esc cancel".into()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Char('s') if ctrl => return self.submit(out),
            KeyCode::Enter if self.focus == FormField::Place => return self.submit(out),
            KeyCode::Enter | KeyCode::Tab | KeyCode::Down => self.step(true),
            KeyCode::BackTab | KeyCode::Up => self.step(false),
            KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right
                if self.focus == FormField::Place =>
            {
                self.values.place = match self.values.place {
                    Place::Project => Place::User,
                    Place::User => Place::Project,
                };
                self.edited();
            }
            KeyCode::Char('u') if ctrl => {
                if let Some(text) = self.text_mut() {
                    text.clear();
                }
                self.edited();
            }
            KeyCode::Backspace => {
                if let Some(text) = self.text_mut() {
                    text.pop();
                }
                self.edited();
            }
            KeyCode::Char(c) if !ctrl && !key.modifiers.contains(KeyModifiers::ALT) => {
                if let Some(text) = self.text_mut()
                    && !c.is_control()
                {
                    text.push(c);
                }
                self.edited();
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines = vec![Line::raw("")];
        for field in FIELDS {
            lines.push(self.field_line(field, theme));
            if self.focus == field {
                lines.push(Line::styled(
                    format!("{:14}{}", "", self.hint(field)),
                    theme.dim(),
                ));
            }
        }
        lines.push(Line::raw(""));
        let unknown = self.values.unknown_tools(&self.places.known_tools);
        if let Some(error) = &self.error {
            lines.push(Line::styled(
                format!(" {}", clean_line(error)),
                theme.error(),
            ));
        } else if !unknown.is_empty() {
            lines.push(Line::styled(
                format!(" unknown tool(s): {}", clean_line(&unknown.join(", "))),
                theme.warning(),
            ));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyEventKind;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn places(root: &Path) -> NewAgentPlaces {
        NewAgentPlaces {
            project_dir: root.join("project/.cadre/agents"),
            user_dir: root.join("home/agents"),
            project_shown: ".cadre/agents".into(),
            user_shown: "~/.cadre/agents".into(),
            known_tools: ["Read", "Grep", "Glob", "Bash", "Edit", "Agent"]
                .map(String::from)
                .to_vec(),
            existing: Vec::new(),
        }
    }

    fn form(root: &Path) -> (AgentForm, Arc<Mutex<Option<String>>>) {
        let created = Arc::new(Mutex::new(None));
        (AgentForm::new(places(root), created.clone()), created)
    }

    /// Types `text` into the focused field.
    fn type_text(form: &mut AgentForm, text: &str) {
        for c in text.chars() {
            assert!(matches!(
                form.key(key(KeyCode::Char(c)), &mut PaneOut::default()),
                PaneStep::Stay
            ));
        }
    }

    fn press(form: &mut AgentForm, event: KeyEvent, out: &mut PaneOut) -> PaneStep {
        assert_eq!(event.kind, KeyEventKind::Press);
        form.key(event, out)
    }

    #[test]
    fn names_are_lowercase_letters_digits_and_hyphens() {
        for good in ["reviewer", "code-reviewer", "a1", "x-2-y"] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "Reviewer",
            "code_reviewer",
            "a b",
            "plugin:x",
            "-x",
            "ré",
        ] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn tab_and_shift_tab_move_between_fields_and_typing_fills_the_focused_one() {
        let dir = tempfile::tempdir().unwrap();
        let (mut form, _) = form(dir.path());
        let mut out = PaneOut::default();
        type_text(&mut form, "finder");
        press(&mut form, key(KeyCode::Tab), &mut out);
        assert_eq!(form.focus(), FormField::Description);
        type_text(&mut form, "Finds it");
        press(&mut form, key(KeyCode::Backspace), &mut out);
        press(&mut form, key(KeyCode::BackTab), &mut out);
        assert_eq!(form.focus(), FormField::Name);
        type_text(&mut form, "x");
        press(&mut form, key(KeyCode::BackTab), &mut out);
        assert_eq!(
            form.focus(),
            FormField::Place,
            "Shift+Tab wraps to the last"
        );
        press(&mut form, key(KeyCode::Char(' ')), &mut out);
        assert_eq!(form.values().place, Place::User);
        press(&mut form, key(KeyCode::Left), &mut out);
        assert_eq!(form.values().place, Place::Project);
        assert_eq!(form.values().name, "finderx");
        assert_eq!(form.values().description, "Finds i");
        // Enter on a field before the last moves on; nothing is written.
        press(&mut form, key(KeyCode::Tab), &mut out);
        press(&mut form, key(KeyCode::Enter), &mut out);
        assert_eq!(form.focus(), FormField::Description);
        assert!(out.notices.is_empty());
        assert!(!dir.path().join("project").exists());
    }

    #[test]
    fn a_bad_name_or_no_description_is_said_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (mut form, created) = form(dir.path());
        let mut out = PaneOut::default();
        type_text(&mut form, "Bad_Name");
        press(&mut form, key(KeyCode::Tab), &mut out);
        let step = press(&mut form, ctrl('s'), &mut out);
        assert!(matches!(step, PaneStep::Stay));
        assert!(
            form.error()
                .unwrap()
                .contains("lowercase letters, digits and hyphens")
        );
        assert_eq!(form.focus(), FormField::Name, "the focus goes to the field");
        press(&mut form, ctrl('u'), &mut out);
        type_text(&mut form, "good");
        assert_eq!(form.error(), None, "an edit clears it");
        press(&mut form, ctrl('s'), &mut out);
        assert_eq!(form.error(), Some("a description is required"));
        assert_eq!(form.focus(), FormField::Description);
        assert!(out.notices.is_empty());
        assert!(created.lock().unwrap().is_none());
        assert!(!dir.path().join("project").exists());
    }

    #[test]
    fn unknown_tools_are_warned_once_then_written_as_typed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut form, _) = form(dir.path());
        let mut out = PaneOut::default();
        type_text(&mut form, "runner");
        press(&mut form, key(KeyCode::Tab), &mut out);
        type_text(&mut form, "Runs things");
        press(&mut form, key(KeyCode::Tab), &mut out);
        type_text(
            &mut form,
            "Bash(git *), Task, mcp__gh__issue, Frobnicate, Grpe",
        );
        assert_eq!(
            form.values().unknown_tools(&places(dir.path()).known_tools),
            ["Frobnicate", "Grpe"],
            "patterns, aliases and MCP tools are known"
        );
        let step = press(&mut form, ctrl('s'), &mut out);
        assert!(matches!(step, PaneStep::Stay));
        assert!(
            form.error()
                .unwrap()
                .contains("unknown tool(s): Frobnicate, Grpe")
        );
        let path = dir.path().join("project/.cadre/agents/runner.md");
        assert!(!path.exists());
        let step = press(&mut form, ctrl('s'), &mut out);
        assert!(matches!(step, PaneStep::Close));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\ntools: Bash(git *), Task, mcp__gh__issue, Frobnicate, Grpe\n"),
            "{text}"
        );
    }

    #[test]
    fn enter_on_the_last_field_writes_a_file_the_core_loads() {
        let dir = tempfile::tempdir().unwrap();
        let (mut form, created) = form(dir.path());
        let mut out = PaneOut::default();
        type_text(&mut form, "code-reviewer");
        press(&mut form, key(KeyCode::Tab), &mut out);
        type_text(&mut form, "Use it: after edits, # always");
        press(&mut form, key(KeyCode::Tab), &mut out);
        type_text(&mut form, "Read, Grep, Glob");
        press(&mut form, key(KeyCode::Tab), &mut out);
        type_text(&mut form, "haiku");
        press(&mut form, key(KeyCode::Tab), &mut out);
        let step = press(&mut form, key(KeyCode::Enter), &mut out);
        assert!(matches!(step, PaneStep::Close), "{:?}", form.error());
        assert_eq!(created.lock().unwrap().as_deref(), Some("code-reviewer"));
        assert_eq!(out.notices.len(), 1);
        assert!(
            out.notices[0].contains(".cadre/agents/code-reviewer.md"),
            "{:?}",
            out.notices
        );
        let path = dir.path().join("project/.cadre/agents/code-reviewer.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let outcome = cadre_core::subagents::definition::parse_definition(
            &text,
            &path,
            cadre_core::subagents::DefinitionSource::Project,
        );
        assert!(outcome.issues.is_empty(), "{:?}\n{text}", outcome.issues);
        let def = outcome.definition.unwrap();
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(def.description, "Use it: after edits, # always");
        assert_eq!(
            def.tools,
            Some(vec!["Read".into(), "Grep".into(), "Glob".into()])
        );
        assert_eq!(def.model.as_deref(), Some("haiku"));
        assert!(def.prompt.contains("placeholder"), "{}", def.prompt);
    }

    #[test]
    fn a_user_file_is_private_and_an_existing_file_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path());
        let agent = NewAgent {
            name: "helper".into(),
            description: "Helps.".into(),
            tools: String::new(),
            model: String::new(),
            place: Place::User,
        };
        let written = agent.write(&places).unwrap();
        assert_eq!(written.path, dir.path().join("home/agents/helper.md"));
        assert_eq!(written.shown, "~/.cadre/agents/helper.md");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&written.path), 0o600);
            assert_eq!(mode(&dir.path().join("home/agents")), 0o700);
        }
        let text = std::fs::read_to_string(&written.path).unwrap();
        assert!(
            !text.contains("tools:") && !text.contains("model:"),
            "{text}"
        );
        std::fs::write(&written.path, "mine").unwrap();
        let again = agent.write(&places).unwrap_err();
        assert_eq!(
            again,
            "~/.cadre/agents/helper.md already exists; it was not overwritten"
        );
        assert_eq!(std::fs::read_to_string(&written.path).unwrap(), "mine");
        // A name the same place already defines (in another file) is refused too.
        let taken = NewAgentPlaces {
            existing: vec![super::super::AgentEntry {
                name: "other".into(),
                source: "user".into(),
                file: Some("~/.cadre/agents/misc.md".into()),
                description: String::new(),
                color: None,
                overrides: Vec::new(),
            }],
            ..places
        };
        let other = NewAgent {
            name: "other".into(),
            ..agent
        };
        let problem = other.problem(&taken).unwrap();
        assert_eq!(problem.0, FormField::Name);
        assert!(
            problem
                .1
                .contains("already defined in ~/.cadre/agents/misc.md")
        );
        assert!(other.write(&taken).is_err());
        assert!(!dir.path().join("home/agents/other.md").exists());
    }

    #[test]
    fn odd_text_is_quoted_and_plain_text_is_not() {
        assert_eq!(yaml_scalar("Finds things."), "Finds things.");
        assert_eq!(yaml_scalar("Use it: when"), "\"Use it: when\"");
        assert_eq!(yaml_scalar("*"), "\"*\"");
        assert_eq!(yaml_scalar("yes"), "\"yes\"");
        assert_eq!(yaml_scalar("1.5"), "\"1.5\"");
        assert_eq!(yaml_scalar("say \"hi\" \\"), "say \"hi\" \\");
        assert_eq!(yaml_scalar("\"hi\""), "\"\\\"hi\\\"\"");
    }
}
