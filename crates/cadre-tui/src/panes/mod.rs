//! The panes commands open over the transcript (see [`crate::pane`]).
pub mod sessions;
