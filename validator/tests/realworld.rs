//! Real-world Helmfile shapes, each a small stack in `tests/realworld/<shape>/` (written for these
//! tests, not copied), checked `--offline` with the real helmfile and helm:
//!
//! - the run is sealed: the seal's proxies point at a listener here that counts connection
//!   attempts (must stay 0), and the helm behind the generated front is a recorder that must
//!   see no registry call (pull, repo add/update, dependency build, registry);
//! - no side effects: the stack's files, a private HOME and a private TMPDIR are unchanged
//!   afterwards;
//! - each shape's `expect` file says what the report must show (`exit:`, `finding:`,
//!   `no-finding:`, `rendered:`, `not-rendered:`, `absent:`, `render-error: ENV TEXT` (the JSON
//!   report's environment carries that error), `stderr:`; `args:` and `env:` set up the run, and
//!   `--file` in `args:` replaces the default `--file .`). Every line is checked; all shapes run
//!   and all failures are listed together.
//!
//! Cost: one helmfile build + template per shape, about a second each.

mod support;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::{copy_dir, path_with_tools, repo, tool};

/// A proxy that counts every connection and closes it at once.
fn counting_proxy() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            n2.fetch_add(1, Ordering::SeqCst);
            let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(50)));
            let _ = c.read(&mut [0u8; 512]);
        }
    });
    (format!("http://{addr}"), n)
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = walk(dir)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_default();
            (p.strip_prefix(dir).unwrap().to_path_buf(), b)
        })
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

struct Expect {
    args: Vec<String>,
    env: Vec<(String, String)>,
    checks: Vec<(String, String)>,
}

fn expectations(text: &str) -> Expect {
    let mut e = Expect {
        args: Vec::new(),
        env: Vec::new(),
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
                let (a, b) = v.split_once('=').unwrap();
                e.env.push((a.into(), b.into()));
            }
            other => e.checks.push((other.to_string(), v)),
        }
    }
    e
}

