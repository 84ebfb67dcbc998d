//! Real-world Helmfile shapes, each a small stack in `tests/realworld/<shape>/` (written for these
//! tests, not copied), checked `--offline` with the real helmfile and helm:
//!
//! - the run is sealed: the seal's proxies point at a listener here that counts every connection
//!   attempt, through the proxy or direct (a shape reaches it as `REALWORLD_LISTENER`, e.g. a
//!   loopback chart URL or a hook's raw TCP), and it must stay 0; the helm behind the generated
//!   front is a recorder that must see no registry call (pull, repo, dependency build, registry,
//!   search, and `show`/`template`/`install`/`upgrade` of a chart that is not local);
//! - no host service is reached by Unix socket: a fake daemon's socket (`REALWORLD_SOCKET`, and
//!   `DOCKER_HOST` names it) counts every connection, and it must stay 0;
//! - no side effects: the stack's files, a private HOME, a private TMPDIR and the directory the
//!   shapes' hooks and `exec` calls write into (`REALWORLD_OUTSIDE`) are unchanged afterwards;
//! - each shape's `expect` file says what the report must show (`exit:`, `finding:`,
//!   `no-finding:`, `rendered:`, `not-rendered:`, `absent:`, `render-error: ENV TEXT` (the JSON
//!   report's environment carries that error), `stderr:`, `stderr-lacks:`, `first-line:` (the
//!   first line of stderr holds TEXT: the release or object an exit 2 is about); `args:`, `env:` and
//!   `hide:` (a tool left off PATH) set up the run, and `--file` in `args:` replaces the default
//!   `--file .`). Every line is checked; all shapes run and all failures are listed together.
//!
//! The recorder logs into a directory the seal is told to leave writable
//! (`NVCF_TEST_SEAL_WRITABLE`), so every run here also carries the `offline-seal-partial`
//! warning; `seal_partial_is_reported_in_every_format` checks it is absent without that variable
//! on a kernel with Landlock, and present when a missing or older Landlock is simulated.
//!
//! Cost: one helmfile build + template per shape, about a second each (30 shapes: about 40 s on
//! a loaded 2-core machine), plus four runs for the seal report.

mod support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use support::shapes::{self, expectations};
use support::{copy_dir, path_hiding, repo, tool};

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

