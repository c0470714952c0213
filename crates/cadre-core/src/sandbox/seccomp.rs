//! The seccomp filter installed next to the Landlock ruleset.
//!
//! Landlock restricts only TCP, so with the network off the filter refuses
//! `socket()` for every address family (UDP, unix-domain, netlink, raw and
//! packet sockets, vsock, ...) and `socketpair()` except stream and
//! seqpacket unix pairs (pipes in all but name; a datagram pair could be
//! readdressed to any unix datagram socket with `sendto`). `io_uring_setup`
//! is refused too: io_uring can create sockets without the `socket` system
//! call. Whatever the network setting, `TIOCSTI` and `TIOCLINUX` ioctls,
//! which push input into a terminal (cadre's own, through `/dev/tty`), are
//! refused.
//!
//! The program is a handful of classic BPF instructions written with libc's
//! constants: it is small enough to read whole, and no new dependency is
//! needed for it. It only understands the native system call table: a call
//! made through another one (32-bit compat calls on x86_64 or aarch64, x32
//! calls on x86_64), where the numbers mean other system calls, is never
//! allowed.

use std::io;

use libc::sock_filter;

/// `AUDIT_ARCH_*` of the native system call table (`<linux/audit.h>`:
/// the ELF machine, 64-bit and little-endian flags).
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: Option<u32> = Some(libc::EM_X86_64 as u32 | 0x8000_0000 | 0x4000_0000);
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: Option<u32> = Some(libc::EM_AARCH64 as u32 | 0x8000_0000 | 0x4000_0000);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const NATIVE_ARCH: Option<u32> = None;

/// x32 system calls share x86_64's audit arch but carry this bit.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: Option<u32> = None;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (both supported targets are little-endian).
const fn arg_lo(i: u32) -> u32 {
    16 + 8 * i
}

/// `SOCK_TYPE_MASK` from the kernel: the type without `SOCK_NONBLOCK` and
/// `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u32 = 0xf;

/// A filter ready to be installed; built before the fork.
#[derive(Debug)]
pub(super) struct Filter {
    program: Vec<sock_filter>,
}

/// The filter for a command, or `None` on targets whose system call table
/// the filter does not know.
pub(super) fn build(network: bool) -> Option<Filter> {
    let arch = NATIVE_ARCH?;
    let mut p = vec![
        load(ARCH),
        jump(libc::BPF_JEQ, arch, 1, 0),
        ret(libc::SECCOMP_RET_KILL_PROCESS),
        load(NR),
    ];
    if let Some(bit) = X32_SYSCALL_BIT {
        p.push(jump(libc::BPF_JGE, bit, 0, 1));
        p.push(ret(errno(libc::ENOSYS)));
    }
    rule(
        &mut p,
        libc::SYS_ioctl,
        vec![
            load(arg_lo(1)),
            jump(libc::BPF_JEQ, libc::TIOCSTI as u32, 2, 0),
            jump(libc::BPF_JEQ, libc::TIOCLINUX as u32, 1, 0),
            ret(libc::SECCOMP_RET_ALLOW),
            ret(errno(libc::EPERM)),
        ],
    );
    if !network {
        rule(&mut p, libc::SYS_socket, vec![ret(errno(libc::EACCES))]);
        rule(
            &mut p,
            libc::SYS_socketpair,
            vec![
                load(arg_lo(0)),
                jump(libc::BPF_JEQ, libc::AF_UNIX as u32, 0, 4),
                load(arg_lo(1)),
                stmt(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, SOCK_TYPE_MASK),
                jump(libc::BPF_JEQ, libc::SOCK_STREAM as u32, 2, 0),
                jump(libc::BPF_JEQ, libc::SOCK_SEQPACKET as u32, 1, 0),
                ret(errno(libc::EACCES)),
                ret(libc::SECCOMP_RET_ALLOW),
            ],
        );
        rule(
            &mut p,
            libc::SYS_io_uring_setup,
            vec![ret(errno(libc::ENOSYS))],
        );
    }
    p.push(ret(libc::SECCOMP_RET_ALLOW));
    Some(Filter { program: p })
}

impl Filter {
    /// Installs the filter on the calling thread. Needs `no_new_privs`
    /// already set. One system call, no allocation: safe between fork and
    /// exec.
    pub(super) fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            // The program is built by `build`, a few dozen instructions.
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr().cast_mut(),
        };
        let flags: libc::c_ulong = 0;
        // SAFETY: `prog` points to a valid program that outlives the call;
        // the kernel copies it.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// `if nr == syscall { block }`: the block must end every path with a return,
/// so the accumulator (the system call number) is loaded again after it.
fn rule(p: &mut Vec<sock_filter>, syscall: libc::c_long, block: Vec<sock_filter>) {
    let skip = u8::try_from(block.len()).unwrap_or(u8::MAX);
    p.push(load(NR));
    p.push(jump(libc::BPF_JEQ, syscall as u32, 0, skip));
    p.extend(block);
}

fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn load(offset: u32) -> sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

fn ret(k: u32) -> sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, k)
}

fn jump(op: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter {
        code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}
