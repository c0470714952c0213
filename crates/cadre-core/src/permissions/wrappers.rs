//! Commands that run another command (`timeout 5 rm x`, `env -i rm x`,
//! `find . -exec rm {} ;`, `sh -c 'rm x'`): what a `Bash(...)` rule sees
//! through.
//!
//! Allow rules see through the wrappers Claude Code strips (`timeout`,
//! `time`, `nice`, `nohup`, `stdbuf`) named without a directory, when every
//! option is understood; deny and ask rules see through these and many more,
//! and when an option is not understood they try every later word as the
//! start of the command.

use super::shell::{SHELL_KEYWORDS, is_assignment};

/// The wrappers Claude Code strips before matching, for allow rules too.
const ALLOW_WRAPPERS: &[&str] = &["timeout", "time", "nice", "nohup", "stdbuf"];

/// How a wrapper's options are read (GNU getopt, stopping at the first
/// operand, as these tools do).
struct Spec {
    name: &'static str,
    /// Short options without a value.
    flags: &'static str,
    /// Short options with a value (`-n 5` or `-n5`).
    valued: &'static str,
    long_flags: &'static [&'static str],
    /// Long options with a value (`--signal=KILL` or `--signal KILL`).
    long_valued: &'static [&'static str],
    /// Operands before the command (the duration of `timeout`).
    operands: usize,
    /// `-5` is an option (`nice -5`).
    numeric: bool,
    /// `NAME=value` words before the command (`env`, `sudo`).
    assignments: bool,
}

const fn spec(name: &'static str, flags: &'static str, valued: &'static str) -> Spec {
    Spec {
        name,
        flags,
        valued,
        long_flags: &[],
        long_valued: &[],
        operands: 0,
        numeric: false,
        assignments: false,
    }
}

const SPECS: &[Spec] = &[
    Spec {
        long_flags: &["--foreground", "--preserve-status", "--verbose"],
        long_valued: &["--kill-after", "--signal"],
        operands: 1,
        ..spec("timeout", "v", "ks")
    },
    // The bash keyword takes only `-p`.
    spec("time", "p", ""),
    Spec {
        long_valued: &["--adjustment"],
        numeric: true,
        ..spec("nice", "", "n")
    },
    spec("nohup", "", ""),
    Spec {
        long_valued: &["--input", "--output", "--error"],
        ..spec("stdbuf", "", "ioe")
    },
    Spec {
        long_flags: &["--ctty", "--fork", "--wait"],
        ..spec("setsid", "cfw", "")
    },
    Spec {
        long_flags: &[
            "--ignore-environment",
            "--null",
            "--debug",
            "--block-signal",
            "--default-signal",
            "--ignore-signal",
            "--list-signal-handling",
        ],
        long_valued: &["--unset", "--chdir"],
        assignments: true,
        ..spec("env", "i0v", "uC")
    },
    spec("command", "pvV", ""),
    spec("builtin", "", ""),
    spec("exec", "cl", "a"),
    Spec {
        assignments: true,
        ..spec("sudo", "AbEHiKklnPSsVv", "ugCDprtTU")
    },
    spec("xargs", "0rtpx", "aILnPsdE"),
    spec("ionice", "t", "cnpP"),
];

/// Commands that run a command given after operands or options this module
/// doesn't read: any later word may start it.
const ANY_SUFFIX: &[&str] = &[
    "chrt",
    "chroot",
    "flock",
    "watch",
    "strace",
    "ltrace",
    "taskset",
    "runuser",
    "nsenter",
    "unshare",
    "firejail",
    "parallel",
    "doas",
    "sg",
    "prlimit",
    "systemd-run",
    "setpriv",
    "setarch",
    "linux32",
    "linux64",
    "fakeroot",
    "faketime",
    "dbus-run-session",
    "dbus-launch",
    "ssh-agent",
    "valgrind",
    "start-stop-daemon",
    "toybox",
    "unbuffer",
    "rlwrap",
    "numactl",
    "cpulimit",
    "pkexec",
    "bwrap",
    "proxychains",
    "proxychains4",
    "torsocks",
    "tini",
    "dumb-init",
    "xvfb-run",
    "daemonize",
];

