//! Rule family: pinning. Every artifact the stack installs is fixed: remote charts by an exact
//! release version and a sha256 in `charts.lock.yaml`, from an allowed https/oci source; images
//! by an exact tag (and a digest where the policy asks for one) from an allowed registry.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::stack::{ChartRef, LockEntry, Release};
use serde_json::Value;

pub static RULES: &[Rule] = &[
    Rule {
        id: CHART_VERSION_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a remote chart has no version, a range, `latest`, a pre-release, or `devel: true` is set",
        explain: CHART_VERSION_PINNED_DOC,
        scope: Scope::State,
        check: chart_version_pinned,
    },
    Rule {
        id: CHART_SOURCE_ALLOWED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a chart comes from plain http, an unlisted repository, or a local path outside charts/",
        explain: CHART_SOURCE_ALLOWED_DOC,
        scope: Scope::State,
        check: chart_source_allowed,
    },
    Rule {
        id: CHART_DIGEST_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a remote chart has no sha256 in the lock (or the lock disagrees), or a mirror tarball does not match it",
        explain: CHART_DIGEST_PINNED_DOC,
        scope: Scope::State,
        check: chart_digest_pinned,
    },
    Rule {
        id: IMAGE_PINNED,
        family: "pinning",
        severity: Severity::Error,
        summary: "a container image has no tag, `latest`, a snapshot/dev tag, no digest where required, or an unlisted registry",
        explain: IMAGE_PINNED_DOC,
        scope: Scope::Objects,
        check: image_pinned,
    },
];

const CHART_VERSION_PINNED: &str = "chart-version-pinned";
const CHART_SOURCE_ALLOWED: &str = "chart-source-allowed";
const CHART_DIGEST_PINNED: &str = "chart-digest-pinned";
const IMAGE_PINNED: &str = "image-pinned";

const CHART_VERSION_PINNED_DOC: &str = r#"## What it does
For every installed release with a remote chart (repository or `oci://`), requires `version:` to
be one exact release: `MAJOR.MINOR.PATCH` (a leading `v` or `=` and `+build` metadata are fine).
Fires on a missing version, `latest`, ranges and wildcards (`^1.2`, `~1.2.3`, `>=1.0`, `<2`,
`1.2.x`, `*`, `a || b`, partial `1.2`), semver pre-releases (`1.2.3-rc.1`, `-alpha`, `-beta`,
any `-…`), and `devel: true` on any release.

## Why it matters
helm resolves a range or a missing version to whatever is newest at install time, and
`devel: true` lets it pick pre-releases: the same commit then installs different code on
different days, and the chart's sha256 in the lock cannot match. The reference stack shipped
`devel: true`.

## How to fix
Write the exact version you tested (`version: v1.19.1`), remove `devel:`, and record the chart's
sha256 in `charts.lock.yaml` (`chart-digest-pinned`).

## Example
```yaml
- name: cert-manager
  chart: jetstack/cert-manager
  version: ^1.19.0     # fires: a range
  devel: true          # fires
- name: openbao
  chart: openbao/openbao
  version: 0.23.2      # silent
```
"#;

const CHART_SOURCE_ALLOWED_DOC: &str = r#"## What it does
Checks where charts come from:
- every declared repository, and every chart given as a URL, must be `https://` or `oci://`
  (plain `http://` fires);
- when the policy lists `settings.allowedChartRepositories`, every declared repository and every
  remote chart URL must fall under one of them (prefix match on whole path segments);
- a release must not name a repository no state file declares;
- a local chart (directory or tarball) must be inside the repository's `charts/` directory.

## Why it matters
A chart fetched over plain HTTP, or from a repository nobody reviewed, can be swapped in transit
or upstream; a local chart outside `charts/` is code the review of this repository never saw
(and may differ between machines).

## How to fix
Use the https/oci URL of the repository, add the repository to the policy's
`allowedChartRepositories` after review, or vendor the chart under `charts/` (upstream charts stay
remote and pinned: `chart-version-pinned`, `chart-digest-pinned`).

## Example
```yaml
repositories:
  - name: legacy
    url: http://charts.example.com      # fires: plain http
releases:
  - name: tools
    chart: ../shared/tools              # fires: outside charts/
  - name: nvcf-pki
    chart: ./charts/nvcf-pki            # silent
```
"#;

