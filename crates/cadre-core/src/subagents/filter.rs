//! The one place that decides which tools a child gets (DESIGN 7.5).
//!
//! Layers, in this order:
//! 1. the global deny list for every child (plus `Agent` at the depth limit);
//! 2. the configurable extra deny list, for non-built-in definitions only;
//! 3. for background children, only the fixed allow list (plus MCP tools);
//! 4. the definition: `disallowedTools` removed first, then `tools` resolved
//!    against what remains.
//!
//! Forks skip all of this (they get the parent's exact list); callers simply
//! do not call [`resolve_tools`] for them. The main session run as a
//! definition (`--agent`) is no child: layers 1–3 do not apply to it.
//!
//! Patterns accepted in `tools`, `disallowedTools` and the custom deny list:
//! - an exact canonical tool name (`Read`, `mcp__github__get_issue`);
//! - `*`: every tool;
//! - `mcp__server` or `mcp__server__*`: every tool of that MCP server
//!   (`mcp__*`: every MCP tool);
//! - `Agent(Explore, Plan)`: in `tools`, the `Agent` tool limited to those
//!   agent types. In a deny list, `Name(...)` removes the whole tool `Name`
//!   (this filter cannot deny by argument, so it errs on the side of removing).
//! - `Bash(git:*)`, `Read(./src/**)`: in `tools`, the tool `Name` restricted
//!   to the calls the rule covers ([`FilteredTools::scoped`]; the child's
//!   permission policy denies the others), unless a plain `Name` entry also
//!   grants it whole. `Agent()` with no type resolves to nothing.

/// Tools no child ever gets (layer 1). `Agent` is added at the depth limit.
pub const GLOBAL_CHILD_DENY: &[&str] = &[
    "AskUserQuestion",
    "TaskOutput",
    "EnterPlanMode",
    "ExitPlanMode",
    "MemoryWrite",
];

/// The only tools a background child may keep (layer 3), besides every MCP
/// tool (`mcp__*`, and the MCP resource tools).
pub const BACKGROUND_ALLOW: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "NotebookEdit",
    "Glob",
    "Grep",
    "Bash",
    "WebFetch",
    "TodoWrite",
    "Skill",
    "TaskStop",
    "SendMessage",
];

const AGENT: &str = "Agent";
const MCP_PREFIX: &str = "mcp__";

/// What the filter needs to know about one child.
#[derive(Debug, Clone, Copy)]
pub struct FilterInput<'a> {
    /// The parent's tool names, canonical, in the parent's order.
    pub available: &'a [String],
    /// False at the nesting depth limit (DESIGN 7.6): the child loses `Agent`.
    pub agent_allowed: bool,
    /// Built-in definitions skip layer 2.
    pub builtin_definition: bool,
    /// Layer 2: the configured extra deny list (patterns).
    pub custom_deny: &'a [String],
    /// Layer 3: a background child keeps only [`BACKGROUND_ALLOW`] and MCP tools
    /// (the resource tools included).
    pub background: bool,
    /// The definition's `tools` (`None` = all; containing `*` = all).
    pub tools: Option<&'a [String]>,
    /// The definition's `disallowedTools`.
    pub disallowed: &'a [String],
    /// The main session run as the definition (`--agent`): only layer 4.
    pub main_session: bool,
}

/// The child's tools, and what the caller should report about them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilteredTools {
    /// The child's tool names, in the order of `available`.
    pub tools: Vec<String>,
    /// When `Agent` is kept and `tools` limited it (`Agent(Explore, Plan)`):
    /// the agent types the child may spawn. `None` = any type.
    pub agent_types: Option<Vec<String>>,
    /// Entries of `tools` that name no tool of `available` at all (reported, not fatal).
    pub unresolved: Vec<String>,
    /// Tools named by both `tools` and `disallowedTools` (removed).
    pub removed_by_both: Vec<String>,
    /// Permission rules (`Bash(git:*)`) that the child's calls of the tool
    /// they name must match: its `tools` granted that tool only through them.
    pub scoped: Vec<String>,
}