/// Every file, symlink and empty directory under `dir` (symlinks are not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let real_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if real_dir && std::fs::read_dir(&p).is_ok_and(|mut d| d.next().is_none()) {
            out.push(p);
        } else if real_dir {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Calls of the real helm that would reach a registry: the recorder marks `show`, `template`,
/// `install` and `upgrade` calls that name no local chart (a directory with Chart.yaml, or a
/// chart archive) as `REMOTE`.
fn registry_call(call: &str) -> bool {
    call.starts_with("REMOTE ")
        || [
            "pull",
            "fetch",
            "repo ",
            "dependency build",
            "dependency update",
            "dependency up",
            "dep ",
            "registry",
            "search",
        ]
        .iter()
        .any(|c| call.starts_with(c))
}

/// Run one shape; the failures found.
fn run_shape(shape: &Path, helm_recorder: &Path, log: &Path) -> Vec<String> {
    let name = shape.file_name().unwrap().to_string_lossy().into_owned();
    let expect = expectations(&std::fs::read_to_string(shape.join("expect")).unwrap());
    let work = tempfile::tempdir().unwrap();
    let stack = work.path().join("stack");
    copy_dir(&shape.join("stack"), &stack);
    let home = work.path().join("home");
    let tmp = work.path().join("tmp");
    let outside = work.path().join("outside");
    for d in [&home, &tmp, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    let before = snapshot(&stack);
    let _ = std::fs::remove_file(log);
    let (listener, attempts) = support::counting::tcp();
    let (socket, socket_attempts) = support::counting::unix_socket(work.path());

    // A private cache outside HOME: the first run is cold (it renders and stores), the second
    // warm, and the two verdicts must be equal (`cache_property.rs` edits every input class).
    let cache = work.path().join("cache");
    let command = || {
        let mut c = support::run::command(&stack);
        c.args(["check", "--offline", "--format", "json"])
            .args(if expect.args.iter().any(|a| a == "--file" || a == "-f") {
                &[][..]
            } else {
                &["--file", "."][..]
            })
            .args(&expect.args)
            .env("PATH", path_hiding(&expect.hide))
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("NVCF_HELM", helm_recorder)
            .env("NVCF_HELMFILE", tool("helmfile"))
            .env("NVCF_HELM_RECORD", log)
            .env("NVCF_TEST_SEAL_WRITABLE", log.parent().unwrap())
            .env("NVCF_SEALED_PROXY", format!("http://{listener}"))
            .env("REALWORLD_LISTENER", listener.to_string())
            .env("REALWORLD_LISTENER_PORT", listener.port().to_string())
            .env("REALWORLD_OUTSIDE", &outside)
            .env("REALWORLD_SOCKET", &socket)
            .env("DOCKER_HOST", format!("unix://{}", socket.display()))
            .env("XDG_CACHE_HOME", &cache);
        for (k, v) in &expect.env {
            c.env(k, v);
        }
        c
    };
    let support::run::Run { code, stdout, stderr } = support::run::finish(&mut command(), None);
    let mut fails = Vec::new();
    let mut fail = |m: String| fails.push(format!("{name}: {m}"));

    // Sealed: nothing reached for the network, and helm saw no registry call.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let n = attempts.load(Ordering::SeqCst);
    if n != 0 {
        fail(format!(
            "{n} connection attempt(s) reached the listener (proxy or direct)"
        ));
    }
    let n = socket_attempts.load(Ordering::SeqCst);
    if n != 0 {
        fail(format!("{n} connection(s) reached the fake daemon's Unix socket"));
    }
    let calls = std::fs::read_to_string(log).unwrap_or_default();
    for call in calls.lines().filter(|c| registry_call(c)) {
        fail(format!("the real helm was asked `{call}`"));
    }
    // No side effects.
    if snapshot(&stack) != before {
        fail("the stack's files changed".into());
    }
    for (what, dir) in [("HOME", &home), ("TMPDIR", &tmp), ("REALWORLD_OUTSIDE", &outside)] {
        let left = walk(dir);
        if !left.is_empty() {
            fail(format!("files appeared in {what}: {left:?}"));
        }
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
            "first-line" => {
                let first = stderr.lines().next().unwrap_or("");
                if !first.contains(v.as_str()) {
                    fail(format!("the first line of stderr lacks `{v}`: {first}"));
                }
            }
            "stderr-lacks" => {
                if stderr.contains(v.as_str()) || stdout.contains(v.as_str()) {
                    fail(format!("the output shows `{v}`"));
                }
            }
            other => fail(format!("unknown expectation `{other}`")),
        }
    }
    if code == 2 {
        for m in refusal_defects(stderr.lines().next().unwrap_or(""), &stack) {
            fail(m);
        }
        if !expect.checks.iter().any(|(k, _)| k == "first-line") {
            fail("exits 2 but its expect has no `first-line:` naming the release or object refused".into());
        }
    }
    // The warm run: the same verdict (exit code and findings) as the cold one.
    let warm = support::run::finish(&mut command(), None);
    let verdict = |code: i32, stdout: &str| {
        let r: serde_json::Value = serde_json::from_str(stdout).unwrap_or(serde_json::Value::Null);
        let mut f: Vec<String> = r["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| format!("{} {} {} {}", f["rule"], f["environment"], f["release"], f["message"]))
            .collect();
        f.sort();
        (code, f)
    };
    let (cold_v, warm_v) = (verdict(code, &stdout), verdict(warm.code, &warm.stdout));
    if cold_v != warm_v {
        fail(format!(
            "the warm run's verdict {warm_v:?} differs from the cold run's {cold_v:?}"
        ));
    }
    if !fails.is_empty() {
        fails.push(format!("{name}: stderr was:\n{}", stderr.trim()));
    }
    fails
}

/// What an exit-2 message's first line lacks: it must put the cause first, naming a file of the
/// stack (`FILE:` or `FILE:LINE:`) and carrying the fix after `; `, never a generic headline or a
/// pointer to helmfile's words in place of the cause.
fn refusal_defects(first: &str, stack: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Some(rest) = first.strip_prefix("nvcf-validate: could not validate ") else {
        return vec![format!("the first line of stderr is not the refusal: `{first}`")];
    };
    // `stack .: ` (what was validated), then the cause.
    let cause = rest.split_once(": ").map(|(_, c)| c).unwrap_or("");
    let names_file = cause.split_whitespace().any(|w| {
        let w = w.trim_end_matches(':');
        let path = match w.rsplit_once(':') {
            Some((p, n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => p,
            _ => w,
        };
        !path.is_empty() && stack.join(path).exists()
    });
    if !names_file {
        out.push(format!("the first line names no file of the stack: `{first}`"));
    }
    match cause.split_once("; ") {
        Some((_, fix)) if fix.split_whitespace().count() >= 3 => {}
        _ => out.push(format!("the first line carries no fix after `; `: `{first}`")),
    }
    for generic in [
        "could not render the stack",
        "helmfile's words below",
        "run the same helmfile command",
        "fix what helmfile names there",
    ] {
        if cause.contains(generic) {
            out.push(format!("the first line is generic (`{generic}`): `{first}`"));
        }
    }
    out
}

#[test]
fn a_refusal_line_must_name_a_file_and_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("helmfile.yaml"), "releases: []\n").unwrap();
    let ok = "nvcf-validate: could not validate stack .: environment default: helmfile.yaml:3: release app: it \
              fails; set X and run again";
    assert!(
        refusal_defects(ok, dir.path()).is_empty(),
        "{:?}",
        refusal_defects(ok, dir.path())
    );
    for bad in [
        "nvcf-validate: could not validate stack .: 1 of 1 environments: helmfile could not render the stack, and \
         no standing state finding explains why:",
        "nvcf-validate: could not validate stack .: environment default: other.yaml: it fails; set X and run again",
        "nvcf-validate: could not validate stack .: environment default: helmfile.yaml: it fails (helmfile's words \
         below)",
        "environment default: helmfile.yaml: it fails; set X and run again",
    ] {
        assert!(!refusal_defects(bad, dir.path()).is_empty(), "{bad}");
    }
}

/// The helm behind the front: records each call (marking calls that name no local chart as
/// `REMOTE`), then runs the real helm.
fn recorder(dir: &Path) -> PathBuf {
    let recorder = dir.join("helm");
    std::fs::write(
        &recorder,
        format!(
            r#"#!/bin/sh
kind=""
case "$1" in
  show|inspect|template|install|upgrade)
    kind="REMOTE "
    for a in "$@"; do
      case "$a" in -*) continue ;; esac
      if [ -f "$a/Chart.yaml" ]; then kind=""; fi
      case "$a" in *.tgz|*.tar.gz) [ -f "$a" ] && kind="" ;; esac
    done ;;
esac
echo "$kind$*" >> "$NVCF_HELM_RECORD"
exec '{}' "$@"
"#,
            tool("helm").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    recorder
}

#[test]
fn realworld_shapes_load_offline_sealed() {
    let tools = tempfile::tempdir().unwrap();
    let recorder = recorder(tools.path());
    let logs = tools.path().join("log");
    std::fs::create_dir_all(&logs).unwrap();
    let log = logs.join("calls.log");
    let mut shapes = shapes::list();
    assert!(
        shapes.len() >= 20,
        "expected at least 20 shapes in validator/tests/realworld"
    );
    // While working on a shape: REALWORLD_ONLY=<part of its name>.
    if let Ok(only) = std::env::var("REALWORLD_ONLY") {
        shapes.retain(|s| s.to_string_lossy().contains(&only));
        // A filter that matches nothing would run nothing and pass.
        assert!(
            !shapes.is_empty(),
            "REALWORLD_ONLY={only:?} matches no shape in validator/tests/realworld"
        );
    }
    let fails: Vec<String> = shapes.iter().flat_map(|s| run_shape(s, &recorder, &log)).collect();
    assert!(fails.is_empty(), "{} failure(s):\n{}", fails.len(), fails.join("\n"));
}

/// The recorder's own rule for "not a local chart" must not pass a remote one.
#[test]
fn the_recorder_flags_remote_charts() {
    let tools = tempfile::tempdir().unwrap();
    let recorder = recorder(tools.path());
    let log = tools.path().join("calls.log");
    let chart = tools.path().join("chart");
    std::fs::create_dir_all(&chart).unwrap();
    std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: c\nversion: 0.1.0\n").unwrap();
    for args in [
        vec!["template", "ingress", "ingress/ingress-nginx", "--version", "4.11.1"],
        vec!["show", "chart", "oci://ghcr.io/x/app"],
        vec!["template", "app", chart.to_str().unwrap()],
    ] {
        let _ = Command::new(&recorder)
            .args(&args)
            .env("NVCF_HELM_RECORD", &log)
            .env("HOME", tools.path())
            .output()
            .unwrap();
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    let flagged: Vec<bool> = calls.lines().map(registry_call).collect();
    assert_eq!(flagged, vec![true, true, false], "{calls}");
    assert!(registry_call("repo list") && registry_call("dependency up x") && !registry_call("version --short"));
}

/// `offline-seal-partial`: silent where the kernel enforces the whole seal, reported (in every
/// report format) when Landlock is missing (simulated: `NVCF_TEST_LANDLOCK_ABI=0`) or too old
/// for TCP (`=3`).
#[test]
fn seal_partial_is_reported_in_every_format() {
    let shape = repo().join("validator/tests/realworld/22-condition-false/stack");
    let work = tempfile::tempdir().unwrap();
    let stack = work.path().join("stack");
    copy_dir(&shape, &stack);
    let run = |abi: Option<&str>, format: &str, cache: bool| {
        let mut c = support::run::command(&stack);
        c.args(["check", "--offline", "--format", format, "--file", "."])
            .args(if cache { vec![] } else { vec!["--no-cache"] })
            .env("HOME", work.path())
            .env("XDG_CACHE_HOME", work.path().join("cache"))
            .env_remove("NVCF_TEST_SEAL_WRITABLE");
        match abi {
            Some(a) => c.env("NVCF_TEST_LANDLOCK_ABI", a),
            None => c.env_remove("NVCF_TEST_LANDLOCK_ABI"),
        };
        let o = c.output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let kernel = nvcf_validate::tools::sandbox::coverage();
    let (code, json) = run(None, "json", false);
    if kernel.complete() {
        assert_eq!(code, Some(0), "{json}");
        assert!(!json.contains("offline-seal-partial"), "{json}");
    } else {
        eprintln!(
            "this kernel's Landlock ABI is {}: the full seal cannot be shown here",
            kernel.abi
        );
        assert!(json.contains("offline-seal-partial"));
    }
    // ABI 3: writes confined, TCP not. A warning: the run still passes.
    let (code, json) = run(Some("3"), "json", true);
    assert_eq!(code, Some(0), "{json}");
    assert!(
        json.contains("offline-seal-partial") && json.contains("TCP connections"),
        "{json}"
    );
    // No Landlock: named in every format (the cache answers: the finding is the run's, not the
    // render's).
    for format in ["human", "json", "sarif", "junit", "github", "markdown"] {
        let (code, out) = run(Some("0"), format, true);
        assert_eq!(code, Some(0), "{format}: {out}");
        assert!(out.contains("offline-seal-partial"), "{format}: {out}");
        if format != "sarif" {
            assert!(out.contains("writes outside the scratch directory"), "{format}: {out}");
        }
    }
}
