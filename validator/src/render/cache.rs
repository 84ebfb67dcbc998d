//! The render cache: one JSON entry per (inputs, environment), keyed by a sha256 of everything
//! that can change a render, and used only while every input it was made from is unchanged.
//!
//! The key covers every file under the state's directory (state files, charts, values, the chart
//! lock, the tool pins in `ci/`), except build and VCS directories; the environment variables
//! helm, helmfile and the files read; the identity (sha256) of the helm and helmfile binaries
//! that would run; the validator's version; the environment; and the render mode (offline,
//! mirror tarballs, what the policy feeds the render). Inputs outside the directory are the
//! entry's dependencies, re-checked on every hit: the paths any file below it names (`../charts/x`,
//! a `file://../dep` chart dependency, an absolute values file) and what the loaded state
//! resolves to (its state files, local charts and values files). A state that reads what no key
//! can cover (`exec`, a directory listing, a remote source, hooks, a post-renderer, an environment variable named at
//! run time) is never cached. What stays outside: a path a template assembles from pieces no
//! file holds whole; such a stack needs `--no-cache`.
//!
//! A warm run starts neither helm nor helmfile: binaries are identified by hashing their files
//! (each hash remembered per inode and change time), and the stack's files are read again only
//! when their `stat` moved ([`Tree::scan_with`]).

use crate::stack::{ChartRef, EnvState};
use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Directories never hashed (build output, VCS, installed tools, caches).
const SKIP_DIRS: &[&str] = &[".git", "target", ".tools", "node_modules", ".cache"];

/// Bumped whenever the cached data layout or the render procedure changes.
const FORMAT: &str = "nvcf-validate-render-cache-v5";

pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// `$XDG_CACHE_HOME/nvcf-validate`, else `~/.cache/nvcf-validate`. `None` when neither is
    /// known (the run is then simply uncached).
    pub fn open() -> Option<Cache> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(Cache {
            dir: base.join("nvcf-validate"),
        })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// A cached value, or `None` when absent, unreadable (a corrupt entry is a miss) or when
    /// an input outside the stack it was made from (see [`deps`]) is not what it was.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let entry: Entry<T> = serde_json::from_slice(&bytes).ok()?;
        for d in &entry.deps {
            if dep_state(&d.path).ok().flatten().as_deref() != Some(d.state.as_str()) {
                return None;
            }
        }
        Some(entry.value)
    }

    /// Store a value atomically (write to a temporary file, then rename).
    /// Entries hold rendered values: the directory is private to the user (0700, files 0600).
    /// `deps`: the inputs outside the stack the value was made from; `None` (uncacheable):
    /// nothing is stored.
    pub fn put<T: Serialize>(&self, key: &str, deps: &Option<Vec<Dep>>, value: &T) -> Result<()> {
        let Some(deps) = deps else { return Ok(()) };
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("creating cache directory {}", self.dir.display()))?;
        let tmp = self.dir.join(format!(".{key}.{}.tmp", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(&serde_json::to_vec(&Entry {
            deps: deps.clone(),
            value,
        })?)
        .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, self.path(key)).with_context(|| format!("writing cache entry {key}"))?;
        Ok(())
    }
}

/// sha256 over every file below `root` (see [`Tree::scan`]); for directories that are not a
/// stack (a chart mirror).
pub fn tree_hash(root: &Path) -> Result<String> {
    Ok(Tree::scan(root)?.hash)
}

/// Most files a directory outside the stack may hold to be hashed as a dependency; a larger one
/// makes the render uncacheable (never a partial hash).
const MAX_DEP_FILES: usize = 4096;
/// Most bytes hashed for one dependency directory outside the stack.
const MAX_DEP_BYTES: u64 = 512 << 20;

/// What a scan of the stack's directory found: the hash of its files and of the environment
/// that can change a render.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub hash: String,
}

