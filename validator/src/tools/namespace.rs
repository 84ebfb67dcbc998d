//! The seal a template cannot tell from an apply run by what it reads: the sealed tools get the
//! user's environment unchanged (`HOME`, `TMPDIR`, `PATH`, `KUBECONFIG`, proxies, every variable
//! helmfile's `env`/`requiredEnv` or an `exec` can read), and the differences are made by the
//! kernel in a user and mount namespace of their own, entered between `fork` and `exec`:
//!
//! - `HOME`, the temporary directory and the XDG/helm/helmfile directories the environment names
//!   are overlays: the tools read what is there and write as an apply run does, but what they
//!   write lands in the seal's scratch directory and vanishes with it (helmfile's download cache
//!   is primed there, see `remote`);
//! - the first directory on `PATH` is a read-only overlay whose top layer holds the fronts (`git`,
//!   `kubectl`, `docker`, `podman`, `nerdctl`, `buildah` refuse; `kustomize` answers placeholder
//!   charts), so `PATH` keeps its value;
//! - the directories the run must write for real (the scratch directory, the helm front's work
//!   directory, the render output) are bound back on top;
//! - then Landlock (writes only there and in the overlays, no TCP) and the socket filter
//!   (`sockets`), as without the namespace.
//!
//! The same uid and gid inside (`id` prints what it prints outside). What a template can still
//! observe is what the kernel enforces: the mount table (`/proc/self/mountinfo`), the uid map, a
//! refused TCP or Unix-socket connection, a refused write outside, a front's refusal.
//!
//! Where user namespaces are not available (a hardened kernel, a container without them, or
//! Landlock short of TCP), the seal falls back to changing variables (see `seal::environment`) and
//! `offline-seal-partial` says the environment differs.

use super::sandbox;
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Tests only: pretend user namespaces are unavailable (the fallback seal, by variables).
pub const TEST_NO_NAMESPACE_VAR: &str = "NVCF_TEST_NO_NAMESPACE";

/// At most this many writable overlays (the variables below name at most this many directories).
const MAX_ROOTS: usize = 12;
/// At most this many directories and files bound back on top of the overlays.
const MAX_BINDS: usize = 32;

/// The variables naming directories the tools write into on an apply run.
const WRITTEN_DIRS: &[&str] = &[
    "HOME",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "HELM_CACHE_HOME",
    "HELM_CONFIG_HOME",
    "HELM_DATA_HOME",
    "HELMFILE_CACHE_HOME",
];

/// A directory seen through a writable overlay whose upper layer is fresh for each command
/// (commands run concurrently; a shared upper layer would race), in the scratch directory.
#[derive(Debug)]
struct Root {
    path: PathBuf,
    spawns: PathBuf,
}

/// The namespace plan of one sealed run.
#[derive(Debug)]
pub struct Namespace {
    roots: Vec<Root>,
    /// The fronts directory laid over the first `PATH` directory (read-only).
    fronts: Option<(PathBuf, PathBuf)>,
    /// Real files to bind at paths the overlays would otherwise hide: (source, target).
    files: Vec<(PathBuf, PathBuf)>,
    /// Directories created in the overlays (parents of a bind target), outermost first.
    mkdirs: Vec<PathBuf>,
    uid: u32,
    gid: u32,
    counter: AtomicU64,
    /// TCP left to the tools (an online run pulls charts): Landlock handles writes only.
    tcp: bool,
}

fn unescape_mountinfo(s: &str) -> PathBuf {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// Mount points of this process.
fn mount_points() -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mountinfo)
        .collect()
}

/// Can `dir` be an overlay: absolute, not `/`, no character overlayfs options would need
/// escaped, and no mount beneath it (an overlay's lower layer does not show submounts).
fn overlayable(dir: &Path, mounts: &[PathBuf]) -> bool {
    let b = dir.as_os_str().as_bytes();
    dir.is_absolute()
        && dir != Path::new("/")
        && !b.iter().any(|c| matches!(c, b',' | b':' | b'\\' | b'\n'))
        && !mounts.iter().any(|m| m != dir && m.starts_with(dir))
}

