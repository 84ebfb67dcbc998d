//! One binary that validates anywhere (issue #28): the Kubernetes schemas of the supported minors
//! are built into `nvcf-validate`, so a copy of it in an empty directory validates a copy of the
//! stack that has no `.tools` above it (helm and helmfile come from PATH, as on an operator's
//! machine), and `$NVCF_SCHEMAS` still overrides the built-in schemas.

mod support;
use support::run::{command, command_of, finish, run_cached, BIN};
use support::{copy_dir, repo};

use std::path::Path;

/// The stack's files, as an operator's checkout of it would hold them (no .tools, no ci/).
fn copy_stack(to: &Path) {
    for d in ["charts", "values", "examples"] {
        copy_dir(&repo().join(d), &to.join(d));
    }
    for f in ["helmfile.yaml", "charts.lock.yaml", "validator-policy.yaml"] {
        std::fs::copy(repo().join(f), to.join(f)).unwrap();
    }
}

#[test]
fn a_copied_binary_validates_a_copied_stack_without_tools_dir() {
    let bin_dir = tempfile::tempdir().unwrap();
    let stack = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let exe = bin_dir.path().join("nvcf-validate");
    std::fs::copy(BIN, &exe).unwrap();
    copy_stack(stack.path());
    for dir in [bin_dir.path(), stack.path()] {
        assert!(
            dir.ancestors().all(|d| !d.join(".tools").exists()),
            "{} must have no .tools above it",
            dir.display()
        );
    }
    // The copy, not the built binary: nothing of the build (its path, a .tools above it) helps.
    let run = |schemas: Option<&Path>| {
        let mut c = command_of(&exe, stack.path());
        c.args(["check", "--file", "helmfile.yaml", "--offline", "--format", "json"])
            .env("XDG_CACHE_HOME", cache.path())
            // As an operator runs it: the real clock (the repository's stack, whose example
            // certificates are judged valid today).
            .env_remove("NVCF_VALIDATE_NOW");
        match schemas {
            Some(s) => c.env("NVCF_SCHEMAS", s),
            None => c.env_remove("NVCF_SCHEMAS"),
        };
        finish(&mut c, None)
    };
    let out = run(None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.report().expect("a JSON report");
    assert_eq!(report["summary"]["errors"], 0, "{report:#}");
    assert_eq!(report["environments"].as_array().map(Vec::len), Some(4));
    let text = report.to_string();
    for env in report["environments"].as_array().unwrap() {
        let cov = &env["schemaCoverage"];
        assert_eq!(cov["kubernetesVersion"], "1.35", "{text}");
        assert!(
            cov["validated"].as_u64().is_some_and(|n| n > 0),
            "{}: {cov}",
            env["name"]
        );
    }
    // The override still wins: an empty schema directory is exit 2 naming it.
    let empty = tempfile::tempdir().unwrap();
    let out = run(Some(empty.path()));
    let stderr = out.stderr;
    assert_eq!(out.code, 2, "{stderr}");
    assert!(
        stderr.contains("no schemas for Kubernetes 1.35") && stderr.contains("overridden by $NVCF_SCHEMAS"),
        "{stderr}"
    );
}

fn check_with(dir: &Path, env: &[(&str, &Path)]) -> (i32, String) {
    let mut c = command(dir);
    c.args(["check", "--file", "helmfile.yaml", "--offline", "--no-cache"])
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .envs(env.iter().copied());
    let r = finish(&mut c, None);
    (r.code, r.stderr)
}

/// An operator with Helm 4 and the pinned helmfile 0.166 but without the front: helmfile would
/// die asking `helm version --client`; the gate says why and what to use, naming both versions.
/// Through the front (the other test) the same pair renders.
#[test]
fn helm_4_without_the_front_is_refused_naming_both_versions() {
    let stack = tempfile::tempdir().unwrap();
    copy_stack(stack.path());
    let helm = repo().join(".tools/libexec/helm");
    let helmfile = repo().join(".tools/bin/helmfile");
    let (code, err) = check_with(stack.path(), &[("NVCF_HELM", &helm), ("NVCF_HELMFILE", &helmfile)]);
    assert_eq!(code, 2, "{err}");
    for want in [
        "helmfile 0.166.0",
        "cannot drive helm 4.3.1",
        "unknown flag: --client",
        "helmfile 1.1 or newer",
        "ci/helm-front",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
}

/// A state helmfile 0.166 cannot read because it calls a template function 0.166 does not
/// define: exit 2 naming the function, the helmfile found and the helmfile 1.x it may need.
#[test]
fn a_state_needing_a_newer_helmfile_names_both_versions() {
    let stack = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(stack.path().join("charts/app/templates")).unwrap();
    std::fs::write(
        stack.path().join("charts/app/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        stack.path().join("helmfile.yaml.gotmpl"),
        "releases:\n  - name: app\n    namespace: apps\n    chart: ./charts/app\n    labels:\n      team: {{ notInHelmfile0 \"x\" }}\n",
    )
    .unwrap();
    let out = run_cached(
        stack.path(),
        &["check", "--file", "helmfile.yaml.gotmpl", "--offline", "--no-cache"],
    );
    let err = out.stderr;
    assert_eq!(out.code, 2, "{err}");
    for want in [
        "template function `notInHelmfile0`",
        "helmfile 0.166.0 does not define",
        "needs helmfile 1.1 or newer",
        "found helmfile 0.166.0",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }
}
