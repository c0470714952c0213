//! `cadre-mock --script FILE [--port 0] [--record FILE]`

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

// One source with cadre's own: the mock's runtime serves many connections
// at once too, and would stall as cadre did when they pass 64.
#[path = "../../cadre-cli/src/descriptors.rs"]
mod descriptors;

/// Scripted Anthropic/OpenAI-compatible model server for tests and demos.
#[derive(Debug, Parser)]
#[command(name = "cadre-mock", version)]
struct Args {
    /// YAML script file.
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append one JSON line per request to this file.
    #[arg(long)]
    record: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    // While there is one thread (before the runtime's workers start).
    descriptors::reserve_table();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?
        .block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = match std::fs::read_to_string(&args.script) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "cadre-mock: cannot read script {}: {e}",
                args.script.display()
            );
            std::process::exit(2);
        }
    };
    let script = match cadre_mock::parse_script(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cadre-mock: {}: {e}", args.script.display());
            std::process::exit(2);
        }
    };
    let server = cadre_mock::MockServer::start_on(script, args.port, args.record)
        .await
        .context("cannot start cadre-mock")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.url())?;
        out.flush()?;
    }
    tokio::signal::ctrl_c()
        .await
        .context("waiting for ctrl-c")?;
    drop(server);
    Ok(())
}
