//! The terminal's modes while the TUI runs: raw input, the alternate
//! screen, bracketed paste, and mouse capture when asked for (off by
//! default: it takes the terminal's own selection away). They are restored on every way out — a normal
//! exit, an error (the guard's drop), a panic (the hook), and
//! `std::process::exit` (an `atexit` handler) — exactly once.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

/// The environment variable that turns mouse capture on (`1`): the wheel
/// then scrolls the transcript, and selecting text needs the terminal's
/// modifier (often Shift).
pub const MOUSE_ENV: &str = "CADRE_TUI_MOUSE";

/// True when the environment asks for mouse capture (`CADRE_TUI_MOUSE=1`, `true`, `on` or `yes`).
pub fn mouse_wanted() -> bool {
    std::env::var(MOUSE_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    })
}

/// True while the terminal is in the TUI's modes.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Holds the terminal in the TUI's modes; dropping it restores them.
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Enters raw mode, the alternate screen and bracketed paste, and makes
    /// sure a panic or an exit restores them.
    pub fn enter() -> std::io::Result<TerminalGuard> {
        TerminalGuard::enter_with_mouse(false)
    }

    /// [`TerminalGuard::enter`], with mouse capture too when `mouse`.
    pub fn enter_with_mouse(mouse: bool) -> std::io::Result<TerminalGuard> {
        install_hooks();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        let mut entered = execute!(out, EnterAlternateScreen, EnableBracketedPaste);
        if mouse && entered.is_ok() {
            entered = execute!(out, EnableMouseCapture);
        }
        if let Err(e) = entered {
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

/// Leaves the TUI's modes if it is in them: mouse capture and paste off
/// (capture always, whether it was on or not: turning it off is harmless),
/// alternate screen left, cursor shown, raw mode off. Safe to call more than once.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
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
