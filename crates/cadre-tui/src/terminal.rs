//! The terminal's modes while the TUI runs: raw input, the alternate
//! screen, bracketed paste. They are restored on every way out — a normal
//! exit, an error (the guard's drop), a panic (the hook), and
//! `std::process::exit` (an `atexit` handler) — exactly once.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

/// True while the terminal is in the TUI's modes.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Holds the terminal in the TUI's modes; dropping it restores them.
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Enters raw mode, the alternate screen and bracketed paste, and makes
    /// sure a panic or an exit restores them.
    pub fn enter() -> std::io::Result<TerminalGuard> {
        install_hooks();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableBracketedPaste) {
            restore();
            return Err(e);
        }
        Ok(TerminalGuard(()))
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the TUI's modes if it is in them: paste off, alternate screen
/// left, cursor shown, raw mode off. Safe to call more than once.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.flush();
    let _ = disable_raw_mode();
}

extern "C" fn restore_at_exit() {
    restore();
}

fn install_hooks() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    // A panic's message must land on a normal screen, so restore first.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    // SAFETY: registers a plain function with no captured state; it only
    // writes to stdout and resets the terminal's modes.
    unsafe {
        libc::atexit(restore_at_exit);
    }
}
