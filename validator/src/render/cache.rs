//! The render cache: one JSON entry per (inputs, environment), keyed by a sha256 of everything
//! that can change a render.
//!
//! The key covers every file under the state's directory (state files, charts, values, the chart
//! lock, the tool pins in `ci/`), except build and VCS directories; the validator's version; the
//! environment; and the render mode (offline, mirror tarballs). Tool binaries are identified by the
//! pins committed in the repository, not by running them: a warm run starts no process at all.
//! A different helm on PATH with unchanged pins is not detected; use `--no-cache` after changing
//! tools by hand.

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Directories never hashed (build output, VCS, installed tools, caches).
const SKIP_DIRS: &[&str] = &[".git", "target", ".tools", "node_modules", ".cache"];

/// Bumped whenever the cached data layout or the render procedure changes.
const FORMAT: &str = "nvcf-validate-render-cache-v2";

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

    /// A cached value, or `None` when absent or unreadable (a corrupt entry is a miss).
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Store a value atomically (write to a temporary file, then rename).
    /// Entries hold rendered values: the directory is private to the user (0700, files 0600).
    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
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
        f.write_all(&serde_json::to_vec(value)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, self.path(key)).with_context(|| format!("writing cache entry {key}"))?;
        Ok(())
    }
}

/// sha256 over every file below `root` (sorted relative path + content hash; symbolic links
/// followed), skipping `SKIP_DIRS`, plus the environment that can change a render: the variables
/// the files read with `env`/`requiredEnv`, and every `HELM_*`, `HELMFILE_*` and `NVCF_HELM*`
/// variable. A file that cannot be read is an error, not a silent gap in the key.
pub fn tree_hash(root: &Path) -> Result<String> {
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.depth() > 0 && SKIP_DIRS.iter().any(|s| e.file_name() == *s)));
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
    let mut h = Sha256::new();
    let mut vars: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (rel, path) in entries {
        let bytes = std::fs::read(&path)
            .with_context(|| format!("cannot read {} while hashing the stack's inputs", path.display()))?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(Sha256::digest(&bytes));
        if let Ok(text) = std::str::from_utf8(&bytes) {
            vars.extend(env_references(text));
        }
    }
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("HELM_") || k.starts_with("HELMFILE_") || k.starts_with("NVCF_HELM") {
            vars.insert(k.into_owned());
        }
    }
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
    Ok(hex::encode(h.finalize()))
}

/// Names read with `env "NAME"` / `requiredEnv "NAME"` in a template or state file.
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

    #[test]
    fn env_references_are_found() {
        assert_eq!(
            env_references("a: {{ env \"FOO\" }}\nb: {{ requiredEnv \"BAR_1\" }}"),
            vec!["FOO", "BAR_1"]
        );
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
