//! Bash permission rules against commands bash reads differently from a
//! naive lexer, through the binary: an allowed prefix must not carry another
//! command, and a deny rule must see the command whatever hides it.

use crate::common;

use common::{Harness, Wire, stderr, tool_results};

/// Payload shapes from the issue; `CMD` is the command they smuggle.
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
];

/// Wrappers that must not hide a command from a deny rule.
const WRAPPED: &[&str] = &[
    "timeout 5 CMD",
    "timeout -s KILL 5 CMD",
    "timeout --kill-after=1 5 CMD",
    "time CMD",
    "time -p CMD",
    "nice -n 5 CMD",
    "nohup CMD",
    "stdbuf -oL CMD",
    "setsid -w CMD",
    "env CMD",
    "env -i CMD",
    "env -u HOME CMD",
    "env -i -- A=1 CMD",
    "command CMD",
    "command -p CMD",
    ">/dev/null CMD",
    "2>&1 CMD",
    // `coproc NAME` before a compound command: NAME is no command.
    "coproc x { CMD; }",
    "coproc x while CMD; do break; done",
    // An expansion in the command name may be empty or the command itself.
    "$x CMD",
    "\"$@\" CMD",
    "${x:-CMD}",
    "`printf ''` CMD",
    // `--` ends the options of `trap` and `eval`.
    "trap -- 'CMD' EXIT",
    "eval -- 'CMD'",
    // Code a shell or an interpreter reads from stdin, a file or a string.
    "echo CMD | sh",
    "bash <<'EOF'\nCMD\nEOF",
    ". <(echo CMD)",
    "python3 -c 'import os; os.system(\"CMD\")'",
    // An input redirection before a command name that expands (`VICTIM` is
    // the file alone).
    "< VICTIM {rm,VICTIM}",
    "<<< x {rm,VICTIM}",
    // More commands that run the command after them.
    "setpriv CMD",
    "setarch x86_64 CMD",
    "env -S'-i CMD'",
    "git -c alias.x='!CMD' x",
    // Arithmetic on a variable runs the substitutions in its value.
    "x='a[$(CMD)]'; [[ $x -eq 0 ]]",
    "x='a[$(CMD)]'; s=abc; echo ${s:x}",
    // `hash -p` names a program.
    "hash -p /bin/rm foo; foo VICTIM",
];

/// A mock script whose one reply makes every call in `commands`, in the
/// background when asked.
fn script(commands: &[String], background: bool) -> String {
    let mut calls = String::new();
    for command in commands {
        let command = serde_json::to_string(command).unwrap();
        calls.push_str(&format!(
            "          - {{ name: Bash, input: {{ command: {command}, run_in_background: {background} }} }}\n"
        ));
    }
    // Later replies answer the notices of background tasks.
    let done = "      - text: \"done\"\n".repeat(4);
    format!("rules:\n  - name: calls\n    replies:\n      - tool_calls:\n{calls}{done}")
}

fn set_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The ways a run is started: default mode headless, dontAsk, and the same
/// calls as background Bash.
const RUNS: &[(&str, bool)] = &[("default", false), ("dontAsk", false), ("default", true)];

#[tokio::test]
async fn an_echo_allow_rule_carries_no_other_command() {
    for &(mode, background) in RUNS {
        let mut commands: Vec<String> = PAYLOADS
            .iter()
            .enumerate()
            .map(|(k, p)| p.replace("CMD", &format!("touch pwned{k}")))
            .collect();
        // Item 26: `>&` with a word that is not a descriptor writes a file.
        commands.push("echo X >&2024/../src/main.rs".into());
        // Bash opens a connection for an input from /dev/tcp.
        commands.push("echo hi < /dev/tcp/127.0.0.1/9".into());
        // Checked in linear time (this once took minutes).
        commands.push(format!("echo {}", "${".repeat(100_000)));
        // A program in the project that only shares a wrapper's name.
        commands.push("./timeout 5 echo hi".into());
        // A control: the rule does allow plain echo.
        commands.push("echo control-ran".into());
        let h = Harness::new(&script(&commands, background), Wire::Anthropic).await;
        std::fs::create_dir_all(h.path("2024")).unwrap();
        h.write("src/main.rs", "fn main() {}\n");
        h.write("timeout", "#!/bin/sh\ntouch pwned-wrapper\n");
        set_executable(&h.path("timeout"));
        let out = h
            .cadre(&[
                "exec",
                "--permission-mode",
                mode,
                "--allow",
                "Bash(echo:*)",
                "go",
            ])
            .await;
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let ran: Vec<_> = commands
            .iter()
            .enumerate()
            .take(PAYLOADS.len())
            .filter(|(k, _)| h.path(&format!("pwned{k}")).exists())
            .map(|(_, c)| c)
            .collect();
        assert!(
            ran.is_empty(),
            "{mode} (background: {background}): these ran touch: {ran:#?}"
        );
        assert!(
            !h.path("pwned-wrapper").exists(),
            "{mode} (background: {background}): ./timeout ran"
        );
        assert_eq!(
            h.read("src/main.rs"),
            "fn main() {}\n",
            "{mode} (background: {background}): >&2024/... overwrote the file"
        );
        let results = tool_results(&h.records()[1].body);
        assert_eq!(results.len(), commands.len(), "{mode}: every call answered");
        let control = &results[commands.len() - 1].0;
        assert!(
            background || control.contains("control-ran"),
            "{mode}: the control echo ran: {control}"
        );
        for (k, (text, _)) in results.iter().enumerate().take(commands.len() - 1) {
            assert!(
                text.starts_with("denied"),
                "{mode}: {:?} was not refused: {text}",
                commands[k]
            );
        }
    }
}

#[tokio::test]
async fn a_deny_rule_sees_a_command_whatever_hides_it() {
    for &(mode, background) in RUNS {
        let shapes: Vec<&str> = PAYLOADS.iter().chain(WRAPPED).copied().collect();
        let mut commands: Vec<String> = shapes
            .iter()
            .enumerate()
            .map(|(k, p)| {
                p.replace("CMD", &format!("rm victim{k}"))
                    .replace("VICTIM", &format!("victim{k}"))
            })
            .collect();
        // A control: `Bash` allows the rest.
        commands.push("touch control".into());
        let h = Harness::new(&script(&commands, background), Wire::Anthropic).await;
        for k in 0..shapes.len() {
            h.write(&format!("victim{k}"), "x");
        }
        // `--allow Bash` would let every command run: only the deny rule stops rm.
        let out = h
            .cadre(&[
                "exec",
                "--permission-mode",
                mode,
                "--allow",
                "Bash",
                "--deny",
                "Bash(rm:*)",
                "go",
            ])
            .await;
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let ran: Vec<_> = commands
            .iter()
            .enumerate()
            .take(shapes.len())
            .filter(|(k, _)| !h.path(&format!("victim{k}")).exists())
            .map(|(_, c)| c)
            .collect();
        assert!(
            ran.is_empty(),
            "{mode} (background: {background}): these ran rm: {ran:#?}"
        );
        let results = tool_results(&h.records()[1].body);
        assert_eq!(results.len(), commands.len(), "{mode}: every call answered");
        for (k, (text, _)) in results.iter().enumerate().take(shapes.len()) {
            assert_eq!(
                text, "denied: denied by the rule Bash(rm:*)",
                "{mode}: {:?}",
                commands[k]
            );
        }
        if !background {
            assert!(h.path("control").exists(), "{mode}: the control ran");
        }
    }
}