impl Tree {
    /// sha256 over every file below `root` (sorted relative path + content hash; symbolic links
    /// followed), skipping `SKIP_DIRS`, plus the environment that can change a render: the
    /// variables the files read with `env`/`requiredEnv`, and every variable helm, helmfile,
    /// kubectl or this tool read (`HELM_*`, `HELMFILE_*`, `NVCF_*`, `KUBECONFIG`, `PATH`,
    /// `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`). A file that cannot be read is an error, not a
    /// silent gap in the key.
    pub fn scan(root: &Path) -> Result<Tree> {
        Tree::scan_with(root, None)
    }

    /// [`Tree::scan`], reusing the digests `cache` remembers of files whose `stat` is unchanged
    /// ([`FileDigests`]): the same hash, without reading every file on a warm run.
    pub fn scan_with(root: &Path, cache: Option<&Cache>) -> Result<Tree> {
        Tree::scan_clocked(root, cache, &std::time::SystemTime::now)
    }

    /// [`Tree::scan_with`] reading the time a file is read at from `now`.
    fn scan_clocked(root: &Path, cache: Option<&Cache>, now: &dyn Fn() -> std::time::SystemTime) -> Result<Tree> {
        let mut entries: Vec<(String, PathBuf)> = Vec::new();
        let walk = walkdir::WalkDir::new(root)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                !(e.file_type().is_dir() && e.depth() > 0 && SKIP_DIRS.iter().any(|s| e.file_name() == *s))
            });
        for e in walk {
            let e = e.with_context(|| format!("cannot read the stack's inputs under {}", root.display()))?;
            if e.file_type().is_file() {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .unwrap_or(e.path())
                    .to_string_lossy()
                    .replace('\\', "/");
                entries.push((rel, e.path().to_path_buf()));
            }
        }
        entries.sort();
        let memo_key = key(&["file digests", &root.to_string_lossy()]);
        let known: FileDigests = cache.and_then(|c| c.get(&memo_key)).unwrap_or_default();
        let mut kept = FileDigests::default();
        let mut h = Sha256::new();
        let mut vars: BTreeSet<String> = BTreeSet::new();
        for (rel, path) in &entries {
            let before = stat_identity(path);
            let (digest, keep) = match (&before, known.files.get(rel)) {
                (Some((id, _)), Some(d)) if d.stat == *id => (d.clone(), true),
                _ => {
                    let (bytes, vouched) = read_vouched(path, now)
                        .with_context(|| format!("cannot read {} while hashing the stack's inputs", path.display()))?;
                    let keep = vouched.is_some();
                    let d = FileDigest {
                        stat: vouched.unwrap_or_default(),
                        sha256: hex::encode(Sha256::digest(&bytes)),
                        vars: std::str::from_utf8(&bytes).map(env_references).unwrap_or_default(),
                    };
                    (d, keep)
                }
            };
            h.update(rel.as_bytes());
            h.update([0]);
            h.update(hex::decode(&digest.sha256).unwrap_or_default());
            vars.extend(digest.vars.iter().cloned());
            if keep {
                kept.files.insert(rel.clone(), digest);
            }
        }
        if let Some(c) = cache {
            if kept.files != known.files {
                // Only a speedup: a failure to store it costs the next run a full read.
                let _ = c.put(&memo_key, &Some(Vec::new()), &kept);
            }
        }
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if ["HELM_", "HELMFILE_", "NVCF_"].iter().any(|p| k.starts_with(p)) {
                vars.insert(k.into_owned());
            }
        }
        vars.extend(
            ["PATH", "HOME", "KUBECONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME"]
                .iter()
                .map(|s| s.to_string()),
        );
        for v in vars {
            h.update([1]);
            h.update(v.as_bytes());
            h.update([0]);
            h.update(
                std::env::var_os(&v)
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "\u{0}unset".into())
                    .as_bytes(),
            );
        }
        Ok(Tree {
            hash: hex::encode(h.finalize()),
        })
    }
}

