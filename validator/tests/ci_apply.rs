//! `ci/apply`'s cluster-independent behaviour: the unmodified script runs in a scratch root whose
//! `ci/setup`, `cargo`, `helmfile`, `kubectl` and `nvcf-validate` are recorders, so what is
//! checked is the script's own logic: the order gate -> profile -> sync -> waits -> probe, the
//! wait lines run as argument lists exactly as `readiness` prints them, and every failure
//! stopping before the next step (nothing is installed after a refusal). The steps themselves are
//! tested where they live: `check` everywhere, `profile`/`probe --profile`/`readiness` in
//! tests/profile.rs; the cluster steps are documented in docs/operations.md.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/usr/bin/env bash\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Recorders: each appends `name args...` to $LOG; `$FAIL` names a step that exits non-zero.
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("ci")).unwrap();
    std::fs::copy(support::repo().join("ci/apply"), root.join("ci/apply")).unwrap();
    script(&root.join("ci/setup"), "echo setup >> \"$LOG\"\n");
    std::fs::write(root.join("helmfile.yaml"), "# scratch\n").unwrap();
    // Only the system tools the script uses: no kubectl, helmfile or cargo of this machine leaks in.
    std::fs::create_dir_all(root.join("sys")).unwrap();
    for tool in ["bash", "env", "dirname", "mkdir", "python3", "cat"] {
        let found = ["/usr/bin", "/bin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} not found"));
        std::os::unix::fs::symlink(found, root.join("sys").join(tool)).unwrap();
    }
    let rec = |name: &str| {
        format!(
            "echo \"{name} $*\" >> \"$LOG\"\n\
             case \"$FAIL\" in \"{name} $1\"|\"{name} $1 $2\") echo \"{name} fails\" >&2; exit 7 ;; esac\n"
        )
    };
    script(
        &root.join("bin/cargo"),
        &format!(
            "if [ \"$1\" = metadata ]; then echo '{{\"target_directory\": \"{}\"}}'; exit 0; fi\n{}",
            root.join("target").display(),
            rec("cargo")
        ),
    );
    script(&root.join(".tools/bin/helmfile"), &rec("helmfile"));
    script(&root.join("bin/kubectl"), &rec("kubectl"));
    script(
        &root.join("target/debug/nvcf-validate"),
        &format!(
            "{}if [ \"$1\" = readiness ]; then\n  \
             echo 'wait --for=condition=Ready --timeout=600s clusterissuers.cert-manager.io/openbao-pki'\n  \
             echo 'rollout status --timeout=600s -n nvcf statefulset/request-router'\nfi\n",
            rec("nvcf-validate")
        ),
    );
    d
}

fn apply(root: &Path, args: &[&str], fail: &str) -> (Output, Vec<String>) {
    let log = root.join("log");
    let _ = std::fs::remove_file(&log);
    let o = Command::new("bash")
        .arg(root.join("ci/apply"))
        .args(args)
        .env(
            "PATH",
            format!("{}:{}", root.join("bin").display(), root.join("sys").display()),
        )
        .env("LOG", &log)
        .env("FAIL", fail)
        .output()
        .unwrap();
    let lines = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.replace(&root.display().to_string(), "[ROOT]"))
        .collect();
    (o, lines)
}

fn steps(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_operator_path_runs_in_order_with_the_same_inputs() {
    let d = scratch();
    let (o, log) = apply(d.path(), &["-e", "split-cluster", "--base", "/tmp/base.yaml"], "");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{log:#?}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        steps(&log),
        [
            "setup",
            "cargo build",
            "nvcf-validate check",
            "nvcf-validate profile",
            "helmfile --file",
            "nvcf-validate readiness",
            "kubectl wait",
            "kubectl rollout",
            "nvcf-validate probe",
        ]
    );
    // One state, one environment for every step; sync, never apply (no helm-diff needed).
    assert_eq!(
        log[2],
        "nvcf-validate check --file [ROOT]/helmfile.yaml --environment split-cluster --require-rendered"
    );
    assert_eq!(
        log[3],
        "nvcf-validate profile --file [ROOT]/helmfile.yaml --environment split-cluster --output \
         [ROOT]/.nvcf/split-cluster.profile.yaml --base /tmp/base.yaml"
    );
    assert_eq!(
        log[4],
        "helmfile --file [ROOT]/helmfile.yaml --environment split-cluster sync"
    );
    // The wait lines are run exactly as printed, as argument lists.
    assert_eq!(
        log[6],
        "kubectl wait --for=condition=Ready --timeout=600s clusterissuers.cert-manager.io/openbao-pki"
    );
    assert_eq!(
        log[7],
        "kubectl rollout status --timeout=600s -n nvcf statefulset/request-router"
    );
    assert_eq!(
        log[8],
        "nvcf-validate probe --profile [ROOT]/.nvcf/split-cluster.profile.yaml --file [ROOT]/helmfile.yaml \
         --environment split-cluster"
    );
}

#[test]
fn a_chart_mirror_reaches_every_render() {
    let d = scratch();
    let (o, log) = apply(
        d.path(),
        &["-e", "default", "--chart-mirror", "/m", "--no-probe", "--timeout", "5m"],
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    for l in log.iter().filter(|l| l.starts_with("nvcf-validate")) {
        assert!(l.contains("--offline --chart-mirror /m"), "{l}");
    }
    assert!(
        log.iter()
            .any(|l| l.contains("readiness") && l.contains("--timeout 5m")),
        "{log:#?}"
    );
    assert!(
        !log.iter().any(|l| l.starts_with("nvcf-validate probe")),
        "--no-probe: {log:#?}"
    );
}

#[test]
fn each_failure_stops_before_the_next_step() {
    let d = scratch();
    for (fail, last) in [
        ("nvcf-validate check", "nvcf-validate check"),
        ("nvcf-validate profile", "nvcf-validate profile"),
        ("helmfile --file", "helmfile --file"),
        ("kubectl wait", "kubectl wait"),
        ("nvcf-validate probe", "nvcf-validate probe"),
    ] {
        let (o, log) = apply(d.path(), &["-e", "split-cluster"], fail);
        assert_ne!(o.status.code(), Some(0), "{fail}");
        assert_eq!(steps(&log).last().map(String::as_str), Some(last), "{fail}: {log:#?}");
        if fail.starts_with("nvcf-validate check") || fail.starts_with("nvcf-validate profile") {
            assert!(
                !log.iter().any(|l| l.starts_with("helmfile")),
                "nothing installed after {fail}"
            );
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("nothing was applied"),
                "{fail}"
            );
        }
    }
}

#[test]
fn refusals_before_anything_runs() {
    let d = scratch();
    for (args, text) in [
        (&[][..], "--environment is required"),
        (&["-e", "default", "--offline"][..], "refusing --offline"),
        (
            &["-e", "default", "--", "--set", "a=b"][..],
            "refusing helmfile sync flag '--set'",
        ),
        (
            &["-e", "default", "--", "--selector", "name=x"][..],
            "refusing helmfile sync flag '--selector'",
        ),
        (&["-e", "default", "--timeout", "$(reboot)"][..], "is not a duration"),
        (&["-e", "default", "--bogus"][..], "unknown argument --bogus"),
    ] {
        let (o, log) = apply(d.path(), args, "");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(text),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(log.is_empty(), "{args:?} ran {log:?}");
    }
    // kubectl is needed for the waits: checked before the gate runs.
    std::fs::remove_file(d.path().join("bin/kubectl")).unwrap();
    let (o, log) = apply(d.path(), &["-e", "default"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("kubectl not found"));
    assert!(log.is_empty());
}
