//! Landlock for the sealed tools: in an `--offline` run, helmfile, helm and every process they
//! start (hooks, `exec` in templates, plugins, git) may write only into the directories the seal
//! names (its scratch directory, the helm front's work directory, the render output directory)
//! and `/dev/null`, and may not open or accept TCP connections at all. Reading and executing
//! stay allowed: a state reads its charts and values, and helmfile runs helm.
//!
//! Raw syscalls rather than the `landlock` crate: the ruleset is built in the parent (allocation
//! is fine there), and the child, between `fork` and `exec`, only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` — two plain system calls, nothing
//! that allocates or takes a lock (the process is multi-threaded: environments render in
//! parallel). The crate's `restrict_self` does more than that and says nothing about being safe
//! after `fork`; and the report must say exactly which rights the kernel enforced (see
//! [`Coverage`]), which is simplest when this module decides them per ABI level itself.
//!
//! ABI levels (Linux): 1 (5.13) file writes, creation and removal; 2 (5.19) `refer` (renames and
//! links across directories); 3 (6.2) `truncate`; 4 (6.7) TCP `bind`/`connect`; 5 (6.10) `ioctl`
//! on devices; 6 (6.12) abstract Unix sockets and signals scoped to the sandbox. Each right is
//! handled only where the running kernel knows it. Not covered at any level: UDP (DNS queries),
//! Unix sockets by path, reading files. Unix sockets are refused by a seccomp filter installed
//! alongside (see `sockets`), also where Landlock is missing.

use anyhow::{Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// Tests only: caps the Landlock ABI this run believes the kernel has (`0`: none), to exercise the
/// weaker seals on a kernel that has them all. Lowering is all it can do.
pub const TEST_ABI_VAR: &str = "NVCF_TEST_LANDLOCK_ABI";

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
#[cfg(test)]
const FS_READ_DIR: u64 = 1 << 3;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
const FS_REFER: u64 = 1 << 13;
const FS_TRUNCATE: u64 = 1 << 14;
const FS_IOCTL_DEV: u64 = 1 << 15;
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Every right that changes the file system (ABI 1); reading and executing are not handled, so
/// they stay allowed everywhere.
const FS_WRITES_V1: u64 = FS_WRITE_FILE
    | FS_REMOVE_DIR
    | FS_REMOVE_FILE
    | FS_MAKE_CHAR
    | FS_MAKE_DIR
    | FS_MAKE_REG
    | FS_MAKE_SOCK
    | FS_MAKE_FIFO
    | FS_MAKE_BLOCK
    | FS_MAKE_SYM;
/// The rights that apply to a file (not a directory): what a rule on `/dev/null` may grant.
const FS_FILE_RIGHTS: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What the kernel enforces for the sealed tools at a Landlock ABI level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// The Landlock ABI level in use; 0 when Landlock is unavailable (old kernel, not enabled,
    /// or refused by a seccomp filter).
    pub abi: u32,
}

impl Coverage {
    /// File writes, creation and removal outside the allowed directories are refused.
    pub fn writes(&self) -> bool {
        self.abi >= 1
    }
    /// `truncate` is refused as well (before ABI 3 a file outside could still be emptied).
    pub fn truncate(&self) -> bool {
        self.abi >= 3
    }
    /// TCP `connect` and `bind` are refused (every address, loopback included).
    pub fn tcp(&self) -> bool {
        self.abi >= 4
    }
    /// `ioctl` on devices opened in the sandbox is refused (e.g. pushing input into a terminal).
    pub fn devices(&self) -> bool {
        self.abi >= 5
    }
    /// Abstract Unix sockets and signals outside the sandbox are refused.
    pub fn scoped(&self) -> bool {
        self.abi >= 6
    }
    /// Everything the seal promises (writes, truncation, TCP) is enforced by the kernel.
    pub fn complete(&self) -> bool {
        self.writes() && self.truncate() && self.tcp()
    }
    /// What the kernel does not enforce, in words (empty when [`Coverage::complete`]; the
    /// extras of ABI 5 and 6 are not listed).
    pub fn gaps(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if !self.writes() {
            v.push("writes outside the scratch directory");
        } else if !self.truncate() {
            v.push("truncation of files outside the scratch directory");
        }
        if !self.tcp() {
            v.push("TCP connections (loopback included)");
        }
        v
    }
}

/// The Landlock ABI of the running kernel, probed once (0: none), lowered by
/// [`TEST_ABI_VAR`] when set.
pub fn coverage() -> Coverage {
    static PROBED: OnceLock<u32> = OnceLock::new();
    let abi = *PROBED.get_or_init(|| {
        // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns
        // the ABI version (or -1 with errno); it reads no memory.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        u32::try_from(r).unwrap_or(0)
    });
    let cap = std::env::var(TEST_ABI_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok());
    Coverage {
        abi: cap.map_or(abi, |c| c.min(abi)),
    }
}

