//! The sealed environment of a run: helmfile and helm, and whatever they start (helm plugins,
//! `git` for remote `git::` helmfiles, hooks' commands, `exec` in templates), get what follows.
//! Online the same seal applies with TCP left open (helm pulls charts, helmfile clones `git::`
//! helmfiles) and only the cluster and container-runtime fronts (`kubectl`, `docker`, `podman`,
//! `nerdctl`, `buildah`); writes and host Unix sockets are confined exactly as offline
//! ([`seal`] with `offline: false`). Offline:
//!
//! - a Landlock sandbox (`sandbox`, where the kernel has it): writes only inside the seal's
//!   scratch directory, the helm front's work directory and the render output directory (plus
//!   `/dev/null`), and no TCP `connect` or `bind` at all, loopback included; and no Unix sockets
//!   (`sockets`, a seccomp filter);
//! - the user's environment unchanged, in a user and mount namespace (`namespace`) whose overlays
//!   take the writes to `HOME` and the temporary directory and put the fronts (`git`, `kubectl`
//!   and the container CLIs refuse; `kustomize` answers for offline placeholder charts) first on
//!   the unchanged `PATH`: a template cannot tell this run from an apply run by what it reads
//!   ([`by_namespace`]);
//! - where that namespace is not available, the seal by variables ([`environment`]): proxies at
//!   a closed loopback port, an empty `KUBECONFIG`, `HOME`, `XDG_*`, `HELM_*`,
//!   `HELMFILE_CACHE_HOME` and `TMPDIR` in the scratch directory, the fronts first on `PATH`;
//!   `offline-seal-partial` then says a template can see the difference.
//!
//! Hooks still run commands (helmfile runs `prepare` hooks while loading the state): the seal
//! takes their network, cluster, host sockets and writes away, not the commands themselves, nor
//! what they can read; see the trust model in the README.

use super::Tools;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A loopback port nothing listens on (the discard port); connecting fails at once.
pub const CLOSED_PROXY: &str = "http://127.0.0.1:9";

/// Where the seal's proxies point: `NVCF_SEALED_PROXY` when set (the realworld tests point it at
/// a listener that counts connection attempts), else `CLOSED_PROXY`.
fn proxy() -> OsString {
    std::env::var_os("NVCF_SEALED_PROXY")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| CLOSED_PROXY.into())
}

/// Commands a state reaches the network, a cluster or the host's container runtime with besides
/// helm: remote `git::` helmfiles (helmfile clones them with `git`), hooks that call `kubectl`,
/// and hooks that build or run containers (`docker`, `podman`, `nerdctl`, `buildah`). Offline
/// they are answered by a front that refuses at once, naming the seal. (An absolute
/// `/usr/bin/docker` bypasses the front; the kernel then still refuses its TCP (Landlock) and
/// Unix sockets (seccomp, see `sockets`).)
const REFUSED: &[&str] = &["git", "kubectl", "docker", "podman", "nerdctl", "buildah"];

/// Online, the fronts that refuse: the cluster's and the container runtimes' clients. `git` runs
/// (remote `git::` helmfiles are cloned online) and `kustomize` is the real one.
const REFUSED_ONLINE: &[&str] = &["kubectl", "docker", "podman", "nerdctl", "buildah"];

/// The marker file of an offline placeholder chart (see `mirror::front`): the `kustomize` front
/// answers for a chart that holds it.
pub const PLACEHOLDER_MARKER: &str = "nvcf-validate-placeholder";

/// The directory the sealed tools may write into (everything else of the scratch directory —
/// the fronts, the kubeconfig — stays read-only to them).
pub fn writable(scratch: &Path) -> PathBuf {
    scratch.join("w")
}

