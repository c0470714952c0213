//! bench/tui: what one redraw of a 10,000-line transcript costs on ratatui's
//! `TestBackend` (the drawing work without a terminal's I/O). Not a test:
//! it prints figures and writes them as JSON to the path given (or stdout).
//!
//!     cargo run -p cadre-tui --example redraw -- bench/results/tui.json
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cadre_core::protocol::Event;
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::theme::Theme;
use cadre_tui::transcript::EntryKind;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

/// Rows of transcript the benchmark builds (at the widest terminal measured).
const TARGET_ROWS: usize = 10_000;
/// Frames timed per case.
const FRAMES: usize = 300;

fn transcript(width: u16, theme: &Theme) -> (App, usize) {
    let mut app = App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        ..SessionInfo::default()
    });
    let t0 = Instant::now();
    let mut i = 0;
    let rows = |app: &App| -> usize {
        app.transcript
            .entries()
            .iter()
            .map(|e| e.rows(width, false, theme).len())
            .sum()
    };
    while rows(&app) < TARGET_ROWS {
        app.transcript.push(EntryKind::User(format!(
            "question {i}: where is the config parsed?"
        )));
        app.apply(
            &Event::TextDelta {
                agent: "main".into(),
                text: format!(
                    "## Step {i}\n\nThe config is parsed in `config.rs`; **load** reads the file and merge applies the flags, which takes a while to explain in a line long enough to wrap.\n\n- first point\n- second point\n\n```rust\nfn step_{i}() -> u32 {{\n    {i}\n}}\n```\n"
                ),
            },
            t0,
        );
        app.apply(
            &Event::ToolCallStarted {
                agent: "main".into(),
                call_id: format!("c{i}"),
                tool: "Edit".into(),
                input: json!({"file_path": "src/config.rs", "old_string": "let a = 1;\nlet b = 2;\n", "new_string": "let a = 10;\nlet b = 2;\n"}),
                summary: "src/config.rs".into(),
            },
            t0,
        );
        app.apply(
            &Event::ToolCallEnded {
                agent: "main".into(),
                call_id: format!("c{i}"),
                tool: "Edit".into(),
                summary: String::new(),
                is_error: false,
                outcome: "edited".into(),
                output_bytes: 10,
                duration_ms: 1,
            },
            t0,
        );
        i += 1;
    }
    let n = rows(&app);
    (app, n)
}

/// Per-frame times in µs: median, 99th percentile, max.
fn stats(mut samples: Vec<Duration>) -> serde_json::Value {
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    json!({
        "median_us": (at(0.5) * 10.0).round() / 10.0,
        "p99_us": (at(0.99) * 10.0).round() / 10.0,
        "max_us": (at(1.0) * 10.0).round() / 10.0,
        "frames": samples.len(),
    })
}

fn time_frames(
    terminal: &mut Terminal<TestBackend>,
    app: &mut App,
    theme: &Theme,
    mut before: impl FnMut(&mut App, usize),
) -> Vec<Duration> {
    (0..FRAMES)
        .map(|n| {
            before(app, n);
            let now = Instant::now();
            let start = Instant::now();
            terminal.draw(|f| view::render(f, app, now, theme)).unwrap();
            start.elapsed()
        })
        .collect()
}

fn main() {
    let theme = Theme { color: true };
    let mut cases = serde_json::Map::new();
    for (width, height) in [(120u16, 40u16), (80, 24)] {
        let (mut app, rows) = transcript(width, &theme);
        // The layout built while counting rows is dropped, so the first
        // frame lays out what it shows from scratch.
        let (mut fresh, _) = transcript(width.saturating_sub(1), &theme);
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let start = Instant::now();
        terminal
            .draw(|f| view::render(f, &fresh, Instant::now(), &theme))
            .unwrap();
        let first = start.elapsed();
        let _ = &mut fresh;
        let bottom = time_frames(&mut terminal, &mut app, &theme, |_, _| {});
        let middle = time_frames(&mut terminal, &mut app, &theme, |app, _| {
            app.scroll = rows / 2
        });
        let top = time_frames(&mut terminal, &mut app, &theme, |app, _| app.scroll = rows);
        app.scroll = 0;
        // Streaming: each frame follows a new piece of the reply.
        let streaming = time_frames(&mut terminal, &mut app, &theme, |app, n| {
            app.apply(
                &Event::TextDelta {
                    agent: "main".into(),
                    text: format!("word{n} "),
                },
                Instant::now(),
            )
        });
        // 16 children reporting while the transcript is long: each frame
        // follows a burst of one progress event per child.
        app.apply(
            &Event::TurnStarted {
                agent: "main".into(),
                notices: false,
            },
            Instant::now(),
        );
        for c in 1..=16 {
            app.apply(
                &Event::SubagentStarted {
                    index: c,
                    total: 16,
                    agent_id: format!("child{c}").into(),
                    agent_type: "Explore".into(),
                    description: format!("search part {c} of the tree"),
                    model: "m".into(),
                    mode: cadre_core::protocol::PermissionMode::Plan,
                    path: Vec::new(),
                    color: None,
                },
                Instant::now(),
            );
        }
        let sixteen = time_frames(&mut terminal, &mut app, &theme, |app, _| {
            for c in 1..=16 {
                app.apply(
                    &Event::SubagentProgress {
                        index: c,
                        total: 16,
                        agent_type: "Explore".into(),
                        agent_id: format!("child{c}").into(),
                        tool: "Grep".into(),
                        outcome: cadre_core::protocol::ChildCallOutcome::Completed,
                        summary: String::new(),
                        path: Vec::new(),
                    },
                    Instant::now(),
                );
            }
        });
        let key = format!("{width}x{height}");
        let case = json!({
            "transcript_rows": rows,
            "transcript_entries": app.transcript.entries().len(),
            "first_frame_us": (first.as_secs_f64() * 1e7).round() / 10.0,
            "at_bottom": stats(bottom),
            "scrolled_to_middle": stats(middle),
            "scrolled_to_top": stats(top),
            "streaming_into_last_entry": stats(streaming),
            "sixteen_children_reporting": stats(sixteen),
        });
        println!("{key}: {case}");
        cases.insert(key, case);
    }
    let result = json!({
        "benchmark": "tui",
        "what": "one redraw of a transcript of 10,000+ rows on ratatui's TestBackend (view::render, no terminal I/O)",
        "profile": if cfg!(debug_assertions) { "dev (cadre-tui at opt-level 0, dependencies at 1)" } else { "release" },
        "target": "< 2 ms per frame",
        // A busy machine inflates the tail (p99, max) far more than the median.
        "load_average_1m": std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse::<f64>().ok())),
        "cases": cases,
    });
    let text = serde_json::to_string_pretty(&result).unwrap();
    match std::env::args().nth(1) {
        Some(path) => std::fs::write(&path, text + "\n").unwrap(),
        None => println!("{text}"),
    }
}
