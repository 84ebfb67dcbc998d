//! Paths as the loader, the renderer and the tools agree on them: absolute (canonical when the
//! file exists), lexically normalised, relative to the repository root with `/` separators.

use std::path::{Component, Path, PathBuf};

/// `p` made absolute against the current directory, canonical when it exists.
pub fn absolute(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    abs.canonicalize().unwrap_or_else(|_| normalize(&abs))
}

/// Lexical normalisation (`a/./b/../c` → `a/c`) without touching the file system.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `root` (with `..` segments when outside), using `/` separators.
pub fn relative(path: &Path, root: &Path) -> String {
    let path = normalize(path);
    let root = normalize(root);
    let pc: Vec<_> = path.components().collect();
    let rc: Vec<_> = root.components().collect();
    let common = pc.iter().zip(rc.iter()).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), rc.len() - common).collect();
    parts.extend(
        pc[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}
