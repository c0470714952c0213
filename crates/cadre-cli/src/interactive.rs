//! `cadre` with no subcommand: a line-based session. Each line is a turn;
//! Ctrl+C interrupts the running turn, `/exit` or Ctrl+D leaves.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use cadre_core::agent::EventSink;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ModelArgs;
use crate::render::HumanRenderer;
use crate::setup;

fn prompt() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "› ");
    let _ = err.flush();
}

/// Runs the session until the user leaves.
pub async fn run(model: &ModelArgs) -> Result<ExitCode> {
    let runtime = setup::prepare(model)?;
    for w in &runtime.settings.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "cadre · {} · {} · {}\n/exit or Ctrl+D to leave; Ctrl+C interrupts a turn",
        runtime.client.config().provider,
        runtime.client.config().model,
        runtime.cwd.display()
    );

    // stdin is read on its own thread so a turn can run while we wait for input.
    let (line_tx, mut lines) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });

    let current: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
    let on_signal = current.clone();
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            let running = on_signal.lock().ok().and_then(|g| g.clone());
            match running {
                Some(token) => token.cancel(),
                None => {
                    eprintln!("\n(use /exit or Ctrl+D to leave)");
                    prompt();
                }
            }
        }
    });

    let (sink, mut rx) = EventSink::channel();
    let mut human = HumanRenderer::for_interactive();
    let mut agent = runtime.main_agent(sink);
    loop {
        prompt();
        let Some(line) = lines.recv().await else {
            eprintln!();
            break;
        };
        let line = line.trim().to_string();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            break;
        }
        let token = CancellationToken::new();
        if let Ok(mut g) = current.lock() {
            *g = Some(token.clone());
        }
        // Render while the turn runs, then drain, so the next prompt comes last.
        let turn = agent.run_turn(line, token);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                Some(event) = rx.recv() => human.handle(&event),
                _ = &mut turn => break,
            }
        }
        while let Ok(event) = rx.try_recv() {
            human.handle(&event);
        }
        if let Ok(mut g) = current.lock() {
            *g = None;
        }
    }
    Ok(ExitCode::SUCCESS)
}
