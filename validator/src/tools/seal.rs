//! The sealed environment of an offline (or mirror) run: helmfile and helm, and whatever they
//! start (helm plugins, `git` for remote `git::` helmfiles, hooks' commands), get
//!
//! - every proxy variable pointing at a closed loopback port and an empty `NO_PROXY`, so any
//!   HTTP(S) request (registry, repository index, git over https) fails at once instead of
//!   reaching the network or hanging;
//! - `git` and `kubectl` fronts first on `PATH` that refuse at once (remote `git::` helmfiles,
//!   hooks calling `kubectl`), plus `GIT_SSH_COMMAND=false` and no terminal prompt;
//! - an empty `KUBECONFIG` and `HOME`, `XDG_*` and `HELM_*` config, cache and data directories
//!   inside a scratch directory, so no cluster, repository list, registry login or credential
//!   of the user is seen, and nothing is written outside the scratch directory.
//!
//! Hooks still run commands (helmfile runs `prepare` hooks while templating): the seal takes
//! their network, cluster and credentials away, not the commands themselves; see the trust model
//! in the README.

use super::Tools;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::path::Path;

/// A loopback port nothing listens on (the discard port); connecting fails at once.
pub const CLOSED_PROXY: &str = "http://127.0.0.1:9";

/// Where the seal's proxies point: `NVCF_SEALED_PROXY` when set (the realworld tests point it at
/// a listener that counts connection attempts), else `CLOSED_PROXY`.
fn proxy() -> OsString {
    std::env::var_os("NVCF_SEALED_PROXY")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| CLOSED_PROXY.into())
}

/// Commands a state reaches the network or a cluster with besides helm: remote `git::`
/// helmfiles (helmfile clones them with `git`) and hooks that call `kubectl`. Offline they are
/// answered by a front that refuses at once, naming the seal.
const REFUSED: &[&str] = &["git", "kubectl"];

/// The sealed environment, rooted in `scratch` (created by the caller, removed with it).
pub fn environment(scratch: &Path) -> Result<Vec<(String, OsString)>> {
    let mut env: Vec<(String, OsString)> = Vec::new();
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
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    for cmd in REFUSED {
        use std::os::unix::fs::PermissionsExt;
        let p = bin.join(cmd);
        let script = format!(
            "#!/bin/sh\necho \"nvcf-validate --offline: \\`{cmd} $*\\` refused (offline runs are sealed: no network, no cluster)\" >&2\nexit 1\n"
        );
        std::fs::write(&p, script).with_context(|| format!("writing {}", p.display()))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    }
    let mut path = vec![bin];
    path.extend(std::env::var_os("PATH").iter().flat_map(std::env::split_paths));
    env.push(("PATH".into(), std::env::join_paths(path).context("building PATH")?));
    for v in ["NO_PROXY", "no_proxy"] {
        env.push((v.into(), OsString::new()));
    }
    env.push(("GIT_SSH_COMMAND".into(), "false".into()));
    env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    env.push(("GIT_CONFIG_NOSYSTEM".into(), "1".into()));
    let kubeconfig = scratch.join("kubeconfig");
    std::fs::write(&kubeconfig, "").with_context(|| format!("writing {}", kubeconfig.display()))?;
    env.push(("KUBECONFIG".into(), kubeconfig.into_os_string()));
    for (var, sub) in [
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("HELM_CONFIG_HOME", "helm/config"),
        ("HELM_CACHE_HOME", "helm/cache"),
        ("HELM_DATA_HOME", "helm/data"),
        // helmfile unpacks pulls (placeholders included) under the temporary directory.
        ("TMPDIR", "tmp"),
    ] {
        let d = scratch.join(sub);
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        env.push((var.into(), d.into_os_string()));
    }
    env.push((
        "HELM_REPOSITORY_CONFIG".into(),
        scratch.join("helm/config/repositories.yaml").into_os_string(),
    ));
    env.push((
        "HELM_REGISTRY_CONFIG".into(),
        scratch.join("helm/config/registry/config.json").into_os_string(),
    ));
    env.push((
        "HELM_REPOSITORY_CACHE".into(),
        scratch.join("helm/cache/repository").into_os_string(),
    ));
    Ok(env)
}

/// `tools` running in the sealed environment rooted in `scratch`.
pub fn seal(mut tools: Tools, scratch: &Path) -> Result<Tools> {
    tools.env.extend(environment(scratch)?);
    Ok(tools)
}
