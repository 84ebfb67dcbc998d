//! Running the built `nvcf-validate` as the integration tests do, and reading its JSON report.
//! One place for what every such test needs: the pinned tools first on PATH, the clock pinned
//! (`NVCF_VALIDATE_NOW`), no `NVCF_HELM`/`NVCF_HELMFILE` leaking in from the caller's
//! environment, and a JSON parse that shows the text it could not read.

use super::{copy_dir, path_with_tools, repo};
use serde_json::Value;
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The built gate. The one place that names it: a test that needs the binary itself (to copy it,
/// or to hand it to a script) takes it from here.
pub const BIN: &str = env!("CARGO_BIN_EXE_nvcf-validate");

/// The moment the tests judge certificates and waivers at, unless a test sets its own.
pub const NOW: &str = "2026-11-29T12:00:00Z";

/// A moment after every committed example certificate became valid (`examples/pki`, the latest
/// `notBefore` is 2026-12-01): for runs on the repository's stack or fixtures embedding them,
/// whose verdict must not depend on the real clock.
pub const AFTER_EXAMPLES: &str = "2027-01-15T12:00:00Z";

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

    /// stdout and stderr, for a failure message.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `nvcf-validate` to be run in `dir` with the defaults every test needs: the pinned tools first
/// on PATH, the clock at [`NOW`], no `NVCF_HELM`/`NVCF_HELMFILE` from the caller. What the caller
/// sets afterwards wins.
pub fn command(dir: &Path) -> Command {
    command_of(Path::new(BIN), dir)
}

/// [`command`] with another binary (a copy of the gate, as an operator installs it).
pub fn command_of(exe: &Path, dir: &Path) -> Command {
    let mut c = Command::new(exe);
    c.current_dir(dir)
        .env("PATH", path_with_tools())
        .env("NVCF_VALIDATE_NOW", NOW)
        .env_remove("NVCF_HELM")
        .env_remove("NVCF_HELMFILE");
    c
}

/// The built gate in `dir` with exactly the environment `vars` and nothing of the caller's
/// (`env_clear`): for a test about what the gate does with a given environment, where a
/// variable added by [`command`] or inherited would change what it tests.
pub fn exact<K: AsRef<OsStr>, V: AsRef<OsStr>>(dir: &Path, vars: impl IntoIterator<Item = (K, V)>) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir).env_clear().envs(vars);
    c
}

/// Run `nvcf-validate args` in `dir`, with `env` set after the defaults (so it may override
/// `NVCF_VALIDATE_NOW` or set `XDG_CACHE_HOME`), and `stdin` piped in when given.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
    let mut c = command(dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    finish(&mut c, stdin.map(str::as_bytes))
}

/// Run a prepared command ([`command`], [`command_of`], [`exact`]) to its end, with `stdin`
/// piped in when given (else none).
pub fn finish(c: &mut Command, stdin: Option<&[u8]>) -> Run {
    c.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap().into()
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

/// The JSON report's contract (`validator/schema/report.schema.json`).
pub fn report_schema() -> PathBuf {
    repo().join("validator/schema/report.schema.json")
}

/// Where `doc` breaks the JSON Schema in the file `schema` (empty when it follows it), each
/// error with the place it is at.
pub fn schema_errors(doc: &Value, schema: &Path) -> Vec<String> {
    let schema = json(&std::fs::read_to_string(schema).unwrap());
    let v = jsonschema::validator_for(&schema).unwrap();
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// The findings of `rule` in a JSON report (waived or not); a report without a `findings` array
/// is a failure, never "no findings".
pub fn findings_of<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array in {report}"))
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
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
