//! Locating and running the real `helmfile` and `helm` binaries: the one place that knows where
//! they are (and, offline or with `--chart-mirror`, the generated helm front in `mirror`; offline,
//! the seal in `seal` with its Landlock sandbox in `sandbox`, and helmfile's own downloads in
//! `remote`). The loader (`stack::load`) and `render` both run them through here.
//!
//! Lookup order for each tool: the environment variable `NVCF_HELMFILE` / `NVCF_HELM` (an explicit
//! path), then `.tools/bin/<tool>` in the state's directory or any parent (where `ci/setup`
//! installs the pinned, hash-verified tools), then `PATH`.

pub mod build;
pub mod mirror;
pub mod namespace;
pub mod output;
pub mod paths;
pub mod remote;
pub mod sandbox;
pub mod seal;
pub mod sockets;
pub mod versions;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

#[derive(Debug, Clone)]
pub struct Tools {
    pub helmfile: PathBuf,
    pub helm: PathBuf,
    /// Environment every helmfile and helm run gets (the sealed environment offline, see `seal`).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Sealed (offline): the only directories helmfile, helm and what they start may write into
    /// (Landlock, see `sandbox`); `None`: not confined (online, or a mirror without --offline).
    pub writable: Option<Vec<PathBuf>>,
    /// Sealed in a user and mount namespace (the environment left as it is, see `namespace`);
    /// `None`: sealed by variables, or not sealed.
    pub ns: Option<std::sync::Arc<namespace::Namespace>>,
    /// Sealed but online: TCP stays allowed (charts are pulled); writes and Unix sockets are
    /// confined as offline (see `seal`).
    pub network: bool,
}

impl Tools {
    /// Find both tools, or fail with a message that says how to install them.
    pub fn locate(start: &Path) -> Result<Tools> {
        let helmfile = find_tool("helmfile", "NVCF_HELMFILE", start);
        let helm = find_tool("helm", "NVCF_HELM", start);
        match (helmfile, helm) {
            (Some(helmfile), Some(helm)) => Ok(Tools {
                helmfile,
                helm,
                env: Vec::new(),
                writable: None,
                ns: None,
                network: false,
            }),
            (hf, h) => {
                let missing: Vec<&str> = [("helmfile", hf.is_none()), ("helm", h.is_none())]
                    .into_iter()
                    .filter(|(_, m)| *m)
                    .map(|(n, _)| n)
                    .collect();
                bail!(
                    "cannot render: {} not found (looked in $NVCF_HELMFILE/$NVCF_HELM, .tools/bin above {}, and PATH); \
                     run ./ci/setup to install the pinned versions, or validate pre-rendered YAML with --manifests",
                    missing.join(" and "),
                    start.display()
                )
            }
        }
    }

    /// A `helmfile` command for a state file, using our helm.
    pub fn helmfile(&self, state: &Path, environment: &str) -> Command {
        self.helmfile_writing(state, environment, &[])
    }

    /// A `helmfile` command that may also write beneath `output` (a render output directory's
    /// parent) when the run is sealed.
    pub fn helmfile_writing(&self, state: &Path, environment: &str, output: &[&Path]) -> Command {
        let mut c = Command::new(&self.helmfile);
        c.arg("--file").arg(state).arg("--environment").arg(environment);
        c.arg("--helm-binary").arg(&self.helm).arg("--no-color");
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.confine(&mut c, output);
        c
    }

    pub fn helm(&self) -> Command {
        self.helm_writing(&[])
    }

    /// A `helm` command that may also write beneath `output` (existing directories) when the run
    /// is sealed, e.g. `helm template --output-dir`.
    pub fn helm_writing(&self, output: &[&Path]) -> Command {
        let mut c = Command::new(&self.helm);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.confine(&mut c, output);
        c
    }

    /// A command for another program of the run (`helmfile --version`), with the run's environment
    /// and, sealed, its confinement.
    pub fn tool_command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.confine(&mut c, &[]);
        c
    }

    /// Sealed: Landlock for `c` (writes only to `writable` and `extra`, no TCP), the socket
    /// filter, and where it is available the namespace (see `namespace`).
    pub fn confine(&self, c: &mut Command, extra: &[&Path]) {
        let Some(w) = &self.writable else { return };
        let dirs: Vec<&Path> = w.iter().map(PathBuf::as_path).chain(extra.iter().copied()).collect();
        match &self.ns {
            Some(ns) => ns.confine(c, &dirs),
            None => sandbox::confine_or_block(c, &dirs, self.network),
        }
    }
}

impl Drop for Lazy {
    /// The version check writes into the front's directory: let it end before that goes.
    fn drop(&mut self) {
        let _ = self.verified();
    }
}

/// The tools of one run, located on first use (a warm cache never looks for them). helm is the
/// generated front (`mirror::front`), written once into a temporary directory
/// this owns.
pub struct Lazy {
    root: PathBuf,
    mirror: Option<PathBuf>,
    front_dir: tempfile::TempDir,
    /// The scratch directory of the sealed environment (`seal`): every run is sealed, online
    /// with TCP allowed.
    sealed: tempfile::TempDir,
    /// `--offline`: no network, registry calls answered by the front (`mirror`).
    offline: bool,
    cell: OnceLock<Result<Tools, String>>,
    /// The check of the tools' versions (`versions::start`), running beside the first commands.
    check: std::sync::Mutex<Option<versions::Pending>>,
    verdict: OnceLock<Result<(), String>>,
}

