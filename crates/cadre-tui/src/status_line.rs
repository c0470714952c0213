//! The user's own status line (`statusLine` in settings): a command run
//! with Claude Code's JSON on its stdin whose output lines replace cadre's
//! status line. Runs are debounced, a newer run cancels an older one, and a
//! run that takes too long is killed, so a hanging script never holds up
//! the screen. Its output keeps SGR colours and OSC 8 links; every other
//! control sequence is dropped ([`parse_status_text`]).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use cadre_core::protocol::Event;
use ratatui::style::{Color, Modifier, Style};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::sanitize::is_bidi_override;

/// Wait after a trigger before running, so a burst of events is one run.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Longest a run may take before it is killed.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Rows of output shown at most.
pub const MAX_ROWS: usize = 3;
/// Bytes of output read at most.
const MAX_OUTPUT_BYTES: usize = 16 * 1024;
/// Characters of one row kept at most.
const MAX_ROW_CHARS: usize = 500;
/// Characters of a link target kept at most.
const MAX_LINK_CHARS: usize = 2000;

/// What runs the status line, and the facts about the session its JSON
/// gives that the screen does not track.
#[derive(Debug, Clone, Default)]
pub struct StatusLineSetup {
    /// The command (run with `sh -c`).
    pub command: String,
    /// Columns of blank space before each row.
    pub padding: u16,
    /// Run this often besides the triggers, if set.
    pub refresh: Option<Duration>,
    /// The project directory (the command's working directory).
    pub project_dir: PathBuf,
    /// Extra environment for the command (the settings' `env`).
    pub env: Vec<(String, String)>,
    /// The session's id.
    pub session_id: String,
    /// The session's log.
    pub transcript_path: PathBuf,
    /// The output style's name.
    pub output_style: String,
    /// cadre's version.
    pub version: String,
    /// The model's context window in tokens (until the session reports one).
    pub context_window: u64,
    /// `--agent`'s definition name, if any.
    pub agent_name: Option<String>,
    /// The worktree the session runs in (`{name, path, branch, …}`), if any.
    pub worktree: Option<Value>,
}

/// One piece of a row: text, its colours, and the link it is part of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSpan {
    /// Visible text (no control characters).
    pub text: String,
    /// Colours and attributes from SGR sequences.
    pub style: Style,
    /// The OSC 8 link target, if the text is a link.
    pub link: Option<String>,
}

/// One row of the status line.
pub type StatusRow = Vec<StatusSpan>;

/// Counts the JSON reports that the screen does not keep.
#[derive(Debug, Clone, Default)]
struct Facts {
    input_tokens: u64,
    output_tokens: u64,
    /// The main agent's last request: input, output, cache read, cache write.
    last: Option<(u64, u64, u64, u64)>,
    window: Option<u64>,
    api_ms: u64,
    turn_started: Option<Instant>,
    lines_added: u64,
    lines_removed: u64,
}

/// The runner: when to run next, the run in flight, and what came back.
pub struct StatusLine {
    setup: StatusLineSetup,
    facts: Facts,
    started: Instant,
    due: Option<Instant>,
    generation: u64,
    running: Option<JoinHandle<()>>,
    results: mpsc::UnboundedSender<(u64, Option<Vec<StatusRow>>)>,
    /// Rows (or `None` for a failed run) from the runs, with their generation.
    pub output: mpsc::UnboundedReceiver<(u64, Option<Vec<StatusRow>>)>,
}

impl StatusLine {
    /// A runner for `setup`; its first run is due after the debounce.
    pub fn new(setup: StatusLineSetup) -> StatusLine {
        let (results, output) = mpsc::unbounded_channel();
        let now = Instant::now();
        StatusLine {
            setup,
            facts: Facts::default(),
            started: now,
            due: Some(now),
            generation: 0,
            running: None,
            results,
            output,
        }
    }

    /// The next session's facts (after `/clear` or `/resume`): counts start again.
    pub fn switch(&mut self, setup: StatusLineSetup) {
        self.setup = setup;
        self.facts = Facts::default();
        self.started = Instant::now();
        self.trigger(Instant::now());
    }

