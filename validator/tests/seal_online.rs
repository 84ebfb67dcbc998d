//! Online `check` runs hooks and `exec` sealed too (issue 23): with the real helmfile and helm and
//! without `--offline`, the realworld shapes whose `prepare`/`cleanup` hooks and template `exec`
//! write outside the run (23), reach a fake container daemon's Unix socket by curl, Python, the
//! docker CLI and its absolute path (55), or run `kubectl apply` (16) leave nothing behind: no file
//! in the directory they write into, in `HOME` or in `TMPDIR`, no connection on the socket, and
//! the kubectl hook refused with the release, its line and the fix. TCP stays open online (helm
//! pulls charts; `apply_oracle.rs` pulls one from a loopback repository through this seal), so a
//! hook's TCP connection arrives: that, and a cluster reached over the network by a client other
//! than `kubectl` on `PATH`, is what the online seal does not prevent (README, "`--offline` is
//! sealed").

mod support;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use support::run::{command, finish, run};
use support::{copy_dir, repo};

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(p.clone());
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

struct Run {
    code: i32,
    stderr: String,
    report: serde_json::Value,
    /// Files left in the directory the hooks write into, in HOME and in TMPDIR.
    left: Vec<PathBuf>,
    socket_connections: usize,
}

/// `check` (online, no cache) on a copy of a realworld shape's stack, as an operator runs it.
fn online(shape: &str, extra_env: &[(&str, &str)]) -> Run {
    let work = tempfile::tempdir().unwrap();
    let stack = work.path().join("stack");
    copy_dir(
        &repo().join("validator/tests/realworld").join(shape).join("stack"),
        &stack,
    );
    let (home, tmp, outside) = (
        work.path().join("home"),
        work.path().join("tmp"),
        work.path().join("outside"),
    );
    for d in [&home, &tmp, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    let (socket, socket_n) = support::counting::unix_socket(work.path());
    let mut c = command(&stack);
    c.args(["check", "--no-cache", "--format", "json", "--file", "."])
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("REALWORLD_OUTSIDE", &outside)
        .env("REALWORLD_SOCKET", &socket)
        .env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .env_remove("NVCF_TEST_SEAL_WRITABLE");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = finish(&mut c, None);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let left = [&outside, &home, &tmp].iter().flat_map(|d| files_under(d)).collect();
    Run {
        code: out.code,
        report: out.report().unwrap_or(serde_json::Value::Null),
        stderr: out.stderr,
        left,
        socket_connections: socket_n.load(Ordering::SeqCst),
    }
}

fn has_finding(r: &Run, rule: &str, release: &str) -> bool {
    r.report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["rule"] == rule && f["release"] == release)
}

fn rendered(r: &Run, release: &str) -> bool {
    r.report["environments"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["releases"].as_array().into_iter().flatten())
        .any(|x| {
            format!(
                "{}/{}",
                x["namespace"].as_str().unwrap_or(""),
                x["name"].as_str().unwrap_or("")
            ) == release
                && x["rendered"] == true
        })
}

/// In the namespace, and in the seal by variables where user namespaces are not available
/// (simulated): the same confinement of writes and Unix sockets.
const SEALS: [&[(&str, &str)]; 2] = [&[], &[("NVCF_TEST_NO_NAMESPACE", "1")]];

#[test]
fn hooks_and_exec_write_nothing_outside_online() {
    for env in SEALS {
        let r = online("23-hooks-and-exec-write-outside", env);
        // The hooks still ran (they print, then fail to write): reported by their events.
        assert_confined(&r, env);
    }
}

/// A sealed online run of a shape's `apps/app`: it exits 1, writes nothing outside the run,
/// renders the release, and reports its hooks by their events.
fn assert_confined(r: &Run, env: &[(&str, &str)]) {
    assert_eq!(r.code, 1, "{env:?}: {}", r.stderr);
    assert!(
        r.left.is_empty(),
        "{env:?}: online hooks or exec wrote outside the run: {:?}",
        r.left
    );
    assert!(rendered(r, "apps/app"), "{env:?}: {}", r.report);
    assert!(
        has_finding(r, "render-depends-on-cluster", "apps/app"),
        "{env:?}: {}",
        r.report
    );
}

#[test]
fn hooks_and_exec_reach_no_host_unix_socket_online() {
    for env in SEALS {
        let r = online("55-hook-docker-socket", env);
        assert_eq!(
            r.socket_connections, 0,
            "{env:?}: the fake daemon was reached online: {}",
            r.stderr
        );
        assert_confined(&r, env);
    }
}

#[test]
fn a_kubectl_hook_is_refused_online_naming_release_line_and_fix() {
    let r = online("16-prepare-hook-kubectl", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let first = r.stderr.lines().next().unwrap_or("");
    assert!(
        first.contains(
            "helmfile.yaml:8: release app: its prepare hook runs `kubectl apply -f crds/`, which the gate refuses"
        ) && first.contains("move what it does into a chart"),
        "{}",
        r.stderr
    );
}

/// What the online seal leaves open, shown rather than asserted away: TCP (helm pulls charts
/// online). The template's `exec` below connects to a loopback listener and the connection
/// arrives; offline the same connection is refused (`realworld` shape 24).
#[test]
fn tcp_stays_open_online() {
    let work = tempfile::tempdir().unwrap();
    let stack = work.path().join("stack");
    copy_dir(
        &repo().join("validator/tests/realworld/23-hooks-and-exec-write-outside/stack"),
        &stack,
    );
    let (tcp, tcp_n) = support::counting::tcp();
    std::fs::write(
        stack.join("helmfile.yaml.gotmpl"),
        format!(
            "{{{{ $x := exec \"bash\" (list \"-c\" \"exec 3<>/dev/tcp/127.0.0.1/{}; echo ok\") }}}}\nreleases:\n- name: app\n  \
             namespace: apps\n  chart: ./charts/app\n  values:\n  - greeting: {{{{ $x | trim }}}}\n",
            tcp.port()
        ),
    )
    .unwrap();
    let out = run(
        &stack,
        &["check", "--no-cache", "--format", "json", "--file", "."],
        &[],
        None,
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(tcp_n.load(Ordering::SeqCst) >= 1, "no TCP connection arrived online");
}