fn write_script(p: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

fn shq(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// The `kustomize` front. helmfile (chartify) runs `kustomize build` for releases with
/// `strategicMergePatches`, `jsonPatches` or `transformers`, while it merely loads the state. For
/// an offline placeholder chart (a remote chart that was not fetched; never rendered) the front
/// answers with the placeholder's one object; for any other chart it runs the real kustomize, or,
/// when none is installed, fails naming what to install.
fn kustomize_front(real: Option<&Path>) -> String {
    format!(
        r#"#!/bin/sh
# Written by nvcf-validate for one sealed run (see validator/src/tools/seal.rs).
REAL={real}
sub="$1"
outfile() {{
  while [ $# -gt 0 ]; do
    case "$1" in --output|-o) echo "$2"; return ;; --output=*) echo "${{1#*=}}"; return ;; esac
    shift
  done
}}
if [ "$1" = build ]; then
  dir="$2"; out=$(outfile "$@")
  if [ -n "$dir" ] && [ -n "$(find "$dir" -maxdepth 3 -name {marker} -print -quit 2>/dev/null)" ]; then
    doc='apiVersion: v1
kind: ConfigMap
metadata:
  name: nvcf-validate-offline-placeholder
'
    if [ -n "$out" ]; then printf '%s' "$doc" > "$out"; else printf '%s' "$doc"; fi
    exit 0
  fi
fi
if [ -n "$REAL" ]; then exec "$REAL" "$@"; fi
if [ "$sub" = version ]; then echo "v5.0.0 (nvcf-validate placeholder: kustomize is not installed)"; exit 0; fi
echo "nvcf-validate: \`kustomize $sub\` cannot run: kustomize is not installed, and helmfile needs it to apply a release's strategicMergePatches, jsonPatches or transformers; install kustomize (v5) on PATH" >&2
exit 127
"#,
        real = real.map(shq).unwrap_or_else(|| "''".into()),
        marker = PLACEHOLDER_MARKER,
    )
}

/// Write the fronts into `bin`: the refusing ones, and offline `kustomize` calling
/// `real_kustomize`.
fn write_fronts(bin: &Path, real_kustomize: Option<&Path>, offline: bool) -> Result<()> {
    std::fs::create_dir_all(bin).with_context(|| format!("creating {}", bin.display()))?;
    if !offline {
        for cmd in REFUSED_ONLINE {
            let script = format!(
                "#!/bin/sh\necho \"nvcf-validate sealed: \\`{cmd} $*\\` refused (the gate runs hooks and exec sealed, online too: no cluster client, no container runtime, no host sockets, no writes outside the run)\" >&2\nexit 1\n"
            );
            write_script(&bin.join(cmd), &script)?;
        }
        return Ok(());
    }
    for cmd in REFUSED {
        let script = format!(
            "#!/bin/sh\necho \"nvcf-validate --offline: \\`{cmd} $*\\` refused (offline runs are sealed: no network, no cluster, no host sockets)\" >&2\nexit 1\n"
        );
        write_script(&bin.join(cmd), &script)?;
    }
    write_script(&bin.join("kustomize"), &kustomize_front(real_kustomize))
}

fn user_path() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .collect()
}

fn real_kustomize() -> Option<PathBuf> {
    user_path().iter().map(|d| d.join("kustomize")).find(|p| p.is_file())
}

/// The sealed environment by variables (where the namespace is not available), rooted in
/// `scratch` (created by the caller, removed with it).
pub fn environment(scratch: &Path) -> Result<Vec<(String, OsString)>> {
    environment_for(scratch, true)
}

/// [`environment`]; online (`offline: false`) only the directories the tools write into and the
/// fronts on `PATH` change (no proxies, the kubeconfig and git left as they are).
fn environment_for(scratch: &Path, offline: bool) -> Result<Vec<(String, OsString)>> {
    let mut env: Vec<(String, OsString)> = Vec::new();
    let bin = scratch.join("bin");
    let fronts_on_path = |env: &mut Vec<(String, OsString)>| -> Result<()> {
        write_fronts(&bin, real_kustomize().as_deref(), offline)?;
        let mut path = vec![bin.clone()];
        path.extend(user_path());
        env.push(("PATH".into(), std::env::join_paths(path).context("building PATH")?));
        Ok(())
    };
    if !offline {
        fronts_on_path(&mut env)?;
        written_dirs(scratch, &mut env)?;
        return Ok(env);
    }
    for v in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        env.push((v.into(), proxy()));
    }
    fronts_on_path(&mut env)?;
    for v in ["NO_PROXY", "no_proxy"] {
        env.push((v.into(), OsString::new()));
    }
    env.push(("GIT_SSH_COMMAND".into(), "false".into()));
    env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    env.push(("GIT_CONFIG_NOSYSTEM".into(), "1".into()));
    // An empty kubeconfig, private to us: helm warns about (and prints into every error) a
    // group- or world-readable one.
    let kubeconfig = scratch.join("kubeconfig");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&kubeconfig)
            .and_then(|mut f| f.write_all(b""))
            .with_context(|| format!("writing {}", kubeconfig.display()))?;
    }
    env.push(("KUBECONFIG".into(), kubeconfig.into_os_string()));
    written_dirs(scratch, &mut env)?;
    Ok(env)
}