    /// How often the timer runs it.
    pub fn refresh(&self) -> Option<Duration> {
        self.setup.refresh
    }

    /// Columns of padding before each row.
    pub fn padding(&self) -> u16 {
        self.setup.padding
    }

    /// Asks for a run after the debounce (a pending one moves later).
    pub fn trigger(&mut self, now: Instant) {
        self.due = Some(now + DEBOUNCE);
    }

    /// When the next run is due, if one is.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Notes what `event` says of the session; true when the status line
    /// should run again (a reply, a compaction, a mode or model change).
    pub fn observe(&mut self, event: &Event) -> bool {
        const MAIN: &str = cadre_core::protocol::MAIN_AGENT;
        match event {
            Event::SessionStarted { .. } => true,
            Event::TurnStarted { agent, .. } if agent == MAIN => {
                self.facts.turn_started = Some(Instant::now());
                false
            }
            Event::TurnEnded { agent, .. } if agent == MAIN => {
                if let Some(t) = self.facts.turn_started.take() {
                    self.facts.api_ms += t.elapsed().as_millis() as u64;
                }
                true
            }
            Event::Usage { agent, usage, .. } if agent == MAIN => {
                self.facts.input_tokens +=
                    usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
                self.facts.output_tokens += usage.output_tokens;
                self.facts.last = Some((
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                ));
                false
            }
            Event::ContextUsage { agent, window, .. } if agent == MAIN => {
                self.facts.window = Some(*window);
                false
            }
            Event::AssistantMessage { agent, .. } if agent == MAIN => true,
            Event::CompactionEnded { agent, .. } if agent == MAIN => true,
            Event::ModeChanged { agent, .. } | Event::ModelChanged { agent, .. }
                if agent == MAIN =>
            {
                true
            }
            _ => false,
        }
    }

    /// Adds a file change's lines to the session's counts.
    pub fn lines_changed(&mut self, added: u64, removed: u64) {
        self.facts.lines_added += added;
        self.facts.lines_removed += removed;
    }

    /// Starts the run that is due, cancelling one still in flight.
    pub fn run_due(&mut self, app: &App) {
        self.due = None;
        if let Some(old) = self.running.take() {
            // The child is killed as its handle drops (`kill_on_drop`).
            old.abort();
        }
        self.generation += 1;
        let generation = self.generation;
        let input = self.input(app).to_string();
        let setup = self.setup.clone();
        let results = self.results.clone();
        self.running = Some(tokio::spawn(async move {
            let rows = run_command(&setup, input).await;
            let _ = results.send((generation, rows));
        }));
    }

    /// True when `generation` is the latest run's (older results are dropped).
    pub fn is_current(&self, generation: u64) -> bool {
        generation == self.generation
    }

    /// The JSON the command reads on its stdin.
    pub fn input(&self, app: &App) -> Value {
        let s = &self.setup;
        let f = &self.facts;
        let dir = s.project_dir.display().to_string();
        let window = f.window.unwrap_or(s.context_window);
        let (used, current) = match f.last {
            Some((input, output, read, write)) if window > 0 => {
                let used = ((input + read + write) as f64 * 100.0 / window as f64).min(100.0);
                let used = (used * 10.0).round() / 10.0;
                (
                    json!(used),
                    json!({
                        "input_tokens": input,
                        "output_tokens": output,
                        "cache_creation_input_tokens": write,
                        "cache_read_input_tokens": read,
                    }),
                )
            }
            _ => (Value::Null, Value::Null),
        };
        let remaining = used
            .as_f64()
            .map(|u| json!(((100.0 - u) * 10.0).round() / 10.0));
        let last_input = f.last.map_or(0, |(i, _, r, w)| i + r + w);
        let mut out = json!({
            "hook_event_name": "Status",
            "session_id": s.session_id,
            "transcript_path": s.transcript_path.display().to_string(),
            "cwd": dir,
            "model": {"id": app.info.model, "display_name": display_name(&app.info.model)},
            "workspace": {"current_dir": dir, "project_dir": dir, "added_dirs": []},
            "version": s.version,
            "output_style": {"name": s.output_style},
            "permission_mode": app.info.permission_mode.to_string(),
            "cost": {
                "total_cost_usd": app.cost_nanos.map_or(0.0, |n| n as f64 / 1e9),
                "total_duration_ms": self.started.elapsed().as_millis() as u64,
                "total_api_duration_ms": f.api_ms,
                "total_lines_added": f.lines_added,
                "total_lines_removed": f.lines_removed,
            },
            "context_window": {
                "total_input_tokens": f.input_tokens,
                "total_output_tokens": f.output_tokens,
                "context_window_size": window,
                "used_percentage": used,
                "remaining_percentage": remaining.unwrap_or(Value::Null),
                "current_usage": current,
            },
            "exceeds_200k_tokens": last_input > 200_000,
        });
        if let Some(name) = &s.agent_name {
            out["agent"] = json!({"name": name});
        }
        if let Some(worktree) = &s.worktree {
            out["worktree"] = worktree.clone();
        }
        out
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        if let Some(run) = self.running.take() {
            run.abort();
        }
    }
}

