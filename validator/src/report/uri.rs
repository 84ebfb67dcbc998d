//! Source paths as URIs for SARIF (and repository-relative paths for GitHub annotations).
//!
//! Findings carry paths as the tool saw them: relative to the stack's directory (rendered
//! templates, state files), as typed on the command line (`--policy`, `--manifests`, possibly
//! absolute), or `<stdin>`. Code scanning needs URIs relative to the repository root, percent-
//! encoded (GitHub's fingerprinting runs `decodeURIComponent` on them), and no URI at all for
//! input that has no file. The root is the repository containing the stack (the nearest parent
//! with a `.git` entry, found without starting git: a warm run starts no process), else the
//! stack's directory.

use std::path::{Component, Path, PathBuf};

/// The `uriBaseId` relative artifact URIs are resolved against.
pub const SRCROOT: &str = "%SRCROOT%";

/// Where relative paths are resolved, and the root URIs are made relative to.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The stack's directory (absolute).
    pub base: PathBuf,
    /// The working directory (absolute): paths typed on the command line are relative to it.
    pub cwd: PathBuf,
    /// The repository root containing `base`, else `base` (absolute).
    pub root: PathBuf,
}

/// A source path as a SARIF artifact location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Artifact {
    /// Percent-encoded, relative to [`SRCROOT`].
    Relative(String),
    /// A `file://` URI for a path outside the root.
    Absolute(String),
}

impl Paths {
    pub fn new(base: &Path) -> Paths {
        let cwd = std::env::current_dir().unwrap_or_default();
        let base = absolute(&cwd, base);
        let root = repo_root(&base).unwrap_or_else(|| base.clone());
        Paths { base, cwd, root }
    }

    /// The absolute path of a finding's `source.file`; `None` for input without a file (stdin).
    /// A relative path is the stack's when it exists there, else the working directory's (a
    /// `--policy` or `--manifests` path as typed), else the stack's.
    pub fn resolve(&self, file: &str) -> Option<PathBuf> {
        if file.is_empty() || file == "-" || (file.starts_with('<') && file.ends_with('>')) {
            return None;
        }
        let p = Path::new(file);
        if p.is_absolute() {
            return Some(absolute(&self.cwd, p));
        }
        let in_base = self.base.join(p);
        if in_base.exists() {
            return Some(absolute(&self.cwd, &in_base));
        }
        let in_cwd = self.cwd.join(p);
        if in_cwd.exists() {
            return Some(absolute(&self.cwd, &in_cwd));
        }
        Some(normalize(&in_base))
    }

    /// The SARIF artifact location of `file`, or `None` when it names no file.
    pub fn artifact(&self, file: &str) -> Option<Artifact> {
        let abs = self.resolve(file)?;
        Some(match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.components().all(|c| matches!(c, Component::Normal(_))) => {
                Artifact::Relative(encode_path(&slash_path(rel)))
            }
            _ => Artifact::Absolute(file_uri(&abs)),
        })
    }

    /// `file` relative to the root (`/` separators, not encoded), when it is inside it.
    pub fn repo_relative(&self, file: &str) -> Option<String> {
        let abs = self.resolve(file)?;
        let rel = abs.strip_prefix(&self.root).ok()?;
        Some(slash_path(rel)).filter(|s| !s.is_empty())
    }

    /// The root as an absolute `file://` URI ending in `/` (SARIF `originalUriBaseIds`).
    pub fn root_uri(&self) -> String {
        let mut u = file_uri(&self.root);
        if !u.ends_with('/') {
            u.push('/');
        }
        u
    }
}

fn slash_path(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `file://` + the percent-encoded absolute path.
pub fn file_uri(abs: &Path) -> String {
    format!("file://{}", encode_path(&abs.to_string_lossy()))
}

/// Percent-encode every byte of a path except RFC 3986 unreserved characters and `/`.
pub fn encode_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The nearest directory at or above `dir` with a `.git` entry (a directory, or a file in a
/// worktree or submodule).
fn repo_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    abs.canonicalize().unwrap_or_else(|_| normalize(&abs))
}

/// Lexical normalisation (`a/./b/../c` → `a/c`).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path) -> Paths {
        Paths {
            base: root.to_path_buf(),
            cwd: root.to_path_buf(),
            root: root.to_path_buf(),
        }
    }

    #[test]
    fn relative_paths_are_percent_encoded_uris_under_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let p = paths(&root);
        assert_eq!(
            p.artifact("d 100%/p,q#r?.yaml"),
            Some(Artifact::Relative("d%20100%25/p%2Cq%23r%3F.yaml".into()))
        );
        assert_eq!(p.artifact("ü.yaml"), Some(Artifact::Relative("%C3%BC.yaml".into())));
        let abs = root.join("charts/x.yaml");
        assert_eq!(
            p.artifact(abs.to_str().unwrap()),
            Some(Artifact::Relative("charts/x.yaml".into()))
        );
    }

    #[test]
    fn outside_the_root_is_a_file_uri_and_stdin_has_none() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let p = paths(&root);
        let other = root.parent().unwrap().join("a b.yaml");
        match p.artifact(other.to_str().unwrap()) {
            Some(Artifact::Absolute(u)) => {
                assert!(u.starts_with("file:///") && u.ends_with("/a%20b.yaml"), "{u}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            p.artifact("../x.yaml").map(|a| matches!(a, Artifact::Absolute(_))),
            Some(true)
        );
        assert_eq!(p.artifact("<stdin>"), None);
        assert_eq!(p.artifact(""), None);
        assert!(p.root_uri().starts_with("file:///") && p.root_uri().ends_with("/repo/"));
    }

    #[test]
    fn the_root_is_the_repository_containing_the_stack() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("stacks/a")).unwrap();
        std::fs::write(top.join(".git"), "gitdir: elsewhere\n").unwrap();
        let p = Paths::new(&top.join("stacks/a"));
        assert_eq!(p.root, top);
        assert_eq!(
            p.artifact("charts/t.yaml"),
            Some(Artifact::Relative("stacks/a/charts/t.yaml".into()))
        );
    }
}
