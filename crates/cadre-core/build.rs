// Probes the kernel for what the sandbox tests need, so a test that cannot
// run here is compiled `#[ignore]`d and `cargo test` lists and counts it as
// ignored, with the reason, instead of passing without checking anything:
//
// - `cadre_no_landlock`: no Landlock at all;
// - `cadre_no_landlock_signal_scope`: Landlock below ABI 6 (no signal scoping);
// - `cadre_no_mount_namespace`: no private mount namespace (through a user
//   namespace when not root), which keeps `.git/hooks` read-only while git
//   still commits.
//
// `CADRE_TEST_REQUIRE_SANDBOX=1` sets none of them: every sandbox test runs
// and fails where the kernel lacks what it needs (for CI that must prove the
// sandbox). The probe runs again after a reboot (it watches the boot id), so
// a target directory reused on another kernel is probed afresh. The cfgs
// only decide which tests run; nothing in the library depends on them.
// cadre-cli's build script is this file too.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CADRE_TEST_REQUIRE_SANDBOX");
    let boot_id = std::path::Path::new("/proc/sys/kernel/random/boot_id");
    if boot_id.exists() {
        println!("cargo::rerun-if-changed={}", boot_id.display());
    }
    for cfg in [
        "cadre_no_landlock",
        "cadre_no_landlock_signal_scope",
        "cadre_no_mount_namespace",
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    if std::env::var_os("CADRE_TEST_REQUIRE_SANDBOX").is_some_and(|v| v == "1") {
        return;
    }
    let abi = probe::landlock_abi();
    if abi < 1 {
        println!("cargo::rustc-cfg=cadre_no_landlock");
    }
    if abi < 6 {
        println!("cargo::rustc-cfg=cadre_no_landlock_signal_scope");
    }
    if !probe::mount_namespace() {
        println!("cargo::rustc-cfg=cadre_no_mount_namespace");
    }
}

#[cfg(target_os = "linux")]
mod probe {
    /// The kernel's Landlock ABI version, 0 without Landlock.
    pub fn landlock_abi() -> i64 {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: the documented version query: NULL attributes, size 0.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        abi.max(0)
    }

    /// Whether a forked child can enter a new mount namespace (a user
    /// namespace too when not root) and change its mounts.
    pub fn mount_namespace() -> bool {
        // SAFETY: geteuid has no preconditions; the child makes system calls
        // only and `_exit`s (a build script is single-threaded); the parent
        // waits for it.
        unsafe {
            let flags = if libc::geteuid() == 0 {
                libc::CLONE_NEWNS
            } else {
                libc::CLONE_NEWUSER | libc::CLONE_NEWNS
            };
            let pid = libc::fork();
            if pid == 0 {
                let ok = libc::unshare(flags) == 0
                    && libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) == 0;
                libc::_exit(if ok { 0 } else { 1 });
            }
            if pid < 0 {
                return false;
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0) == pid
                && libc::WIFEXITED(status)
                && libc::WEXITSTATUS(status) == 0
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod probe {
    pub fn landlock_abi() -> i64 {
        0
    }

    pub fn mount_namespace() -> bool {
        false
    }
}