const CHART_DIGEST_PINNED_DOC: &str = r#"## What it does
For every installed release with a remote chart, requires an entry in `charts.lock.yaml` (beside
the entry state) with the chart's sha256, and requires that entry to agree with the state (same
version, chart name and repository). When a chart is read from `--chart-mirror`, the tarball's
sha256 must equal the pinned one.

## Why it matters
A version is a name, not content: a repository can re-publish `1.2.3` with different templates,
and a mirror can hold a tampered tarball. The digest is what makes the gate's render the one
operators install. A lock entry for another version pins nothing.

## How to fix
Add or update the lock entry (`helm pull <chart> --version <v>` and `sha256sum` the tarball), or
replace the mirror tarball with the pinned artifact.

## Example
```yaml
# charts.lock.yaml
charts:
  - release: cert-manager
    chart: cert-manager
    repository: oci://quay.io/jetstack/charts
    version: v1.19.1
    sha256: 0d2b…(64 hex)
# a release openbao/openbao with no entry here fires
```
"#;

const IMAGE_PINNED_DOC: &str = r#"## What it does
Checks the image of every container, initContainer and ephemeral container of every workload:
fires on a missing image, no tag (Docker pulls `latest`), the tag `latest`, snapshot or
development tags (a tag word such as `SNAPSHOT`, `dev`, `nightly`, `edge`, `main`, `master`,
`canary`, `unstable`, `head`, `trunk`, `latest`), a malformed digest; on a missing `@sha256:`
digest when the policy's `settings.requireImageDigests` names the environment (or `*`); and on a
registry outside `settings.allowedImageRegistries` when that list is non-empty (Docker Hub
defaults count: `nginx:1.27` is `docker.io/library/nginx`).

## Why it matters
Moving tags make the same manifests run different code on different nodes and days, and make a
rollback impossible; an unreviewed registry is a supply-chain hole.

## How to fix
Set the exact released tag (and `@sha256:` digest where required), from an allowed registry.

## Example
```yaml
image: nginx                          # fires: no tag
image: nvcr.io/nvidia/router:main     # fires: development tag
image: nvcr.io/nvidia/router:1.4.2@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  # silent
```
"#;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

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