/// Names read with `env "NAME"` / `requiredEnv "NAME"` in a template or state file.
/// The digests of a stack's files as a previous scan read them, by path relative to the
/// stack: what lets a warm run hash nothing. A digest is reused only while the file's `stat`
/// ([`stat_identity`]: device, inode, size, modification and change times) is the one it was
/// made with, and is kept only for a file [`settled`] before it was read: any later write moves
/// its change time (which no user-space call sets back), even where timestamps are coarse, so a
/// digest never stands for content it was not made from.
#[derive(Debug, Default, Serialize, Deserialize)]
struct FileDigests {
    files: std::collections::HashMap<String, FileDigest>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FileDigest {
    stat: String,
    sha256: String,
    /// The environment variables the file reads ([`env_references`]).
    vars: Vec<String>,
}

/// How long before it was read a file must have last changed for its digest to be kept: well
/// above any filesystem's timestamp granularity.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// The content of `path`, and its stat identity when that vouches for the content read (the file
/// last changed at least [`SETTLE`] before the read began by the clock `now`, and its stat did not
/// move while it was read); only a vouched identity may stand for the content in a later run.
fn read_vouched(path: &Path, now: &dyn Fn() -> std::time::SystemTime) -> std::io::Result<(Vec<u8>, Option<String>)> {
    let before = stat_identity(path);
    let read_at = now();
    let bytes = std::fs::read(path)?;
    let vouched = before.and_then(|(id, changed)| {
        let settled = read_at.checked_sub(SETTLE).is_some_and(|limit| changed <= limit);
        (settled && stat_identity(path).is_some_and(|(after, _)| after == id)).then_some(id)
    });
    Ok((bytes, vouched))
}

/// What `stat` says of `path` (following links) that changes when its content can have
/// (device, inode, size, modification and change times), and the later of those two times.
/// `None` when it cannot be read, or a time is before the epoch.
fn stat_identity(path: &Path) -> Option<(String, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let at = |secs: i64, nsec: i64| -> Option<std::time::SystemTime> {
        let d = std::time::Duration::new(u64::try_from(secs).ok()?, u32::try_from(nsec).ok()?);
        std::time::UNIX_EPOCH.checked_add(d)
    };
    let changed = at(m.mtime(), m.mtime_nsec())?.max(at(m.ctime(), m.ctime_nsec())?);
    let id = format!(
        "{} {} {} {}.{} {}.{}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    );
    Some((id, changed))
}

fn env_references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for pat in ["env \"", "Env \""] {
        let mut rest = text;
        while let Some(i) = rest.find(pat) {
            rest = &rest[i + pat.len()..];
            if let Some(end) = rest.find('"') {
                let name = &rest[..end];
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// What in a state or values file reads an input no key can cover, in words; `None` when
/// nothing does. Template functions are matched where a template can call them (after `{{`,
/// `(` or `|`), so a probe's `exec:` key is not one.
fn unkeyable(text: &str) -> Option<String> {
    const CALLS: &[(&str, &str)] = &[
        (
            "exec",
            "runs a command (`exec`) whose output is not an input the key can cover",
        ),
        ("readDir", "lists a directory (`readDir`)"),
        ("readDirEntries", "lists a directory (`readDirEntries`)"),
        ("fetchSecretValue", "fetches a remote secret (`fetchSecretValue`)"),
        ("expandSecretRefs", "fetches remote secrets (`expandSecretRefs`)"),
        (
            "expandenv",
            "expands environment variables it names at run time (`expandenv`)",
        ),
        (
            "env",
            "reads an environment variable named at run time (`env` of a non-literal)",
        ),
        (
            "requiredEnv",
            "reads an environment variable named at run time (`requiredEnv` of a non-literal)",
        ),
    ];
    let b = text.as_bytes();
    for (name, why) in CALLS {
        let mut from = 0;
        while let Some(i) = text[from..].find(name).map(|i| i + from) {
            from = i + name.len();
            let before = text[..i].trim_end_matches([' ', '\t']);
            let called =
                before.ends_with("{{") || before.ends_with("{{-") || before.ends_with('(') || before.ends_with('|');
            let next = b.get(from).copied().unwrap_or(b' ');
            if !called || !(next == b' ' || next == b'\t' || next == b'}' || next == b')') {
                continue;
            }
            // `env "NAME"` is keyed by its variable; any other argument is not.
            let arg = text[from..].trim_start_matches([' ', '\t']);
            if (*name == "env" || *name == "requiredEnv") && arg.starts_with('"') {
                continue;
            }
            return Some(why.to_string());
        }
    }
    for (marker, why) in [
        ("git::", "names a remote git source (`git::`)"),
        ("::http", "names a remote source (go-getter `::http`)"),
        ("s3::", "names a remote source (`s3::`)"),
        ("gcs::", "names a remote source (`gcs::`)"),
        ("hooks:", "declares hooks (commands run while the state renders)"),
        (
            "postRenderer",
            "names a post-renderer (a helm plugin, outside the stack)",
        ),
        (
            "--post-renderer",
            "names a post-renderer (a helm plugin, outside the stack)",
        ),
    ] {
        if text.contains(marker) {
            return Some(why.to_string());
        }
    }
    None
}

/// Path-like words of a file that may name something outside the stack: relative paths that
/// climb (`../x`, `a/../../b`) and absolute paths. Each is resolved later against the file's
/// directory and the stack's.
fn path_references(text: &str) -> Vec<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || "._-~/+@".contains(c);
    // After a URL scheme (`file://../dep`, `https://host/x`), what follows `//` is the path.
    text.split(|c: char| !word(c))
        .map(|w| w.strip_prefix("//").unwrap_or(w))
        .filter(|w| w.len() > 1 && (w.starts_with('/') || w.split('/').any(|s| s == "..")))
        .map(|w| w.trim_end_matches(['.', '/']).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// `p` without `.` and `..` components (lexically; `..` at the root stays at the root).
fn normalise(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One input outside the stack's directory and what it was when the entry was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dep {
    pub path: PathBuf,
    /// `absent`, `file:<sha256>`, `dir:<tree hash>`.
    pub state: String,
}

/// What `path` is now, as a dependency: absent, a file's hash, or a directory's (bounded) tree
/// hash. `Ok(None)`: too large to hash, so nothing depending on it may be cached.
fn dep_state(path: &Path) -> Result<Option<String>> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(Some("absent".into()));
    };
    if meta.is_file() {
        if meta.len() > MAX_DEP_BYTES {
            return Ok(None);
        }
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        return Ok(Some(format!("file:{}", hex::encode(Sha256::digest(bytes)))));
    }
    if !meta.is_dir() {
        return Ok(Some("other".into()));
    }
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut h = Sha256::new();
    for e in walkdir::WalkDir::new(path).follow_links(true).sort_by_file_name() {
        let Ok(e) = e else { return Ok(None) };
        if !e.file_type().is_file() {
            continue;
        }
        files += 1;
        bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
        if files > MAX_DEP_FILES || bytes > MAX_DEP_BYTES {
            return Ok(None);
        }
        let Ok(content) = std::fs::read(e.path()) else {
            return Ok(None);
        };
        h.update(
            e.path()
                .strip_prefix(path)
                .unwrap_or(e.path())
                .to_string_lossy()
                .as_bytes(),
        );
        h.update([0]);
        h.update(Sha256::digest(content));
    }
    Ok(Some(format!("dir:{}", hex::encode(h.finalize()))))
}

/// Most files helmfile reads that are scanned for the paths they name (state files and the
/// files they name, one level deep).
const MAX_SCANNED: usize = 512;

/// The inputs outside `root` one render read, each with its current state: the state files,
/// local charts and values files the loaded state resolves to, and every path that climbs out of
/// the tree (`../charts/app`, `file://../dep` in a chart's dependencies) or is absolute in the
/// files helmfile reads (the state files, the files they name such as environment values, the
/// values files; a local chart's `Chart.yaml`). `Ok(None)`: the render may not be cached (one
/// of those files reads what no key can cover, see `unkeyable`, or an input is too large to
/// hash).
pub fn deps(root: &Path, state: &EnvState) -> Result<Option<Vec<Dep>>> {
    let mut paths: BTreeSet<PathBuf> = BTreeSet::new();
    // Files helmfile reads as text, with the directory their relative paths start from.
    let mut read: Vec<(PathBuf, PathBuf)> = Vec::new();
    for f in &state.state_files {
        let p = normalise(&root.join(f));
        read.push((p.clone(), p.parent().unwrap_or(root).to_path_buf()));
        paths.insert(p);
    }
    for r in &state.releases {
        let file = root.join(&r.file);
        let dir = file.parent().unwrap_or(root);
        if let ChartRef::Local { path } = &r.chart_ref {
            let chart = normalise(&root.join(path));
            for meta in ["Chart.yaml", "requirements.yaml"] {
                read.push((chart.join(meta), chart.clone()));
            }
            paths.insert(chart);
        }
        for v in r.declared_values.iter().filter_map(|v| v.as_str()) {
            if v.contains(['*', '?', '[']) || v.contains("://") || v.contains("::") {
                return Ok(None);
            }
            let p = normalise(&dir.join(v));
            read.push((p.clone(), dir.to_path_buf()));
            paths.insert(p);
        }
    }
    // The files they name (environment values, values the state lists, `bases:`): read too.
    let first: Vec<(PathBuf, PathBuf)> = read.clone();
    for (file, dir) in &first {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for w in words(&text) {
            for base in [dir.as_path(), root] {
                let p = normalise(&base.join(&w));
                if p.is_file() && !read.iter().any(|(f, _)| *f == p) {
                    read.push((p.clone(), p.parent().unwrap_or(root).to_path_buf()));
                }
            }
        }
    }
    if read.len() > MAX_SCANNED {
        return Ok(None);
    }
    for (file, dir) in &read {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let is_chart_meta = file.ends_with("Chart.yaml") || file.ends_with("requirements.yaml");
        if !is_chart_meta && unkeyable(&text).is_some() {
            return Ok(None);
        }
        for w in path_references(&text) {
            for base in [dir.as_path(), root] {
                let p = normalise(&base.join(&w));
                // An absolute word counts when it is a file or a chart (a mount path is neither).
                let counts = !w.starts_with('/') || p.is_file() || p.join("Chart.yaml").is_file() || !p.exists();
                if counts && p != Path::new("/") {
                    paths.insert(p);
                }
            }
        }
    }
    let mut out = Vec::new();
    for path in paths.into_iter().filter(|p| !p.starts_with(root)) {
        match dep_state(&path)? {
            Some(state) => out.push(Dep { path, state }),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Relative path-like words of a text (`values/base.yaml`, `./x.gotmpl`): candidates for files
/// it names.
fn words(text: &str) -> Vec<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || "._-~/+@".contains(c);
    text.split(|c: char| !word(c))
        .filter(|w| w.contains('.') && !w.starts_with('/') && w.len() > 2)
        .map(str::to_string)
        .collect()
}

/// A stored value with the outside inputs it was made from.
#[derive(Serialize, Deserialize)]
struct Entry<T> {
    deps: Vec<Dep>,
    value: T,
}

/// The identity of a tool binary: its sha256, remembered per stat identity (device, inode, size,
/// mtime, ctime) so a warm run hashes nothing large; remembered only when the stat vouches for
/// what was read, as for the stack's files ([`read_vouched`]). `missing` when the tool is not found.
pub fn binary_identity(cache: &Cache, path: Option<&Path>) -> String {
    let Some(path) = path else { return "missing".into() };
    if std::fs::metadata(path).is_err() {
        return "missing".into();
    }
    let stat_key = |id: &str| key(&["binary", &path.to_string_lossy(), id]);
    if let Some((id, _)) = stat_identity(path) {
        if let Some(h) = cache.get::<String>(&stat_key(&id)) {
            return h;
        }
    }
    match read_vouched(path, &std::time::SystemTime::now) {
        Ok((bytes, vouched)) => {
            let h = hex::encode(Sha256::digest(bytes));
            if let Some(id) = vouched {
                let _ = cache.put(&stat_key(&id), &Some(Vec::new()), &h);
            }
            h
        }
        Err(_) => "unreadable".into(),
    }
}

/// The cache key for one purpose (e.g. an environment) over the hashed inputs.
pub fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update([0]);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    for p in parts {
        h.update([0]);
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remembered digests give the hash a full read gives, are kept only for files that
    /// settled before they were read, and a file whose stat moved is read again (an edit of the
    /// same size included).
    #[test]
    fn file_digests_stand_only_for_what_was_read() {
        let w = tempfile::tempdir().unwrap();
        let root = w.path().join("stack");
        std::fs::create_dir_all(root.join("charts/app")).unwrap();
        std::fs::write(root.join("helmfile.yaml"), "a: {{ env \"P29_VAR\" }}\n").unwrap();
        std::fs::write(root.join("charts/app/values.yaml"), "image: x:1.0.0\n").unwrap();
        let cache = Cache {
            dir: w.path().join("cache"),
        };
        let memo_key = key(&["file digests", &root.to_string_lossy()]);
        let later = || std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let full = Tree::scan(&root).unwrap().hash;

        // Just written: read and hashed, but not remembered.
        assert_eq!(Tree::scan_with(&root, Some(&cache)).unwrap().hash, full);
        assert!(cache.get::<FileDigests>(&memo_key).is_none_or(|m| m.files.is_empty()));

        // Read well after they changed: remembered, with the variables they read.
        assert_eq!(Tree::scan_clocked(&root, Some(&cache), &later).unwrap().hash, full);
        let memo: FileDigests = cache.get(&memo_key).unwrap();
        assert_eq!(memo.files.len(), 2);
        assert_eq!(memo.files["helmfile.yaml"].vars, vec!["P29_VAR"]);

        // A remembered digest is used while the stat is the same (a forged one shows it).
        let mut forged = FileDigests::default();
        for (k, mut d) in memo.files.clone() {
            d.sha256 = hex::encode([7u8; 32]);
            forged.files.insert(k, d);
        }
        cache.put(&memo_key, &Some(Vec::new()), &forged).unwrap();
        assert_ne!(Tree::scan_with(&root, Some(&cache)).unwrap().hash, full);
        cache.put(&memo_key, &Some(Vec::new()), &memo).unwrap();
        assert_eq!(Tree::scan_with(&root, Some(&cache)).unwrap().hash, full);

        // An edit of the same size moves the change time: read again, never the old digest.
        // (The pretended clock above skipped the settling; a real edit is at least a tick later.)
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("charts/app/values.yaml"), "image: x:2.0.0\n").unwrap();
        let edited = Tree::scan(&root).unwrap().hash;
        assert_ne!(edited, full);
        assert_eq!(Tree::scan_clocked(&root, Some(&cache), &later).unwrap().hash, edited);
        assert_eq!(Tree::scan_with(&root, Some(&cache)).unwrap().hash, edited);
    }

    #[test]
    fn a_binary_identity_is_remembered_only_when_its_stat_vouches_for_it() {
        let w = tempfile::tempdir().unwrap();
        let bin = w.path().join("helm");
        std::fs::write(&bin, b"#!/bin/sh\necho v4\n").unwrap();
        let cache = Cache {
            dir: w.path().join("cache"),
        };
        let sha = hex::encode(Sha256::digest(b"#!/bin/sh\necho v4\n"));
        let (id, _) = stat_identity(&bin).unwrap();
        let stat_key = key(&["binary", &bin.to_string_lossy(), &id]);
        // Just written: hashed, not remembered (a same-size rewrite within the timestamp tick
        // could keep the stat).
        assert_eq!(binary_identity(&cache, Some(&bin)), sha);
        assert!(cache.get::<String>(&stat_key).is_none());
        // A remembered hash is what a warm run answers while the stat is the same.
        cache
            .put(&stat_key, &Some(Vec::new()), &"remembered".to_string())
            .unwrap();
        assert_eq!(binary_identity(&cache, Some(&bin)), "remembered");
        assert_eq!(binary_identity(&cache, Some(&w.path().join("absent"))), "missing");
        assert_eq!(binary_identity(&cache, None), "missing");
    }

    #[test]
    fn env_references_are_found() {
        assert_eq!(
            env_references("a: {{ env \"FOO\" }}\nb: {{ requiredEnv \"BAR_1\" }}"),
            vec!["FOO", "BAR_1"]
        );
    }

    #[test]
    fn template_reads_no_key_can_cover_are_found_and_keys_are_not() {
        for t in [
            "a: {{ exec \"date\" (list) }}",
            "a: {{- readDir \"x\" }}",
            "a: {{ env .Values.name }}",
            "a: {{ requiredEnv (printf \"X\") }}",
            "a: {{ \"$HOME\" | expandenv }}",
            "bases: [git::https://example.com/x.git@b.yaml]",
            "releases:\n- name: a\n  hooks:\n  - events: [prepare]",
        ] {
            assert!(unkeyable(t).is_some(), "{t}");
        }
        for t in [
            "livenessProbe:\n  exec:\n    command: [true]",
            "a: {{ env \"FOO\" }} {{ requiredEnv \"BAR\" }}",
            "a: {{ readFile \"../x.pem\" }}",
            "environment: prod",
        ] {
            assert_eq!(unkeyable(t), None, "{t}");
        }
    }

    #[test]
    fn paths_that_leave_the_tree_are_found() {
        assert_eq!(
            path_references("chart: ../charts/app\nrepository: file://../../dep\nv: [/etc/x.yaml]\nimage: a/b:1"),
            vec!["../charts/app", "../../dep", "/etc/x.yaml"]
        );
        let w = tempfile::tempdir().unwrap();
        let root = w.path().join("stack");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(w.path().join("charts/app")).unwrap();
        std::fs::write(root.join("helmfile.yaml"), "releases:\n- chart: ../charts/app\n").unwrap();
        std::fs::write(w.path().join("charts/app/values.yaml"), "a: 1").unwrap();
        let state = EnvState {
            state_files: vec!["helmfile.yaml".into()],
            ..Default::default()
        };
        let before = deps(&root, &state).unwrap().unwrap();
        assert!(
            before.iter().any(|d| d.path == w.path().join("charts/app")),
            "{before:?}"
        );
        std::fs::write(w.path().join("charts/app/values.yaml"), "a: 2").unwrap();
        assert_ne!(before, deps(&root, &state).unwrap().unwrap());
        // An entry made before the change is not used after it.
        let c = Cache {
            dir: w.path().join("cache"),
        };
        c.put("k", &Some(before), &1u8).unwrap();
        assert_eq!(c.get::<u8>("k"), None);
        c.put("k", &deps(&root, &state).unwrap(), &1u8).unwrap();
        assert_eq!(c.get::<u8>("k"), Some(1));
        c.put("u", &None, &1u8).unwrap();
        assert_eq!(c.get::<u8>("u"), None, "an uncacheable render is not stored");
    }

    #[test]
    fn tree_hash_follows_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("v.yaml"), "a: 1").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("linked")).unwrap();
        let h1 = tree_hash(d.path()).unwrap();
        std::fs::write(outside.path().join("v.yaml"), "a: 2").unwrap();
        assert_ne!(h1, tree_hash(d.path()).unwrap());
    }

    #[test]
    fn tree_hash_changes_with_content_and_ignores_build_dirs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.yaml"), "a: 1").unwrap();
        let h1 = tree_hash(d.path()).unwrap();
        std::fs::create_dir_all(d.path().join("target")).unwrap();
        std::fs::write(d.path().join("target/x"), "noise").unwrap();
        assert_eq!(h1, tree_hash(d.path()).unwrap());
        std::fs::write(d.path().join("a.yaml"), "a: 2").unwrap();
        assert_ne!(h1, tree_hash(d.path()).unwrap());
    }
}
