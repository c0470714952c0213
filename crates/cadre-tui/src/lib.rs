//! cadre's full-screen terminal front end. It renders a session's
//! [`Event`](cadre_core::protocol::Event)s and submits
//! [`Op`](cadre_core::protocol::Op)s through a
//! [`SessionHandle`](cadre_core::driver::SessionHandle), nothing more: the
//! session is the core's. The state is a plain model ([`app::App`]) updated
//! from events and keys; drawing is pure functions of it ([`view`]); the
//! terminal itself (raw mode, alternate screen, restoring it on every way
//! out) is [`terminal`]; [`run`] ties them together.

pub mod app;
pub mod children;
pub mod clipboard;
pub mod commands;
pub mod completion;
pub mod diff;
pub mod history;
pub mod host;
pub mod markdown;
pub mod pane;
pub mod panes;
pub mod prompt;
mod run;
pub mod sanitize;
pub mod status_line;
pub mod team;
pub mod terminal;
pub mod theme;
pub mod transcript;
pub mod view;
pub mod wrap;

pub use run::{Exit, TuiError, run};