/// Commands that run a string as shell code (`eval`, `sh -c`, `trap`).
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "su", "script", "capsh",
];

/// Where a wrapper's command starts.
enum Inner {
    /// At this index.
    At(usize),
    /// An option was not understood.
    Unknown,
}

fn basename(word: &str) -> &str {
    word.rsplit_once('/')
        .map_or(word, |(_, base)| if base.is_empty() { word } else { base })
}

/// An assignment or a keyword (but not `time`, read as a wrapper) that may
/// come before the command.
fn leads_command(word: &str) -> bool {
    is_assignment(word) || (SHELL_KEYWORDS.contains(&word) && spec_for(word).is_none())
}

fn spec_for(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// Reads `words[0]`'s options; `words[0]` is the wrapper.
fn inner(spec: &Spec, words: &[String]) -> Inner {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w == "--" {
            i += 1;
            break;
        }
        if w == "-" && spec.name == "env" {
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            let name = format!("--{name}");
            if spec.long_flags.contains(&name.as_str()) {
                i += 1;
            } else if spec.long_valued.contains(&name.as_str()) {
                i += if has_value { 1 } else { 2 };
            } else {
                return Inner::Unknown;
            }
            continue;
        }
        let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) else {
            break;
        };
        if spec.numeric && shorts.chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut consumed = 1;
        for (k, c) in shorts.char_indices() {
            if spec.flags.contains(c) {
                continue;
            }
            if spec.valued.contains(c) {
                if k + c.len_utf8() == shorts.len() {
                    consumed = 2;
                }
                break;
            }
            return Inner::Unknown;
        }
        i += consumed;
    }
    if spec.assignments {
        while words.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
    }
    Inner::At(i + spec.operands)
}

/// The command an allow rule looks at once Claude Code's wrappers are
/// stripped; `None` when there is none or an option is not understood.
pub(super) fn allow_view(segment: &[String]) -> Option<&[String]> {
    let mut view = segment;
    let mut stripped = false;
    while let Some(first) = view.first() {
        // Only the bare name: `./timeout` is whatever program the path holds.
        if !ALLOW_WRAPPERS.contains(&first.as_str()) {
            break;
        }
        let spec = spec_for(first)?;
        match inner(spec, view) {
            Inner::At(i) => view = view.get(i..)?,
            Inner::Unknown => return None,
        }
        stripped = true;
    }
    (stripped && !view.is_empty()).then_some(view)
}

/// `args` without a leading `--` (the end of a builtin's options).
fn after_dashes(args: &[String]) -> &[String] {
    match args.split_first() {
        Some((first, rest)) if first == "--" => rest,
        _ => args,
    }
}

/// Commands that run code this matcher does not see in the command's words
/// (from stdin, a file, a variable, an alias, or in another language).
const CODE_RUNNERS: &[&str] = &[
    "source",
    "eval",
    "alias",
    "mapfile",
    "readarray",
    "compgen",
    "complete",
    "fc",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "tclsh",
    "expect",
    "pwsh",
    "osascript",
    "Rscript",
    "julia",
    "hash",
    "enable",
    "let",
];

/// Variables whose value bash runs as code (`PROMPT_COMMAND`, `BASH_ENV`,
/// prompts, exported functions).
const CODE_VARIABLES: &[&str] = &[
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
];

/// Endings of variable names whose value programs run as a command
/// (`GIT_EDITOR`, `GIT_SSH_COMMAND`, `PAGER`, `SUDO_ASKPASS`, ...).
const CODE_VARIABLE_ENDINGS: &[&str] = &["EDITOR", "PAGER", "_COMMAND", "ASKPASS", "_SSH", "DIFF"];

