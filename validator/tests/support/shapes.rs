//! The real-world Helmfile shapes (`tests/realworld/<shape>/`: a `stack/` and an `expect` file),
//! as `realworld.rs` (sealed loading, the report's checks) and `apply_oracle.rs` (the objects
//! judged against helm's) both read them.

use super::repo;
use std::path::PathBuf;

/// Every shape folder that has an `expect` file, in name order.
pub fn list() -> Vec<PathBuf> {
    let dir = repo().join("validator/tests/realworld");
    let mut shapes: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expect").is_file())
        .collect();
    shapes.sort();
    shapes
}

/// A shape's `expect` file: `args:`, `env:` and `hide:` set up the run, every other line
/// (`KEY: VALUE`) is a check of `realworld.rs`. Blank lines and `#` comments are skipped.
pub struct Expect {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub hide: Vec<String>,
    pub checks: Vec<(String, String)>,
}

pub fn expectations(text: &str) -> Expect {
    let mut e = Expect {
        args: Vec::new(),
        env: Vec::new(),
        hide: Vec::new(),
        checks: Vec::new(),
    };
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (k, v) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("bad expect line `{line}`"));
        let v = v.trim().to_string();
        match k.trim() {
            "args" => e.args.extend(v.split_whitespace().map(str::to_string)),
            "env" => {
                let (a, b) = v
                    .split_once('=')
                    .unwrap_or_else(|| panic!("bad expect line `{line}`: env: NAME=VALUE"));
                e.env.push((a.into(), b.into()));
            }
            "hide" => e.hide.push(v),
            other => e.checks.push((other.to_string(), v)),
        }
    }
    e
}