/// The rights handled at `abi`: (file system, network, scopes).
fn handled(abi: u32) -> (u64, u64, u64) {
    let mut fs = FS_WRITES_V1;
    if abi >= 2 {
        fs |= FS_REFER;
    }
    if abi >= 3 {
        fs |= FS_TRUNCATE;
    }
    if abi >= 5 {
        fs |= FS_IOCTL_DEV;
    }
    let net = if abi >= 4 { NET_BIND_TCP | NET_CONNECT_TCP } else { 0 };
    let scoped = if abi >= 6 {
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    } else {
        0
    };
    (fs, net, scoped)
}

/// The size of `landlock_ruleset_attr` a kernel at `abi` knows (the kernel refuses a larger one
/// with non-zero tail fields, and older kernels may refuse a larger one at all).
fn attr_size(abi: u32) -> usize {
    match abi {
        0..=3 => 8,
        4 | 5 => 16,
        _ => std::mem::size_of::<RulesetAttr>(),
    }
}

fn open_path(p: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(p)
        .with_context(|| format!("sandbox: opening {}", p.display()))
}

fn add_rule(ruleset: &OwnedFd, path: &Path, allowed: u64) -> Result<()> {
    let f = open_path(path)?;
    let attr = PathBeneathAttr {
        allowed_access: allowed,
        parent_fd: f.as_raw_fd(),
    };
    // SAFETY: `attr` is a valid landlock_path_beneath_attr that outlives the call; both fds are
    // open.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("sandbox: allowing writes to {}", path.display()));
    }
    Ok(())
}

/// The rights handled at `abi`, with TCP left alone when `tcp` (an online run: helm pulls charts).
fn handled_for(abi: u32, tcp: bool) -> (u64, u64, u64) {
    let (fs, net, scoped) = handled(abi);
    (fs, if tcp { 0 } else { net }, scoped)
}

/// A Landlock ruleset at `abi` allowing writes only beneath `writable` (directories) and to
/// `/dev/null`, and, unless `tcp`, no TCP at all (ABI 4 and later: no port rule is added).
pub fn ruleset(abi: u32, writable: &[&Path], tcp: bool) -> Result<OwnedFd> {
    let (fs, net, scoped) = handled_for(abi, tcp);
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: net,
        scoped,
    };
    // SAFETY: `attr` is valid for `attr_size(abi)` bytes (a prefix of the struct).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            attr_size(abi),
            0u32,
        )
    };
    let fd = libc::c_int::try_from(fd).unwrap_or(-1);
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("sandbox: creating a Landlock ruleset");
    }
    // SAFETY: the kernel just returned this fd to us (O_CLOEXEC), nobody else owns it.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    for dir in writable {
        add_rule(&ruleset, dir, fs)?;
    }
    add_rule(&ruleset, Path::new("/dev/null"), fs & FS_FILE_RIGHTS)?;
    Ok(ruleset)
}

/// Make `cmd` run under Landlock at the kernel's ABI (see [`coverage`]): writes only beneath
/// `writable`, no TCP unless `tcp` (online). Without Landlock this does nothing (the run reports the weaker seal, see
/// `offline-seal-partial`). The child only calls `prctl` and `landlock_restrict_self` between
/// `fork` and `exec`; if either fails, the command fails to start (never runs unconfined).
pub fn confine(cmd: &mut Command, writable: &[&Path], tcp: bool) -> Result<()> {
    let cov = coverage();
    if cov.abi == 0 {
        seal_sockets_only(cmd);
        return Ok(());
    }
    confine_at(cmd, cov.abi, writable, tcp)
}

/// Whether the seccomp filter of `sockets` can be installed here (probed once by starting `true`
/// under it); when not, sealed tools run without it and `offline-seal-partial` says so.
pub fn sockets_sealed() -> bool {
    static PROBED: OnceLock<bool> = OnceLock::new();
    *PROBED.get_or_init(|| {
        let f = Arc::new(super::sockets::Filter::new());
        let mut c = Command::new("/bin/sh");
        c.args(["-c", ":"]);
        // SAFETY: prctl and the filter's one prctl only (see `sockets::Filter::install`).
        unsafe {
            c.pre_exec(move || {
                no_new_privs()?;
                f.install()
            });
        }
        c.status().is_ok_and(|s| s.success())
    })
}

