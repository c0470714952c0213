//! cadre's own commands that are prompts, as Claude Code ships them:
//! `/init` writes or improves the project's instruction file and `/review`
//! reviews the current changes or a branch. They have the lowest
//! precedence: a user's, project's or plugin's command of the same name
//! wins (and `cadre doctor` lists the shadowing).

use std::path::{Path, PathBuf};

use super::{Skill, SkillKind};

/// What `/init` asks of the model.
const INIT: &str = "Write or improve this project's instruction file for coding agents.

Which file: if CLAUDE.md exists at the project's root, improve it; otherwise, if AGENTS.md exists there, improve that one; otherwise create CLAUDE.md.

First explore the project. Start several `Explore` subagents at once (the `Agent` tool with subagent_type `Explore`), each on a distinct part: the build and test commands (package manifests, Makefiles, CI files, scripts), the layout and architecture (the main folders and how they depend on each other), and the conventions (formatting, lint settings, naming, error handling, how tests are written). Read the README and any existing rules files (.cursorrules, .github/copilot-instructions.md, CONTRIBUTING) yourself.

Then write the file. Keep it short and specific to this project:
- the commands to build, lint and run the tests, including how to run a single test;
- the architecture a newcomer needs to see from several files at once, not a listing of every folder;
- conventions a reader would not guess from one file.
Leave out generic advice, anything obvious from the file names, and made-up sections. When improving an existing file, keep what is still true, fix what is wrong, and add what is missing.

Extra instructions from the user, if any: $ARGUMENTS";

/// What `/review` asks of the model.
const REVIEW: &str = "Review code changes as a careful senior engineer would.

What to review: $ARGUMENTS
- Nothing given: the uncommitted changes (`git status`, `git diff HEAD`); when there are none, the current branch's commits since it left the default branch (`git merge-base`, then `git diff BASE...HEAD`).
- A branch or commit: what the current branch changed since it left it (`git diff TARGET...HEAD`, `git log TARGET..HEAD`).
- A path: the changes to that file or folder (`git diff HEAD -- PATH`), or the file itself when it has none.

Read the surrounding code where a change depends on it. Do not change any file.

Report, most important first:
1. Bugs: wrong behaviour, unhandled errors and edge cases, races, resource leaks — each with file:line and why it is wrong.
2. Security: injection, secrets, unsafe input handling, permissions.
3. Tests missing for the changed behaviour.
4. Clarity and design, briefly.
End with a one-line verdict. When the changes look right, say so plainly; do not invent problems.";

/// The built-in commands for a session in `cwd` (their folder is the
/// project's, as they have no files of their own).
pub(super) fn skills(cwd: &Path) -> Vec<Skill> {
    let git = |verbs: &[&str]| -> Vec<String> {
        verbs.iter().map(|v| format!("Bash(git {v}:*)")).collect()
    };
    vec![
        builtin(
            cwd,
            "init",
            "Explore the project with subagents and write or improve its CLAUDE.md (or AGENTS.md)",
            INIT,
            Some("[extra instructions]"),
            Vec::new(),
        ),
        builtin(
            cwd,
            "review",
            "Review the uncommitted changes, a branch's changes or a path, without editing",
            REVIEW,
            Some("[branch | commit | path]"),
            [
                git(&[
                    "status",
                    "diff",
                    "log",
                    "show",
                    "merge-base",
                    "branch",
                    "rev-parse",
                ]),
                vec!["Read".into(), "Grep".into(), "Glob".into()],
            ]
            .concat(),
        ),
    ]
}

fn builtin(
    cwd: &Path,
    name: &str,
    description: &str,
    body: &str,
    argument_hint: Option<&str>,
    allowed_tools: Vec<String>,
) -> Skill {
    Skill {
        name: name.into(),
        description: description.into(),
        body: body.into(),
        dir: cwd.to_path_buf(),
        file: PathBuf::from(format!("(built-in /{name})")),
        allowed_tools,
        disallowed_tools: Vec::new(),
        model: None,
        effort: None,
        // The user runs them; the model has its own ways to do both.
        user_only: true,
        user_invocable: true,
        argument_hint: argument_hint.map(str::to_string),
        arguments: Vec::new(),
        fork_agent: None,
        scope: "builtin",
        kind: SkillKind::Command,
        label: "built-in".into(),
        plugin: None,
        held_back: false,
    }
}