/// Are user and mount namespaces available to this process (probed once by starting `true` in
/// one)?
pub fn available() -> bool {
    static PROBED: OnceLock<bool> = OnceLock::new();
    if std::env::var_os(TEST_NO_NAMESPACE_VAR).is_some_and(|v| !v.is_empty()) {
        return false;
    }
    *PROBED.get_or_init(|| {
        let ns = Arc::new(Namespace {
            roots: Vec::new(),
            fronts: None,
            files: Vec::new(),
            mkdirs: Vec::new(),
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            counter: AtomicU64::new(0),
            tcp: false,
        });
        let Ok(plan) = ns.plan(&[], None) else { return false };
        let mut c = Command::new("/bin/sh");
        c.args(["-c", ":"]);
        // SAFETY: see `Plan::enter`.
        unsafe {
            c.pre_exec(move || plan.enter());
        }
        c.status().is_ok_and(|s| s.success())
    })
}

impl Namespace {
    /// The plan for a run whose scratch directory is `scratch` and fronts are in `fronts`; `real`:
    /// real tools the fronts call, by name (hidden by the `PATH` overlay when they live in its
    /// directory); `tcp`: TCP stays allowed (online).
    pub fn new(scratch: &Path, fronts: &Path, real: &[(&str, PathBuf)], tcp: bool) -> Result<Namespace> {
        let mounts = mount_points();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for var in WRITTEN_DIRS {
            let v = match std::env::var_os(var).filter(|v| !v.is_empty()) {
                Some(v) => PathBuf::from(v),
                None if *var == "TMPDIR" => PathBuf::from("/tmp"),
                None => continue,
            };
            if let Ok(c) = v.canonicalize() {
                if c.is_dir() && overlayable(&c, &mounts) {
                    dirs.push(c);
                }
            }
        }
        dirs.sort_by_key(|d| d.as_os_str().len());
        let mut kept: Vec<PathBuf> = Vec::new();
        for d in dirs {
            if !kept.iter().any(|k| d.starts_with(k)) {
                kept.push(d);
            }
        }
        kept.truncate(MAX_ROOTS);
        // The upper layers live in the scratch directory: the overlay that covers it is mounted
        // last (an upper layer on an overlay is refused).
        let scratch_c = scratch.canonicalize().unwrap_or_else(|_| scratch.to_path_buf());
        kept.sort_by_key(|d| scratch_c.starts_with(d));
        let mut roots = Vec::new();
        for (i, path) in kept.into_iter().enumerate() {
            let base = scratch.join("w").join("overlay").join(i.to_string());
            let spawns = base.join("spawn");
            std::fs::create_dir_all(&spawns).with_context(|| format!("creating {}", spawns.display()))?;
            roots.push(Root { path, spawns });
        }
        let path0 = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .find(|d| d.is_absolute() && d.is_dir())
            .and_then(|d| d.canonicalize().ok())
            .filter(|d| overlayable(d, &mounts));
        let mut files = Vec::new();
        if let Some(p0) = &path0 {
            for (name, r) in real {
                if r.parent().and_then(|d| d.canonicalize().ok()).as_deref() == Some(p0.as_path()) {
                    let target = scratch.join("real").join(name);
                    std::fs::create_dir_all(target.parent().unwrap_or(scratch))?;
                    std::fs::write(&target, "")?;
                    files.push((r.clone(), target));
                }
            }
        }
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(Namespace {
            roots,
            fronts: path0.map(|p| (fronts.to_path_buf(), p)),
            files,
            mkdirs: Vec::new(),
            uid,
            gid,
            counter: AtomicU64::new(0),
            tcp,
        })
    }

