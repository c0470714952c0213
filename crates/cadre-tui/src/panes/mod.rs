//! The panes commands open over the transcript (see [`crate::pane`]).

pub mod agents;
pub mod board;
pub mod config;
pub mod rewind;
pub mod sessions;
pub mod tasks;
pub mod todos;
pub mod transcript;
