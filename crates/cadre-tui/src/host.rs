//! What the TUI asks of the program that runs it, and what comes back.
//! Commands that need more than the session (the definitions, the
//! settings, other sessions, starting a new session) are answered by the
//! host, the binary's side, over a pair of channels, so a slow one never
//! holds up the screen.

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{Event, Op};
use tokio::sync::mpsc;

use crate::app::SessionInfo;
use crate::commands::Command;
use crate::pane::Pane;

/// A request to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRequest {
    /// Run this command (one the TUI does not answer itself).
    Command(Command),
    /// Open teammate NAME's live transcript (typed text then goes to it).
    Teammate(String),
}

/// A session the TUI is to show from now on (after `/clear` or `/resume`).
pub struct SessionSwitch {
    /// Its handle.
    pub handle: SessionHandle,
    /// Its events.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// What the status line says of it.
    pub info: SessionInfo,
}

/// An answer from the host.
pub enum HostReply {
    /// Text to show in the transcript.
    Text(String),
    /// A warning to show in the transcript.
    Warning(String),
    /// Submit this operation to the session.
    Submit(Op),
    /// Open this pane.
    Open(Box<dyn Pane>),
    /// The session is ending to make way for another: its events will end
    /// and a [`HostReply::Switched`] follows.
    Switching,
    /// Show this session from now on.
    Switched(Box<SessionSwitch>),
    /// Leave.
    Exit,
    /// The request is answered in full (sent last, once per request):
    /// messages typed while it ran are sent now.
    Done,
}

/// The TUI's ends of the channels to its host.
pub struct Host {
    /// Requests to the host.
    pub requests: mpsc::UnboundedSender<HostRequest>,
    /// Its answers.
    pub replies: mpsc::UnboundedReceiver<HostReply>,
}

/// The host's ends of the same channels.
pub struct HostEnd {
    /// Requests from the TUI.
    pub requests: mpsc::UnboundedReceiver<HostRequest>,
    /// Answers to it.
    pub replies: mpsc::UnboundedSender<HostReply>,
}

/// A connected pair: the TUI's end and the host's.
pub fn channel() -> (Host, HostEnd) {
    let (req_tx, req_rx) = mpsc::unbounded_channel();
    let (rep_tx, rep_rx) = mpsc::unbounded_channel();
    (
        Host {
            requests: req_tx,
            replies: rep_rx,
        },
        HostEnd {
            requests: req_rx,
            replies: rep_tx,
        },
    )
}