    /// Where a real tool `name` is reachable inside the namespace (its own path, unless the `PATH`
    /// overlay hides it).
    pub fn real_path(&self, real: &Path) -> PathBuf {
        self.files
            .iter()
            .find(|(s, _)| s == real)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| real.to_path_buf())
    }

    /// Let the sealed tools see the real directory `host` at `seen` (helmfile's download cache,
    /// which `remote` primes): bound there after the overlays, the missing parents created in
    /// the overlay. `false` (nothing bound) when `seen` is beneath no overlay.
    pub fn show_at(&mut self, host: &Path, seen: &Path) -> bool {
        let Some(root) = self.roots.iter().find(|r| seen.starts_with(&r.path)) else {
            return false;
        };
        let mut dirs = Vec::new();
        let mut d = seen.to_path_buf();
        while d != root.path {
            dirs.push(d.clone());
            if !d.pop() {
                return false;
            }
        }
        dirs.reverse();
        self.mkdirs = dirs;
        self.files.push((host.to_path_buf(), seen.to_path_buf()));
        true
    }

    /// The system calls one child makes, prepared: `writable` (real directories the tools write
    /// into), `landlock` at that ABI when `Some`.
    fn plan(self: &Arc<Self>, writable: &[&Path], landlock: Option<u32>) -> Result<Plan> {
        fn c(p: &Path) -> Result<CString> {
            CString::new(p.as_os_str().as_bytes()).context("a path with a NUL byte")
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut overlays = Vec::new();
        let mut writable_roots = Vec::new();
        let mut layers = Vec::new();
        for r in &self.roots {
            layers.push(r.spawns.join(n.to_string()));
            let (upper, work) = (r.spawns.join(format!("{n}/u")), r.spawns.join(format!("{n}/w")));
            for d in [&upper, &work] {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            }
            let opts = format!(
                "lowerdir={},upperdir={},workdir={},userxattr",
                r.path.display(),
                upper.display(),
                work.display()
            );
            if !overlayable(&upper, &[]) || !overlayable(&work, &[]) {
                bail!("the scratch directory {} cannot hold an overlay", upper.display());
            }
            overlays.push((c(&r.path)?, CString::new(opts)?));
            writable_roots.push(c(&r.path)?);
        }
        if let Some((fronts, p0)) = &self.fronts {
            let opts = format!("lowerdir={}:{}", fronts.display(), p0.display());
            overlays.push((c(p0)?, CString::new(opts)?));
        }
        // Bound back on top: cloned (open_tree) before the overlays hide them, moved after.
        let files = self.files.iter().map(|(s, t)| (s.as_path(), t.as_path()));
        let dirs = writable.iter().map(|d| (*d, *d));
        let mut binds = Vec::new();
        for (src, target) in files.chain(dirs) {
            let src = src.canonicalize().unwrap_or_else(|_| src.to_path_buf());
            let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
            binds.push((c(&src)?, c(&target)?));
        }
        if binds.len() > MAX_BINDS {
            bail!("more than {MAX_BINDS} directories to keep writable");
        }
        let mkdirs = self.mkdirs.iter().map(|d| c(d)).collect::<Result<Vec<_>>>()?;
        let landlock = match landlock {
            Some(abi) => Some(sandbox::prepare(abi, writable, self.tcp)?),
            None => None,
        };
        Ok(Plan {
            _ns: self.clone(),
            layers,
            uid_map: format!("{0} {0} 1\n", self.uid).into_bytes(),
            gid_map: format!("{0} {0} 1\n", self.gid).into_bytes(),
            overlays,
            binds,
            mkdirs,
            writable_roots,
            landlock,
        })
    }

    /// `cmd` runs in the namespace, confined (Landlock at `abi`, the socket filter), writing for
    /// real only beneath `writable`. When the plan cannot be made, the command fails to start.
    pub fn confine(self: &Arc<Self>, cmd: &mut Command, writable: &[&Path]) {
        let abi = sandbox::coverage().abi;
        match self.plan(writable, (abi > 0).then_some(abi)) {
            Ok(plan) => {
                // SAFETY: see `Plan::enter`.
                unsafe {
                    cmd.pre_exec(move || plan.enter());
                }
            }
            Err(e) => {
                eprintln!(
                    "nvcf-validate: cannot seal {:?}, not starting it: {e:#}",
                    cmd.get_program()
                );
                // SAFETY: builds an io::Error from a constant errno (no allocation).
                unsafe {
                    cmd.pre_exec(|| Err(std::io::Error::from_raw_os_error(libc::EPERM)));
                }
            }
        }
    }
}

/// Everything one child does, prepared by the parent.
struct Plan {
    _ns: Arc<Namespace>,
    /// This child's overlay layers (upper and work directories) in the scratch directory:
    /// removed when the command that holds the plan is dropped (after the child was waited for),
    /// so what one command wrote is deleted while the others still run, not all at the end of the
    /// run (deleting is slow on some file systems, e.g. ext4 with `discard`).
    layers: Vec<PathBuf>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    overlays: Vec<(CString, CString)>,
    binds: Vec<(CString, CString)>,
    mkdirs: Vec<CString>,
    writable_roots: Vec<CString>,
    landlock: Option<sandbox::Prepared>,
}

