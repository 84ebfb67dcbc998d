//! What CI runs is pinned and portable (issue #13): every action of the pull-request workflow
//! is pinned by a full commit SHA (a tag can be moved under us), and the CI scripts find the
//! binaries where cargo puts them (`CARGO_TARGET_DIR`, `build.target-dir`), not in ./target.
//! (Running the scripts themselves here would need a second cargo on the target dir this test
//! binary's cargo holds locked; `CARGO_TARGET_DIR=/elsewhere ./ci/validate` is checked by hand,
//! see the commit.)

mod support;
use support::repo;

use serde_json::Value;

#[test]
fn workflow_actions_are_pinned_by_commit_sha() {
    let text = std::fs::read_to_string(repo().join("ci/github-workflow.yaml")).unwrap();
    let wf: Value = nvcf_validate::yaml::from_str(&text).expect("the workflow parses");
    let mut uses = Vec::new();
    for (job, j) in wf["jobs"].as_object().expect("jobs") {
        for step in j["steps"].as_array().expect("steps") {
            if let Some(u) = step["uses"].as_str() {
                uses.push((job.clone(), u.to_string()));
            }
        }
    }
    assert!(
        uses.len() >= 3,
        "the workflow uses checkout, a toolchain and the SARIF upload: {uses:?}"
    );
    for (job, u) in &uses {
        let (action, rev) = u
            .split_once('@')
            .unwrap_or_else(|| panic!("job {job}: {u} has no @ref"));
        assert!(
            rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "job {job}: {action} is pinned by {rev:?}, not by a full commit SHA"
        );
        // The release the SHA was read from is named beside it, for the next update.
        let line = text.lines().find(|l| l.contains(u.as_str())).unwrap();
        assert!(line.contains(" # "), "job {job}: {u} needs a `# <tag>` comment");
    }
}

#[test]
fn ci_scripts_find_binaries_where_cargo_puts_them() {
    for script in ["ci/validate", "ci/test", "ci/bench", "ci/apply"] {
        let text = std::fs::read_to_string(repo().join(script)).unwrap();
        let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
        for l in &code {
            assert!(
                !l.contains("target/debug") && !l.contains("target/release"),
                "{script} hard-codes the target directory (breaks with CARGO_TARGET_DIR): {l}"
            );
        }
        let runs_binary = code.iter().any(|l| l.contains("/debug/") || l.contains("/release/"));
        if runs_binary {
            assert!(
                code.iter().any(|l| l.contains("cargo metadata"))
                    && code.iter().any(|l| l.contains("target_directory")),
                "{script} runs a built binary without asking cargo where the target directory is"
            );
        }
    }
}

/// The pinned helm is Helm 4 (ci/tools.lock), which refuses the version call helmfile 0.166 makes
/// before every run; the front ci/setup installs as .tools/bin/helm answers exactly that call with
/// a Helm 3 version helmfile accepts (naming the real one) and hands everything else to the real
/// helm in .tools/libexec. Every render test drives helmfile through it.
#[test]
fn the_helm_front_answers_helmfiles_version_call_for_helm_4() {
    let lock = std::fs::read_to_string(repo().join("ci/tools.lock")).unwrap();
    let pinned = lock
        .lines()
        .find_map(|l| l.strip_prefix("HELM_VERSION="))
        .expect("ci/tools.lock has HELM_VERSION");
    assert!(pinned.starts_with("v4."), "the pinned helm is Helm 4: {pinned}");
    let run = |bin: &str, args: &[&str]| {
        let out = std::process::Command::new(repo().join(bin))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // The real Helm 4 refuses helmfile 0.166's call: the reason for the front.
    let (ok, _, err) = run(".tools/libexec/helm", &["version", "--client", "--short"]);
    assert!(!ok && err.contains("unknown flag: --client"), "{err}");
    let (ok, real, _) = run(".tools/bin/helm", &["version", "--short"]);
    assert!(
        ok && real.starts_with(&format!("{pinned}+")),
        "front passes through: {real}"
    );
    let (ok, answer, _) = run(".tools/bin/helm", &["version", "--client", "--short"]);
    assert!(ok, "the front answers helmfile's call");
    assert_eq!(
        answer,
        format!("v3.99.0+helm-{}", real.trim_start_matches('v').replace('+', "-"))
    );
}
