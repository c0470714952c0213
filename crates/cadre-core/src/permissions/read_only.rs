//! Commands that only look: what a command file's `` !`cmd` `` lines may run
//! without a rule, as Claude Code runs its read-only commands (`git status`,
//! `git diff HEAD`, `ls`) without a question. Real command files count on it
//! (the `/commit` of Claude Code's own plugins lists only its writing `git`
//! commands in `allowed-tools`). A command qualifies only when the lexer
//! reads it with certainty, every simple command of it is a known reader
//! with no argument that writes or runs something else, and nothing
//! redirects into a file; it still runs in the sandbox.

use super::shell::{is_assignment, parse_shell};

/// Programs that only read whatever their arguments.
const READERS: &[&str] = &[
    "ls", "pwd", "cat", "head", "tail", "wc", "echo", "whoami", "uname", "which", "grep", "egrep",
    "fgrep", "stat", "basename", "dirname", "realpath", "cut", "nl", "true", "id",
];

/// `git` subcommands that only read (with the argument checks below).
const GIT_READERS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "rev-parse",
    "ls-files",
    "describe",
    "blame",
    "shortlog",
    "branch",
    "tag",
    "remote",
    "config",
];

/// Whether `command` only reads, by the rules above.
pub fn is_read_only_command(command: &str) -> bool {
    let parse = parse_shell(command);
    parse.allowable() && !parse.name_hidden && parse.segments.iter().all(|words| reads_only(words))
}

fn reads_only(words: &[String]) -> bool {
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    // `GIT_EXTERNAL_DIFF=… git diff` runs what the assignment names.
    if is_assignment(name) || name.contains('/') {
        return false;
    }
    match name.as_str() {
        "git" => git_reads_only(args),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        // `rg --pre CMD` runs CMD on every file.
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        other => READERS.contains(&other),
    }
}

fn git_reads_only(args: &[String]) -> bool {
    // Options before the subcommand (`-c key=value`) change what runs.
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    if !GIT_READERS.contains(&sub.as_str()) {
        return false;
    }
    if rest
        .iter()
        .any(|a| a.starts_with("--output") || a == "--ext-diff" || a.starts_with("--exec"))
    {
        return false;
    }
    let all_in = |allowed: &[&str]| rest.iter().all(|a| allowed.contains(&a.as_str()));
    match sub.as_str() {
        "branch" => all_in(&[
            "--show-current",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "-v",
            "-vv",
            "--list",
            "--no-color",
        ]),
        "tag" => all_in(&["-l", "--list"]),
        "remote" => all_in(&["-v", "--verbose"]),
        "config" => {
            rest.iter()
                .any(|a| matches!(a.as_str(), "--get" | "--get-all" | "--list" | "-l"))
                && !rest.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "--add" | "--unset" | "--unset-all" | "--replace-all" | "--edit" | "-e"
                    )
                })
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::is_read_only_command;

    #[test]
    fn readers_pass_and_anything_that_writes_or_hides_does_not() {
        for ok in [
            "git status",
            "git diff HEAD",
            "git branch --show-current",
            "git log --oneline -10",
            "ls -la",
            "git log --oneline | head -5",
            "cat README.md",
            "find . -name '*.rs'",
            "git config --get user.name",
        ] {
            assert!(is_read_only_command(ok), "{ok}");
        }
        for no in [
            "git commit -m x",
            "git branch -D main",
            "git -c core.pager=sh log",
            "git diff --output=x",
            "ls > out.txt",
            "cat $(echo x)",
            "rm -rf x",
            "GIT_EXTERNAL_DIFF=sh git diff",
            "find . -delete",
            "./ls",
            "git status && rm x",
            "rg --pre sh x",
            "git config user.name x",
            "echo `id`",
            "",
        ] {
            assert!(!is_read_only_command(no), "{no}");
        }
    }
}
