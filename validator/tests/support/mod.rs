//! What the integration tests share: where the repository and the pinned tools are, copying
//! fixture stacks, (`probe`) loopback TLS/QUIC servers with test identities, (`openbao`) the
//! rendered OpenBao/PKI parts of an environment, (`run`) running the built gate, and (`shapes`)
//! the realworld shapes and their `expect` files, (`counting`) listeners that count connections. Each test file
//! includes it with `mod support;`, so not every file uses all of it.
#![allow(dead_code)]

pub mod counting;
pub mod openbao;
pub mod probe;
pub mod run;
pub mod shapes;

use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("validator/ has a parent")
        .to_path_buf()
}

/// `<repo>/.tools/bin/<name>`, else PATH; a clear failure naming ./ci/setup otherwise.
pub fn tool(name: &str) -> PathBuf {
    let local = repo().join(".tools/bin").join(name);
    if local.is_file() {
        return local;
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(p) = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()) {
            return p;
        }
    }
    panic!(
        "`{name}` not found in {} or PATH: run ./ci/setup (it installs the pinned, hash-verified bao, helm and helmfile)",
        repo().join(".tools/bin").display()
    );
}

/// PATH with the pinned tools' directory first (helm and helmfile must be there).
pub fn path_with_tools() -> String {
    let bin = repo().join(".tools/bin");
    assert!(
        bin.join("helmfile").is_file() && bin.join("helm").is_file(),
        "helm/helmfile missing in {}: run ./ci/setup",
        bin.display()
    );
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// [`path_with_tools`] without the directories that hold any of the tools `hide` (a realworld
/// shape's `hide:` line: the machine it stands for has no such tool). `realworld.rs` and
/// `apply_oracle.rs` both run a shape with it.
pub fn path_hiding(hide: &[String]) -> String {
    let all = path_with_tools();
    let kept: Vec<&str> = all
        .split(':')
        .filter(|d| !hide.iter().any(|t| Path::new(d).join(t).is_file()))
        .collect();
    kept.join(":")
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