/// `HOME`, the XDG, helm and helmfile directories and `TMPDIR` in the scratch directory's
/// writable part.
fn written_dirs(scratch: &Path, env: &mut Vec<(String, OsString)>) -> Result<()> {
    let w = writable(scratch);
    for (var, sub) in [
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("HELM_CONFIG_HOME", "helm/config"),
        ("HELM_CACHE_HOME", "helm/cache"),
        ("HELM_DATA_HOME", "helm/data"),
        // helmfile's go-getter downloads (`chart:`/`values:` URLs): primed offline, see `remote`.
        ("HELMFILE_CACHE_HOME", "helmfile-cache"),
        // helmfile unpacks pulls (placeholders included) under the temporary directory.
        ("TMPDIR", "tmp"),
    ] {
        let d = w.join(sub);
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        env.push((var.into(), d.into_os_string()));
    }
    env.push((
        "HELM_REPOSITORY_CONFIG".into(),
        w.join("helm/config/repositories.yaml").into_os_string(),
    ));
    env.push((
        "HELM_REGISTRY_CONFIG".into(),
        w.join("helm/config/registry/config.json").into_os_string(),
    ));
    env.push((
        "HELM_REPOSITORY_CACHE".into(),
        w.join("helm/cache/repository").into_os_string(),
    ));
    Ok(())
}

/// Tests only: one more directory the sealed tools may write into (the realworld tests' recording
/// helm logs there). Reported by `offline-seal-partial` whenever it is set.
pub const TEST_WRITABLE_VAR: &str = "NVCF_TEST_SEAL_WRITABLE";

fn test_writable() -> Option<PathBuf> {
    std::env::var_os(TEST_WRITABLE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// What the seal of an offline run does not enforce on this machine, in words (empty: every
/// promise of the README holds): Landlock missing or too old, or the tests' extra directory.
pub fn weaknesses() -> Vec<String> {
    let cov = super::sandbox::coverage();
    let mut v = Vec::new();
    let gaps = cov.gaps();
    if !gaps.is_empty() {
        let why = match cov.abi {
            0 => "Landlock is not available to this process (Linux 5.13 or later with Landlock enabled is needed; a                   container's seccomp filter may also refuse it)"
                .to_string(),
            n => format!("the kernel's Landlock ABI is {n} (truncation needs 3, TCP needs 4)"),
        };
        v.push(format!("not enforced by the kernel: {}; {why}", gaps.join(", ")));
    }
    if !by_namespace() {
        v.push(
            "the environment differs from an apply run's (HOME, TMPDIR, PATH, KUBECONFIG, XDG and helm \
             directories and proxies are the seal's, which a template can read): user and mount \
             namespaces are not available to this process, or Landlock or the socket filter is \
             incomplete"
                .to_string(),
        );
    }
    if !super::sandbox::sockets_sealed() {
        v.push(
            "not enforced by the kernel: Unix sockets (a container runtime's, any host service's); \
             seccomp filters are not available to this process"
                .to_string(),
        );
    }
    if let Some(d) = test_writable() {
        v.push(format!(
            "{TEST_WRITABLE_VAR} lets the sealed tools write into {}",
            d.display()
        ));
    }
    v
}

/// Is the seal made by the kernel alone, the environment left as it is (see `namespace`): the
/// namespace is available and Landlock and the socket filter are complete.
pub fn by_namespace() -> bool {
    super::sandbox::coverage().complete() && super::sandbox::sockets_sealed() && super::namespace::available()
}

/// The directory helmfile caches downloads in, as helmfile 0.166 computes it from the
/// environment (`remote.CacheDir`: `HELMFILE_CACHE_HOME`, else Go's `os.UserCacheDir()` +
/// `helmfile`: `XDG_CACHE_HOME` when absolute, else `$HOME/.cache`).
fn helmfile_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(h) = var("HELMFILE_CACHE_HOME") {
        return Some(h);
    }
    let base = match var("XDG_CACHE_HOME") {
        Some(x) if x.is_absolute() => x,
        Some(_) => return None,
        None => var("HOME")?.join(".cache"),
    };
    Some(base.join("helmfile"))
}

struct Registered {
    helm: PathBuf,
    tools: Tools,
    cache: Option<PathBuf>,
}

fn registry() -> &'static std::sync::Mutex<Vec<Registered>> {
    static R: std::sync::OnceLock<std::sync::Mutex<Vec<Registered>>> = std::sync::OnceLock::new();
    R.get_or_init(Default::default)
}

/// The sealed tools whose helm (front) is `helm`, and where their helmfile download cache is on
/// the host (`remote` primes it); `None` when `helm` is no sealed run's.
pub fn sealed(helm: &Path) -> Option<(Tools, Option<PathBuf>)> {
    let r = registry().lock().unwrap_or_else(|e| e.into_inner());
    r.iter()
        .rev()
        .find(|e| e.helm == helm)
        .map(|e| (e.tools.clone(), e.cache.clone()))
}

/// Online, is the seal made by the kernel alone: the namespace is available, Landlock confines
/// writes (truncation included) and the socket filter works (TCP is not needed: it stays open).
pub fn by_namespace_online() -> bool {
    super::sandbox::coverage().truncate() && super::sandbox::sockets_sealed() && super::namespace::available()
}

