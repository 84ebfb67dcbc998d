//! Files helmfile downloads itself, without helm (go-getter): a release's `chart:` given as an
//! `http(s)://`, `s3://` or `git::…` URL, and `values:`/`secrets:` entries given as URLs.
//!
//! helmfile 0.166 looks each up in its download cache (`HELMFILE_CACHE_HOME`, inside the seal's
//! scratch directory) before it downloads, and panics (a nil pointer in `HttpFileExists`) when
//! an `http(s)` download fails. So in a sealed run, when a `helmfile` command fails that way:
//!
//! 1. the releases are listed without preparing charts (`helmfile list --skip-charts`, which
//!    neither downloads nor runs hooks), and every chart URL gets a placeholder chart at exactly
//!    the cache path helmfile computes for it ([`cache_path`], the same rules as helmfile's
//!    `remote.Fetch`); the command is run once more and loads the state: such a release is
//!    then reported "not rendered: --offline", like every other remote chart;
//! 2. if it still fails, a remote values file is the cause: `helmfile build` without
//!    `--embed-values` names it, and the error names the state file, the release and the URL
//!    (userinfo redacted) instead of helmfile's stack trace.
//!
//! The download that failed was refused by the seal (Landlock refuses the connection in the
//! kernel; without Landlock it goes to the closed proxy port), never sent anywhere.

use super::seal;
use super::Tools;
use anyhow::{Context, Result};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};

/// The first line of every error this module writes (`stack::failure` shows it as the headline).
pub const HEADLINE: &str = "nvcf-validate: remote file:";

/// A go-getter source as helmfile's `remote.Parse` splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `normal` for a plain `http(s)://`/`s3://` URL, else the forced getter (`git`, `s3`, …).
    pub getter: String,
    pub scheme: String,
    pub host: String,
    pub dir: String,
    pub file: String,
    pub query: String,
}

/// A URL split like Go's `net/url` (enough of it for cache paths): scheme, host, path, query.
fn split_url(s: &str) -> Option<(String, String, String, String)> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic() || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return None;
    }
    let rest = &s[colon + 1..];
    let rest = rest.split_once('#').map_or(rest, |(a, _)| a);
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = match rest.strip_prefix("//") {
        Some(auth_path) => {
            let end = auth_path.find('/').unwrap_or(auth_path.len());
            let authority = &auth_path[..end];
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            (host.to_string(), auth_path[end..].to_string())
        }
        None => (String::new(), rest.to_string()),
    };
    Some((scheme.to_ascii_lowercase(), host, path, query.to_string()))
}

/// Go's `filepath.Dir` and `filepath.Base` for the `/`-separated paths of URLs.
fn go_dir(p: &str) -> String {
    let cleaned = clean(
        p.rsplit_once('/')
            .map_or("", |(d, _)| if d.is_empty() { "/" } else { d }),
    );
    if cleaned.is_empty() {
        ".".into()
    } else {
        cleaned
    }
}

