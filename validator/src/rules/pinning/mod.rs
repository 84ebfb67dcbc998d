//! Rule family: pinning. Every artifact the stack installs is fixed: remote charts by an exact
//! release version and a sha256 in the lock file (`settings.lockFile`), from an allowed https/oci
//! source, local charts under the policy's `localChartRoots`; images
//! by an exact tag (and a digest where the policy asks for one) from an allowed registry.
//!
//! One file per rule (its check and unit tests) with its explain text beside it as markdown; the
//! version, URL and path helpers the chart rules share live here.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::stack::{ChartRef, LockEntry, Release};
use serde_json::Value;

mod chart_digest_pinned;
mod chart_source_allowed;
mod chart_version_pinned;
mod image_pinned;

#[cfg(test)]
mod behaviours;

pub static RULES: &[Rule] = &[
    Rule {
        id: CHART_VERSION_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a remote chart has no version, a range, `latest`, a pre-release, or `devel: true` is set",
        explain: include_str!("chart-version-pinned.md"),
        scope: Scope::State,
        check: chart_version_pinned::chart_version_pinned,
    },
    Rule {
        id: CHART_SOURCE_ALLOWED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a chart comes from plain http, a repository the policy does not list, or a local path outside the \
                  policy's localChartRoots (default charts/)",
        explain: include_str!("chart-source-allowed.md"),
        scope: Scope::State,
        check: chart_source_allowed::chart_source_allowed,
    },
    Rule {
        id: CHART_DIGEST_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a remote chart has no sha256 in the lock file (settings.lockFile, default charts.lock.yaml) or the lock \
                  disagrees, or a mirror tarball does not match it",
        explain: include_str!("chart-digest-pinned.md"),
        scope: Scope::State,
        check: chart_digest_pinned::chart_digest_pinned,
    },
    Rule {
        id: IMAGE_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a container image has no tag, `latest`, a snapshot/dev tag, no digest where required, or an unlisted registry",
        explain: include_str!("image-pinned.md"),
        scope: Scope::Objects,
        check: image_pinned::image_pinned,
    },
];

const CHART_VERSION_PINNED: &str = "chart-version-pinned";
const CHART_SOURCE_ALLOWED: &str = "chart-source-allowed";
const CHART_DIGEST_PINNED: &str = "chart-digest-pinned";
const IMAGE_PINNED: &str = "image-pinned";

/// Why a version is not one exact release.
#[derive(Debug, PartialEq, Eq)]
enum VersionIssue {
    Missing,
    Latest,
    Range,
    Partial,
    PreRelease(String),
}

