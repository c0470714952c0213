//! The one place that decides a child's permission mode (DESIGN 5, Ratchet).
//!
//! A child never gets wider permissions than its parent, except when a
//! trusted definition (managed, `--agents` flag, user-level, built-in, or a
//! project's in a trusted folder) asks for it, as Claude Code applies
//! `permissionMode`:
//! - if the session mode is `bypassPermissions` or `acceptEdits`, it wins over
//!   any mode a definition asks for;
//! - a plan-mode session's children run in plan mode too, whatever is asked;
//! - otherwise no request means the parent's mode;
//! - `bypassPermissions` is never given where settings disable it;
//! - a request at least as strict as the parent's applies;
//! - a wider request applies only from a trusted source; from a plugin
//!   definition, or a project one in a folder not trusted, the child runs at
//!   the parent's mode, with a note.

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

/// What the session allows definitions beyond their source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModeLimits {
    /// The project folder is trusted: its definitions may widen the mode
    /// as a user's would.
    pub project_trusted: bool,
    /// A settings file disables `bypassPermissions` (no definition gets it).
    pub bypass_disabled: bool,
}

/// Decides a child's permission mode from its parent's, the mode its
/// definition asks for, where the definition came from, and what the
/// session allows.
pub fn child_mode(
    parent: PermissionMode,
    requested: Option<PermissionMode>,
    source: DefinitionSource,
    limits: ModeLimits,
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
    if requested == PermissionMode::BypassPermissions && limits.bypass_disabled {
        return ChildMode {
            mode: parent,
            note: Some(format!(
                "definition asks for {requested}; runs at {parent} (settings disable bypassPermissions)"
            )),
        };
    }
    let trusted =
        source.is_trusted() || (source == DefinitionSource::Project && limits.project_trusted);
    if requested.strictness() >= parent.strictness() || trusted {
        return ChildMode {
            mode: requested,
            note: None,
        };
    }
    let src = source.as_str();
    let why = if source == DefinitionSource::Project {
        format!("a {src} file cannot widen permissions until the folder is trusted")
    } else {
        format!("a {src} file cannot widen permissions")
    };
    ChildMode {
        mode: parent,
        note: Some(format!(
            "{src} definition asks for {requested}; runs at {parent} ({why})"
        )),
    }
}