/// A model id as people read it: `claude-sonnet-4-5` → `Sonnet 4.5`; other
/// ids as they are.
fn display_name(id: &str) -> String {
    let Some(rest) = id.strip_prefix("claude-") else {
        return id.to_string();
    };
    let mut words = rest.split('-');
    let Some(family) = words.next() else {
        return id.to_string();
    };
    let version: Vec<&str> = words
        .take_while(|w| w.len() <= 2 && w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let mut name: String = family
        .chars()
        .enumerate()
        .map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c })
        .collect();
    if !version.is_empty() {
        name.push(' ');
        name.push_str(&version.join("."));
    }
    name
}

/// Runs the command once with `input` on its stdin: its rows, or `None`
/// when it failed, printed nothing or ran past [`TIMEOUT`].
async fn run_command(setup: &StatusLineSetup, input: String) -> Option<Vec<StatusRow>> {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&setup.command)
        .current_dir(&setup.project_dir)
        .envs(setup.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Ok((cols, rows)) = ratatui::crossterm::terminal::size() {
        command
            .env("COLUMNS", cols.to_string())
            .env("LINES", rows.to_string());
    }
    // Like a hook, it never sees cadre's model keys.
    for key in cadre_core::secrets::secret_vars() {
        command.env_remove(key);
    }
    command.env("CLAUDE_PROJECT_DIR", &setup.project_dir);
    // Its own process group, so a timeout ends what it started too.
    command.process_group(0);
    // It dies with cadre.
    // SAFETY: prctl(2) only, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().ok()?;
    let pid = child.id();
    // A run cancelled by a newer one is dropped mid-way: `kill_on_drop`
    // ends only the shell, so the guard ends the whole group it started.
    let mut group = GroupKill(pid.and_then(|p| i32::try_from(p).ok()));
    let run = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A script that never reads its stdin must not block the run.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
        let mut out = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = stdout
                .take(MAX_OUTPUT_BYTES as u64)
                .read_to_end(&mut out)
                .await;
        }
        let status = child.wait().await.ok()?;
        status.success().then_some(out)
    };
    let out = match tokio::time::timeout(TIMEOUT, run).await {
        Ok(out) => {
            group.0 = None;
            out
        }
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: kill(2) on the group this run started; no memory is touched.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            // Reaped here, not left a zombie.
            let _ = child.wait().await;
            None
        }
    }?;
    let text = String::from_utf8_lossy(&out);
    let rows: Vec<StatusRow> = text
        .lines()
        .map(parse_status_text)
        .filter(|row| row.iter().any(|s| !s.text.trim().is_empty()))
        .take(MAX_ROWS)
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// One line of a status command's output as styled spans: SGR sequences
/// (`ESC [ … m`) become styles and OSC 8 hyperlinks become links; every
/// other escape sequence is dropped whole, and other control characters
/// (and bidirectional overrides) are shown as `�`, never written raw.
pub fn parse_status_text(line: &str) -> StatusRow {
    let mut spans: StatusRow = Vec::new();
    let mut style = Style::default();
    let mut link: Option<String> = None;
    let mut text = String::new();
    let mut kept = 0usize;
    let mut chars = line.chars().peekable();
    let flush = |spans: &mut StatusRow, text: &mut String, style: Style, link: &Option<String>| {
        if !text.is_empty() {
            spans.push(StatusSpan {
                text: std::mem::take(text),
                style,
                link: link.clone(),
            });
        }
    };
    while let Some(c) = chars.next() {
        if kept >= MAX_ROW_CHARS {
            break;
        }
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut last = None;
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            last = Some(c);
                            break;
                        }
                        params.push(c);
                    }
                    if last == Some('m') && params.chars().all(|c| c.is_ascii_digit() || c == ';') {
                        flush(&mut spans, &mut text, style, &link);
                        style = apply_sgr(style, &params);
                    }
                }
                Some(']') => {
                    let body = osc_body(&mut chars);
                    if let Some(rest) = body.strip_prefix("8;") {
                        flush(&mut spans, &mut text, style, &link);
                        link = rest
                            .split_once(';')
                            .map(|(_, target)| target)
                            .filter(|t| !t.is_empty() && t.chars().count() <= MAX_LINK_CHARS)
                            .filter(|t| t.chars().all(|c| c.is_ascii_graphic()))
                            .map(str::to_string);
                    }
                }
                Some('P' | '_' | '^' | 'X') => {
                    osc_body(&mut chars);
                }
                // Any other escape: its one character goes with it.
                _ => {}
            },
            '\t' => {
                text.push(' ');
                kept += 1;
            }
            c if c.is_control() || is_bidi_override(c) => {
                text.push('�');
                kept += 1;
            }
            c => {
                text.push(c);
                kept += 1;
            }
        }
    }
    flush(&mut spans, &mut text, style, &link);
    spans
}