/// `[[ ... ]]` operators that evaluate their operands as arithmetic.
const ARITH_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Whether a simple command runs code its words don't show (`echo rm x | sh`,
/// `bash <<EOF`, `. <(...)`, `python3 -c ...`): for such commands deny
/// rules also look at the loose reading of the whole text.
pub(super) fn runs_unseen_code(segment: &[String]) -> bool {
    let first = segment.iter().position(|w| !leads_command(w));
    let test = first.is_some_and(|k| segment[k] == "[[");
    segment.iter().enumerate().any(|(k, word)| {
        // Code kept as text for later (`x='$(rm x)'`), and arithmetic on
        // variables, which runs the substitutions in their values
        // (`[[ $x -eq 0 ]]`, `${s:x}`, `${a[x]}`, `a[x]=1`, `declare -i`).
        if word.contains("$(")
            || word.contains('`')
            || (test && ARITH_TESTS.contains(&word.as_str()))
            || word.split("${").skip(1).any(|p| {
                p.split('}')
                    .next()
                    .is_some_and(|body| body.contains([':', '[']))
            })
            || word
                .split_once('=')
                .is_some_and(|(name, _)| name.contains('['))
            || (matches!(segment[0].as_str(), "declare" | "typeset" | "local")
                && word.starts_with('-')
                && word.contains('i'))
        {
            return true;
        }
        if word.starts_with("BASH_FUNC_") {
            return true;
        }
        if is_assignment(word) {
            let name = word.split(['=', '+']).next().unwrap_or_default();
            return CODE_VARIABLES.contains(&name)
                || CODE_VARIABLE_ENDINGS.iter().any(|e| name.ends_with(e));
        }
        let name = basename(word);
        SHELLS.contains(&name)
            || CODE_RUNNERS.contains(&name)
            || name.starts_with("python")
            || (name == "." && Some(k) == first)
    })
}

/// How many readings are tried through wrappers before falling back to
/// trying every word as the start of the command.
const BUDGET: usize = 1024;

/// Whether `matches` holds for any reading of one simple command, for deny
/// and ask rules: as written, with leading assignments and keywords
/// stripped, with the command's directory dropped (`/bin/rm` → `rm`),
/// through wrappers and `find -exec`. `matches` gets a command name and its
/// arguments; `nested` is asked about strings that run as shell code
/// (`eval`, `sh -c`, `trap`, `env -S`).
pub(super) fn deny_any(
    segment: &[String],
    matches: &dyn Fn(&str, &[String]) -> bool,
    nested: &mut dyn FnMut(&str) -> bool,
) -> bool {
    let mut walker = Walker {
        matches,
        nested,
        segment,
        budget: BUDGET,
    };
    if walker.walk(segment) {
        return true;
    }
    // Redirections may come anywhere, even before the command
    // (`>/dev/null rm x`): read it without them too.
    let bare = without_redirections(segment);
    if bare.len() == segment.len() {
        return false;
    }
    walker.segment = &bare;
    walker.budget = BUDGET;
    walker.walk(&bare)
}

/// `segment` without redirection operators and their targets, as the lexer
/// writes them (`>`, `2>>`, `&>`, `<<<`, `2>&1`, `>&`, ...).
fn without_redirections(segment: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(segment.len());
    let mut words = segment.iter();
    while let Some(word) = words.next() {
        match redirection(word) {
            Some(true) => {
                words.next();
            }
            Some(false) => {}
            None => out.push(word.clone()),
        }
    }
    out
}

/// Whether `word` is a redirection operator: `Some(true)` when a target
/// word follows it, `Some(false)` when it is complete (`2>&1`, `>&-`).
fn redirection(word: &str) -> Option<bool> {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest
        .strip_prefix('&')
        .filter(|r| r.starts_with('>'))
        .unwrap_or(rest);
    const OPS: &[&str] = &[">>", ">|", "<<<", "<<-", "<<", "<>", ">&", "<&", ">", "<"];
    let op = OPS.iter().find(|op| rest.starts_with(**op))?;
    let tail = &rest[op.len()..];
    if tail.is_empty() {
        return Some(true);
    }
    let fd = tail.strip_suffix('-').unwrap_or(tail);
    (op.ends_with('&') && fd.chars().all(|c| c.is_ascii_digit())).then_some(false)
}