/// Why a child cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The definition's `tools` list resolved to no tool.
    #[error("{}", no_tools_message(.unresolved))]
    NoTools {
        /// The entries that resolved to nothing: the unresolved ones if any,
        /// otherwise the entries whose tools were all filtered away.
        unresolved: Vec<String>,
    },
}

fn no_tools_message(entries: &[String]) -> String {
    if entries.is_empty() {
        return "the agent definition's `tools` list is empty, so the subagent would have no \
                tool; it was not started"
            .to_string();
    }
    let names = entries
        .iter()
        .map(|e| format!("`{e}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "the agent definition's `tools` list resolves to no tool the subagent may use \
         (entries: {names}); it was not started"
    )
}

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern<'p> {
    /// `*`.
    All,
    /// An exact name.
    Exact(&'p str),
    /// Every tool whose name starts with this (`mcp__server__`).
    Prefix(String),
    /// `Name(args)`.
    Scoped { name: &'p str, args: Vec<&'p str> },
}

fn parse_pattern(raw: &str) -> Pattern<'_> {
    let s = raw.trim();
    if s == "*" {
        return Pattern::All;
    }
    if let (Some(open), Some(inner_end)) = (s.find('('), s.strip_suffix(')')) {
        let name = s[..open].trim();
        let inner = inner_end.get(open + 1..).unwrap_or("");
        let args = inner
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect();
        return Pattern::Scoped { name, args };
    }
    if let Some(rest) = s.strip_prefix(MCP_PREFIX) {
        if rest == "*" {
            return Pattern::Prefix(MCP_PREFIX.to_string());
        }
        if let Some(server) = rest.strip_suffix("__*") {
            if !server.is_empty() {
                return Pattern::Prefix(format!("{MCP_PREFIX}{server}__"));
            }
        } else if !rest.is_empty() && !rest.contains("__") {
            return Pattern::Prefix(format!("{s}__"));
        }
    }
    Pattern::Exact(s)
}

/// Whether a deny-list entry removes `tool`. `Name(...)` removes the whole tool.
fn deny_matches(raw: &str, tool: &str) -> bool {
    match parse_pattern(raw) {
        Pattern::All => true,
        Pattern::Exact(name) => name == tool,
        Pattern::Prefix(prefix) => tool.starts_with(&prefix),
        Pattern::Scoped { name, .. } => name == tool,
    }
}

/// Whether an entry of `tools` grants `tool`. `*` is handled by the caller.
fn allow_matches(pattern: &Pattern<'_>, tool: &str) -> bool {
    match pattern {
        Pattern::All => true,
        Pattern::Exact(name) => *name == tool,
        Pattern::Prefix(prefix) => tool.starts_with(prefix.as_str()),
        Pattern::Scoped { name, args } => *name == tool && !args.is_empty(),
    }
}

fn denied_by_any(list: &[String], tool: &str) -> bool {
    list.iter().any(|p| deny_matches(p, tool))
}

