//! The main agent's system prompt: what cadre is, how to work, facts about the
//! environment, and the project's own instructions (`AGENTS.md`/`CLAUDE.md`,
//! found by `instructions`).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::instructions::InstructionSources;
use crate::session::civil_from_days;
use crate::small_file::read_small_text;

/// Largest `.git` pointer or `HEAD` file read (both are one short line).
const MAX_GIT_FILE_BYTES: u64 = 4096;

/// Who the main agent is: kept whatever the output style.
const ROLE_PROMPT: &str =
    "You are cadre, a coding agent working in the user's terminal, inside their project.";

/// How the main agent works on code: dropped by an output style that does
/// not keep the coding instructions (`keep-coding-instructions: false`).
pub const CODING_INSTRUCTIONS: &str = "Work the task through to the end with your tools: read and search before you change anything, make the smallest correct change, and run the project's own commands (tests, builds, linters) to check it when that is cheap. Prefer Grep and Glob over Bash for searching, Read over `cat`, and Edit over rewriting whole files. Paths may be relative to the working directory.

Several independent read-only calls (Read, Grep, Glob) may go in one reply; they run at once.

When you are done, answer in plain text: what you found or changed, and anything the user must still do. Be brief and exact; quote file paths and line numbers where they help.";

/// The coding instructions for a model with a small window (see
/// `tools::SMALL_WINDOW`): the same rules in a few words.
pub const COMPACT_CODING_INSTRUCTIONS: &str = "Use your tools to finish the task: read before you change, make the smallest correct change, run the project's tests when cheap. When done, answer briefly in plain text.";

/// The role and working rules, as every top-level agent gets them without
/// an output style.
fn base_prompt(coding: bool) -> String {
    if coding {
        format!("{ROLE_PROMPT}\n\n{CODING_INSTRUCTIONS}")
    } else {
        ROLE_PROMPT.to_string()
    }
}

/// The pieces a system prompt is built from.
#[derive(Debug, Clone, Default)]
pub struct SystemPromptParts {
    /// Role and working rules.
    pub base: String,
    /// Environment facts block.
    pub environment: String,
    /// Project instructions, if any.
    pub instructions: Option<String>,
}

/// The full prompt for the main agent in `cwd`.
pub fn build_system_prompt(cwd: &Path) -> String {
    main_prompt_from(&ProjectContext::read_now(cwd))
}

/// The main agent's prompt in `cwd` under an output style: without its
/// coding instructions unless `keep_coding` (the style's text itself is
/// appended last, by the builder).
pub fn build_styled_system_prompt(cwd: &Path, keep_coding: bool) -> String {
    prompt_with(&ProjectContext::read_now(cwd), keep_coding)
}

/// The main agent's prompt from project facts already read (a teammate's
/// starts the same way).
pub fn main_prompt_from(context: &ProjectContext) -> String {
    prompt_with(context, true)
}

fn prompt_with(context: &ProjectContext, coding: bool) -> String {
    let parts = SystemPromptParts {
        base: base_prompt(coding),
        environment: context.environment.clone(),
        instructions: context.instructions.clone(),
    };
    let mut out = parts.base;
    out.push_str("\n\n");
    out.push_str(&parts.environment);
    if let Some(instr) = parts.instructions {
        out.push_str("\n\n# Project instructions\n\n");
        out.push_str(&instr);
    }
    out
}

/// The section the MCP servers' `instructions` (server name, text) make in
/// the main agent's system prompt: `# MCP server instructions`, then each
/// under `## <server>`. `None` when no server gave any.
pub(super) fn mcp_instructions_section(servers: &[(String, String)]) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    let mut out = String::from(
        "# MCP server instructions\n\nThe MCP servers connected to this session say how to use their tools and resources:",
    );
    for (server, text) in servers {
        out.push_str(&format!("\n\n## {server}\n\n{text}"));
    }
    Some(out)
}