/// Reads a string sequence's body up to BEL or `ESC \` (or the line's end).
fn osc_body(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut body = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            c => body.push(c),
        }
    }
    body
}

/// `style` as SGR parameters, each after a `;` (empty for the default):
/// the inverse of [`apply_sgr`], for writing a styled link.
pub fn sgr_params(style: Style) -> String {
    let mut out = String::new();
    for (modifier, code) in [
        (Modifier::BOLD, 1),
        (Modifier::DIM, 2),
        (Modifier::ITALIC, 3),
        (Modifier::UNDERLINED, 4),
        (Modifier::REVERSED, 7),
        (Modifier::CROSSED_OUT, 9),
    ] {
        if style.add_modifier.contains(modifier) {
            out.push_str(&format!(";{code}"));
        }
    }
    for (color, base) in [(style.fg, 38), (style.bg, 48)] {
        match color {
            Some(Color::Indexed(n)) => out.push_str(&format!(";{base};5;{n}")),
            Some(Color::Rgb(r, g, b)) => out.push_str(&format!(";{base};2;{r};{g};{b}")),
            _ => {}
        }
    }
    out
}

/// `style` changed by the SGR parameters `params` (`1;31`, `38;5;208`, …).
fn apply_sgr(mut style: Style, params: &str) -> Style {
    let codes: Vec<u16> = if params.is_empty() {
        vec![0]
    } else {
        params.split(';').map(|p| p.parse().unwrap_or(0)).collect()
    };
    let mut i = 0;
    while i < codes.len() {
        let code = codes[i];
        match code {
            0 => style = Style::default(),
            1 => style = style.add_modifier(Modifier::BOLD),
            2 => style = style.add_modifier(Modifier::DIM),
            3 => style = style.add_modifier(Modifier::ITALIC),
            4 => style = style.add_modifier(Modifier::UNDERLINED),
            7 => style = style.add_modifier(Modifier::REVERSED),
            9 => style = style.add_modifier(Modifier::CROSSED_OUT),
            22 => style = style.remove_modifier(Modifier::BOLD | Modifier::DIM),
            23 => style = style.remove_modifier(Modifier::ITALIC),
            24 => style = style.remove_modifier(Modifier::UNDERLINED),
            27 => style = style.remove_modifier(Modifier::REVERSED),
            29 => style = style.remove_modifier(Modifier::CROSSED_OUT),
            30..=37 => style = style.fg(Color::Indexed((code - 30) as u8)),
            39 => style.fg = None,
            40..=47 => style = style.bg(Color::Indexed((code - 40) as u8)),
            49 => style.bg = None,
            90..=97 => style = style.fg(Color::Indexed((code - 90 + 8) as u8)),
            100..=107 => style = style.bg(Color::Indexed((code - 100 + 8) as u8)),
            38 | 48 => {
                let color = match codes.get(i + 1) {
                    Some(5) => {
                        let c = codes.get(i + 2).map(|n| Color::Indexed(*n as u8));
                        i += 2;
                        c
                    }
                    Some(2) => {
                        let rgb = (codes.get(i + 2), codes.get(i + 3), codes.get(i + 4));
                        i += 4;
                        match rgb {
                            (Some(r), Some(g), Some(b)) => {
                                Some(Color::Rgb(*r as u8, *g as u8, *b as u8))
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some(color) = color {
                    style = if code == 38 {
                        style.fg(color)
                    } else {
                        style.bg(color)
                    };
                }
            }
            _ => {}
        }
        i += 1;
    }
    style
}

/// Kills a run's process group when dropped while armed.
struct GroupKill(Option<i32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: kill(2) on the group this run started; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(row: &StatusRow) -> String {
        row.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn sgr_colours_become_styles() {
        let row =
            parse_status_text("\u{1b}[1;32mok\u{1b}[0m plain \u{1b}[38;5;208mo\u{1b}[38;2;1;2;3mr");
        assert_eq!(texts(&row), "ok plain or");
        assert_eq!(
            row[0].style,
            Style::default()
                .add_modifier(Modifier::BOLD)
                .fg(Color::Indexed(2))
        );
        assert_eq!(row[1].style, Style::default());
        assert_eq!(row[2].style.fg, Some(Color::Indexed(208)));
        assert_eq!(row[3].style.fg, Some(Color::Rgb(1, 2, 3)));
    }

    #[test]
    fn osc8_links_are_kept_with_their_text() {
        let row = parse_status_text(
            "see \u{1b}]8;;https://example.com/pr/1\u{7}PR #1\u{1b}]8;;\u{1b}\\ now",
        );
        assert_eq!(texts(&row), "see PR #1 now");
        assert_eq!(row[1].text, "PR #1");
        assert_eq!(row[1].link.as_deref(), Some("https://example.com/pr/1"));
        assert_eq!(row[0].link, None);
        assert_eq!(row[2].link, None);
    }

    #[test]
    fn other_sequences_and_controls_are_neutralised() {
        let row = parse_status_text(
            "a\u{1b}[2Jb\u{1b}]0;title\u{7}c\u{1b}]52;c;aGk=\u{7}d\u{1b}Pq#\u{1b}\\e\u{7}f\u{9b}g\u{202e}h\u{1b}[31;2Hi\u{1b}cj",
        );
        let text = texts(&row);
        assert_eq!(text, "abcde�f�g�hij");
        assert!(row.iter().all(|s| s.link.is_none()));
        assert!(row.iter().all(|s| s.style == Style::default()));
    }

    #[test]
    fn a_link_target_with_controls_or_spaces_is_dropped() {
        let row = parse_status_text("\u{1b}]8;;http://x/ y\u{7}t\u{1b}]8;;\u{7}");
        assert_eq!(texts(&row), "t");
        assert_eq!(row[0].link, None);
    }

    #[test]
    fn model_ids_read_as_names() {
        assert_eq!(display_name("claude-sonnet-4-5"), "Sonnet 4.5");
        assert_eq!(display_name("claude-opus-4-1-20250805"), "Opus 4.1");
        assert_eq!(display_name("gpt-5"), "gpt-5");
    }
}
