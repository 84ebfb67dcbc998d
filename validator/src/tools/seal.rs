//! The sealed environment of an offline (or mirror) run: helmfile and helm, and whatever they
//! start (helm plugins, `git` for remote `git::` helmfiles, hooks' commands), get
//!
//! - every proxy variable pointing at a closed loopback port and an empty `NO_PROXY`, so any
//!   HTTP(S) request (registry, repository index, git over https) fails at once instead of
//!   reaching the network or hanging;
//! - `GIT_SSH_COMMAND=false` and no terminal prompt, so git over ssh fails at once too;
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
        env.push((v.into(), CLOSED_PROXY.into()));
    }
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