/// Working directory, platform, date and git branch, as a prompt block.
pub fn environment_facts(cwd: &Path) -> String {
    let mut s = String::from("# Environment\n");
    s.push_str(&format!("- Working directory: {}\n", cwd.display()));
    s.push_str(&format!(
        "- Platform: {} ({})\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    s.push_str(&format!("- Date: {}\n", today()));
    match git_branch(cwd) {
        Some(b) => s.push_str(&format!("- Git branch: {b}\n")),
        None => s.push_str("- Not a git repository\n"),
    }
    s
}

/// What a prompt says about where it works: the environment facts and the
/// project's instructions, read from the disk together.
#[derive(Debug, Clone, Default)]
pub struct ProjectContext {
    /// The environment facts block ([`environment_facts`]).
    pub environment: String,
    /// The project's instructions ([`project_instructions`]), if any.
    pub instructions: Option<String>,
}

impl ProjectContext {
    /// Reads it in place, blocking: at start-up, or outside the runtime.
    pub fn read_now(cwd: &Path) -> ProjectContext {
        ProjectContext {
            environment: environment_facts(cwd),
            instructions: project_instructions(cwd),
        }
    }

    /// Reads it on the runtime's blocking pool, so the runtime's thread never
    /// waits on the disk (a one-off read per batch of children: nothing to
    /// order, so a pool thread rather than a thread of its own).
    pub async fn read(cwd: &Path) -> ProjectContext {
        let dir = cwd.to_path_buf();
        match tokio::task::spawn_blocking(move || ProjectContext::read_now(&dir)).await {
            Ok(context) => context,
            // The read panicked on its thread: try once more here.
            Err(_) => ProjectContext::read_now(cwd),
        }
    }
}

/// The project's instructions for a session in `cwd` (see
/// [`crate::instructions::load`]), as one prompt block, if any.
pub fn project_instructions(cwd: &Path) -> Option<String> {
    read_project_instructions(cwd).0
}

/// The project's instructions for a session in `cwd`, and the warnings met
/// reading them (import cycles, missing imports, unreadable files, cuts).
pub fn read_project_instructions(cwd: &Path) -> (Option<String>, Vec<String>) {
    let sources = InstructionSources::for_session(cwd, crate::config::data_dir().ok());
    let loaded = crate::instructions::load(&sources);
    (loaded.render(), loaded.warnings)
}

/// Today's date as YYYY-MM-DD (UTC), without a date crate.
fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The current branch, read from `.git/HEAD` in `cwd` or a parent (no process spawned).
fn git_branch(cwd: &Path) -> Option<String> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let git = d.join(".git");
        let head_path = if git.is_dir() {
            git.join("HEAD")
        } else if git.is_file() {
            // A worktree: `.git` is a file `gitdir: <path>`.
            let text = read_small_text(&git, MAX_GIT_FILE_BYTES).ok()?;
            let gitdir = text.strip_prefix("gitdir:")?.trim();
            d.join(gitdir).join("HEAD")
        } else {
            dir = d.parent();
            continue;
        };
        let head = read_small_text(&head_path, MAX_GIT_FILE_BYTES).ok()?;
        let head = head.trim();
        return Some(match head.strip_prefix("ref: refs/heads/") {
            Some(branch) => branch.to_string(),
            None => format!("(detached at {})", &head[..head.len().min(12)]),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_instructions_make_one_section_with_a_heading_per_server() {
        assert_eq!(mcp_instructions_section(&[]), None);
        let section = mcp_instructions_section(&[
            ("github".into(), "Use search first.".into()),
            ("docs".into(), "Cite pages.".into()),
        ])
        .unwrap();
        assert!(
            section.starts_with("# MCP server instructions\n\n"),
            "{section}"
        );
        assert!(
            section.ends_with("\n\n## github\n\nUse search first.\n\n## docs\n\nCite pages."),
            "{section}"
        );
    }

    #[test]
    fn the_base_prompt_splits_into_role_and_coding_instructions() {
        let context = ProjectContext::default();
        let full = prompt_with(&context, true);
        let styled = prompt_with(&context, false);
        assert!(full.starts_with(ROLE_PROMPT) && full.contains(CODING_INSTRUCTIONS));
        assert!(styled.starts_with(ROLE_PROMPT) && !styled.contains("smallest correct change"));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn instructions_are_labelled_with_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "claude").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agents").unwrap();
        let text = project_instructions(dir.path()).unwrap();
        // Both files, AGENTS.md first.
        assert!(text.find("agents").unwrap() < text.find("claude").unwrap());
        let prompt = build_system_prompt(dir.path());
        assert!(prompt.contains(&format!(
            "Contents of {} (project instructions",
            dir.path().join("AGENTS.md").display()
        )));
        assert!(prompt.contains("Not a git repository"));
    }
}