/// Run one shape; the failures found.
fn run_shape(shape: &Path, helm_recorder: &Path, log: &Path) -> Vec<String> {
    let name = shape.file_name().unwrap().to_string_lossy().into_owned();
    let expect = expectations(&std::fs::read_to_string(shape.join("expect")).unwrap());
    let work = tempfile::tempdir().unwrap();
    let stack = work.path().join("stack");
    copy_dir(&shape.join("stack"), &stack);
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let tmp = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let before = snapshot(&stack);
    let _ = std::fs::remove_file(log);
    let (proxy, attempts) = counting_proxy();

    let mut c = Command::new(env!("CARGO_BIN_EXE_nvcf-validate"));
    c.current_dir(&stack)
        .args(["check", "--offline", "--no-cache", "--format", "json"])
        .args(if expect.args.iter().any(|a| a == "--file" || a == "-f") {
            &[][..]
        } else {
            &["--file", "."][..]
        })
        .args(&expect.args)
        .env("PATH", path_with_tools())
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("NVCF_VALIDATE_NOW", "2026-11-29T12:00:00Z")
        .env("NVCF_HELM", helm_recorder)
        .env("NVCF_HELMFILE", tool("helmfile"))
        .env("NVCF_HELM_RECORD", log)
        .env("NVCF_SEALED_PROXY", &proxy);
    for (k, v) in &expect.env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut fails = Vec::new();
    let mut fail = |m: String| fails.push(format!("{name}: {m}"));

    // Sealed: nothing reached for the network, and helm saw no registry call.
    let n = attempts.load(Ordering::SeqCst);
    if n != 0 {
        fail(format!("{n} outbound connection attempt(s) reached the proxy"));
    }
    let calls = std::fs::read_to_string(log).unwrap_or_default();
    for call in calls.lines() {
        let registry = [
            "pull",
            "fetch",
            "repo add",
            "repo update",
            "dependency build",
            "dependency update",
            "registry",
        ]
        .iter()
        .any(|c| call.starts_with(c));
        if registry {
            fail(format!("the real helm was asked `{call}`"));
        }
    }
    // No side effects.
    if snapshot(&stack) != before {
        fail("the stack's files changed".into());
    }
    if !walk(&home).is_empty() {
        fail(format!("files appeared in HOME: {:?}", walk(&home)));
    }
    if !walk(&tmp).is_empty() {
        fail(format!("files were left in TMPDIR: {:?}", walk(&tmp)));
    }

    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    let findings: Vec<&serde_json::Value> = report["findings"].as_array().into_iter().flatten().collect();
    let releases: Vec<&serde_json::Value> = report["environments"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["releases"].as_array().into_iter().flatten())
        .collect();
    let release = |id: &str| {
        releases
            .iter()
            .find(|r| {
                format!(
                    "{}/{}",
                    r["namespace"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                ) == id
            })
            .copied()
    };
    for (k, v) in &expect.checks {
        let mut words = v.splitn(2, ' ');
        let first = words.next().unwrap_or("").to_string();
        let rest = words.next().unwrap_or("").trim().to_string();
        match k.as_str() {
            "exit" => {
                if code.to_string() != *v {
                    fail(format!("exit {code}, expected {v}"));
                }
            }
            "finding" | "no-finding" => {
                let hit = findings.iter().any(|f| {
                    f["rule"] == first.as_str() && (rest.is_empty() || f["release"].as_str() == Some(rest.as_str()))
                });
                if hit != (k == "finding") {
                    let shown: Vec<String> = findings
                        .iter()
                        .map(|f| format!("{} {}", f["rule"], f["release"]))
                        .collect();
                    fail(format!("{k} {v}: findings were {shown:?}"));
                }
            }
            "rendered" => match release(&first) {
                Some(r) if r["rendered"] == true => {
                    if !rest.is_empty() && r["objects"].as_u64().map(|n| n.to_string()) != Some(rest.clone()) {
                        fail(format!("{first} rendered {} objects, expected {rest}", r["objects"]));
                    }
                }
                other => fail(format!("{first} not rendered: {other:?}")),
            },
            "not-rendered" => match release(&first) {
                Some(r) if r["rendered"] == false && r["reason"].as_str().unwrap_or("").contains(&rest) => {}
                other => fail(format!("{first} should be not rendered ({rest}): {other:?}")),
            },
            "absent" => {
                if release(&first).is_some() {
                    fail(format!("{first} should not be judged (deselected)"));
                }
            }
            "render-error" => {
                let env = report["environments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|e| e["name"] == first.as_str());
                let err = env.and_then(|e| e["renderError"].as_str()).unwrap_or("");
                if err.is_empty() || !err.contains(rest.as_str()) {
                    fail(format!(
                        "environment {first} should carry renderError `{rest}`: {env:?}"
                    ));
                }
            }
            "stderr" => {
                if !stderr.contains(v.as_str()) {
                    fail(format!("stderr lacks `{v}`"));
                }
            }
            other => fail(format!("unknown expectation `{other}`")),
        }
    }
    if !fails.is_empty() {
        fails.push(format!("{name}: stderr was:\n{}", stderr.trim()));
    }
    fails
}

#[test]
fn realworld_shapes_load_offline_sealed() {
    let dir = repo().join("validator/tests/realworld");
    let tools = tempfile::tempdir().unwrap();
    let recorder = tools.path().join("helm");
    // The helm behind the front: records each call, then runs the real helm.
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\necho \"$*\" >> \"$NVCF_HELM_RECORD\"\nexec '{}' \"$@\"\n",
            tool("helm").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = tools.path().join("calls.log");
    let mut shapes: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expect").is_file())
        .collect();
    shapes.sort();
    assert!(shapes.len() >= 20, "expected at least 20 shapes in {}", dir.display());
    let fails: Vec<String> = shapes.iter().flat_map(|s| run_shape(s, &recorder, &log)).collect();
    assert!(fails.is_empty(), "{} failure(s):\n{}", fails.len(), fails.join("\n"));
}
