//! Host services behind Unix sockets, sealed: a seccomp filter in every sealed tool (helmfile,
//! helm, and every hook or `exec` they start — filters are inherited and cannot be removed) makes
//! `socket(AF_UNIX, ..)` fail with `EACCES`. Landlock (see `sandbox`) does not cover connecting to a
//! Unix socket by path, and a container runtime's socket (`/var/run/docker.sock`,
//! `$DOCKER_HOST`, podman's, containerd's, buildkit's) is network access and root-equivalent
//! writes on the host; so is a kubelet's, an SSH agent's or a database's. Refusing the socket
//! itself covers every path, abstract addresses and every client (docker, podman, nerdctl,
//! buildah, curl `--unix-socket`, Python), whatever its name.
//!
//! Also refused: `io_uring_setup` (io_uring creates sockets without the `socket` system call, so a
//! filter on `socket` alone could be walked around) and, on x86-64, the 32-bit `socketcall` and
//! `socket` and every x32 system call (another way in to the same kernel code). Socket pairs
//! (`socketpair`, an unnamed pair between a process and its child) reach nothing outside and stay
//! allowed.
//!
//! The filter is a constant classic-BPF program built here, installed in the child between `fork`
//! and `exec` with one `prctl` (after `PR_SET_NO_NEW_PRIVS`), like the Landlock ruleset.

/// `struct seccomp_data` offsets: the system call number, the audit architecture, the first
/// argument's low 32 bits (little-endian targets only; see the `cfg` below).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;

const AF_UNIX: u32 = libc::AF_UNIX as u32;
const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const RET_EACCES: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
const RET_ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

#[cfg(target_arch = "x86_64")]
mod arch {
    /// AUDIT_ARCH_X86_64 and AUDIT_ARCH_I386.
    pub const NATIVE: u32 = 0xC000_003E;
    pub const COMPAT: Option<u32> = Some(0x4000_0003);
    /// i386: `socketcall` multiplexes every socket call behind a pointer, so it is refused whole.
    pub const COMPAT_SOCKETCALL: Option<u32> = Some(102);
    pub const COMPAT_SOCKET: u32 = 359;
    /// x32 system calls carry this bit in their number.
    pub const X32_BIT: Option<u32> = Some(0x4000_0000);
}

#[cfg(target_arch = "aarch64")]
mod arch {
    /// AUDIT_ARCH_AARCH64 and AUDIT_ARCH_ARM (32-bit compat).
    pub const NATIVE: u32 = 0xC000_00B7;
    pub const COMPAT: Option<u32> = Some(0x4000_0028);
    pub const COMPAT_SOCKETCALL: Option<u32> = None;
    pub const COMPAT_SOCKET: u32 = 281;
    pub const X32_BIT: Option<u32> = None;
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

fn load(off: u32) -> libc::sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, off)
}

fn ret(v: u32) -> libc::sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, v)
}

/// The filter program. Layout (jumps are relative, so the blocks are built back to front):
///
/// ```text
///   arch == NATIVE ? native : (arch == COMPAT ? compat : ENOSYS)
/// native: nr has the x32 bit -> ENOSYS; nr == io_uring_setup -> ENOSYS;
///         nr == socket -> check; else ALLOW
/// compat: nr == socketcall -> EACCES; nr == socket -> check; else ALLOW
/// check:  arg0 == AF_UNIX -> EACCES; else ALLOW
/// ```
pub fn program() -> Vec<libc::sock_filter> {
    let check = vec![load(OFF_ARG0), jeq(AF_UNIX, 0, 1), ret(RET_EACCES), ret(RET_ALLOW)];
    // compat block, jumping to `check` (which follows it).
    let mut compat = vec![load(OFF_NR)];
    if let Some(sc) = arch::COMPAT_SOCKETCALL {
        compat.push(jeq(sc, 0, 1));
        compat.push(ret(RET_EACCES));
    }
    // socket -> skip the ALLOW below into `check`.
    compat.push(jeq(arch::COMPAT_SOCKET, 1, 0));
    compat.push(ret(RET_ALLOW));
    // native block, jumping over `compat` into `check`.
    let mut native = vec![load(OFF_NR)];
    if let Some(bit) = arch::X32_BIT {
        native.push(stmt(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, bit));
        native.last_mut().unwrap().jt = 0;
        native.last_mut().unwrap().jf = 1;
        native.push(ret(RET_ENOSYS));
    }
    native.push(jeq(libc::SYS_io_uring_setup as u32, 0, 1));
    native.push(ret(RET_ENOSYS));
    // socket -> jump over the ALLOW and the whole compat block.
    let skip = u8::try_from(1 + compat.len()).expect("a short compat block");
    native.push(jeq(libc::SYS_socket as u32, skip, 0));
    native.push(ret(RET_ALLOW));
    // head: dispatch on the architecture.
    let to_compat = u8::try_from(native.len() + 1).expect("a short native block");
    let mut prog = vec![load(OFF_ARCH), jeq(arch::NATIVE, 0, 1)];
    // Native: the next instruction jumps into `native`; otherwise test COMPAT.
    prog.push(stmt(libc::BPF_JMP | libc::BPF_JA | libc::BPF_K, 2));
    match arch::COMPAT {
        Some(c) => prog.push(jeq(c, to_compat, 0)),
        None => prog.push(jeq(0, 0, 0)),
    }
    prog.push(ret(RET_ENOSYS));
    prog.extend(native);
    prog.extend(compat);
    prog.extend(check);
    prog
}