/// A teammate's mode: decided as a child's, but never wider than the
/// lead's, whatever the definition's source (a teammate starts with the
/// lead's permissions).
pub fn teammate_mode(
    lead: PermissionMode,
    requested: Option<PermissionMode>,
    source: DefinitionSource,
    limits: ModeLimits,
) -> ChildMode {
    let child = child_mode(lead, requested, source, limits);
    if child.mode.strictness() < lead.strictness() {
        return ChildMode {
            mode: lead,
            note: Some(format!(
                "definition asks for {}; a teammate runs at the lead's {lead} at most",
                child.mode
            )),
        };
    }
    child
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

    /// (parent, requested, mode from a trusted source, from an untrusted
    /// source, from a trusted source where settings disable bypass)
    #[rustfmt::skip]
    const TABLE: &[(PermissionMode, Option<PermissionMode>, PermissionMode, PermissionMode, PermissionMode)] = &[
        // Parent bypass: the session's mode wins over anything.
        (BypassPermissions, None,                    BypassPermissions, BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(Default),           BypassPermissions, BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(AcceptEdits),       BypassPermissions, BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(Plan),              BypassPermissions, BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(DontAsk),           BypassPermissions, BypassPermissions, BypassPermissions),
        (BypassPermissions, Some(BypassPermissions), BypassPermissions, BypassPermissions, BypassPermissions),
        // Parent acceptEdits: the session's mode wins over anything.
        (AcceptEdits, None,                    AcceptEdits, AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(Default),           AcceptEdits, AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(AcceptEdits),       AcceptEdits, AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(Plan),              AcceptEdits, AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(DontAsk),           AcceptEdits, AcceptEdits, AcceptEdits),
        (AcceptEdits, Some(BypassPermissions), AcceptEdits, AcceptEdits, AcceptEdits),
        // Parent default: stricter or equal applies; wider only if trusted.
        (Default, None,                    Default,           Default,  Default),
        (Default, Some(Default),           Default,           Default,  Default),
        (Default, Some(AcceptEdits),       AcceptEdits,       Default,  AcceptEdits),
        (Default, Some(Plan),              Plan,              Plan,     Plan),
        (Default, Some(DontAsk),           DontAsk,           DontAsk,  DontAsk),
        (Default, Some(BypassPermissions), BypassPermissions, Default,  Default),
        // Parent dontAsk.
        (DontAsk, None,                    DontAsk,           DontAsk,  DontAsk),
        (DontAsk, Some(Default),           Default,           DontAsk,  Default),
        (DontAsk, Some(AcceptEdits),       AcceptEdits,       DontAsk,  AcceptEdits),
        (DontAsk, Some(Plan),              Plan,              Plan,     Plan),
        (DontAsk, Some(DontAsk),           DontAsk,           DontAsk,  DontAsk),
        (DontAsk, Some(BypassPermissions), BypassPermissions, DontAsk,  DontAsk),
        // Parent plan: the strictest; anything else is wider.
        (Plan, None,                    Plan,              Plan,     Plan),
        (Plan, Some(Default),           Plan,              Plan,     Plan),
        (Plan, Some(AcceptEdits),       Plan,              Plan,     Plan),
        (Plan, Some(Plan),              Plan,              Plan,     Plan),
        (Plan, Some(DontAsk),           Plan,              Plan,     Plan),
        (Plan, Some(BypassPermissions), Plan,              Plan,     Plan),
    ];

    #[test]
    fn ratchet_child_never_wider_than_parent_unless_trusted() {
        assert_eq!(TABLE.len(), 30, "5 parents x 6 requests");
        for &(parent, requested, trusted, untrusted, no_bypass) in TABLE {
            for source in SOURCES {
                for project_trusted in [false, true] {
                    for bypass_disabled in [false, true] {
                        let limits = ModeLimits {
                            project_trusted,
                            bypass_disabled,
                        };
                        // A project's definition counts as the user's once
                        // the folder is trusted; a plugin's never does.
                        let is_trusted = source.is_trusted()
                            || (source == DefinitionSource::Project && project_trusted);
                        let expected = match (is_trusted, bypass_disabled) {
                            (true, false) => trusted,
                            (true, true) => no_bypass,
                            (false, _) => untrusted,
                        };
                        let got = child_mode(parent, requested, source, limits);
                        let case = format!(
                            "parent {parent}, requested {requested:?}, source {source:?}, {limits:?}"
                        );
                        assert_eq!(got.mode, expected, "{case}");
                        // A note exactly when a request was given and not applied.
                        let applied = requested.is_none_or(|r| r == got.mode);
                        assert_eq!(got.note.is_some(), !applied, "{case}: {:?}", got.note);
                        // Untrusted sources never end up wider than the parent,
                        // nor does anything under plan mode.
                        if !is_trusted || parent == Plan {
                            assert!(got.mode.strictness() >= parent.strictness(), "{case}");
                        }
                        // Nothing gets bypass where settings disable it,
                        // unless the session itself runs so.
                        if bypass_disabled && parent != BypassPermissions {
                            assert_ne!(got.mode, BypassPermissions, "{case}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ratchet_notes_name_the_request_and_the_mode_used() {
        let untrusted = ModeLimits::default();
        let cases = [
            (
                Default,
                BypassPermissions,
                DefinitionSource::Project,
                untrusted,
                "project definition asks for bypassPermissions; runs at default \
                 (a project file cannot widen permissions until the folder is trusted)",
            ),
            (
                Default,
                AcceptEdits,
                DefinitionSource::Plugin,
                ModeLimits {
                    project_trusted: true,
                    bypass_disabled: false,
                },
                "plugin definition asks for acceptEdits; runs at default \
                 (a plugin file cannot widen permissions)",
            ),
            (
                Plan,
                AcceptEdits,
                DefinitionSource::Plugin,
                untrusted,
                "definition asks for acceptEdits; runs at plan (plan mode is read-only)",
            ),
            (
                BypassPermissions,
                Plan,
                DefinitionSource::User,
                untrusted,
                "definition asks for plan; the session's bypassPermissions takes precedence",
            ),
            (
                AcceptEdits,
                DontAsk,
                DefinitionSource::Project,
                untrusted,
                "definition asks for dontAsk; the session's acceptEdits takes precedence",
            ),
            (
                Default,
                BypassPermissions,
                DefinitionSource::User,
                ModeLimits {
                    project_trusted: false,
                    bypass_disabled: true,
                },
                "definition asks for bypassPermissions; runs at default \
                 (settings disable bypassPermissions)",
            ),
        ];
        for (parent, requested, source, limits, note) in cases {
            let got = child_mode(parent, Some(requested), source, limits);
            assert_eq!(got.note.as_deref(), Some(note));
        }
    }

    #[test]
    fn a_teammate_is_never_wider_than_its_lead_even_from_a_trusted_source() {
        let limits = ModeLimits {
            project_trusted: true,
            bypass_disabled: false,
        };
        for source in SOURCES {
            let m = teammate_mode(Default, Some(BypassPermissions), source, limits);
            assert_eq!(m.mode, Default, "{source:?}");
            assert!(m.note.is_some(), "{source:?}");
            // Stricter stays stricter.
            assert_eq!(
                teammate_mode(Default, Some(Plan), source, limits).mode,
                Plan
            );
            assert_eq!(
                teammate_mode(AcceptEdits, None, source, limits).mode,
                AcceptEdits
            );
        }
    }
}
