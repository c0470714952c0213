//! Permissions: modes, allow/ask/deny rules, the per-session approval gate and
//! each agent's own approvals. Whether a call runs is decided in `policy`; who
//! answers a question is the front end's business.

mod bash_rules;
mod effect;
mod gate;
mod glob_plan;
mod grants;
#[cfg(test)]
mod lexer_fuzz;
mod path_rules;
mod policy;
mod read_only;
pub mod rules;
#[cfg(test)]
mod rules_tests;
mod shell;
#[cfg(test)]
mod shell_tests;
mod wrappers;

pub use crate::protocol::{ApprovalAnswer, ApprovalQuestion, PermissionMode};
pub use effect::ToolEffect;
pub use gate::{ApprovalGate, ApprovalSource, HEADLESS_DENIAL, Headless};
pub use glob_plan::glob_plan;
pub use grants::ActiveGrants;
pub use policy::{
    Decision, ModeSwitch, PermissionPolicy, PermissionTracker, decided_path, resolve_real,
};
pub use read_only::is_read_only_command;

#[cfg(test)]
mod plan_tests;