/// The program, owned for the lifetime of a `pre_exec` closure.
pub struct Filter {
    prog: Vec<libc::sock_filter>,
}

impl Filter {
    pub fn new() -> Filter {
        Filter { prog: program() }
    }

    /// Install the filter in the calling process. Call only after `PR_SET_NO_NEW_PRIVS`; safe
    /// between `fork` and `exec` (one `prctl`, no allocation).
    pub fn install(&self) -> std::io::Result<()> {
        let fprog = libc::sock_fprog {
            len: self.prog.len() as libc::c_ushort,
            filter: self.prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `fprog` points at a valid program that outlives the call; the kernel copies it.
        let r = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &fprog as *const libc::sock_fprog as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Default for Filter {
    fn default() -> Self {
        Filter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::{UnixDatagram, UnixListener};
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    fn filtered(script: &str) -> std::process::Output {
        let f = std::sync::Arc::new(Filter::new());
        let mut c = Command::new("bash");
        c.arg("-c").arg(script);
        // SAFETY: prctl and the filter install only (no allocation), see `Filter::install`.
        unsafe {
            c.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_NO_NEW_PRIVS,
                    1 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                f.install()
            });
        }
        c.output().unwrap()
    }

    #[test]
    fn no_unix_socket_reaches_a_listener_but_programs_still_run() {
        let d = tempfile::tempdir().unwrap();
        let sock = d.path().join("daemon.sock");
        let l = UnixListener::bind(&sock).unwrap();
        l.set_nonblocking(true).unwrap();
        let dgram = d.path().join("dgram.sock");
        let g = UnixDatagram::bind(&dgram).unwrap();
        g.set_nonblocking(true).unwrap();
        // Unfiltered, curl reaches it (proves the probe can fail).
        let have_curl = Command::new("curl")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        let script = format!(
            "echo running; cat /etc/hostname >/dev/null; \
             python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{s}\")' 2>&1 && echo PY-CONNECTED; \
             python3 -c 'import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b\"x\", \"{g}\")' 2>&1 && echo PY-SENT; \
             {curl} true",
            s = sock.display(),
            g = dgram.display(),
            curl = if have_curl {
                format!("curl -s -m 2 --unix-socket {} http://d/_ping && echo CURL-CONNECTED;", sock.display())
            } else {
                String::new()
            }
        );
        let out = filtered(&script);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("running"), "{stdout}");
        assert!(!stdout.contains("CONNECTED") && !stdout.contains("PY-SENT"), "{stdout}");
        assert!(l.accept().is_err(), "a connection reached the listener");
        assert!(g.recv(&mut [0u8; 8]).is_err(), "a datagram reached the socket");
        // TCP and pipes still work under the filter (only AF_UNIX is refused).
        let out =
            filtered("python3 -c 'import socket; socket.socket(socket.AF_INET).close(); print(\"INET-OK\")' | cat");
        assert!(String::from_utf8_lossy(&out.stdout).contains("INET-OK"));
        // Without the filter the same probe connects: the test can fail.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\")' && echo PY-CONNECTED",
                sock.display()
            ))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("PY-CONNECTED"));
    }
}