/// `tools` running sealed in `scratch`: in a namespace with the environment as it is (see
/// `namespace`), or, where that is not available, in the environment of [`environment`]; with
/// the Landlock sandbox allowing writes only to the scratch directory's writable part and the
/// directories `tools` already allows (the helm front's work directory). `offline: false`: the
/// same, with TCP allowed and only the cluster and container-runtime fronts (`REFUSED_ONLINE`).
pub fn seal(mut tools: Tools, scratch: &Path, offline: bool) -> Result<Tools> {
    let w = writable(scratch);
    std::fs::create_dir_all(&w).with_context(|| format!("creating {}", w.display()))?;
    tools.network = !offline;
    let in_namespace = match offline {
        true => by_namespace(),
        false => by_namespace_online(),
    };
    let cache = if in_namespace {
        let real = real_kustomize().filter(|_| offline);
        let bin = scratch.join("bin");
        let real_named: Vec<(&str, PathBuf)> = real.iter().map(|r| ("kustomize", r.clone())).collect();
        let mut ns = super::namespace::Namespace::new(scratch, &bin, &real_named, !offline)?;
        write_fronts(&bin, real.as_deref().map(|r| ns.real_path(r)).as_deref(), offline)?;
        let host = w.join("helmfile-cache");
        std::fs::create_dir_all(&host).with_context(|| format!("creating {}", host.display()))?;
        let shown = helmfile_cache_dir().is_some_and(|d| ns.show_at(&host, &d));
        tools.ns = Some(std::sync::Arc::new(ns));
        shown.then_some(host)
    } else {
        tools.env.extend(environment_for(scratch, offline)?);
        Some(w.join("helmfile-cache"))
    };
    let mut dirs = tools.writable.take().unwrap_or_default();
    dirs.push(w);
    dirs.extend(test_writable());
    // Fail here, naming the directory, rather than at every command.
    if super::sandbox::coverage().abi > 0 {
        let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        super::sandbox::ruleset(super::sandbox::coverage().abi, &refs, !offline)?;
    }
    tools.writable = Some(dirs);
    // Only offline runs prime helmfile's download cache with placeholders (see `remote`).
    if offline {
        registry().lock().unwrap_or_else(|e| e.into_inner()).push(Registered {
            helm: tools.helm.clone(),
            tools: tools.clone(),
            cache,
        });
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_is_private_and_empty() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let env = environment(d.path()).unwrap();
        let k = env.iter().find(|(k, _)| k == "KUBECONFIG").unwrap();
        let meta = std::fs::metadata(&k.1).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.len(), 0);
        // Everything the tools write goes below the writable part; the fronts stay outside it.
        for var in [
            "HOME",
            "TMPDIR",
            "HELMFILE_CACHE_HOME",
            "HELM_CACHE_HOME",
            "XDG_CACHE_HOME",
        ] {
            let v = &env.iter().find(|(k, _)| k == var).unwrap().1;
            assert!(Path::new(v).starts_with(writable(d.path())), "{var}");
        }
        assert!(!d.path().join("bin").starts_with(writable(d.path())));
    }

    #[test]
    fn kustomize_front_answers_placeholders_and_names_what_is_missing() {
        let d = tempfile::tempdir().unwrap();
        let front = d.path().join("kustomize");
        write_script(&front, &kustomize_front(None)).unwrap();
        let chart = d.path().join("chart");
        std::fs::create_dir_all(&chart).unwrap();
        std::fs::write(chart.join(PLACEHOLDER_MARKER), "").unwrap();
        let out = d.path().join("all.yaml");
        let s = std::process::Command::new(&front)
            .args(["build"])
            .arg(&chart)
            .arg("--output")
            .arg(&out)
            .arg("--enable-alpha-plugins")
            .status()
            .unwrap();
        assert!(s.success());
        assert!(std::fs::read_to_string(&out)
            .unwrap()
            .contains("nvcf-validate-offline-placeholder"));
        // A real chart without kustomize installed: a clear refusal.
        let real = d.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        let o = std::process::Command::new(&front)
            .arg("build")
            .arg(&real)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(127));
        assert!(String::from_utf8_lossy(&o.stderr).contains("`kustomize build` cannot run: kustomize is not installed"));
        // With a kustomize installed, a real chart goes to it with every argument.
        let stub = d.path().join("real-kustomize");
        write_script(&stub, "#!/bin/sh\necho \"real $*\"\n").unwrap();
        write_script(&front, &kustomize_front(Some(&stub))).unwrap();
        let o = std::process::Command::new(&front)
            .arg("build")
            .arg(&real)
            .args(["--output", "x.yaml"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("real build {} --output x.yaml", real.display())
        );
    }
}