const OPEN_TREE_CLONE: u32 = 1;
const AT_RECURSIVE: u32 = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Write `data` to a `/proc/self` file (system calls only).
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path and a valid buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n != data.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for Plan {
    /// Runs in the parent only: the child execs (or exits) without running destructors. The
    /// standard library waits for every child it starts with `output`/`status`, and nothing here
    /// spawns one without waiting, so the command that held this plan has ended.
    fn drop(&mut self) {
        for l in &self.layers {
            // Overlayfs leaves its `work/work` directory without permissions: give them back first.
            let inner = l.join("w/work");
            if inner.is_dir() {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700));
            }
            let _ = std::fs::remove_dir_all(l);
        }
    }
}

impl Plan {
    /// In the child, between `fork` and `exec` (the child has one thread): enter a new user and
    /// mount namespace, map the same uid and gid, mount the overlays and binds, then Landlock and
    /// the socket filter. Only system calls on data prepared by the parent: no allocation, no
    /// lock.
    fn enter(&self) -> std::io::Result<()> {
        // SAFETY: plain system calls on NUL-terminated strings and fds owned by the plan.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &self.uid_map)?;
            write_proc(c"/proc/self/gid_map", &self.gid_map)?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            let mut trees = [-1 as libc::c_int; MAX_BINDS];
            for (i, (src, _)) in self.binds.iter().take(MAX_BINDS).enumerate() {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    src.as_ptr(),
                    (OPEN_TREE_CLONE | libc::O_CLOEXEC as u32 | AT_RECURSIVE) as libc::c_uint,
                );
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                trees[i] = fd as libc::c_int;
            }
            for (target, opts) in &self.overlays {
                check(libc::mount(
                    c"overlay".as_ptr(),
                    target.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    opts.as_ptr().cast(),
                ))?;
            }
            for d in &self.mkdirs {
                if libc::mkdir(d.as_ptr(), 0o755) != 0 && *libc::__errno_location() != libc::EEXIST {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, (_, target)) in self.binds.iter().take(MAX_BINDS).enumerate() {
                if libc::syscall(
                    libc::SYS_move_mount,
                    trees[i],
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(trees[i]);
            }
            let Some(l) = &self.landlock else {
                return Ok(());
            };
            let mut extra = [-1 as libc::c_int; MAX_ROOTS];
            let n = self.writable_roots.len().min(MAX_ROOTS);
            for (i, r) in self.writable_roots.iter().take(n).enumerate() {
                let fd = libc::open(r.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                extra[i] = fd;
            }
            l.restrict_in_child(&extra[..n])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command's writes land in its own overlay layer, which goes when the command does (not
    /// at the end of the run), and never reach the real directory.
    #[test]
    fn what_a_command_wrote_goes_with_the_command() {
        if !crate::testkit::require("user and mount namespaces with overlayfs", available()) {
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        let fronts = scratch.path().join("fronts");
        std::fs::create_dir_all(&fronts).unwrap();
        let ns = Arc::new(Namespace::new(scratch.path(), &fronts, &[], false).unwrap());
        assert!(!ns.roots.is_empty(), "no overlay for TMPDIR");
        let layers = || -> usize {
            ns.roots
                .iter()
                .map(|r| std::fs::read_dir(&r.spawns).unwrap().count())
                .sum()
        };
        let tmp = std::env::temp_dir().join(format!("nvcf-layer-test-{}", std::process::id()));
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg("echo written > \"$1\" && cat \"$1\"")
            .arg("sh")
            .arg(&tmp);
        ns.confine(&mut c, &[]);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "written\n");
        assert_eq!(
            layers(),
            ns.roots.len(),
            "one layer per overlay while the command is held"
        );
        drop(c);
        assert_eq!(layers(), 0, "the command's layers outlived it");
        assert!(!tmp.exists(), "the write reached the real {}", tmp.display());
    }

    #[test]
    fn mountinfo_escapes_and_overlayable_dirs() {
        assert_eq!(unescape_mountinfo(r"/a\040b"), PathBuf::from("/a b"));
        let mounts = vec![PathBuf::from("/"), PathBuf::from("/home/u/mnt")];
        assert!(overlayable(Path::new("/tmp"), &mounts));
        assert!(!overlayable(Path::new("/"), &mounts));
        assert!(!overlayable(Path::new("/home/u"), &mounts));
        assert!(overlayable(Path::new("/home/u/mnt"), &mounts));
        assert!(!overlayable(Path::new("/a,b"), &mounts));
        assert!(!overlayable(Path::new("rel"), &mounts));
    }
}