fn go_base(p: &str) -> String {
    let t = p.trim_end_matches('/');
    if p.is_empty() {
        return ".".into();
    }
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Go's lexical `path.Clean`, without the empty-is-dot rule (callers handle it).
fn clean(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !abs {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let j = parts.join("/");
    if abs {
        format!("/{j}")
    } else {
        j
    }
}

/// helmfile's `remote.Parse`: `None` when helmfile does not treat `src` as remote (a local path,
/// `repo/chart`, `oci://…`).
pub fn parse(src: &str) -> Option<Source> {
    let items: Vec<&str> = src.split("::").collect();
    let (getter, url) = if items.len() == 2 {
        (items[0].to_string(), items[1])
    } else {
        if src.split("://").count() == 2 {
            // ParseNormal: only these protocols.
            let proto = src.split("://").next().unwrap_or_default().to_ascii_lowercase();
            if !["s3", "http", "https"].contains(&proto.as_str()) {
                return None;
            }
            let (scheme, host, path, query) = split_url(src)?;
            let dir = go_dir(&path);
            return Some(Source {
                getter: "normal".into(),
                scheme,
                host,
                dir: dir.get(1..).unwrap_or_default().to_string(),
                file: go_base(&path),
                query,
            });
        }
        (String::new(), src)
    };
    let (scheme, host, path, query) = split_url(url)?;
    if scheme.is_empty() {
        return None;
    }
    let parts: Vec<&str> = path.split('@').collect();
    let (dir, file) = if parts.len() == 2 {
        (parts[0].to_string(), parts[1].to_string())
    } else {
        let d = go_dir(&path);
        (d.get(1..).unwrap_or_default().to_string(), go_base(&path))
    };
    Some(Source {
        getter,
        scheme,
        host,
        dir,
        file,
        query,
    })
}

/// helmfile's cache-key replacer: `:` dropped, `//` and `/` and `.` become `_` (tried in that
/// order at each position, as Go's `strings.NewReplacer` does).
fn cache_key(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("//") {
            out.push('_');
            rest = &rest[2..];
            continue;
        }
        match c {
            ':' => {}
            '/' | '.' => out.push('_'),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Go's `url.Values.Encode` of a raw query, with `sshkey` redacted as helmfile does: keys sorted,
/// values in their order, each query-escaped.
fn encode_query(raw: &str) -> String {
    fn unescape(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    match std::str::from_utf8(&b[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        Some(v) => {
                            out.push(v);
                            i += 2;
                        }
                        None => out.push(b'%'),
                    }
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    fn escape(s: &str) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
                b' ' => out.push('+'),
                b => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }
    let mut pairs: Vec<(String, Vec<String>)> = Vec::new();
    for kv in raw.split(['&', ';']).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let (k, v) = (unescape(k), unescape(v));
        match pairs.iter_mut().find(|(pk, _)| *pk == k) {
            Some((_, vs)) => vs.push(v),
            None => pairs.push((k, vec![v])),
        }
    }
    if let Some((_, vs)) = pairs.iter_mut().find(|(k, _)| k == "sshkey") {
        *vs = vec!["redacted".into()];
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut parts = Vec::new();
    for (k, vs) in &pairs {
        for v in vs {
            parts.push(format!("{}={}", escape(k), escape(v)));
        }
    }
    parts.join("&")
}

/// Where helmfile looks for `src` in its cache `home` (`cache_base`: the release's
/// `namespace/name` for charts), and whether that is a file (a plain URL) or a directory
/// (another getter) that must exist. Returns (the path helmfile then uses, the cached path it
/// checks, `true` for a file).
pub fn cache_path(home: &Path, src: &Source, cache_base: &Path) -> (PathBuf, PathBuf, bool) {
    let (dir_path, is_file) = if src.getter == "normal" {
        let key = cache_key(&format!("{}://{}", src.scheme, src.host));
        (join_clean(home, &[&key, &src.dir]), true)
    } else {
        let mut key = cache_key(&format!("{}://{}/{}", src.scheme, src.host, src.dir));
        if !src.query.is_empty() {
            key = format!("{key}.{}", encode_query(&src.query).replace('&', "_"));
        }
        (join_clean(home, &[&cache_base.to_string_lossy(), &key]), false)
    };
    let used = join_clean(&dir_path, &[&src.file]);
    let checked = if is_file { used.clone() } else { dir_path };
    (used, checked, is_file)
}

/// `filepath.Join(base, parts...)`, cleaned lexically as Go does.
fn join_clean(base: &Path, parts: &[&str]) -> PathBuf {
    let mut s = base.to_string_lossy().into_owned();
    for p in parts.iter().filter(|p| !p.is_empty()) {
        s.push('/');
        s.push_str(p);
    }
    PathBuf::from(clean(&s))
}

/// The name and version a placeholder for `file` gets (`app-1.2.3.tgz` → `app`, `1.2.3`).
fn placeholder_name(file: &str) -> (String, String) {
    let stem = file.trim_end_matches(".tgz").trim_end_matches(".tar.gz");
    let (name, version) = match stem.rsplit_once('-') {
        Some((n, v)) if v.split('.').count() == 3 && v.chars().next().is_some_and(|c| c.is_ascii_digit()) => {
            (n.to_string(), v.to_string())
        }
        _ => (stem.to_string(), "0.0.0".to_string()),
    };
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    (if name.is_empty() { "placeholder".into() } else { name }, version)
}

/// Write a placeholder chart directory at `dir` (never rendered: a remote release offline is
/// "not rendered"; its one marker object only satisfies chartify for releases with patches).
fn write_placeholder_dir(dir: &Path, name: &str, version: &str, src: &str) -> Result<()> {
    std::fs::create_dir_all(dir.join("templates")).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: {name}\nversion: {version}\ndescription: nvcf-validate offline placeholder for {} (not fetched)\n",
            crate::redact::redact_userinfo(src).replace(['\n', '\r'], " ")
        ),
    )?;
    std::fs::write(
        dir.join("templates/placeholder.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-validate-offline-placeholder\n",
    )?;
    std::fs::write(dir.join(seal::PLACEHOLDER_MARKER), "")?;
    Ok(())
}

/// Put a placeholder where helmfile looks for the chart URL `chart` of release `base`.
fn prime_chart(home: &Path, chart: &str, base: &Path) -> Result<bool> {
    let Some(src) = parse(chart) else { return Ok(false) };
    let (used, checked, is_file) = cache_path(home, &src, base);
    // Never outside the cache (a `..` in a URL path).
    if !used.starts_with(home) || checked.exists() {
        return Ok(false);
    }
    let (name, version) = placeholder_name(&src.file);
    if is_file {
        let work = tempfile::Builder::new().prefix("placeholder-").tempdir_in(home)?;
        write_placeholder_dir(&work.path().join(&name), &name, &version, chart)?;
        if let Some(parent) = used.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&used)
            .arg("-C")
            .arg(work.path())
            .arg(&name)
            .status()
            .context("running tar for an offline placeholder chart")?;
        anyhow::ensure!(status.success(), "tar failed writing {}", used.display());
    } else {
        write_placeholder_dir(&used, &name, &version, chart)?;
        std::fs::create_dir_all(&checked)?;
    }
    Ok(true)
}

/// The sealed tools a failed helmfile command ran with (found by its `--helm-binary`, the seal's
/// helm front, see `seal::sealed`): (tools, the command's global arguments before the subcommand,
/// where its download cache is on the host when it can be primed).
fn sealed_tools(cmd: &Command) -> Option<(Tools, Vec<OsString>, Option<PathBuf>)> {
    let args: Vec<OsString> = cmd.get_args().map(OsString::from).collect();
    let helm = args
        .iter()
        .position(|a| a == "--helm-binary")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)?;
    let (tools, home) = seal::sealed(&helm)?;
    // Global arguments: everything before the first subcommand word.
    let sub = args.iter().position(|a| {
        [
            "build",
            "template",
            "list",
            "lint",
            "write-values",
            "diff",
            "apply",
            "sync",
        ]
        .iter()
        .any(|s| a == s)
    })?;
    let globals = args[..sub].to_vec();
    Some((tools, globals, home))
}

fn helmfile_with(tools: &Tools, globals: &[OsString], cmd: &Command) -> Command {
    let mut c = Command::new(&tools.helmfile);
    c.args(globals);
    c.envs(tools.env.iter().map(|(k, v)| (k, v)));
    if let Some(d) = cmd.get_current_dir() {
        c.current_dir(d);
    }
    tools.confine(&mut c, &[]);
    c
}

/// Did helmfile fail in its own download code (go-getter)?
pub fn is_download_failure(stderr: &str) -> bool {
    (stderr.contains("panic:") && stderr.contains("helmfile/pkg/remote."))
        || stderr.contains("fetching \"")
        || (stderr.contains("nvcf-validate --offline: `git") && !stderr.contains("helmfiles"))
}

/// A failed sealed helmfile command: prime the download cache and run it once more. `Some` with
/// the retried output when priming placed anything; `None` to report the failure as it is.
pub fn retry_primed(cmd: &mut Command) -> Option<std::io::Result<Output>> {
    let (tools, globals, home) = sealed_tools(cmd)?;
    let home = home?;
    std::fs::create_dir_all(&home).ok()?;
    let mut list = helmfile_with(&tools, &globals, cmd);
    list.args(["list", "--skip-charts", "--output", "json"]);
    let out = list.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let releases: Value = serde_json::from_slice(&out.stdout).ok()?;
    let mut primed = 0;
    for r in releases.as_array().into_iter().flatten() {
        let chart = r["chart"].as_str().unwrap_or_default();
        let mut base = PathBuf::new();
        if let Some(ns) = r["namespace"].as_str().filter(|n| !n.is_empty()) {
            base.push(ns);
        }
        base.push(r["name"].as_str().unwrap_or_default());
        if base.components().any(|c| !matches!(c, Component::Normal(_))) {
            continue;
        }
        if prime_chart(&home, chart, &base).unwrap_or(false) {
            primed += 1;
        }
    }
    (primed > 0).then(|| cmd.output())
}

/// The remote values files of a sealed state, named: `helmfile build` without `--embed-values`
/// lists each release's `values:`/`secrets:` entries as written.
pub fn remote_values(cmd: &Command) -> Vec<String> {
    let Some((tools, globals, _)) = sealed_tools(cmd) else {
        return Vec::new();
    };
    let mut build = helmfile_with(&tools, &globals, cmd);
    build.arg("build");
    let Ok(out) = build.output() else { return Vec::new() };
    if !out.status.success() {
        return Vec::new();
    }
    let Ok(docs) = super::build::parse_build(&String::from_utf8_lossy(&out.stdout)) else {
        return Vec::new();
    };
    // State files are named relative to the entry's directory, as every other message does.
    let root = globals
        .iter()
        .position(|a| a == "--file")
        .and_then(|i| globals.get(i + 1))
        .map(|f| super::paths::absolute(Path::new(f)))
        .map(|f| {
            if f.is_dir() {
                f
            } else {
                f.parent().map(Path::to_path_buf).unwrap_or(f)
            }
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    for d in &docs {
        for r in d.doc["releases"].as_array().into_iter().flatten() {
            for key in ["values", "secrets"] {
                for v in r[key].as_array().into_iter().flatten().filter_map(Value::as_str) {
                    if parse(v).is_some() {
                        found.push(format!(
                            "{}: release {}/{} takes {key} from {}",
                            super::paths::relative(&d.path, &root),
                            r["namespace"].as_str().unwrap_or("default"),
                            r["name"].as_str().unwrap_or("?"),
                            crate::redact::redact_userinfo(v)
                        ));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The error of a helmfile command that failed in its own download code: its first line is
/// [`HEADLINE`] and the remote files found (`state: release ns/name takes values from URL`,
/// userinfo redacted; nothing when none could be named), which `stack::failure` turns into the
/// message; then helmfile's first panic line instead of its Go stack trace.
pub fn explain_failure(cmd: &Command, what: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sealed = sealed_tools(cmd).is_some();
    let named = if sealed { remote_values(cmd) } else { Vec::new() };
    let cause = stderr
        .lines()
        .find(|l| l.starts_with("panic:"))
        .map(|l| format!("  helmfile: {l}"))
        .unwrap_or_else(|| super::tail(&out.stderr, &out.stdout));
    format!(
        "{HEADLINE} {}\n{what} failed ({}):\n{}",
        named.join("; "),
        out.status,
        crate::redact::redact_userinfo(&cause)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_helmfile() {
        let s = parse("https://charts.example.com/gateway-1.0.0.tgz").unwrap();
        assert_eq!(
            (
                s.getter.as_str(),
                s.scheme.as_str(),
                s.host.as_str(),
                s.dir.as_str(),
                s.file.as_str()
            ),
            ("normal", "https", "charts.example.com", "", "gateway-1.0.0.tgz")
        );
        let s = parse("http://u:p@127.0.0.1:18999/charts/app-1.0.0.tgz").unwrap();
        assert_eq!((s.host.as_str(), s.dir.as_str()), ("127.0.0.1:18999", "charts"));
        let s = parse("git::https://github.com/example/repo.git@charts/app?ref=v1").unwrap();
        assert_eq!(
            (s.getter.as_str(), s.dir.as_str(), s.file.as_str(), s.query.as_str()),
            ("git", "/example/repo.git", "charts/app", "ref=v1")
        );
        for local in [
            "../chart",
            "./charts/app",
            "repo/chart",
            "oci://ghcr.io/x/app",
            "/abs/chart",
            "chart",
        ] {
            assert_eq!(parse(local), None, "{local}");
        }
    }

    #[test]
    fn cache_paths_are_helmfiles() {
        let home = Path::new("/c");
        let s = parse("https://charts.example.com/a/b/gateway-1.0.0.tgz").unwrap();
        let (used, checked, file) = cache_path(home, &s, Path::new("edge/tarball"));
        assert_eq!(used, PathBuf::from("/c/https_charts_example_com/a/b/gateway-1.0.0.tgz"));
        assert_eq!(checked, used);
        assert!(file);
        let s = parse("git::https://github.com/example/repo.git@charts/app?ref=v1&sshkey=abc").unwrap();
        let (used, checked, file) = cache_path(home, &s, Path::new("apps/app"));
        assert_eq!(
            checked,
            PathBuf::from("/c/apps/app/https_github_com_example_repo_git.ref=v1_sshkey=redacted")
        );
        assert_eq!(used, checked.join("charts/app"));
        assert!(!file);
        assert_eq!(cache_key("https://github.com//x/y.git"), "https_github_com_x_y_git");
        assert_eq!(encode_query("b=2&a=x%2Fy&a=1"), "a=x%2Fy&a=1&b=2");
        assert_eq!(
            placeholder_name("gateway-1.0.0.tgz"),
            ("gateway".into(), "1.0.0".into())
        );
        assert_eq!(
            placeholder_name("weird name.tgz"),
            ("weird-name".into(), "0.0.0".into())
        );
        assert_eq!(clean("/a/../../b/./c"), "/b/c");
    }

    #[test]
    fn download_failures_are_recognised() {
        assert!(is_download_failure(
            "panic: runtime error: invalid memory address\ngithub.com/helmfile/helmfile/pkg/remote.HttpFileExists("
        ));
        assert!(is_download_failure(
            "release \"x\": fetching \"git::https://h/r.git@c\": get: error"
        ));
        assert!(!is_download_failure("Error: template: bad"));
    }
}
