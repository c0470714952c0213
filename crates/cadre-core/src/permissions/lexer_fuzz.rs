//! Property tests (proptest) of the shell lexer behind `Bash(...)` rules:
//! it never panics, an allowed command is one whose every simple command
//! starts with an allowed prefix, and a command built by splicing a
//! separator, substitution or redirection into an allowed one is allowed
//! only when bash itself runs nothing else and writes no file.
//!
//! Case counts are modest so the suite stays fast; set `PROPTEST_CASES` for
//! a longer hunt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::rules::RuleKind;
use super::shell::{loose_tokens, parse_shell};
use super::shell_tests::{Stubs, eval, listing, rules};
use super::wrappers::allow_view;

/// The configuration of one property: `default` cases unless
/// `PROPTEST_CASES` says otherwise; no regression files in the source tree.
fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs `test` over `strategy`, failing with proptest's shrunk input.
/// `test` says whether the case reached the property's interesting side (an
/// allowed command); at least a tenth of the cases must, or the generator
/// tests nothing.
fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<bool, TestCaseError>,
) {
    let config = config(cases);
    let total = config.cases;
    let mut runner = TestRunner::new(config);
    let hits = std::cell::Cell::new(0u32);
    let counted = |value| {
        let hit = test(value)?;
        hits.set(hits.get() + u32::from(hit));
        Ok(())
    };
    if let Err(e) = runner.run(&strategy, counted) {
        panic!("{e}");
    }
    // Shrinking reruns cases, so this is a lower bound only when nothing failed.
    eprintln!("{} of {total} cases reached the property", hits.get());
    assert!(
        hits.get() >= total / 10,
        "only {} of {total} generated cases reached the property",
        hits.get()
    );
}

/// Text made mostly of what the lexer treats specially.
fn shellish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z0-9 ]{1,4}",
        6 => prop::sample::select(vec![
            ";", "&&", "||", "|", "|&", "&", "\n", "(", ")", "{", "}", "$(", "`", "<(", ">(",
            "'", "\"", "\\", "\\\n", "$'", "${", "$((", "))", "$[", "<<", "<<-", "<<<", "EOF",
            ">", ">>", "&>", ">&", "2>&1", "<", "<>", "#", "=", "*", "?", "~", "!", "\t",
            "case", "esac", "in", "if", "then", "fi", "for", "do", "done", "coproc", "function",
            "sh -c", "eval", "timeout 5", "env", "xargs", "find . -exec", "\\;", "ä", "\u{0}",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// The lexer and every rule kind take any text without panicking.
#[test]
fn the_lexer_never_panics() {
    let set = rules(&[
        (RuleKind::Allow, "Bash(echo:*)"),
        (RuleKind::Allow, "Bash(git status)"),
        (RuleKind::Ask, "Bash(git push:*)"),
        (RuleKind::Deny, "Bash(rm:*)"),
    ]);
    let text = prop_oneof![3 => shellish(), 1 => any::<String>()];
    check(512, text, |text| {
        let parsed = parse_shell(&text);
        let _ = parsed.allowable();
        let _ = loose_tokens(&text);
        let _ = eval(&set, &text);
        Ok(true)
    });
}

/// Prefixes the allow property uses, as rules and as words.
const PREFIXES: &[(&str, &[&str])] = &[
    ("Bash(echo:*)", &["echo"]),
    ("Bash(git status:*)", &["git", "status"]),
    ("Bash(ls:*)", &["ls"]),
];

/// Whether `segment` starts with `words`, read literally or through the
/// wrappers allow rules see through.
fn starts_with(segment: &[String], words: &[&str]) -> bool {
    let literal = |s: &[String]| s.len() >= words.len() && s.iter().zip(words).all(|(a, b)| a == b);
    literal(segment) || allow_view(segment).is_some_and(literal)
}

/// A command built from allowed commands, words and shell syntax: simple
/// commands (most starting with an allowed prefix) joined by operators.
fn command_like() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec![
        "echo",
        "git status",
        "ls",
        "timeout 5 ls",
        "nice -n 5 echo",
        "rm",
        "git",
        "",
    ]);
    let arg = prop_oneof![
        6 => prop::sample::select(vec![
            "a", "'b c'", "\"d\"", "e\\ f", "$HOME", "2>&1", ">/dev/null", "# note", "-s",
            "'x;y'", "\"p|q\"",
        ])
        .prop_map(str::to_string),
        1 => shellish(),
    ];
    let simple = (name, prop::collection::vec(arg, 0..4))
        .prop_map(|(name, args)| format!("{name} {}", args.join(" ")));
    let operator = prop::sample::select(vec!["; ", " && ", " || ", " | ", "\n", " & ", " "]);
    (
        simple.clone(),
        prop::collection::vec((operator, simple), 0..3),
    )
        .prop_map(|(first, rest)| {
            let mut command = first;
            for (operator, simple) in rest {
                command.push_str(operator);
                command.push_str(&simple);
            }
            command
        })
}

