//! The one place that decides a child's permission mode (DESIGN 5, Ratchet).
//!
//! A child never gets wider permissions than its parent, except when a
//! trusted definition (managed, `--agents` flag, user-level, built-in) asks
//! for it:
//! - if the session mode is `bypassPermissions` or `acceptEdits`, it wins over
//!   any mode a definition asks for;
//! - a plan-mode session's children run in plan mode too, whatever is asked;
//! - otherwise no request means the parent's mode;
//! - a request at least as strict as the parent's applies;
//! - a wider request applies only from a trusted source; from a project or
//!   plugin definition the child runs at the parent's mode, with a note.

use crate::permissions::PermissionMode;

use super::DefinitionSource;

/// The mode a child runs in, and why it differs from the request if it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildMode {
    /// The child's permission mode.
    pub mode: PermissionMode,
    /// Set when the definition's requested mode was not applied.
    pub note: Option<String>,
}

/// Decides a child's permission mode from its parent's, the mode its
/// definition asks for, and where the definition came from.
pub fn child_mode(
    parent: PermissionMode,
    requested: Option<PermissionMode>,
    source: DefinitionSource,
) -> ChildMode {
    let Some(requested) = requested else {
        return ChildMode {
            mode: parent,
            note: None,
        };
    };
    if matches!(
        parent,
        PermissionMode::BypassPermissions | PermissionMode::AcceptEdits
    ) {
        let note = (requested != parent).then(|| {
            format!("definition asks for {requested}; the session's {parent} takes precedence")
        });
        return ChildMode { mode: parent, note };
    }
    // Plan mode is read-only whatever a definition asks, trusted or not.
    if parent == PermissionMode::Plan && requested != parent {
        return ChildMode {
            mode: parent,
            note: Some(format!(
                "definition asks for {requested}; runs at plan (plan mode is read-only)"
            )),
        };
    }
    if requested.strictness() >= parent.strictness() || source.is_trusted() {
        return ChildMode {
            mode: requested,
            note: None,
        };
    }
    let src = source.as_str();
    ChildMode {
        mode: parent,
        note: Some(format!(
            "{src} definition asks for {requested}; runs at {parent} \
             (a {src} file cannot widen permissions)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::{AcceptEdits, BypassPermissions, Default, DontAsk, Plan};

    const SOURCES: [DefinitionSource; 6] = [
        DefinitionSource::Managed,
        DefinitionSource::Flag,
        DefinitionSource::Project,
        DefinitionSource::User,
        DefinitionSource::Plugin,
        DefinitionSource::Builtin,
    ];

    /// (parent, requested, mode from a trusted source, mode from an untrusted source)
    #[rustfmt::skip]
    const TABLE: &[(PermissionMode, Option<PermissionMode>, PermissionMode, PermissionMode)] = &[
        // Parent bypass: the session's mode wins over anything.
        (BypassPermissions, None,                    BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(Default),           BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(AcceptEdits),       BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(Plan),              BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(DontAsk),           BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(BypassPermissions), BypassPermissions, BypassPermissions),
        // Parent acceptEdits: the session's mode wins over anything.
        (AcceptEdits, None,                    AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(Default),           AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(AcceptEdits),       AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(Plan),              AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(DontAsk),           AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(BypassPermissions), AcceptEdits, AcceptEdits),
        // Parent default: stricter or equal applies; wider only if trusted.
        (Default, None,                    Default,           Default),
        (Default, Some(Default),           Default,           Default),
        (Default, Some(AcceptEdits),       AcceptEdits,       Default),
        (Default, Some(Plan),              Plan,              Plan),
        (Default, Some(DontAsk),           DontAsk,           DontAsk),
        (Default, Some(BypassPermissions), BypassPermissions, Default),
        // Parent dontAsk.
        (DontAsk, None,                    DontAsk,           DontAsk),
        (DontAsk, Some(Default),           Default,           DontAsk),
        (DontAsk, Some(AcceptEdits),       AcceptEdits,       DontAsk),
        (DontAsk, Some(Plan),              Plan,              Plan),
        (DontAsk, Some(DontAsk),           DontAsk,           DontAsk),
        (DontAsk, Some(BypassPermissions), BypassPermissions, DontAsk),
        // Parent plan: the strictest; anything else is wider.
        (Plan, None,                    Plan,              Plan),
        (Plan, Some(Default),           Plan,              Plan),
        (Plan, Some(AcceptEdits),       Plan,              Plan),
        (Plan, Some(Plan),              Plan,              Plan),
        (Plan, Some(DontAsk),           Plan,              Plan),
        (Plan, Some(BypassPermissions), Plan,              Plan),
    ];

    #[test]
    fn ratchet_child_never_wider_than_parent_unless_trusted() {
        assert_eq!(TABLE.len(), 30, "5 parents x 6 requests");
        for &(parent, requested, trusted, untrusted) in TABLE {
            for source in SOURCES {
                let expected = if source.is_trusted() {
                    trusted
                } else {
                    untrusted
                };
                let got = child_mode(parent, requested, source);
                assert_eq!(
                    got.mode, expected,
                    "parent {parent}, requested {requested:?}, source {source:?}"
                );
                // A note exactly when a request was given and not applied.
                let applied = requested.is_none_or(|r| r == got.mode);
                assert_eq!(
                    got.note.is_some(),
                    !applied,
                    "parent {parent}, requested {requested:?}, source {source:?}: {:?}",
                    got.note
                );
                // Untrusted sources never end up wider than the parent.
                if !source.is_trusted() {
                    assert!(got.mode.strictness() >= parent.strictness());
                }
            }
        }
    }

    #[test]
    fn ratchet_notes_name_the_request_and_the_mode_used() {
        let cases = [
            (
                Default,
                BypassPermissions,
                DefinitionSource::Project,
                "project definition asks for bypassPermissions; runs at default \
                 (a project file cannot widen permissions)",
            ),
            (
                Plan,
                AcceptEdits,
                DefinitionSource::Plugin,
                "definition asks for acceptEdits; runs at plan (plan mode is read-only)",
            ),
            (
                BypassPermissions,
                Plan,
                DefinitionSource::User,
                "definition asks for plan; the session's bypassPermissions takes precedence",
            ),
            (
                AcceptEdits,
                DontAsk,
                DefinitionSource::Project,
                "definition asks for dontAsk; the session's acceptEdits takes precedence",
            ),
        ];
        for (parent, requested, source, note) in cases {
            let got = child_mode(parent, Some(requested), source);
            assert_eq!(got.note.as_deref(), Some(note));
        }
    }
}
