//! The same kernel probe as cadre-core's (see there): which sandbox tests
//! this kernel can run. And, for a release build, how the `cadre` binary is
//! linked so that a run touches as little of it as it can.

mod kernel_probe {
    include!("../cadre-core/build.rs");

    pub fn run() {
        main();
    }
}

fn main() {
    kernel_probe::run();
    release_link_args();
}

/// A release `cadre` on x86_64 Linux, linked by lld (Rust's default linker
/// there since 1.90):
/// - the functions a typical run executes come first and together
///   (`link/hot-symbols.txt`, written by `scripts/hot-symbols`): scattered
///   over 30 MB of code they made a trivial run hold ~14 MiB of it, since
///   each page touched brings its neighbours into memory;
/// - relative relocations are packed (`DT_RELR`, glibc 2.36 and later):
///   their 1.5 MB table is read whole at every start otherwise.
///
/// `CADRE_LINK_LAYOUT=0` turns both off. Another linker (`RUSTC_LINKER`,
/// `-fuse-ld` in the flags) would not know these options, so it gets none.
fn release_link_args() {
    println!("cargo::rerun-if-changed=link/hot-symbols.txt");
    println!("cargo::rerun-if-env-changed=CADRE_LINK_LAYOUT");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("CADRE_LINK_LAYOUT") == "0"
        || !var("RUSTC_LINKER").is_empty()
        || var("CARGO_ENCODED_RUSTFLAGS").contains("fuse-ld")
        || var("CARGO_ENCODED_RUSTFLAGS").contains("linker")
        || !rustc_links_with_lld(&var("RUSTC"))
    {
        return;
    }
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt");
    if order.is_file() {
        println!(
            "cargo::rustc-link-arg-bin=cadre=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // Names a later change removed are skipped, not errors.
        println!("cargo::rustc-link-arg-bin=cadre=-Wl,--no-warn-symbol-ordering");
    }
    if glibc_has_relr() {
        println!("cargo::rustc-link-arg-bin=cadre=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this rustc is 1.90 or later (lld by default on this target).
fn rustc_links_with_lld(rustc: &str) -> bool {
    let rustc = if rustc.is_empty() { "rustc" } else { rustc };
    let Ok(out) = std::process::Command::new(rustc).arg("-V").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    version_at_least(text.split_whitespace().nth(1).unwrap_or(""), 1, 90)
}

/// Whether the C library the binary links against reads packed relocations.
fn glibc_has_relr() -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    version_at_least(text.split_whitespace().nth(1).unwrap_or(""), 2, 36)
}

/// `version` ("1.95.0", "2.36") is at least `major.minor`.
fn version_at_least(version: &str, major: u32, minor: u32) -> bool {
    let mut parts = version
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}