/// An allowed command's every simple command, as the lexer reads it, starts
/// with the words of some allow rule, and nothing opaque, unsure or
/// malformed is allowed.
#[test]
fn allowed_commands_are_made_of_allowed_prefixes() {
    let set = rules(
        &PREFIXES
            .iter()
            .map(|(rule, _)| (RuleKind::Allow, *rule))
            .collect::<Vec<_>>(),
    );
    check(512, command_like(), |command| {
        if eval(&set, &command) != Some(RuleKind::Allow) {
            return Ok(false);
        }
        let parsed = parse_shell(&command);
        prop_assert!(parsed.allowable(), "allowed but not allowable: {parsed:?}");
        for segment in &parsed.segments {
            prop_assert!(
                PREFIXES
                    .iter()
                    .any(|(_, words)| starts_with(segment, words)),
                "allowed, but {segment:?} starts with no allowed prefix"
            );
        }
        Ok(true)
    });
}

/// An allowed command: `echo` with words that quote, escape and comment.
fn allowed_echo() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "a",
        "'b c'",
        "\"d e\"",
        "f\\ g",
        "$HOME",
        "\"$HOME\"",
        "h#i",
        "'j;k'",
        "\"l|m\"",
        "n\\;",
        "-n",
        "2>&1",
        ">/dev/null",
        "'o\"p'",
        "\"q'r\"",
        "$'s\\'t'",
    ]);
    prop::collection::vec(word, 0..5).prop_map(|words| {
        let mut command = "echo".to_string();
        for w in words {
            command.push(' ');
            command.push_str(w);
        }
        command
    })
}

/// What may be spliced in: separators before another command, substitutions
/// and redirections to a file.
const SPLICES: &[&str] = &[
    "; rm x",
    " && rm x",
    " || rm x",
    " | rm x",
    " |& rm x",
    " & rm x",
    "\nrm x",
    "\\\nrm x",
    "$(rm x)",
    "`rm x`",
    "<(rm x)",
    ">(rm x)",
    "$((1))",
    " > out",
    " >> out",
    ">out",
    " &> out",
    " >& out",
    " 2> out",
    " <> out",
    "'",
    "\"",
    "\\",
    "(",
    ")",
    "{ rm x; }",
    " # ",
];

/// A command `echo ...` with one splice at a character position.
fn spliced() -> impl Strategy<Value = String> {
    (
        allowed_echo(),
        prop::sample::select(SPLICES),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(command, splice, at)| {
            let chars: Vec<char> = command.chars().collect();
            let at = at.index(chars.len() + 1);
            chars[..at]
                .iter()
                .chain(splice.chars().collect::<Vec<_>>().iter())
                .chain(chars[at..].iter())
                .collect()
        })
}

/// Splicing syntax into an allowed `echo` command: whenever `Bash(echo:*)`
/// still allows the result, bash runs nothing but `echo` and writes no file;
/// whenever `Bash(echo:*)` and `Bash(rm:*)` allow it, bash runs only those;
/// and whatever bash runs, a deny rule naming it catches.
#[test]
fn spliced_commands_are_allowed_only_when_bash_runs_only_allowed_commands() {
    let Some(stubs) = Stubs::new() else {
        eprintln!("no bash here: the spliced-command differential is skipped");
        return;
    };
    let echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    let echo_rm = rules(&[
        (RuleKind::Allow, "Bash(echo:*)"),
        (RuleKind::Allow, "Bash(rm:*)"),
    ]);
    let case = std::cell::Cell::new(0);
    check(128, spliced(), |command| {
        case.set(case.get() + 1);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "x").unwrap();
        let before = listing(dir.path());
        let ran = stubs.run(dir.path(), &command, case.get());
        let created: Vec<_> = listing(dir.path()).difference(&before).cloned().collect();
        let mut allowed = false;
        for (set, names) in [(&echo, &["echo"][..]), (&echo_rm, &["echo", "rm"][..])] {
            if eval(set, &command) == Some(RuleKind::Allow) {
                allowed = true;
                let others: Vec<_> = ran
                    .iter()
                    .filter(|r| !names.contains(&r.as_str()))
                    .collect();
                prop_assert!(
                    others.is_empty() && created.is_empty(),
                    "allowed by {names:?}, but bash ran {others:?} and created {created:?}"
                );
            }
        }
        for name in &ran {
            let text = format!("Bash({name}:*)");
            let deny = rules(&[(RuleKind::Deny, text.as_str())]);
            prop_assert_eq!(
                eval(&deny, &command),
                Some(RuleKind::Deny),
                "bash ran {}, a deny rule missed it",
                name
            );
        }
        Ok(allowed)
    });
}