/// Whether `url` is under one of the allowed prefixes (on whole path segments). An empty list
/// allows everything.
fn allowed(url: &str, list: &[String]) -> bool {
    let u = url.trim().trim_end_matches('/').to_ascii_lowercase();
    list.is_empty()
        || list.iter().any(|e| {
            let e = e.trim().trim_end_matches('/').to_ascii_lowercase();
            u == e || u.starts_with(&format!("{e}/"))
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

/// A repository-relative local chart path is inside `charts/`.
fn inside_charts(path: &str) -> bool {
    !path.starts_with('/') && normalize(path).is_some_and(|p| p.starts_with("charts/") && p.len() > "charts/".len())
}

fn state_finding(rule: &'static str, ctx: &Ctx, r: &Release, msg: String) -> Finding {
    Finding::state(rule, Some(ctx.environment), Some(r.id()), &r.file, r.line, msg)
}

// ---------------------------------------------------------------------------------------------
// chart-version-pinned
// ---------------------------------------------------------------------------------------------

fn chart_version_pinned(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in state.installed() {
        if r.devel {
            out.push(
                state_finding(
                    CHART_VERSION_PINNED,
                    ctx,
                    r,
                    format!(
                        "release {}: `devel: true` lets helm pick pre-release chart versions of {}",
                        r.id(),
                        r.chart
                    ),
                )
                .with_help("remove `devel: true` and pin the exact released version"),
            );
        }
        if !matches!(r.chart_ref, ChartRef::Repo { .. } | ChartRef::Oci { .. }) {
            continue;
        }
        let v = r.version.as_deref().unwrap_or("");
        let why = match exact_version(v) {
            Ok(_) => continue,
            Err(VersionIssue::Missing) => "has no `version:`; helm installs whatever is newest".to_string(),
            Err(VersionIssue::Latest) => "asks for `latest`, which moves".to_string(),
            Err(VersionIssue::Range) => {
                format!("asks for the range `{v}`; helm resolves it to the newest match at install time")
            }
            Err(VersionIssue::Partial) => {
                format!("asks for `{v}`, which is not an exact MAJOR.MINOR.PATCH version")
            }
            Err(VersionIssue::PreRelease(p)) => {
                format!("pins the pre-release `{v}` (`-{p}`); install released charts only")
            }
        };
        out.push(
            state_finding(
                CHART_VERSION_PINNED,
                ctx,
                r,
                format!("release {}: remote chart {} {why}", r.id(), r.chart),
            )
            .with_help(
                "set `version:` to the exact released version (e.g. `v1.19.1`) and pin its sha256 in charts.lock.yaml",
            ),
        );
    }
    out
}

// ---------------------------------------------------------------------------------------------
// chart-source-allowed
// ---------------------------------------------------------------------------------------------

fn chart_source_allowed(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let list = &ctx.policy.settings.allowed_chart_repositories;
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for repo in &state.repositories {
        let url = repo_url(&repo.url, repo.oci);
        if !seen.insert((repo.file.clone(), repo.name.clone(), url.clone())) {
            continue;
        }
        let msg = if is_http(&url) {
            format!(
                "repository `{}` is plain HTTP ({url}): charts and their index can be swapped in transit",
                repo.name
            )
        } else if !allowed(&url, list) {
            format!(
                "repository `{}` ({url}) is not in the policy's allowedChartRepositories",
                repo.name
            )
        } else {
            continue;
        };
        out.push(
            Finding::state(CHART_SOURCE_ALLOWED, Some(ctx.environment), None, &repo.file, None, msg)
                .with_help("use the repository's https:// or oci:// URL and list it in the policy's settings.allowedChartRepositories after review"),
        );
    }
    for r in state.installed() {
        let problem = match &r.chart_ref {
            ChartRef::Repo { repo, url, .. } => {
                if url.is_none() && state.repository(repo).is_none() {
                    Some(format!(
                        "chart {} names repository `{repo}`, which no state file declares",
                        r.chart
                    ))
                } else {
                    None
                }
            }
            ChartRef::Oci { url } if !allowed(url, list) => Some(format!(
                "chart {url} is not under the policy's allowedChartRepositories"
            )),
            ChartRef::Oci { .. } => None,
            ChartRef::Other { raw } if raw.contains("://") => {
                if is_http(raw) {
                    Some(format!("chart {raw} is fetched over plain HTTP"))
                } else if !allowed(raw, list) {
                    Some(format!(
                        "chart {raw} is not under the policy's allowedChartRepositories"
                    ))
                } else {
                    None
                }
            }
            ChartRef::Other { raw } => {
                let dir = r.file.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                let path = if raw.starts_with('/') {
                    raw.clone()
                } else {
                    format!("{dir}/{raw}")
                };
                (!inside_charts(&path))
                    .then(|| format!("local chart {raw} is outside the repository's charts/ directory"))
            }
            ChartRef::Local { path } => (!inside_charts(path)).then(|| {
                format!(
                    "local chart {} ({path}) is outside the repository's charts/ directory",
                    r.chart
                )
            }),
        };
        if let Some(p) = problem {
            out.push(
                state_finding(CHART_SOURCE_ALLOWED, ctx, r, format!("release {}: {p}", r.id()))
                    .with_help("vendor local charts under charts/; take upstream charts from an allowed https/oci repository, pinned"),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// chart-digest-pinned
// ---------------------------------------------------------------------------------------------

/// (repository URL, chart name) of a remote chart, as the lock records them.
fn chart_origin(r: &Release) -> Option<(Option<String>, String)> {
    match &r.chart_ref {
        ChartRef::Repo { chart, url, oci, .. } => Some((url.as_deref().map(|u| repo_url(u, *oci)), chart.clone())),
        ChartRef::Oci { url } => {
            let (repo, chart) = url.trim_end_matches('/').rsplit_once('/')?;
            Some((
                Some(repo.to_string()),
                chart.split([':', '@']).next().unwrap_or(chart).to_string(),
            ))
        }
        _ => None,
    }
}

fn lock_disagreement(r: &Release, e: &LockEntry) -> Option<String> {
    let v = r.version.as_deref().unwrap_or("");
    if !same_version(v, &e.version) {
        return Some(format!(
            "pins version {} but the state asks for {}",
            e.version,
            if v.is_empty() { "no version" } else { v }
        ));
    }
    let (repo, chart) = chart_origin(r)?;
    if e.chart != chart {
        return Some(format!("pins chart `{}` but the state installs `{chart}`", e.chart));
    }
    match repo {
        Some(u) if repo_url(&e.repository, e.repository.starts_with("oci://")) != u => {
            Some(format!("pins repository {} but the state uses {u}", e.repository))
        }
        _ => None,
    }
}

fn chart_digest_pinned(ctx: &Ctx) -> Vec<Finding> {
    let (Some(state), Some(stack)) = (ctx.state, ctx.stack) else {
        return Vec::new();
    };
    let lock_name = stack.lock.file.as_deref().unwrap_or(crate::stack::lock::LOCK_FILE);
    let mut out = Vec::new();
    for r in state.installed().filter(|r| is_remote(r)) {
        let version = r.version.as_deref().unwrap_or("(no version)");
        let msg = match stack.lock.for_release(&r.name) {
            None => format!(
                "release {}: remote chart {} {version} has no sha256 in {lock_name}",
                r.id(),
                r.chart
            ),
            Some(e) => match lock_disagreement(r, e) {
                Some(d) => format!(
                    "release {}: the {lock_name} entry {d}; the sha256 pins another artifact",
                    r.id()
                ),
                None => continue,
            },
        };
        out.push(
            state_finding(CHART_DIGEST_PINNED, ctx, r, msg)
                .with_help(format!("record release, chart, repository, version and the sha256 of the chart tarball (`helm pull` + `sha256sum`) in {lock_name}")),
        );
    }
    for s in ctx.status {
        let Some(m) = &s.mirror else { continue };
        let Some(expected) = &m.expected else {
            continue;
        };
        if expected.eq_ignore_ascii_case(&m.sha256) {
            continue;
        }
        let msg = format!(
            "release {}: mirror tarball {} has sha256 {}, but {lock_name} pins {expected}",
            s.id(),
            m.tarball,
            m.sha256
        );
        let f = match state.releases.iter().find(|r| r.id() == s.id()) {
            Some(r) => state_finding(CHART_DIGEST_PINNED, ctx, r, msg),
            None => Finding::state(
                CHART_DIGEST_PINNED,
                Some(ctx.environment),
                Some(s.id()),
                &m.tarball,
                None,
                msg,
            ),
        };
        out.push(
            f.with_help("replace the mirror tarball with the pinned artifact (or, after review, update the lock)"),
        );
    }
    out
}

// ---------------------------------------------------------------------------------------------
// image-pinned
// ---------------------------------------------------------------------------------------------

/// A parsed image reference.
#[derive(Debug, PartialEq, Eq)]
struct ImageRef {
    /// Registry host, Docker Hub aliases folded to `docker.io`.
    registry: String,
    /// Repository path (`library/nginx`).
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageRef {
    fn full_name(&self) -> String {
        format!("{}/{}", self.registry, self.path)
    }
}

fn docker_hub(host: &str) -> bool {
    matches!(
        host.to_ascii_lowercase().as_str(),
        "docker.io" | "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com"
    )
}

fn parse_image(s: &str) -> Result<ImageRef, String> {
    let s = s.trim();
    if s.is_empty() || s.contains(char::is_whitespace) {
        return Err("is not a valid image reference".into());
    }
    let (name_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (s, None),
    };
    let last = name_tag.rsplit('/').next().unwrap_or(name_tag);
    let (name, tag) = match last.rsplit_once(':') {
        Some((_, t)) => (&name_tag[..name_tag.len() - t.len() - 1], Some(t.to_string())),
        None => (name_tag, None),
    };
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            if docker_hub(first) {
                (
                    "docker.io".to_string(),
                    if rest.contains('/') {
                        rest.to_string()
                    } else {
                        format!("library/{rest}")
                    },
                )
            } else {
                (first.to_ascii_lowercase(), rest.to_string())
            }
        }
        Some(_) => ("docker.io".to_string(), name.to_string()),
        None => ("docker.io".to_string(), format!("library/{name}")),
    };
    if path.is_empty() || tag.as_deref() == Some("") {
        return Err("is not a valid image reference".into());
    }
    Ok(ImageRef {
        registry,
        path,
        tag,
        digest,
    })
}

fn valid_digest(d: &str) -> bool {
    let hex = |h: &str, n: usize| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    match d.split_once(':') {
        Some(("sha256", h)) => hex(h, 64),
        Some(("sha512", h)) => hex(h, 128),
        _ => false,
    }
}

/// The word of a tag that marks a snapshot or development build, if any.
fn dev_word(tag: &str) -> Option<String> {
    const DEV: &[&str] = &[
        "snapshot",
        "dev",
        "devel",
        "develop",
        "development",
        "nightly",
        "edge",
        "main",
        "master",
        "canary",
        "unstable",
        "head",
        "trunk",
        "latest",
        "wip",
    ];
    tag.to_ascii_lowercase()
        .split(['-', '.', '_', '+'])
        .find(|w| DEV.contains(w))
        .map(str::to_string)
}

fn image_pinned(ctx: &Ctx) -> Vec<Finding> {
    let settings = &ctx.policy.settings;
    let need_digest = settings.digests_required(ctx.environment);
    let mut out = Vec::new();
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        for (list, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let who = format!("{}: {list}[{cname}]", obj.display());
            let Some(image) = c.get("image").and_then(Value::as_str) else {
                out.push(
                    Finding::object(IMAGE_PINNED, obj, format!("{who} has no image"))
                        .with_help("set an image with an exact tag"),
                );
                continue;
            };
            let mut problems = Vec::new();
            match parse_image(image) {
                Err(e) => problems.push(e),
                Ok(r) => {
                    match (&r.digest, r.tag.as_deref()) {
                        (Some(d), _) if !valid_digest(d) => problems.push(format!("has a malformed digest `{d}`")),
                        (Some(_), _) => {}
                        (None, None) => problems.push("has no tag (the runtime pulls `latest`)".to_string()),
                        (None, Some(t)) if t.eq_ignore_ascii_case("latest") => {
                            problems.push("uses the moving tag `latest`".to_string())
                        }
                        (None, Some(_)) => {}
                    }
                    if let Some(t) = r.tag.as_deref().filter(|t| !t.eq_ignore_ascii_case("latest")) {
                        match dev_word(t) {
                            Some(w) if w == t.to_ascii_lowercase() => {
                                problems.push(format!("uses the development tag `{t}`"))
                            }
                            Some(w) => problems.push(format!("uses a snapshot/development tag (`{w}` in `{t}`)")),
                            None => {}
                        }
                    }
                    if need_digest && r.digest.is_none() {
                        problems.push(format!(
                            "has no @sha256 digest, which the policy requires in environment {}",
                            ctx.environment
                        ));
                    }
                    let list = &settings.allowed_image_registries;
                    let full = r.full_name();
                    let ok = list.is_empty()
                        || list.iter().any(|e| {
                            let e = e.trim().trim_end_matches('/').to_ascii_lowercase();
                            let e = match e.split_once('/') {
                                Some((h, rest)) if docker_hub(h) => format!("docker.io/{rest}"),
                                _ if docker_hub(&e) => "docker.io".to_string(),
                                _ => e,
                            };
                            full == e || full.starts_with(&format!("{e}/"))
                        });
                    if !ok {
                        problems.push(format!(
                            "comes from {} ({full}), which is not in the policy's allowedImageRegistries",
                            r.registry
                        ));
                    }
                }
            }
            for p in problems {
                out.push(
                    Finding::object_at(IMAGE_PINNED, obj, image, format!("{who} image `{image}` {p}"))
                        .with_help("use an exact released tag from an allowed registry, with an @sha256 digest where the policy requires one"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::render::{MirrorCheck, ReleaseStatus};
    use crate::rules::ownership::testkit::*;
    use crate::stack::{ChartLock, Stack};

    fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    const SHA: &str = "0d2b6ec4e2a0f1c1b0e6a9a1b4f4c1b7e4c0a8d2a1f3e5b7c9d1e3f5a7b9c1d3";

    #[test]
    fn fixtures_fire_and_stay_silent() {
        every_object_rule_has_fixtures("pinning", RULES);
        for (stem, findings) in check_family("pinning", RULES) {
            insta::assert_json_snapshot!(stem, findings);
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

    #[test]
    fn image_references() {
        let p = |s: &str| parse_image(s).map(|r| (r.full_name(), r.tag, r.digest));
        assert_eq!(p("nginx"), Ok(("docker.io/library/nginx".into(), None, None)));
        assert_eq!(
            p("nginx:1.27"),
            Ok(("docker.io/library/nginx".into(), Some("1.27".into()), None))
        );
        assert_eq!(
            p("bitnami/redis:7.2"),
            Ok(("docker.io/bitnami/redis".into(), Some("7.2".into()), None))
        );
        assert_eq!(
            p("index.docker.io/nginx:1"),
            Ok(("docker.io/library/nginx".into(), Some("1".into()), None))
        );
        assert_eq!(p("localhost:5000/app"), Ok(("localhost:5000/app".into(), None, None)));
        assert_eq!(
            p("localhost/app:1"),
            Ok(("localhost/app".into(), Some("1".into()), None))
        );
        assert_eq!(
            p("Quay.io/a/b:1@sha256:x"),
            Ok(("quay.io/a/b".into(), Some("1".into()), Some("sha256:x".into())))
        );
        assert!(parse_image("").is_err() && parse_image("nginx:").is_err() && parse_image("a b").is_err());
        assert_eq!(dev_word("1.5.0-SNAPSHOT").as_deref(), Some("snapshot"));
        assert_eq!(dev_word("nightly-2026-11-01").as_deref(), Some("nightly"));
        assert_eq!(dev_word("120.0-headless"), None);
        assert_eq!(dev_word("3.1-maintenance"), None);
    }

    fn remote(name: &str, ns: &str, version: Option<&str>) -> Release {
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

    #[test]
    fn chart_versions() {
        let mut devel_local = rel("helmfile.yaml", 40, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        devel_local.devel = true;
        let mut off = remote("off", "x", Some("^1.0.0"));
        off.installed = false;
        let mut oci = rel(
            "helmfile.yaml",
            50,
            "x",
            "oci",
            ChartRef::Oci {
                url: "oci://ghcr.io/example/charts/oci".into(),
            },
        );
        oci.version = Some("1.0.0-beta.2".into());
        let st = state(
            vec![
                remote("a", "x", Some("v1.19.1")),                                          // silent
                remote("b", "x", None),                                                     // missing
                remote("c", "x", Some("~1.19.0")),                                          // range
                remote("d", "x", Some("latest")),                                           // latest
                remote("e", "x", Some("1.19.1-rc.1")),                                      // pre-release
                remote("f", "x", Some("1.19")),                                             // partial
                devel_local,                                                                // devel on any release
                off,                                                                        // not installed: silent
                oci,                                                                        // OCI pre-release
                rel("helmfile.yaml", 60, "nvcf", "router", local("charts/request-router")), // local without version: silent
            ],
            vec![],
        );
        let f = run_state(
            rule(CHART_VERSION_PINNED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        let who: Vec<&str> = f.iter().map(|f| f.release.as_deref().unwrap()).collect();
        assert_eq!(
            who,
            ["x/b", "x/c", "x/d", "x/e", "x/f", "nvcf/nvcf-pki", "x/oci"],
            "{f:#?}"
        );
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn chart_sources() {
        let st = state(
            vec![
                rel(
                    "helmfile.yaml",
                    10,
                    "cert-manager",
                    "cert-manager",
                    repo("jetstack", "cert-manager", "quay.io/jetstack/charts", true),
                ),
                rel(
                    "helmfile.yaml",
                    20,
                    "legacy",
                    "legacy",
                    repo("legacy", "tool", "http://charts.example.com", false),
                ),
                rel(
                    "helmfile.yaml",
                    30,
                    "x",
                    "undeclared",
                    ChartRef::Repo {
                        repo: "nope".into(),
                        chart: "c".into(),
                        url: None,
                        oci: false,
                    },
                ),
                rel("helmfile.yaml", 40, "x", "shared", local("../shared/charts/tool")),
                rel("helmfile.yaml", 41, "x", "vendored-elsewhere", local("vendor/tool")),
                rel("helmfile.yaml", 42, "x", "charts-dir-itself", local("charts")),
                rel("helmfile.yaml", 50, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
                rel(
                    "sub/helmfile.yaml",
                    3,
                    "x",
                    "tarball-ok",
                    ChartRef::Other {
                        raw: "../charts/tool-1.0.0.tgz".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    60,
                    "x",
                    "tarball-http",
                    ChartRef::Other {
                        raw: "http://example.com/tool-1.0.0.tgz".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    70,
                    "x",
                    "oci-unlisted",
                    ChartRef::Oci {
                        url: "oci://ghcr.io/evil/charts/tool".into(),
                    },
                ),
                rel(
                    "helmfile.yaml",
                    80,
                    "x",
                    "oci-listed",
                    ChartRef::Oci {
                        url: "oci://quay.io/jetstack/charts/trust-manager".into(),
                    },
                ),
            ],
            vec![
                repository("jetstack", "quay.io/jetstack/charts", true),
                repository("openbao", "https://openbao.github.io/openbao-helm", false),
                repository("legacy", "http://charts.example.com", false),
                repository("evil", "https://openbao.github.io/openbao-helm-fork", false),
            ],
        );
        let mut policy = Policy::default();
        policy.settings.allowed_chart_repositories = vec![
            "oci://quay.io/jetstack/charts".into(),
            "https://openbao.github.io/openbao-helm/".into(),
        ];
        let f = run_state(rule(CHART_SOURCE_ALLOWED), &st, &Stack::default(), &policy, &[]);
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 8, "{msgs:#?}");
        assert!(msgs[0].contains("repository `legacy` is plain HTTP"));
        assert!(
            msgs[1].contains("repository `evil`") && msgs[1].contains("not in the policy's allowedChartRepositories")
        );
        for (m, what) in msgs[2..].iter().zip([
            "`nope`",
            "../shared/charts/tool",
            "vendor/tool",
            "(charts)",
            "fetched over plain HTTP",
            "oci://ghcr.io/evil",
        ]) {
            assert!(m.contains(what), "{m} should mention {what}");
        }
        insta::assert_json_snapshot!(f);
        // Without a list, any https/oci repository is fine; plain http never is.
        let f = run_state(
            rule(CHART_SOURCE_ALLOWED),
            &st,
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        assert_eq!(f.len(), 6, "{f:#?}");
    }

    fn lock(entries: &[(&str, &str, &str, &str)]) -> Stack {
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

    #[test]
    fn chart_digests_in_the_lock() {
        let mut openbao = rel(
            "helmfile.yaml",
            30,
            "openbao",
            "openbao",
            repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
        );
        openbao.version = Some("0.23.2".into());
        let st = state(
            vec![
                remote("cert-manager", "cert-manager", Some("v1.19.1")), // pinned: silent
                remote("trust-manager", "cert-manager", Some("v0.20.0")), // lock has another version
                remote("approver", "cert-manager", Some("v0.1.0")),      // lock names another repository
                openbao,                                                 // no lock entry
                rel("helmfile.yaml", 60, "nvcf", "nvcf-pki", local("charts/nvcf-pki")), // local: silent
            ],
            vec![],
        );
        let stack = lock(&[
            (
                "cert-manager",
                "cert-manager",
                "oci://quay.io/jetstack/charts",
                "1.19.1",
            ),
            (
                "trust-manager",
                "trust-manager",
                "oci://quay.io/jetstack/charts",
                "v0.19.0",
            ),
            ("approver", "approver", "https://charts.jetstack.io", "v0.1.0"),
        ]);
        let f = run_state(rule(CHART_DIGEST_PINNED), &st, &stack, &Policy::default(), &[]);
        let who: Vec<&str> = f.iter().map(|f| f.release.as_deref().unwrap()).collect();
        assert_eq!(
            who,
            ["cert-manager/trust-manager", "cert-manager/approver", "openbao/openbao"],
            "{f:#?}"
        );
        assert!(f[2].message.contains("has no sha256 in charts.lock.yaml"));
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn mirror_tarball_must_match_the_lock() {
        let st = state(vec![remote("cert-manager", "cert-manager", Some("v1.19.1"))], vec![]);
        let stack = lock(&[(
            "cert-manager",
            "cert-manager",
            "oci://quay.io/jetstack/charts",
            "v1.19.1",
        )]);
        let status = |sha: &str| ReleaseStatus {
            name: "cert-manager".into(),
            namespace: "cert-manager".into(),
            chart: "jetstack/cert-manager".into(),
            installed: true,
            version: Some("v1.19.1".into()),
            rendered: sha == SHA,
            reason: None,
            objects: 0,
            mirror: Some(MirrorCheck {
                tarball: "mirror/cert-manager-v1.19.1.tgz".into(),
                sha256: sha.into(),
                expected: Some(SHA.into()),
            }),
        };
        let ok = run_state(
            rule(CHART_DIGEST_PINNED),
            &st,
            &stack,
            &Policy::default(),
            &[status(SHA)],
        );
        assert!(ok.is_empty(), "{ok:#?}");
        let bad_sha = "f".repeat(64);
        let f = run_state(
            rule(CHART_DIGEST_PINNED),
            &st,
            &stack,
            &Policy::default(),
            &[status(&bad_sha)],
        );
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].message.contains("mirror/cert-manager-v1.19.1.tgz") && f[0].message.contains(SHA));
        assert_eq!(f[0].source.as_ref().unwrap().line, Some(10));
    }
}