fn no_new_privs() -> std::io::Result<()> {
    // SAFETY: a plain prctl, async-signal-safe.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_NO_NEW_PRIVS,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Without Landlock: still no Unix sockets (where seccomp works).
fn seal_sockets_only(cmd: &mut Command) {
    if !sockets_sealed() {
        return;
    }
    let f = Arc::new(super::sockets::Filter::new());
    // SAFETY: as in `sockets_sealed`.
    unsafe {
        cmd.pre_exec(move || {
            no_new_privs()?;
            f.install()
        });
    }
}

/// [`confine`], and when the ruleset cannot be built (a writable directory vanished), a command
/// that fails to start (EPERM) instead of one that runs unconfined; the reason goes to stderr.
pub fn confine_or_block(cmd: &mut Command, writable: &[&Path], tcp: bool) {
    if let Err(e) = confine(cmd, writable, tcp) {
        eprintln!(
            "nvcf-validate: cannot confine {:?}, not starting it: {e:#}",
            cmd.get_program()
        );
        // SAFETY: the closure only builds an io::Error from a constant errno (no allocation).
        unsafe {
            cmd.pre_exec(|| Err(std::io::Error::from_raw_os_error(libc::EPERM)));
        }
    }
}

/// A Landlock ruleset prepared in the parent for a child that builds it itself, after it has
/// mounted what it sees (`namespace`): the rule targets opened here (`O_PATH`), the attributes
/// computed here; the child only makes system calls (see [`Prepared::restrict_in_child`]).
pub struct Prepared {
    attr: RulesetAttr,
    size: usize,
    fs: u64,
    /// Writable directories; `/dev/null` last.
    fds: Vec<std::fs::File>,
    filter: Option<super::sockets::Filter>,
}

/// The Landlock ruleset of [`ruleset`] at `abi`, and the socket filter, ready for a child.
pub fn prepare(abi: u32, writable: &[&Path], tcp: bool) -> Result<Prepared> {
    let (fs, net, scoped) = handled_for(abi, tcp);
    let mut fds = Vec::new();
    for d in writable {
        fds.push(open_path(d)?);
    }
    fds.push(open_path(Path::new("/dev/null"))?);
    Ok(Prepared {
        attr: RulesetAttr {
            handled_access_fs: fs,
            handled_access_net: net,
            scoped,
        },
        size: attr_size(abi),
        fs,
        fds,
        filter: sockets_sealed().then(super::sockets::Filter::new),
    })
}

impl Prepared {
    /// In the child, between `fork` and `exec`: `PR_SET_NO_NEW_PRIVS`, the socket filter, and a
    /// Landlock domain allowing writes beneath the prepared directories and `extra` (directories
    /// the child opened after mounting them). System calls only: no allocation, no lock.
    pub fn restrict_in_child(&self, extra: &[libc::c_int]) -> std::io::Result<()> {
        no_new_privs()?;
        if let Some(f) = &self.filter {
            f.install()?;
        }
        // SAFETY: `attr` is valid for `size` bytes; every fd is open; the rule attributes live on
        // the stack for the duration of each call.
        unsafe {
            let fd = libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &self.attr as *const RulesetAttr,
                self.size,
                0u32,
            );
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = fd as libc::c_int;
            let last = self.fds.len().saturating_sub(1);
            let targets = self
                .fds
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    (
                        f.as_raw_fd(),
                        if i == last { self.fs & FS_FILE_RIGHTS } else { self.fs },
                    )
                })
                .chain(extra.iter().map(|&e| (e, self.fs)));
            for (target, allowed) in targets {
                let attr = PathBeneathAttr {
                    allowed_access: allowed,
                    parent_fd: target,
                };
                if libc::syscall(
                    libc::SYS_landlock_add_rule,
                    fd,
                    RULE_PATH_BENEATH,
                    &attr as *const PathBeneathAttr,
                    0u32,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
        Ok(())
    }
}

/// [`confine`] at a given ABI level (at most the kernel's).
pub fn confine_at(cmd: &mut Command, abi: u32, writable: &[&Path], tcp: bool) -> Result<()> {
    let ruleset = Arc::new(ruleset(abi, writable, tcp)?);
    let filter = sockets_sealed().then(|| Arc::new(super::sockets::Filter::new()));
    // SAFETY: the closure runs in the child between fork and exec; it calls only prctl and
    // syscall (async-signal-safe), reads a plain fd and a prepared filter program from the Arcs
    // (no allocation, no lock) and builds io::Error from errno (no allocation).
    unsafe {
        cmd.pre_exec(move || {
            no_new_privs()?;
            if let Some(f) = &filter {
                f.install()?;
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::require;
    use std::net::TcpListener;

    fn kernel_abi() -> u32 {
        coverage().abi
    }

    fn sh(abi: u32, writable: &[&Path], script: &str) -> std::process::Output {
        let mut c = Command::new("bash");
        c.arg("-c").arg(script);
        confine_at(&mut c, abi, writable, false).unwrap();
        c.output().unwrap()
    }

    #[test]
    fn coverage_names_what_each_abi_leaves_out() {
        assert!(Coverage { abi: 7 }.complete() && Coverage { abi: 4 }.complete());
        assert_eq!(Coverage { abi: 4 }.gaps(), Vec::<&str>::new());
        assert_eq!(Coverage { abi: 3 }.gaps(), vec!["TCP connections (loopback included)"]);
        assert_eq!(
            Coverage { abi: 2 }.gaps(),
            vec![
                "truncation of files outside the scratch directory",
                "TCP connections (loopback included)"
            ]
        );
        assert_eq!(
            Coverage { abi: 0 }.gaps(),
            vec![
                "writes outside the scratch directory",
                "TCP connections (loopback included)"
            ]
        );
        assert!(!Coverage { abi: 3 }.complete());
        assert_eq!(attr_size(1), 8);
        assert_eq!(attr_size(4), 16);
        assert_eq!(attr_size(7), 24);
        assert_eq!(handled(1).0 & (FS_REFER | FS_TRUNCATE | FS_IOCTL_DEV), 0);
        assert_eq!(handled(3).1, 0);
        assert_eq!(handled(4).1, NET_BIND_TCP | NET_CONNECT_TCP);
        assert_eq!(handled(5).2, 0);
        assert_ne!(handled(6).2, 0);
        // Reading and executing are never handled: they stay allowed everywhere.
        assert_eq!(handled(7).0 & (FS_READ_FILE | FS_READ_DIR | FS_EXECUTE), 0);
    }

    /// Every ABI level up to the kernel's: writes land only in the allowed directory and
    /// /dev/null; reading and running programs still work.
    #[test]
    fn writes_only_where_allowed_at_every_abi() {
        let abi = kernel_abi();
        if !require("Landlock (any ABI)", abi > 0) {
            return;
        }
        for level in 1..=abi {
            let inside = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            let script = format!(
                "echo in > {i}/a && mkdir {i}/d && mv {i}/a {i}/d/a && echo > /dev/null && cat /etc/passwd >/dev/null && \
                 echo to-stdout > /dev/stdout && echo to-stderr > /dev/stderr; \
                 echo out > {o}/b; mkdir {o}/e; ln -s x {o}/l; true",
                i = inside.path().display(),
                o = outside.path().display()
            );
            let out = sh(level, &[inside.path()], &script);
            assert!(
                out.status.success(),
                "abi {level}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(inside.path().join("d/a").is_file(), "abi {level}: write inside refused");
            assert_eq!(
                std::fs::read_dir(outside.path()).unwrap().count(),
                0,
                "abi {level}: something was written outside"
            );
        }
    }

    #[test]
    fn truncation_outside_is_refused_from_abi_3() {
        let abi = kernel_abi();
        if !require(&format!("Landlock ABI 3 (truncate; this kernel has {abi})"), abi >= 3)
            || !require(
                "python3",
                Command::new("python3")
                    .arg("-V")
                    .output()
                    .is_ok_and(|o| o.status.success()),
            )
        {
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let f = outside.path().join("keep");
        std::fs::write(&f, "content").unwrap();
        let inside = tempfile::tempdir().unwrap();
        // truncate(2) by path: no open for writing, so only the truncate right stops it.
        let script = format!("python3 -c 'import os; os.truncate(\"{}\", 0)'", f.display());
        let out = sh(3, &[inside.path()], &script);
        assert!(!out.status.success());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "content");
        // ABI 2 does not know truncate: the seal there is partial (and says so).
        let out = sh(2, &[inside.path()], &script);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "");
        assert!(!Coverage { abi: 2 }.complete());
    }

    #[test]
    fn tcp_is_refused_from_abi_4_loopback_included() {
        let abi = kernel_abi();
        if !require(&format!("Landlock ABI 4 (TCP; this kernel has {abi})"), abi >= 4) {
            return;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let inside = tempfile::tempdir().unwrap();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
        let out = sh(4, &[inside.path()], &connect);
        assert!(!out.status.success(), "connect was allowed at ABI 4");
        assert!(l.accept().is_err(), "a connection reached the listener");
        // ABI 3 has no network rights: the connection goes through (the partial seal).
        let out = sh(3, &[inside.path()], &connect);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn children_inherit_the_sandbox() {
        if !require("Landlock (any ABI)", kernel_abi() > 0) {
            return;
        }
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = sh(
            kernel_abi(),
            &[inside.path()],
            &format!("/usr/bin/env sh -c 'echo x > {}/f'", outside.path().display()),
        );
        assert!(!out.status.success());
        assert!(!outside.path().join("f").exists());
    }

    #[test]
    fn a_missing_writable_directory_is_an_error_not_an_open_sandbox() {
        if !require("Landlock (any ABI)", kernel_abi() > 0) {
            return;
        }
        let e = ruleset(kernel_abi(), &[Path::new("/nonexistent/nvcf")], false).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/nvcf"));
    }
}
