//! Bash rules against shapes bash reads differently from a naive lexer, and a
//! differential test against bash itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use super::rules::{CallFacts, RuleKind, RuleSet, parse_rule};
use super::shell::parse_shell;

/// A rule set from `(kind, rule)` pairs.
pub(super) fn rules(specs: &[(RuleKind, &str)]) -> RuleSet {
    let mut set = RuleSet::new();
    for (kind, text) in specs {
        set.add(parse_rule(*kind, text, None).expect(text));
    }
    set
}

/// What `set` decides for the `Bash` command `command`.
pub(super) fn eval(set: &RuleSet, command: &str) -> Option<RuleKind> {
    let facts = CallFacts {
        tool: "Bash",
        command: Some(command),
        ..CallFacts::default()
    };
    set.evaluate(&facts, Path::new("/proj")).map(|(k, _)| k)
}

/// Payloads from the issue; `CMD` stands for the command they smuggle.
const PAYLOADS: &[&str] = &[
    "echo $[1<<2]\nCMD\n2]",
    "((echo<<2))\nCMD\n2",
    "echo hi <<$'EOF'\nEOF\nCMD\n$EOF",
    "echo hi <<$\"EOF\"\nEOF\nCMD\n$EOF",
    "echo hi <<\\\nEOF\nEOF\nCMD",
    "echo hi <<EOF\\\nX\nEOFX\nCMD\nEOF",
    "echo hi <<\"E\\\nOF\"\nEOF\nCMD\nE\nOF",
    "echo hi <<\"E\\OF\"\nE\\OF\nCMD\nEOF",
    "echo hi <<EOF\nE\\\nOF\nCMD\nEOF",
    "echo \"$\\\n(CMD)\"",
    "(( # )); CMD",
    "echo $((1<<2))\nCMD\n2",
    "echo hi <<-EOF\n\tE\\\nOF\nCMD\nEOF",
];