/// `[=]v?MAJOR.MINOR.PATCH[+build]` → the numbers; anything else → why not.
fn exact_version(v: &str) -> Result<(u64, u64, u64), VersionIssue> {
    let t = v.trim();
    if t.is_empty() {
        return Err(VersionIssue::Missing);
    }
    if t.eq_ignore_ascii_case("latest") {
        return Err(VersionIssue::Latest);
    }
    let t = t.strip_prefix('=').unwrap_or(t).trim();
    if t.contains(['^', '~', '>', '<', '*', '|', ',', '=', ' ', '!']) {
        return Err(VersionIssue::Range);
    }
    let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
    let core_pre = t.split('+').next().unwrap_or(t);
    let (core, pre) = match core_pre.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (core_pre, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.iter().any(|p| matches!(*p, "x" | "X" | "*")) {
        return Err(VersionIssue::Range);
    }
    let nums: Vec<u64> = parts
        .iter()
        .filter_map(|p| {
            if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() {
                p.parse().ok()
            } else {
                None
            }
        })
        .collect();
    if nums.len() != parts.len() || parts.len() != 3 {
        return Err(VersionIssue::Partial);
    }
    if let Some(p) = pre {
        return Err(VersionIssue::PreRelease(p.to_string()));
    }
    Ok((nums[0], nums[1], nums[2]))
}

/// Two versions name the same release (`v1.2.3` = `1.2.3` = `=1.2.3`); inexact ones compare as text.
fn same_version(a: &str, b: &str) -> bool {
    match (exact_version(a), exact_version(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

/// A remote chart: from a repository, an OCI registry or a URL.
fn is_remote(r: &Release) -> bool {
    match &r.chart_ref {
        ChartRef::Local { .. } => false,
        ChartRef::Other { raw } => raw.contains("://"),
        _ => true,
    }
}

/// A repository URL as helm sees it: OCI repositories get their `oci://` scheme, no trailing `/`.
fn repo_url(url: &str, oci: bool) -> String {
    let u = url.trim().trim_end_matches('/');
    if oci && !u.contains("://") {
        format!("oci://{u}")
    } else {
        u.to_string()
    }
}

fn is_http(url: &str) -> bool {
    url.trim().get(..7).is_some_and(|p| p.eq_ignore_ascii_case("http://"))
}

/// Whether `url` is under one of the allowed prefixes (on whole path segments). An absent or
/// empty list allows nothing; `"*"` allows everything (`policy::allow_list_admits`).
fn allowed(url: &str, list: &[String]) -> bool {
    let u = url.trim().trim_end_matches('/').to_ascii_lowercase();
    crate::policy::allow_list_admits(list, |e| {
        let e = e.trim().trim_end_matches('/').to_ascii_lowercase();
        !e.is_empty() && (u == e || u.starts_with(&format!("{e}/")))
    })
}

/// Lexical normalisation of a `/`-separated path; `None` when it climbs above its start.
fn normalize(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out.join("/"))
}

/// A repository-relative local chart path is inside one of the policy's local chart roots
/// (`settings.localChartRoots`, default `charts/`).
fn inside_roots(path: &str, roots: &[String]) -> bool {
    !path.starts_with('/')
        && normalize(path).is_some_and(|p| {
            roots.iter().any(|r| {
                let r = normalize(r).unwrap_or_default();
                !r.is_empty()
                    && p.strip_prefix(&r)
                        .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
            })
        })
}

/// The policy's local chart roots, for messages (`charts/`, `charts/ or vendor/charts/`).
fn roots_shown(roots: &[String]) -> String {
    roots
        .iter()
        .map(|r| format!("{}/", r.trim_end_matches('/')))
        .collect::<Vec<_>>()
        .join(" or ")
}

fn state_finding(rule: &'static str, ctx: &Ctx, r: &Release, msg: String) -> Finding {
    Finding::state(rule, Some(ctx.environment), Some(r.id()), &r.file, r.line, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::stack::{ChartLock, Stack};
    use crate::testkit::*;

    pub(super) fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    pub(super) const SHA: &str = "0d2b6ec4e2a0f1c1b0e6a9a1b4f4c1b7e4c0a8d2a1f3e5b7c9d1e3f5a7b9c1d3";

    #[test]
    fn fixtures_fire_and_stay_silent() {
        for run in check_fixtures("pinning", RULES, Silent::Family) {
            insta::assert_json_snapshot!(run.stem, run.findings);
        }
    }

    #[test]
    fn exact_versions() {
        assert_eq!(exact_version("v1.19.1"), Ok((1, 19, 1)));
        assert_eq!(exact_version("0.23.2"), Ok((0, 23, 2)));
        assert_eq!(exact_version("=1.2.3"), Ok((1, 2, 3)));
        assert_eq!(exact_version("1.2.3+build.7"), Ok((1, 2, 3)));
        assert_eq!(exact_version(""), Err(VersionIssue::Missing));
        assert_eq!(exact_version("Latest"), Err(VersionIssue::Latest));
        for r in [
            "^1.2.0",
            "~1.2.3",
            ">=1.0.0",
            "<2.0.0",
            "1.2.x",
            "1.X",
            "*",
            "1.2.3 || 1.2.4",
            ">=1.0, <2.0",
            "!=1.0.0",
        ] {
            assert_eq!(exact_version(r), Err(VersionIssue::Range), "{r}");
        }
        for p in ["1.2", "1", "1.2.3.4", "v1.2.a", "1..2"] {
            assert_eq!(exact_version(p), Err(VersionIssue::Partial), "{p}");
        }
        assert_eq!(
            exact_version("1.2.3-rc.1"),
            Err(VersionIssue::PreRelease("rc.1".into()))
        );
        assert_eq!(
            exact_version("v2.0.0-alpha"),
            Err(VersionIssue::PreRelease("alpha".into()))
        );
        assert!(same_version("v1.19.1", "1.19.1") && !same_version("1.19.1", "1.19.2"));
    }

    pub(super) fn remote(name: &str, ns: &str, version: Option<&str>) -> Release {
        let mut r = rel(
            "helmfile.yaml",
            10,
            ns,
            name,
            repo("jetstack", name, "quay.io/jetstack/charts", true),
        );
        r.version = version.map(str::to_string);
        r
    }

    pub(super) fn lock(entries: &[(&str, &str, &str, &str)]) -> Stack {
        let charts = entries
            .iter()
            .map(|(release, chart, repository, version)| LockEntry {
                release: release.to_string(),
                chart: chart.to_string(),
                repository: repository.to_string(),
                version: version.to_string(),
                app_version: None,
                sha256: SHA.into(),
            })
            .collect();
        Stack {
            lock: ChartLock {
                charts,
                file: Some("charts.lock.yaml".into()),
            },
            ..Stack::default()
        }
    }
}