impl Lazy {
    /// `root`: where the lookup starts (the state's directory); `mirror`: `--chart-mirror`;
    /// `offline`: run helmfile and helm without network. Online or offline they run sealed
    /// (`seal`): hooks and `exec` write nowhere outside the run and reach no host Unix socket.
    pub fn new(root: &Path, mirror: Option<&Path>, offline: bool) -> Result<Lazy> {
        let sealed = tempfile::Builder::new()
            .prefix("nvcf-validate-sealed-")
            .tempdir()
            .context("creating a temporary directory")?;
        // The helm front answers registry calls (with a mirror, and offline), helmfile 0.x's
        // version question, and renders the upgrade render beside the install render; online
        // without a mirror it hands everything else to helm as it is.
        let front_dir = tempfile::Builder::new()
            .prefix("nvcf-validate-mirror-")
            .tempdir()
            .context("creating a temporary directory")?;
        Ok(Lazy {
            root: root.to_path_buf(),
            mirror: mirror.map(Path::to_path_buf),
            front_dir,
            sealed,
            offline,
            cell: OnceLock::new(),
            check: std::sync::Mutex::new(None),
            verdict: OnceLock::new(),
        })
    }

    /// The tools, located on first use. Whether this helmfile can drive this helm (Helm 4 with
    /// helmfile 0.x, see `versions`) is checked beside the first commands they run: what they
    /// produce counts only once [`Lazy::verified`] says the pair passed.
    pub fn get(&self) -> Result<Tools> {
        self.cell
            .get_or_init(|| {
                let located = Tools::locate(&self.root).inspect(|t| {
                    // In the front's work directory: sealed, that one is bound into every command's
                    // namespace, so a front started before the answer was written sees it arrive
                    // (beside it, under the overlay of the temporary directory, it may not).
                    let answer = front_answer(self.front_dir.path());
                    if let Some(dir) = answer.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    let pending = versions::start(t.clone(), Some(answer));
                    *self.check.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(pending);
                });
                let located = located.and_then(|t| {
                    let (d, m) = (self.front_dir.path(), self.mirror.as_deref().map(paths::absolute));
                    mirror::front(&t, m.as_deref(), self.offline, Some(&front_answer(d)), d)
                });
                let located = located.and_then(|t| seal::seal(t, self.sealed.path(), self.offline));
                located.map_err(|e| format!("{e:#}"))
            })
            .clone()
            .map_err(|e| anyhow::anyhow!(e))
    }

    /// The verdict of the version check `get` started (waiting for it): `Ok` when it passed or
    /// the tools were never needed (a warm cache), else the refusal naming both versions. Nothing
    /// the tools produced is kept or cached before this is `Ok`.
    pub fn verified(&self) -> Result<()> {
        self.verdict
            .get_or_init(|| {
                let pending = self
                    .check
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                match pending {
                    Some(p) => p.wait().map(|_| ()),
                    None => Ok(()),
                }
            })
            .clone()
            .map_err(|e| anyhow::anyhow!(e))
    }
}

/// Where the version check leaves helm's answer to helmfile 0.x's question for the helm front
/// written into `front_dir` (`mirror::front`, `versions::start`).
fn front_answer(front_dir: &Path) -> PathBuf {
    front_dir.join("work").join("client-short")
}

fn find_tool(name: &str, var: &str, start: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        let p = dir.join(".tools/bin").join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Run a command and return its output, or an error carrying the tail of its stderr. A sealed
/// helmfile command that fails in helmfile's own download code (go-getter) is retried once with
/// its download cache primed, and otherwise fails naming the remote file (see `remote`).
pub fn run(cmd: &mut Command, what: &str) -> Result<Output> {
    let mut out = cmd
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() && remote::is_download_failure(&String::from_utf8_lossy(&out.stderr)) {
        if let Some(retried) = remote::retry_primed(cmd) {
            out = retried.with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
        }
        if !out.status.success() && remote::is_download_failure(&String::from_utf8_lossy(&out.stderr)) {
            bail!("{}", remote::explain_failure(cmd, what, &out));
        }
    }
    if !out.status.success() {
        bail!("{what} failed ({}):\n{}", out.status, tail(&out.stderr, &out.stdout));
    }
    Ok(out)
}

/// The last meaningful lines of a failed tool run (helmfile prints the cause at the end), with
/// helmfile's argument dumps and Go panics condensed first (`output::condense`), so a panic
/// keeps its `panic:` line and no `0: /path/helm (26 bytes)` list is echoed.
pub fn tail(stderr: &[u8], stdout: &[u8]) -> String {
    let text = output::condense(&String::from_utf8_lossy(
        if stderr.iter().any(|b| !b.is_ascii_whitespace()) {
            stderr
        } else {
            stdout
        },
    ));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(12);
    lines[start..]
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