struct Walker<'a> {
    matches: &'a dyn Fn(&str, &[String]) -> bool,
    nested: &'a mut dyn FnMut(&str) -> bool,
    /// The whole simple command; every reading is a part of it.
    segment: &'a [String],
    budget: usize,
}

impl Walker<'_> {
    /// `words` as a command, as written and without its directory.
    fn check(&self, words: &[String]) -> bool {
        let Some((first, args)) = words.split_first() else {
            return false;
        };
        (self.matches)(first, args) || {
            let name = basename(first);
            name != first.as_str() && (self.matches)(name, args)
        }
    }

    fn walk(&mut self, words: &[String]) -> bool {
        if self.check(words) {
            return true;
        }
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        if self.budget == 0 {
            // Out of patience: every word may start the command.
            let segment = self.segment;
            return (0..segment.len()).any(|k| self.check(&segment[k..]));
        }
        let start = words
            .iter()
            .position(|w| !leads_command(w))
            .unwrap_or(words.len());
        let rest = &words[start..];
        let Some(first) = rest.first() else {
            return false;
        };
        if start > 0 && self.check(rest) {
            return true;
        }
        // `coproc NAME { ...; }`: NAME names the coprocess, the compound
        // command after it runs.
        if words[..start].iter().any(|w| w == "coproc") && self.walk(&rest[1..]) {
            return true;
        }
        let name = basename(first);
        if ANY_SUFFIX.contains(&name) {
            return (1..rest.len()).any(|k| self.walk(&rest[k..]));
        }
        if let Some(spec) = spec_for(name) {
            if name == "env" && self.env_split(rest) {
                return true;
            }
            return match inner(spec, rest) {
                Inner::At(i) => rest
                    .get(i..)
                    .is_some_and(|inner| !inner.is_empty() && self.walk(inner)),
                Inner::Unknown => (1..rest.len()).any(|k| self.walk(&rest[k..])),
            };
        }
        match name {
            // `function f { rm x; }`: the body starts after the name.
            "function" => rest.get(2..).is_some_and(|body| self.walk(body)),
            "eval" => (self.nested)(&after_dashes(&rest[1..]).join(" ")),
            "trap" => after_dashes(&rest[1..])
                .first()
                .is_some_and(|s| (self.nested)(s)),
            "find" => self.find_exec(rest),
            "git" => self.git_config(rest),
            // Any operand may be the string of `-c`.
            _ if SHELLS.contains(&name) => rest[1..]
                .iter()
                .filter(|w| !w.starts_with('-'))
                .any(|w| (self.nested)(w)),
            _ => false,
        }
    }

    /// `env -S 'rm x'` splits its string into words.
    fn env_split(&mut self, view: &[String]) -> bool {
        for (k, w) in view.iter().enumerate() {
            let split = w
                .strip_prefix("--split-string=")
                .or_else(|| w.strip_prefix("-S").filter(|s| !s.is_empty()))
                .or_else(|| {
                    (w == "-S" || w == "--split-string")
                        .then(|| view.get(k + 1).map(String::as_str))
                        .flatten()
                });
            // The string may hold more options: read it as `env`'s words.
            if split.is_some_and(|s| (self.nested)(&format!("env {s}"))) {
                return true;
            }
        }
        false
    }

    /// `git -c alias.x='!cmd' x`, `git -c core.sshCommand=cmd fetch`: git
    /// runs command-valued settings through a shell.
    fn git_config(&mut self, view: &[String]) -> bool {
        for pair in view.windows(2) {
            if pair[0] == "-c"
                && let Some((_, value)) = pair[1].split_once('=')
                && (self.nested)(value.strip_prefix('!').unwrap_or(value))
            {
                return true;
            }
        }
        false
    }

    /// `find ... -exec cmd ... ;` runs `cmd`.
    fn find_exec(&mut self, view: &[String]) -> bool {
        let mut k = 1;
        while k < view.len() {
            if matches!(view[k].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = view[k + 1..]
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .map_or(view.len(), |p| k + 1 + p);
                if end > k + 1 && self.walk(&view[k + 1..end]) {
                    return true;
                }
                k = end;
            }
            k += 1;
        }
        false
    }
}