#[test]
fn issue_payloads_match_no_allow_rule_and_hide_no_deny() {
    let allow_echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    let deny_rm = rules(&[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")]);
    let mut wrong: Vec<String> = Vec::new();
    for payload in PAYLOADS {
        let touch = payload.replace("CMD", "touch pwned");
        if eval(&allow_echo, &touch).is_some() {
            wrong.push(format!("allowed: {touch:?}"));
        }
        let rm = payload.replace("CMD", "rm victim");
        if eval(&deny_rm, &rm) != Some(RuleKind::Deny) {
            wrong.push(format!("not denied: {rm:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn dup_redirection_to_a_word_that_is_not_a_descriptor_writes_a_file() {
    let mut wrong: Vec<String> = Vec::new();
    let allow_echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    for command in [
        "echo X >&2024/../src/main.rs",
        "echo X >& 2024/../src/main.rs",
        "echo X >&2x",
        "echo X 1>&2a",
        "echo X >&$FD",
        "echo X >&\"2\"x",
    ] {
        if eval(&allow_echo, command).is_some() {
            wrong.push(format!("allowed: {command:?}"));
        }
    }
    for command in [
        "echo X >&2",
        "echo X 2>&1",
        "echo X >& 2",
        "echo X >&-",
        "echo X 3>&2-",
        "echo X >&\"2\"",
    ] {
        if eval(&allow_echo, command) != Some(RuleKind::Allow) {
            wrong.push(format!("not allowed: {command:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn expansions_that_may_run_commands_match_no_allow_rule() {
    let allow_echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    for command in [
        // Bash opens a network connection for these names.
        "echo < /dev/tcp/192.0.2.2/80",
        "echo 0</dev/udp/192.0.2.2/53",
        "echo ${x@P}",
        "echo ${x:-$(touch p)}",
        "echo $((x))",
        "echo $[x]",
        "echo `touch p`",
        "echo \"$(touch p)\"",
        "echo {a,b} && {touch,p}",
    ] {
        assert_eq!(eval(&allow_echo, command), None, "{command:?}");
    }
    for command in ["echo ${HOME}", "echo ${arr[@]}", "echo $HOME", "echo {a,b}"] {
        assert_eq!(
            eval(&allow_echo, command),
            Some(RuleKind::Allow),
            "{command:?}"
        );
    }
}

/// A substitution that prints nothing can split a command name; deny rules
/// read the name with it removed (found by `lexer_fuzz`).
#[test]
fn deny_rules_see_names_split_by_empty_substitutions() {
    let deny_rm = rules(&[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")]);
    for command in [
        "r$(true)m x",
        "r$()m x",
        "r``m x",
        "\"r\"$(true)'m' x",
        "r$(: $(true))m x",
        "echo; r`true`m x",
    ] {
        assert_eq!(eval(&deny_rm, command), Some(RuleKind::Deny), "{command:?}");
    }
    assert_eq!(eval(&deny_rm, "ls $(true) x"), Some(RuleKind::Allow));
}

#[test]
fn deny_rules_see_through_wrappers() {
    let mut wrong: Vec<String> = Vec::new();
    let deny_rm = rules(&[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")]);
    for command in [
        "timeout 5 rm victim",
        "timeout -s KILL 5 rm victim",
        "timeout -sKILL 5 rm victim",
        "timeout --signal=KILL 5 rm victim",
        "timeout --signal KILL 5 rm victim",
        "timeout --kill-after=1 5 rm victim",
        "timeout -k 1 --preserve-status 5 rm victim",
        "timeout --weird-option 5 rm victim",
        "time rm victim",
        "time -p rm victim",
        "nice rm victim",
        "nice -n 5 rm victim",
        "nice -n5 rm victim",
        "nice -5 rm victim",
        "nice --adjustment=5 rm victim",
        "nohup rm victim",
        "nohup -- rm victim",
        "stdbuf -oL rm victim",
        "stdbuf -o L -e 0 rm victim",
        "stdbuf --output=L rm victim",
        "setsid rm victim",
        "setsid -f rm victim",
        "env rm victim",
        "env -i rm victim",
        "env -u HOME rm victim",
        "env -uHOME rm victim",
        "env --unset=HOME rm victim",
        "env A=1 B=2 rm victim",
        "env -i -- A=1 rm victim",
        "env -- rm victim",
        "env - rm victim",
        "env -S 'rm victim'",
        "command rm victim",
        "command -p rm victim",
        "exec rm victim",
        "builtin rm victim",
        "sudo -u root rm victim",
        "xargs rm < list",
        "xargs -0 -I{} rm {} < list",
        "timeout 5 nice -n 5 nohup env -i /bin/rm victim",
        "timeout 5 time -p stdbuf -oL rm victim",
        "find . -name x -exec rm {} ;",
        "sh -c 'rm victim'",
        "bash -lc \"echo hi; rm victim\"",
        "eval 'rm victim'",
        "trap 'rm victim' EXIT",
        "watch -n 1 rm victim",
        "flock /tmp/l rm victim",
        "chroot / rm victim",
        "ls | timeout 5 rm victim",
        "echo $(timeout 5 rm victim)",
        "$'\\x72m' victim",
        "$'\\162m' victim",
        "{rm,victim}",
        "function f { rm victim; }; f",
        "echo \"$(case a in a) rm victim;; esac)\"",
        "echo \"${x:-\"}\"; rm victim; echo \"}\"",
        "cat <<$'EOF'\nEOF\n$'\\x72m' victim",
        "echo `echo \\`rm victim\\``",
        "echo \"$(echo a)\"# ; rm victim",
        "echo `echo a`# ; rm victim",
        "cat <<EOF\n$(echo a # )\n$'\\x72m' victim\n)\nEOF",
        "cat <<EOF\n\"$(rm victim)\"\nEOF",
        "a=$(cat <<'EOF'\nhi\nEOF); rm victim\nEOF\n)",
        "function f { {rm,victim}; }; f",
        ">/dev/null rm victim",
        "> f7 {rm,victim}",
        "a=(x)# rm victim",
        "a=$(cat <<EOF\nEOF); $'\\x\\\n72m' victim",
        "2>&1 rm victim",
        "< list rm victim",
        "a=(x) < list rm victim",
        "echo $(cat <<EOF)\nEOF\nrm victim",
        "echo \"$(case a in a) echo;; esac)\" | $'\\x72m' victim",
        // `coproc NAME` before a compound command: NAME is no command.
        "coproc x { rm victim; }",
        "coproc x while rm victim; do break; done",
        "coproc x until ! rm victim; do break; done",
        "coproc x ( rm victim )",
        // An expansion in the command name may be empty or another command.
        "$x rm victim",
        "${x} rm victim",
        "${x:+} rm victim",
        "$@ rm victim",
        "\"$@\" rm victim",
        "$e$e rm victim",
        "${x:-rm} victim",
        "${x-r}m victim",
        "x=rm; $x victim",
        "r${x}m victim",
        // A substitution in the command name.
        "\"$(printf rm)\" victim",
        "`printf rm` victim",
        // `--` ends the options of `trap` and `eval`.
        "trap -- 'rm victim' EXIT",
        "eval -- 'rm victim'",
        // Code a shell or an interpreter reads from stdin, a file, a
        // variable or an alias: its loose reading decides.
        "echo rm victim | sh",
        "echo rm victim | bash -s",
        "bash <<'EOF'\nrm victim\nEOF",
        "sh <<EOF\nrm victim\nEOF",
        ". <(echo rm victim)",
        "source /dev/stdin <<<'rm victim'",
        "bash <(echo rm victim)",
        "python3 -c 'import os; os.system(\"rm victim\")'",
        "perl -e 'system(\"rm victim\")'",
        "awk 'BEGIN { system(\"rm victim\") }'",
        "printf '%s' 'rm victim' | xargs -0 sh -c",
        "mapfile -C 'rm victim;:' -c 1 x <<<a",
        "PROMPT_COMMAND='rm victim' bash -i </dev/null",
        "BASH_ENV=<(echo 'rm victim') bash -c :",
        "x='rm victim'; eval \"$x\"",
        "shopt -s expand_aliases; alias e='rm victim'\ne",
        "compgen -C 'rm victim' x",
        // An input redirection before a command name that expands.
        "< f1 {rm,victim}",
        "<<< x {rm,victim}",
        "0< f1 {rm,victim}",
        // Read by bash where the lexer is unsure: the loose reading decodes
        // `$'...'`.
        "echo $(cat <<EOF)\n$(cat a)\nEOF echo hi | a=$(touch a) $'\\x72m' victim",
        // More commands that run the command after them.
        "setpriv rm victim",
        "setarch x86_64 rm victim",
        "linux64 rm victim",
        "fakeroot -- rm victim",
        "dbus-run-session -- rm victim",
        "ssh-agent rm victim",
        "valgrind -q rm victim",
        "start-stop-daemon --start --exec /bin/rm -- victim",
        "capsh -- -c 'rm victim'",
        "env -S'-i rm victim'",
        // Git runs `!` aliases and command-valued settings through a shell.
        "git -c alias.x='!rm victim' x",
        "git -c core.sshCommand='rm victim' fetch",
        "GIT_EDITOR='rm victim' git commit",
        "env GIT_SSH_COMMAND='rm victim' git fetch",
        // Arithmetic on a variable runs the substitutions in its value.
        "x='a[$(rm victim)]'; [[ $x -eq 0 ]]",
        "x='a[$(rm victim)]'; s=abc; echo ${s:x}",
        "x='a[$(rm victim)]'; a=(1 2); echo ${a[x]}",
        "x=$(printf 'a[\\x24(rm victim)]'); [[ x -eq 0 ]]",
        "x=$(printf 'a[\\x24(rm victim)]'); declare -i y=x",
        "x=$(printf 'a[\\x24(rm victim)]'); a[x]=1",
        "read x <<<'a[$(rm victim)]'; let y=x",
        // `hash -p` names a program.
        "hash -p /bin/rm foo; foo victim",
    ] {
        if eval(&deny_rm, command) != Some(RuleKind::Deny) {
            wrong.push(format!("not denied: {command:?}"));
        }
    }
    let deny_rm_rf = rules(&[
        (RuleKind::Allow, "Bash"),
        (RuleKind::Deny, "Bash(rm -rf:*)"),
    ]);
    for command in ["rm >/dev/null -rf victim", "2>/dev/null rm -rf victim"] {
        if eval(&deny_rm_rf, command) != Some(RuleKind::Deny) {
            wrong.push(format!("not denied: {command:?}"));
        }
    }
    // Only what runs a command hides one.
    for command in [
        "echo timeout 5 rm",
        "ls rm",
        "git commit -m rm",
        "echo > rm",
        "python3 rm.py",
    ] {
        assert_eq!(
            eval(&deny_rm, command),
            Some(RuleKind::Allow),
            "{command:?}"
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn allow_rules_see_through_claude_code_wrappers_only_when_understood() {
    let mut wrong: Vec<String> = Vec::new();
    let allow_echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    for command in [
        "timeout 5 echo hi",
        "timeout -s KILL 5 echo hi",
        "timeout --kill-after=1 5 echo hi",
        "time echo hi",
        "time -p echo hi",
        "nice -n 5 echo hi",
        "nohup echo hi",
        "stdbuf -oL echo hi",
        "timeout 5 nice echo hi",
    ] {
        if eval(&allow_echo, command) != Some(RuleKind::Allow) {
            wrong.push(format!("not allowed: {command:?}"));
        }
    }
    for command in [
        "timeout --weird 5 echo hi",
        "timeout 5",
        "time -o out echo hi",
        "nice -x echo hi",
        "env echo hi",
        "env PATH=/tmp echo hi",
        "setsid echo hi",
        "command echo hi",
        "sudo echo hi",
        "xargs echo",
        "timeout 5 rm x",
        // Another program that only shares a wrapper's name.
        "./timeout 5 echo hi",
        "x/nice echo hi",
        "/tmp/nohup echo hi",
    ] {
        if eval(&allow_echo, command).is_some() {
            wrong.push(format!("allowed: {command:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------------
// Differential test against bash

/// Commands the generated scripts run; each is a logging stub.
const STUBS: &[&str] = &["echo", "touch", "rm", "cat", "ls"];

/// A small deterministic generator (xorshift64*), so every run tests the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn simple_command(rng: &mut Rng) -> String {
    let name = rng.pick(STUBS);
    let arg = rng.pick(&["a", "f1", "'x y'", "\"q\"", "$HOME", "-n", ""]);
    format!("{name} {arg}")
}

/// A fragment: `C` stands for a simple command, `B` for a here-document body line.
const FRAGMENTS: &[&str] = &[
    "C",
    "C",
    "C; C",
    "C && C",
    "C || C",
    "C | C",
    "(C)",
    "{ C; }",
    "echo $(C)",
    "echo \"$(C)\"",
    "echo `C`",
    "echo $[1<<2]",
    "echo $((1<<2))",
    "((1<<2))",
    "(( # ))",
    "((echo<<2))",
    "echo $((1 + $(C)))",
    "cat <<EOF\nB\nEOF",
    "cat <<'EOF'\nB\nEOF",
    "cat <<-EOF\n\tB\n\tEOF",
    "cat <<$'EOF'\nB\nEOF",
    "cat <<$\"EOF\"\nB\nEOF",
    "cat <<\\\nEOF\nB\nEOF",
    "cat <<EOF\\\nX\nB\nEOFX",
    "cat <<\"E\\\nOF\"\nB\nEOF",
    "cat <<\"E\\OF\"\nB\nE\\OF",
    "cat <<E\"O\"F\nB\nEOF",
    "cat <<EOF; C\nB\nEOF",
    "# C",
    "C # C",
    "C #",
    "echo a#b",
    "echo 'a; C'",
    "echo \"a; C\"",
    "echo $'a\\'; C'",
    "echo $'\\x41'",
    "echo \"$\\\n(C)\"",
    "echo a\\\nb",
    "C > f3",
    "C >&2",
    "C >&2x",
    "C 2>&1",
    "C >/dev/null",
    "C >& f4",
    "C < f1",
    "cat <<< C",
    "echo ${HOME}",
    "echo ${x:-$(C)}",
    "if C; then C; fi",
    "for i in 1 2; do C; done",
    "case a in a) C;; esac",
    "f() { C; }; f",
    "C &",
    "x=1 C",
    "! C",
    "$'\\x72m' a",
    "$'\\145cho' a",
    "{rm,a}",
    "{echo,a}",
    "echo \"$(echo \")\")\"",
    "echo $\"a\"",
    "time C",
    "time -p C",
    "coproc C",
    "echo \\$(C)",
    "echo '$(C)'",
    "echo \"\\$(C)\"",
    "echo $(cat <<EOF\nB\nEOF\n)",
    "cat <<EOF <<EOF2\nB\nEOF\nB\nEOF2",
    "echo `echo \\`C\\``",
    "echo $(( $(C) ))",
    "[[ $(C) ]]",
    "echo <(C)",
    "C >(C)",
    "a=$(C)",
    "export a=$(C)",
    "echo {a,b}",
    "e\\cho a",
    "'ec'ho a",
    "\"echo\" a",
    "echo a\\#b",
    "echo ${x:-'\"'} C",
    "echo $(echo $(C))",
    "echo \"`C`\"",
    "case a in (a) C;; esac",
    "echo $((1)) $[2] ((3))",
    "(( 1 )) && C",
    "((1) )",
    "( (C) )",
    "echo \"$(case a in a) C;; esac)\"",
    "echo $(case a in (a) C;; esac)",
    "case a in *) C;; esac",
    "[[ a < b ]] && C",
    "[[ 1 << 2 ]]\nC",
    "a=(C)",
    "echo $'\\cA'",
    "echo ${#x} $# $$",
    "echo $(( 1 # 2 ))\nC",
    "echo \\$[1<<2]\nC\n2]",
    "echo '$[1<<2]'\nC",
    "echo \"$[1<<2]\"\nC\n2]",
    "cat <<EOF\n$(\nC\n)\nEOF",
    "function f { C; }; f",
    "echo \"${x:-\"}\"}\"; C",
    "echo \"${x:-\"}\"; C; echo \"}\"",
    "echo $(echo a # )\nC\n)",
    "echo \"$(echo a # )\nC\n)\"",
    "C <<< $(C)",
    "echo `C`'`'\"`\"",
    "echo \"`echo \\\"C\\\"`\"",
    "echo $(\nC\n)",
    "coproc { C; }",
    "echo ${x:-`C`}",
    "echo $(cat <<EOF)\nB\nEOF",
    "echo \"$(cat <<EOF\nB\nEOF\n)\"",
    "cat <<EOF | C\nB\nEOF",
    "cat <<EOF && C\nB\nEOF",
    "(cat <<EOF\nB\nEOF\n)",
    "echo `cat <<EOF\nB\nEOF\n`",
    "cat <<EOF # c <<X\nB\nEOF",
    "# <<EOF\nC",
    "echo <<EOF 'a\nB\nEOF'",
    "echo \"<<EOF\"\nC",
    "cat <<EOF\nB\nEOF\n\nC",
    "cat <<  EOF\nB\nEOF",
    "cat <<E'O'F\nB\nEOF",
    "cat <<\\EOF\nB\nEOF",
    "cat <<EOF\\\\\nB\nEOF\\",
    "echo hi 3>f5",
    "echo hi {fd}>f6",
    "echo hi > >(C)",
    "echo hi |& C",
    "echo ${HOME@P}",
    "a=$(cat <<EOF\nB\nEOF); C",
    "a=$(cat <<'EOF'\nB\nEOF); C\nEOF\n)",
    "a=$(cat <<EOF\nB\nEOF ); C\nEOF\n)",
    "> f7 C",
    "2>/dev/null C",
    "< f1 C",
    "x=1 >/dev/null C",
];

/// Here-document body lines.
const BODY: &[&str] = &[
    "hello",
    "C",
    "EOF",
    "E\\\nOF",
    "\tEOF",
    "EOFX",
    "E\\OF",
    "$(C)",
    "`C`",
    "${x:-$(C)}",
    "a\\\\\nEOF",
];

const SEPARATORS: &[&str] = &["\n", "; ", " && ", " | ", " ", "\\\n", ""];

/// One fragment; a command in it is now and then a fragment itself.
fn fragment(rng: &mut Rng, depth: usize) -> String {
    let mut piece = String::new();
    for c in rng.pick(FRAGMENTS).chars() {
        match c {
            'C' if depth < 2 && rng.below(5) == 0 => piece.push_str(&fragment(rng, depth + 1)),
            'C' => piece.push_str(&simple_command(rng)),
            'B' => piece.push_str(&rng.pick(BODY).replace('C', &simple_command(rng))),
            _ => piece.push(c),
        }
    }
    piece
}

fn generate(rng: &mut Rng) -> String {
    let mut script = String::new();
    for k in 0..1 + rng.below(4) {
        if k > 0 {
            script.push_str(rng.pick(SEPARATORS));
        }
        script.push_str(&fragment(rng, 0));
    }
    // Now and then a continuation in a random place.
    if rng.below(4) == 0 {
        let chars: Vec<char> = script.chars().collect();
        let at = rng.below(chars.len() + 1);
        script = chars[..at]
            .iter()
            .chain(['\\', '\n'].iter())
            .chain(chars[at..].iter())
            .collect();
    }
    script
}

/// Bash with logging stubs of [`STUBS`] on its PATH.
pub(super) struct Stubs {
    bash: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Stubs {
    /// The stubs, or `None` when this machine has no bash.
    pub(super) fn new() -> Option<Stubs> {
        let bash = find_bash()?;
        let dir = tempfile::tempdir().unwrap();
        for name in STUBS {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\necho {name} >> \"$STUB_LOG\"\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.path().join("env.sh"), "enable -n echo\n").unwrap();
        Some(Stubs { bash, dir })
    }

    /// Runs `script` in `dir` (see [`run_bash`]); returns the commands that ran.
    pub(super) fn run(&self, dir: &Path, script: &str, case: usize) -> BTreeSet<String> {
        run_bash(&self.bash, dir, self.dir.path(), script, case)
    }
}

/// Runs `script` with `bash -c` in `dir`, where only the stubs are on PATH
/// and the builtins of the same names are disabled; returns the commands
/// that ran.
fn run_bash(bash: &Path, dir: &Path, stubs: &Path, script: &str, case: usize) -> BTreeSet<String> {
    // One log per case: a command left running in the background may log late.
    let log = stubs.join(format!("log{case}"));
    let status = Command::new(bash)
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_clear()
        .env("PATH", stubs)
        .env("HOME", dir)
        .env("BASH_ENV", stubs.join("env.sh"))
        .env("STUB_LOG", &log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bash runs");
    let _ = status;
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn find_bash() -> Option<std::path::PathBuf> {
    ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// The names in `dir`.
pub(super) fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// For generated scripts: every command bash runs is caught by a deny rule
/// naming it, and when allow rules for some commands allow a script, bash
/// runs only those and writes no file.
#[test]
fn the_lexer_agrees_with_bash_on_generated_commands() {
    let Some(stubs) = Stubs::new() else {
        eprintln!("no bash here: differential test skipped");
        return;
    };

    let allow_sets: &[&[&str]] = &[&["echo"], &["echo", "cat"], &["cat", "ls"]];
    // A fixed seed and count keep CI fast and repeatable; longer hunts can set
    // CADRE_LEXER_SEED / CADRE_LEXER_CASES.
    let env_num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let mut rng = Rng(env_num("CADRE_LEXER_SEED").unwrap_or(0x9e37_79b9_7f4a_7c15) | 1);
    let cases = env_num("CADRE_LEXER_CASES").unwrap_or(400);
    let mut failures = Vec::new();
    let (mut ran, mut allowed) = (0, 0);
    for case in 0..cases as usize {
        let script = generate(&mut rng);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f1"), "x").unwrap();
        let before = listing(dir.path());
        let executed = stubs.run(dir.path(), &script, case);
        let created: Vec<_> = listing(dir.path()).difference(&before).cloned().collect();
        ran += executed.len();
        for name in &executed {
            let text = format!("Bash({name}:*)");
            let deny = rules(&[(RuleKind::Deny, text.as_str())]);
            if eval(&deny, &script) != Some(RuleKind::Deny) {
                failures.push(format!(
                    "{script:?}: bash ran {name}, a deny rule missed it"
                ));
            }
        }
        for names in allow_sets {
            let texts: Vec<String> = names.iter().map(|n| format!("Bash({n}:*)")).collect();
            let specs: Vec<(RuleKind, &str)> = texts
                .iter()
                .map(|t| (RuleKind::Allow, t.as_str()))
                .collect();
            if eval(&rules(&specs), &script) != Some(RuleKind::Allow) {
                continue;
            }
            allowed += 1;
            let extra: Vec<_> = executed
                .iter()
                .filter(|e| !names.contains(&e.as_str()))
                .collect();
            if !extra.is_empty() || !created.is_empty() {
                failures.push(format!(
                    "{script:?}: allowed by {names:?}, but bash ran {extra:?} and created {created:?}"
                ));
            }
        }
    }
    eprintln!("{cases} scripts, {ran} stub runs, {allowed} allowed");
    // The generator must actually exercise both sides.
    assert!(ran > 200, "bash ran only {ran} stub commands");
    assert!(allowed > 20, "only {allowed} scripts were allowed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Long inputs are read in linear time: `${${${...` once took minutes.
#[test]
fn long_inputs_are_checked_promptly() {
    let allow_echo = rules(&[(RuleKind::Allow, "Bash(echo:*)")]);
    let deny_rm = rules(&[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")]);
    for shape in [
        "${", "${a ", "$'", "$(", "`", "<<E ", "\\\n", "((", "$[", "'a'",
    ] {
        let command = format!("echo {}; rm victim\n", shape.repeat(100_000));
        assert_eq!(eval(&allow_echo, &command), None, "{shape:?}");
        assert_eq!(eval(&deny_rm, &command), Some(RuleKind::Deny), "{shape:?}");
    }
}

#[test]
fn long_wrapper_chains_hide_no_deny() {
    let deny_rm = rules(&[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")]);
    // Unknown options: every later word is tried, within a budget.
    let unknown = format!("sudo -Z {}/bin/rm victim", "/a ".repeat(20_000));
    // Nested wrappers, deeper than the walk follows one by one.
    let nested = format!("{}rm victim", "timeout 5 ".repeat(5_000));
    for command in [unknown, nested] {
        assert_eq!(eval(&deny_rm, &command), Some(RuleKind::Deny));
    }
    let harmless = format!("sudo -Z {}", "/a ".repeat(20_000));
    assert_eq!(eval(&deny_rm, &harmless), Some(RuleKind::Allow));
}

#[test]
fn lexer_splits_commands() {
    let cases: &[(&str, &[&[&str]], bool)] = &[
        ("git status -s", &[&["git", "status", "-s"]], false),
        (
            "a && b || c; d | e & f\ng",
            &[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"], &["g"]],
            false,
        ),
        (
            "echo 'a;b' \"c|d\" e\\&f",
            &[&["echo", "a;b", "c|d", "e&f"]],
            false,
        ),
        ("echo \"\" ''", &[&["echo", "", ""]], false),
        ("echo a\\\nb", &[&["echo", "ab"]], false),
        ("ls 2>&1 | wc -l", &[&["ls", "2>&1"], &["wc", "-l"]], false),
        ("ls >/dev/null", &[&["ls", ">", "/dev/null"]], false),
        ("ls > out", &[&["ls", ">", "out"]], true),
        // The substitution's output is a word of its own.
        (
            "echo $(rm x) y",
            &[&["echo"], &["rm", "x"], &["", "y"]],
            true,
        ),
        ("a # b; c\nd", &[&["a"], &["d"]], false),
        ("echo a#b", &[&["echo", "a#b"]], false),
    ];
    for (src, want, opaque) in cases {
        let parsed = parse_shell(src);
        let want: Vec<Vec<String>> = want
            .iter()
            .map(|seg| seg.iter().map(|w| w.to_string()).collect())
            .collect();
        assert_eq!(parsed.segments, want, "{src:?}");
        assert_eq!(parsed.opaque, *opaque, "{src:?}");
        assert!(!parsed.malformed, "{src:?}");
    }
}

/// A command name made by a substitution that prints part of it is asked
/// about whenever a deny or ask rule names particular commands, in every
/// mode (bypass included); without such rules nothing changes.
#[test]
fn names_made_when_the_command_runs_are_asked_about_under_deny_rules() {
    use super::{Decision, PermissionMode, PermissionPolicy, PermissionTracker, ToolEffect};
    let dir = tempfile::tempdir().unwrap();
    let policy = |mode, specs: &[(RuleKind, &str)]| {
        PermissionPolicy::new(
            mode,
            rules(specs),
            dir.path(),
            &dir.path().join(".data"),
            true,
        )
    };
    let tracker = PermissionTracker::default();
    let decide = |p: &PermissionPolicy, command: &str| {
        let mut input = serde_json::Map::new();
        input.insert("command".into(), command.into());
        p.decide(&tracker, "Bash", ToolEffect::Execute, &input, dir.path())
    };
    let hidden = [
        "$(printf r)m -rf x",
        "`printf r`m -rf x",
        "$X -rf x",
        "/bin/r? -rf x",
    ];
    for mode in [
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::Default,
    ] {
        let p = policy(
            mode,
            &[(RuleKind::Allow, "Bash"), (RuleKind::Deny, "Bash(rm:*)")],
        );
        for command in hidden {
            assert!(
                matches!(decide(&p, command), Decision::Ask { .. }),
                "{mode} {command:?}"
            );
        }
        // A name the lexer reads is decided by the rules as before.
        assert_eq!(decide(&p, "ls -la"), Decision::Allow, "{mode}");
    }
    let p = policy(PermissionMode::DontAsk, &[(RuleKind::Ask, "Bash(rm:*)")]);
    assert!(matches!(
        decide(&p, "$(printf r)m -rf x"),
        Decision::Deny(_)
    ));
    // No deny or ask rule on particular commands: the mode decides, as before.
    let p = policy(
        PermissionMode::AcceptEdits,
        &[(RuleKind::Deny, "Read(secret)")],
    );
    assert_eq!(decide(&p, "$(printf r)m -rf x"), Decision::Allow);
}