/// Decides a child's tools (DESIGN 7.5). See the module documentation for
/// the layers and patterns.
pub fn resolve_tools(input: &FilterInput<'_>) -> Result<FilteredTools, FilterError> {
    // Layer 1: global deny.
    let after_global: Vec<&String> = input
        .available
        .iter()
        .filter(|t| input.main_session || !GLOBAL_CHILD_DENY.contains(&t.as_str()))
        .filter(|t| input.agent_allowed || t.as_str() != AGENT)
        .collect();

    // Layer 2: custom deny, non-built-in definitions only.
    let after_custom: Vec<&String> = if input.builtin_definition || input.main_session {
        after_global
    } else {
        after_global
            .into_iter()
            .filter(|t| !denied_by_any(input.custom_deny, t))
            .collect()
    };

    // Layer 3: background allow list.
    let after_background: Vec<&String> = if input.background && !input.main_session {
        after_custom
            .into_iter()
            .filter(|t| BACKGROUND_ALLOW.contains(&t.as_str()) || crate::mcp::is_mcp_tool(t))
            .collect()
    } else {
        after_custom
    };

    // Layer 4a: disallowedTools.
    let after_disallowed: Vec<&String> = after_background
        .iter()
        .copied()
        .filter(|t| !denied_by_any(input.disallowed, t))
        .collect();

    // Layer 4b: tools.
    let Some(entries) = input.tools else {
        return Ok(FilteredTools {
            tools: after_disallowed.into_iter().cloned().collect(),
            ..FilteredTools::default()
        });
    };

    // `tools: []` (or an empty string): a child with no tools, as Claude Code
    // starts it; only a list whose entries all resolve to nothing is refused.
    if entries.is_empty() {
        return Ok(FilteredTools::default());
    }

    let parsed: Vec<(&String, Pattern<'_>)> =
        entries.iter().map(|e| (e, parse_pattern(e))).collect();

    let unresolved: Vec<String> = parsed
        .iter()
        .filter(|(_, p)| *p != Pattern::All)
        .filter(|(_, p)| !input.available.iter().any(|t| allow_matches(p, t)))
        .map(|(e, _)| (*e).clone())
        .collect();

    if parsed.iter().any(|(_, p)| *p == Pattern::All) {
        return Ok(FilteredTools {
            tools: after_disallowed.into_iter().cloned().collect(),
            agent_types: None,
            unresolved,
            removed_by_both: Vec::new(),
            scoped: Vec::new(),
        });
    }

    let granted = |tool: &str| parsed.iter().any(|(_, p)| allow_matches(p, tool));

    let removed_by_both: Vec<String> = after_background
        .iter()
        .filter(|t| granted(t) && denied_by_any(input.disallowed, t))
        .map(|t| (*t).clone())
        .collect();

    let tools: Vec<String> = after_disallowed
        .iter()
        .filter(|t| granted(t))
        .map(|t| (*t).clone())
        .collect();

    if tools.is_empty() {
        let named = if unresolved.is_empty() {
            entries.to_vec()
        } else {
            unresolved
        };
        return Err(FilterError::NoTools { unresolved: named });
    }

    let agent_types = if tools.iter().any(|t| t == AGENT) {
        agent_types_of(&parsed)
    } else {
        None
    };

    // Tools granted only by `Name(...)` entries are restricted to those rules.
    let scoped: Vec<String> = tools
        .iter()
        .filter(|t| t.as_str() != AGENT)
        .filter(|t| {
            !parsed
                .iter()
                .any(|(_, p)| !matches!(p, Pattern::Scoped { .. }) && allow_matches(p, t))
        })
        .flat_map(|t| {
            parsed
                .iter()
                .filter(move |(_, p)| matches!(p, Pattern::Scoped { name, .. } if name == t))
                .map(|(e, _)| e.trim().to_string())
        })
        .collect();

    Ok(FilteredTools {
        tools,
        agent_types,
        unresolved,
        removed_by_both,
        scoped,
    })
}

/// Whether a definition's `tools` and `disallowedTools` let `tool` through:
/// for tools that arrive after the definition was resolved (an MCP server's,
/// once it is ready). Layer 4 alone, as for the main session run as the
/// definition.
pub fn lists_grant(tools: Option<&[String]>, disallowed: &[String], tool: &str) -> bool {
    if denied_by_any(disallowed, tool) {
        return false;
    }
    tools.is_none_or(|entries| {
        entries.iter().any(|e| {
            let pattern = parse_pattern(e);
            pattern == Pattern::All || allow_matches(&pattern, tool)
        })
    })
}

/// The agent types allowed by `Agent(...)` entries, or `None` when a plain
/// `Agent` entry allows any type.
fn agent_types_of(parsed: &[(&String, Pattern<'_>)]) -> Option<Vec<String>> {
    let mut types: Vec<String> = Vec::new();
    for (_, pattern) in parsed {
        match pattern {
            Pattern::Exact(name) if *name == AGENT => return None,
            Pattern::Scoped { name, args } if *name == AGENT => {
                for arg in args {
                    if !types.iter().any(|t| t == arg) {
                        types.push((*arg).to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Some(types)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn parent_tools() -> Vec<String> {
        strings(&[
            "Read",
            "Write",
            "Edit",
            "Glob",
            "Grep",
            "Bash",
            "TodoWrite",
            "Agent",
            "TaskList",
            "TaskOutput",
            "TaskStop",
            "SendMessage",
            "WebFetch",
            "AskUserQuestion",
            "EnterPlanMode",
            "ExitPlanMode",
            "MemoryWrite",
            "mcp__github__get_issue",
            "mcp__github__create_pr",
            "mcp__slack__post",
        ])
    }

    /// A test case: the knobs that vary, and what must (not) be in the result.
    struct Case {
        name: &'static str,
        agent_allowed: bool,
        builtin: bool,
        custom_deny: &'static [&'static str],
        background: bool,
        tools: Option<&'static [&'static str]>,
        disallowed: &'static [&'static str],
        expect: &'static [&'static str],
    }

    const BASE: Case = Case {
        name: "",
        agent_allowed: true,
        builtin: false,
        custom_deny: &[],
        background: false,
        tools: None,
        disallowed: &[],
        expect: &[],
    };

    fn run(case: &Case) -> Result<FilteredTools, FilterError> {
        let available = parent_tools();
        let custom_deny = strings(case.custom_deny);
        let tools = case.tools.map(strings);
        let disallowed = strings(case.disallowed);
        resolve_tools(&FilterInput {
            available: &available,
            agent_allowed: case.agent_allowed,
            builtin_definition: case.builtin,
            custom_deny: &custom_deny,
            background: case.background,
            tools: tools.as_deref(),
            disallowed: &disallowed,
            main_session: false,
        })
    }

    fn check(cases: &[Case]) {
        for case in cases {
            let got = run(case).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(got.tools, strings(case.expect), "case {}", case.name);
        }
    }

    const ALL_FOREGROUND: &[&str] = &[
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "Bash",
        "TodoWrite",
        "Agent",
        "TaskList",
        "TaskStop",
        "SendMessage",
        "WebFetch",
        "mcp__github__get_issue",
        "mcp__github__create_pr",
        "mcp__slack__post",
    ];

    #[test]
    fn layer1_global_deny_applies_to_every_child() {
        check(&[
            Case {
                name: "no definition limits",
                expect: ALL_FOREGROUND,
                ..BASE
            },
            Case {
                name: "built-in definition too",
                builtin: true,
                expect: ALL_FOREGROUND,
                ..BASE
            },
            Case {
                name: "asking for denied tools does not bring them back",
                tools: Some(&["Read", "AskUserQuestion", "TaskOutput", "MemoryWrite"]),
                expect: &["Read"],
                ..BASE
            },
            Case {
                name: "star does not bring them back",
                tools: Some(&["*"]),
                expect: ALL_FOREGROUND,
                ..BASE
            },
        ]);
    }

    #[test]
    fn layer1_agent_removed_at_depth_limit() {
        check(&[
            Case {
                name: "below the limit keeps Agent",
                tools: Some(&["Agent", "Read"]),
                expect: &["Read", "Agent"],
                ..BASE
            },
            Case {
                name: "at the limit loses Agent",
                agent_allowed: false,
                tools: Some(&["Agent", "Read"]),
                expect: &["Read"],
                ..BASE
            },
            Case {
                name: "at the limit, all tools",
                agent_allowed: false,
                tools: None,
                expect: &[
                    "Read",
                    "Write",
                    "Edit",
                    "Glob",
                    "Grep",
                    "Bash",
                    "TodoWrite",
                    "TaskList",
                    "TaskStop",
                    "SendMessage",
                    "WebFetch",
                    "mcp__github__get_issue",
                    "mcp__github__create_pr",
                    "mcp__slack__post",
                ],
                ..BASE
            },
        ]);
        let at_limit = Case {
            agent_allowed: false,
            tools: Some(&["Agent(Explore)", "Read"]),
            ..BASE
        };
        let got = run(&at_limit).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.agent_types, None);
        assert!(got.unresolved.is_empty(), "filtered, not unresolved");
    }

    #[test]
    fn layer2_custom_deny_for_non_builtin_only() {
        check(&[
            Case {
                name: "non-built-in loses custom-denied tools",
                custom_deny: &["Bash", "mcp__github"],
                tools: Some(&["Read", "Bash", "mcp__github__get_issue", "mcp__slack__post"]),
                expect: &["Read", "mcp__slack__post"],
                ..BASE
            },
            Case {
                name: "built-in keeps them",
                builtin: true,
                custom_deny: &["Bash", "mcp__github"],
                tools: Some(&["Read", "Bash", "mcp__github__get_issue", "mcp__slack__post"]),
                expect: &["Read", "Bash", "mcp__github__get_issue", "mcp__slack__post"],
                ..BASE
            },
            Case {
                name: "scoped deny removes the whole tool",
                custom_deny: &["Bash(rm:*)"],
                tools: Some(&["Read", "Bash"]),
                expect: &["Read"],
                ..BASE
            },
        ]);
    }

    #[test]
    fn layer3_background_keeps_only_allow_list_and_mcp() {
        check(&[
            Case {
                name: "background, all tools",
                background: true,
                expect: &[
                    "Read",
                    "Write",
                    "Edit",
                    "Glob",
                    "Grep",
                    "Bash",
                    "TodoWrite",
                    "TaskStop",
                    "SendMessage",
                    "WebFetch",
                    "mcp__github__get_issue",
                    "mcp__github__create_pr",
                    "mcp__slack__post",
                ],
                ..BASE
            },
            Case {
                name: "background never gets task listing or spawning, keeps messaging",
                background: true,
                tools: Some(&["Read", "Agent", "TaskList", "SendMessage"]),
                expect: &["Read", "SendMessage"],
                ..BASE
            },
        ]);
    }

    #[test]
    fn background_children_keep_the_mcp_resource_tools() {
        let available = strings(&[
            "Read",
            "TaskList",
            "ListMcpResourcesTool",
            "ReadMcpResourceTool",
        ]);
        let got = resolve_tools(&FilterInput {
            available: &available,
            agent_allowed: true,
            builtin_definition: false,
            custom_deny: &[],
            background: true,
            tools: None,
            disallowed: &[],
            main_session: false,
        })
        .unwrap();
        assert_eq!(
            got.tools,
            strings(&["Read", "ListMcpResourcesTool", "ReadMcpResourceTool"])
        );
    }

    #[test]
    fn layer4_disallowed_then_tools() {
        check(&[
            Case {
                name: "disallowed removed from all",
                disallowed: &["Bash", "Write", "mcp__slack__*"],
                expect: &[
                    "Read",
                    "Edit",
                    "Glob",
                    "Grep",
                    "TodoWrite",
                    "Agent",
                    "TaskList",
                    "TaskStop",
                    "SendMessage",
                    "WebFetch",
                    "mcp__github__get_issue",
                    "mcp__github__create_pr",
                ],
                ..BASE
            },
            Case {
                name: "tools resolved against what remains, in available order",
                tools: Some(&["Grep", "Read", "Glob"]),
                expect: &["Read", "Glob", "Grep"],
                ..BASE
            },
            Case {
                name: "star with disallowed",
                tools: Some(&["*"]),
                disallowed: &["Agent", "mcp__*"],
                expect: &[
                    "Read",
                    "Write",
                    "Edit",
                    "Glob",
                    "Grep",
                    "Bash",
                    "TodoWrite",
                    "TaskList",
                    "TaskStop",
                    "SendMessage",
                    "WebFetch",
                ],
                ..BASE
            },
            Case {
                name: "whitespace around entries is ignored",
                tools: Some(&[" Read ", "Grep"]),
                expect: &["Read", "Grep"],
                ..BASE
            },
        ]);
    }

    #[test]
    fn mcp_server_patterns_match_every_tool_of_the_server() {
        check(&[
            Case {
                name: "mcp__server",
                tools: Some(&["mcp__github"]),
                expect: &["mcp__github__get_issue", "mcp__github__create_pr"],
                ..BASE
            },
            Case {
                name: "mcp__server__*",
                tools: Some(&["mcp__github__*"]),
                expect: &["mcp__github__get_issue", "mcp__github__create_pr"],
                ..BASE
            },
            Case {
                name: "exact mcp tool",
                tools: Some(&["mcp__github__create_pr"]),
                expect: &["mcp__github__create_pr"],
                ..BASE
            },
            Case {
                name: "server prefix does not match a longer server name",
                tools: Some(&["mcp__git", "Read"]),
                expect: &["Read"],
                ..BASE
            },
            Case {
                name: "mcp__*",
                tools: Some(&["mcp__*"]),
                expect: &[
                    "mcp__github__get_issue",
                    "mcp__github__create_pr",
                    "mcp__slack__post",
                ],
                ..BASE
            },
        ]);
    }

    #[test]
    fn agent_types_limit_the_agent_tool() {
        let cases: &[(&[&str], Option<&[&str]>)] = &[
            (&["Agent"], None),
            (&["Agent(Explore, Plan)"], Some(&["Explore", "Plan"])),
            (
                &["Agent(Explore)", "Agent(Plan, Explore)"],
                Some(&["Explore", "Plan"]),
            ),
            (&["Agent(Explore)", "Agent"], None),
            (&["*", "Agent(Explore)"], None),
            (&["Read"], None),
        ];
        for (tools, expected) in cases {
            let case = Case {
                tools: Some(tools),
                ..BASE
            };
            let got = run(&case).unwrap_or_else(|e| panic!("{tools:?}: {e}"));
            assert_eq!(got.agent_types, expected.map(strings), "tools {tools:?}");
            if tools.iter().any(|t| t.starts_with("Agent")) {
                assert!(got.tools.iter().any(|t| t == "Agent"), "tools {tools:?}");
            }
        }
    }

    #[test]
    fn tool_in_both_tools_and_disallowed_is_removed() {
        type Names = &'static [&'static str];
        let cases: &[(Names, Names, Names, Names)] = &[
            // (tools, disallowed, expected tools, removed_by_both)
            (&["Read", "Bash"], &["Bash"], &["Read"], &["Bash"]),
            (
                &["Read", "mcp__github"],
                &["mcp__github__create_pr"],
                &["Read", "mcp__github__get_issue"],
                &["mcp__github__create_pr"],
            ),
            (
                &["Read", "Agent(Explore)"],
                &["Agent"],
                &["Read"],
                &["Agent"],
            ),
            (&["Read"], &["Bash"], &["Read"], &[]),
            (&["*"], &["Bash"], &[], &[]),
        ];
        for (tools, disallowed, expected, both) in cases {
            let case = Case {
                tools: Some(tools),
                disallowed,
                ..BASE
            };
            let got = run(&case).unwrap_or_else(|e| panic!("{tools:?}: {e}"));
            if *tools != ["*"] {
                assert_eq!(got.tools, strings(expected), "tools {tools:?}");
            }
            assert_eq!(got.removed_by_both, strings(both), "tools {tools:?}");
        }
    }

    #[test]
    fn scoped_entries_grant_the_tool_restricted_to_their_rules() {
        let got = run(&Case {
            tools: Some(&["Read", "Bash(git:*)", "Bash(cargo test:*)"]),
            ..BASE
        })
        .unwrap();
        assert!(got.tools.iter().any(|t| t == "Bash"), "{:?}", got.tools);
        assert_eq!(got.scoped, strings(&["Bash(git:*)", "Bash(cargo test:*)"]));
        assert!(got.unresolved.is_empty());
        // A plain entry beside it grants the tool whole.
        let got = run(&Case {
            tools: Some(&["Bash", "Bash(git:*)"]),
            ..BASE
        })
        .unwrap();
        assert!(got.scoped.is_empty());
        // Disallowed still wins.
        let err = run(&Case {
            tools: Some(&["Bash(git:*)"]),
            disallowed: &["Bash"],
            ..BASE
        });
        assert!(err.is_err());
    }

    #[test]
    fn unresolved_entries_are_reported_not_fatal() {
        let cases: &[(Case, &[&str])] = &[
            (
                Case {
                    tools: Some(&["Read", "NoSuchTool", "mcp__nosuch"]),
                    ..BASE
                },
                &["NoSuchTool", "mcp__nosuch"],
            ),
            (
                // Matched a tool filtered by layer 1: filtered, not unresolved.
                Case {
                    tools: Some(&["Read", "AskUserQuestion"]),
                    ..BASE
                },
                &[],
            ),
            (
                // Filtered by layer 3.
                Case {
                    background: true,
                    tools: Some(&["Read", "TaskList"]),
                    ..BASE
                },
                &[],
            ),
            (
                // Filtered by disallowed.
                Case {
                    tools: Some(&["Read", "Bash"]),
                    disallowed: &["Bash"],
                    ..BASE
                },
                &[],
            ),
            (
                // `Agent()` with no type grants nothing.
                Case {
                    tools: Some(&["Read", "Agent()"]),
                    ..BASE
                },
                &["Agent()"],
            ),
            (
                Case {
                    tools: Some(&["*", "Bogus"]),
                    ..BASE
                },
                &["Bogus"],
            ),
        ];
        for (case, expected) in cases {
            let got = run(case).unwrap_or_else(|e| panic!("{:?}: {e}", case.tools));
            assert_eq!(got.unresolved, strings(expected), "tools {:?}", case.tools);
            assert!(got.tools.iter().any(|t| t == "Read"));
        }
    }

    #[test]
    fn empty_result_from_tools_list_is_an_error_naming_entries() {
        let cases: &[(Case, &[&str])] = &[
            (
                Case {
                    tools: Some(&["Nope", "AlsoNope"]),
                    ..BASE
                },
                &["Nope", "AlsoNope"],
            ),
            (
                // Unresolved entries win over filtered ones.
                Case {
                    tools: Some(&["Nope", "AskUserQuestion"]),
                    ..BASE
                },
                &["Nope"],
            ),
            (
                // Nothing unresolved: name the entries that were filtered away.
                Case {
                    background: true,
                    tools: Some(&["Agent", "TaskList"]),
                    ..BASE
                },
                &["Agent", "TaskList"],
            ),
            (
                Case {
                    tools: Some(&["Bash"]),
                    disallowed: &["Bash"],
                    ..BASE
                },
                &["Bash"],
            ),
        ];
        for (case, expected) in cases {
            match run(case) {
                Err(FilterError::NoTools { unresolved }) => {
                    assert_eq!(unresolved, strings(expected), "tools {:?}", case.tools);
                    let message = FilterError::NoTools {
                        unresolved: unresolved.clone(),
                    }
                    .to_string();
                    for entry in &unresolved {
                        assert!(message.contains(entry.as_str()), "{message}");
                    }
                    assert!(message.contains("not started"), "{message}");
                }
                Ok(got) => panic!("tools {:?}: expected an error, got {got:?}", case.tools),
            }
        }
    }

    #[test]
    fn an_empty_tools_list_is_a_child_with_no_tools() {
        let available = strings(&["Read", "Bash"]);
        let got = resolve_tools(&FilterInput {
            available: &available,
            agent_allowed: true,
            builtin_definition: false,
            custom_deny: &[],
            background: false,
            tools: Some(&[]),
            disallowed: &[],
            main_session: false,
        });
        assert_eq!(got, Ok(FilteredTools::default()));
    }

    #[test]
    fn empty_result_without_tools_list_is_not_an_error() {
        let available = strings(&["AskUserQuestion", "TaskList"]);
        let got = resolve_tools(&FilterInput {
            available: &available,
            agent_allowed: true,
            builtin_definition: false,
            custom_deny: &[],
            background: true,
            tools: None,
            disallowed: &[],
            main_session: false,
        });
        assert_eq!(got.map(|f| f.tools), Ok(Vec::<String>::new()));
    }
}
