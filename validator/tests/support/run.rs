//! Running the built `nvcf-validate` as the integration tests do, and reading its JSON report.
//! One place for what every such test needs: the pinned tools first on PATH, the clock pinned
//! (`NVCF_VALIDATE_NOW`), no `NVCF_HELM`/`NVCF_HELMFILE` leaking in from the caller's
//! environment, and a JSON parse that shows the text it could not read.

use super::{copy_dir, path_with_tools, repo};
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// The moment the tests judge certificates and waivers at, unless a test sets its own.
pub const NOW: &str = "2026-11-29T12:00:00Z";

/// One run of `nvcf-validate`: its exit code and output.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout as JSON (a `--format json` report), or a panic that shows it.
    pub fn json(&self) -> Value {
        json(&self.stdout)
    }

    /// stdout as JSON when it is JSON (a run that failed before writing its report is `None`).
    pub fn report(&self) -> Option<Value> {
        serde_json::from_str(&self.stdout).ok()
    }
}

/// `nvcf-validate` to be run in `dir` with the defaults every test needs: the pinned tools first
/// on PATH, the clock at [`NOW`], no `NVCF_HELM`/`NVCF_HELMFILE` from the caller. What the caller
/// sets afterwards wins.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"));
    c.current_dir(dir)
        .env("PATH", path_with_tools())
        .env("NVCF_VALIDATE_NOW", NOW)
        .env_remove("NVCF_HELM")
        .env_remove("NVCF_HELMFILE");
    c
}

/// Run `nvcf-validate args` in `dir`, with `env` set after the defaults (so it may override
/// `NVCF_VALIDATE_NOW` or set `XDG_CACHE_HOME`), and `stdin` piped in when given.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
    let mut c = command(dir);
    c.args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Like [`run`], with a cache directory of the run's own (`dir/.cache`).
pub fn run_cached(dir: &Path, args: &[&str]) -> Run {
    let cache = dir.join(".cache");
    run(dir, args, &[("XDG_CACHE_HOME", cache.to_str().unwrap())], None)
}

/// `s` as JSON, or a panic that shows it.
pub fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}):\n{s}"))
}

/// The rules of a JSON report's findings that were not waived.
pub fn unwaived_rules(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array in {report}"))
        .iter()
        .filter(|f| f["waived"].is_null())
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A fresh temporary copy of the repository directory `rel` (outside the repository, so the
/// repository's .tools/bin is not found by walking up).
pub fn copy_of(rel: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&repo().join(rel), d.path());
    d
}
