//! The sandbox around `Bash`, through the binary, against what a command could
//! use to get out: UDP and unix-domain sockets with the network off, signals
//! to cadre and other processes, devices in /dev, and the project's git hooks
//! and config.

use crate::common;

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;
use std::process::Command;

use common::{Harness, Wire, events, stderr, tool_results};

/// Connects to a unix stream socket (a path, or an abstract name after `@`)
/// and writes to it.
const UNIX_SENDER: &str = r#"
use Socket;
my ($addr) = @ARGV;
$addr =~ s/^@/\0/;
socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
connect($s, pack_sockaddr_un($addr)) or die "connect: $!\n";
syswrite($s, "hello") or die "write: $!\n";
print "sent\n";
"#;

fn perl_available() -> bool {
    Command::new("perl")
        .args(["-MSocket", "-e", "1"])
        .status()
        .is_ok_and(|s| s.success())
}

/// A mock script whose one reply makes `commands` as Bash calls.
fn script(commands: &[String]) -> String {
    let calls: String = commands
        .iter()
        .map(|c| {
            format!(
                "          - {{ name: Bash, input: {{ command: '{}' }} }}\n",
                c.replace('\'', "''")
            )
        })
        .collect();
    format!(
        "rules:\n  - name: probe\n    replies:\n      - tool_calls:\n{calls}      - text: \"done\"\n"
    )
}

/// Runs `exec --json` against the harness made from [`script`]; returns the
/// tool results.
async fn run_bash(h: &Harness, commands: &[String]) -> Vec<(String, bool)> {
    let out = h
        .cadre(&[
            "exec",
            "--json",
            "--permission-mode",
            "acceptEdits",
            "probe",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&events(&out));
    let records = h.records();
    let results = tool_results(&records.last().unwrap().body);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    results
}

#[tokio::test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_landlock_signal_scope),
    ignore = "skipped: this kernel has no Landlock signal scoping (ABI 6)"
)]
async fn sockets_and_signals_do_not_leave_the_sandbox() {
    let outside = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let sock = outside.path().join("s.sock");
    let path_listener = UnixListener::bind(&sock).unwrap();
    path_listener.set_nonblocking(true).unwrap();
    let name = format!("cadre-hardening-{}", std::process::id());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let sender = outside.path().join("send.pl");
    std::fs::write(&sender, UNIX_SENDER).unwrap();
    let mut victim = Command::new("sleep").arg("60").spawn().unwrap();

    let perl = perl_available();
    let mut commands = vec![
        format!("echo datagram > /dev/udp/127.0.0.1/{udp_port} && echo sent"),
        "kill -0 $PPID && echo signalled".to_string(),
        format!("kill -TERM {} && echo signalled", victim.id()),
    ];
    if perl {
        commands.push(format!("perl {} {}", sender.display(), sock.display()));
        commands.push(format!("perl {} @{name}", sender.display()));
    } else {
        eprintln!("perl not found: skipping the unix socket checks");
    }
    let h = Harness::new(&script(&commands), Wire::Anthropic).await;
    let results = run_bash(&h, &commands).await;
    for (result, command) in results.iter().zip(&commands) {
        assert!(result.1, "{command} should fail: {result:?}");
        assert!(
            !result.0.contains("sent") && !result.0.contains("signalled"),
            "{command}: {result:?}"
        );
    }
    let mut buf = [0u8; 64];
    assert!(udp.recv(&mut buf).is_err(), "a datagram arrived");
    assert!(path_listener.accept().is_err(), "a unix connection arrived");
    assert!(
        abstract_listener.accept().is_err(),
        "an abstract unix connection arrived"
    );
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the victim was killed"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn dev_is_writable_only_for_the_usual_devices() {
    let name = format!("/dev/cadre-hardening-{}", std::process::id());
    let block = std::fs::read_dir("/dev").unwrap().flatten().find(|e| {
        use std::os::unix::fs::FileTypeExt;
        e.file_type().is_ok_and(|t| t.is_block_device())
    });
    let mut commands = vec![
        format!("echo x > {name} && echo created"),
        "echo ok > /dev/null && echo err > /dev/stderr && echo fine 2>/dev/null".to_string(),
    ];
    match &block {
        Some(dev) => commands.push(format!("exec 3<> {} && echo opened", dev.path().display())),
        None => eprintln!("no block device in /dev: skipping the block device check"),
    }
    let h = Harness::new(&script(&commands), Wire::Anthropic).await;
    let results = run_bash(&h, &commands).await;
    assert!(
        results[0].1 && !results[0].0.contains("created"),
        "{results:?}"
    );
    assert!(!Path::new(&name).exists());
    assert!(
        !results[1].1 && results[1].0.contains("fine"),
        "{results:?}"
    );
    if block.is_some() {
        assert!(
            results[2].1 && !results[2].0.contains("opened"),
            "{results:?}"
        );
    }
}

#[tokio::test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
async fn git_commits_work_but_hooks_and_config_are_read_only() {
    let commands = [
        "echo hi > a.txt && git add a.txt && \
         git -c user.name=t -c user.email=t@example.com commit -q -m one && echo committed"
            .to_string(),
        "echo x > .git/hooks/pre-commit && echo hooked".to_string(),
        "git config foo.bar 1 && echo configured".to_string(),
    ];
    let h = Harness::new(&script(&commands), Wire::Anthropic).await;
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(h.project.path())
        .status();
    if !init.is_ok_and(|s| s.success()) {
        eprintln!("skipped: git not found");
        return;
    }
    let config = h.read(".git/config");
    let results = run_bash(&h, &commands).await;
    assert!(
        !results[0].1 && results[0].0.contains("committed"),
        "{results:?}"
    );
    assert!(
        results[1].1 && !results[1].0.contains("hooked"),
        "{results:?}"
    );
    assert!(
        results[2].1 && !results[2].0.contains("configured"),
        "{results:?}"
    );
    assert!(!h.path(".git/hooks/pre-commit").exists());
    assert_eq!(h.read(".git/config"), config);
    let log = Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(h.project.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 1);
}
