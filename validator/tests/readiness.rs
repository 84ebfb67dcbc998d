//! `nvcf-validate readiness`: the waits ci/apply runs after the install, from the objects the
//! gate renders for each environment of the real stack (pinned helm/helmfile, offline: the
//! issuers, Certificates and the router come from this stack's local charts).

mod support;

use support::run::{run, Run};

fn readiness(env: &str) -> Run {
    let cache = tempfile::tempdir().unwrap();
    run(
        &support::repo(),
        &[
            "readiness",
            "--file",
            "helmfile.yaml",
            "--offline",
            "--timeout",
            "120s",
            "-e",
            env,
        ],
        &[("XDG_CACHE_HOME", cache.path().to_str().unwrap())],
        None,
    )
}

#[test]
fn every_environment_waits_for_its_issuers_certificates_and_router() {
    for env in ["default", "split-cluster", "customer-issuer", "customer-secret"] {
        let Run {
            code,
            stdout: out,
            stderr: err,
        } = readiness(env);
        assert_eq!(code, 0, "{env}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        // The router's rollout is the last wait, after every issuer and Certificate.
        assert_eq!(
            lines.last().copied(),
            Some("rollout status --timeout=120s -n nvcf statefulset/request-router"),
            "{env}: {out}"
        );
        let certs = lines
            .iter()
            .filter(|l| l.contains(" certificates.cert-manager.io/"))
            .count();
        let first_rollout = lines.iter().position(|l| l.starts_with("rollout")).unwrap();
        assert!(lines[..first_rollout]
            .iter()
            .all(|l| l.starts_with("wait --for=condition=Ready --timeout=120s ")));
        match env {
            // No Certificate is rendered when the customer writes the Secrets.
            "customer-secret" => assert_eq!(certs, 0, "{out}"),
            _ => assert!(
                lines
                    .iter()
                    .any(|l| l.ends_with(" -n nvcf certificates.cert-manager.io/request-router")),
                "{env}: {out}"
            ),
        }
        if env == "default" || env == "split-cluster" {
            assert!(
                lines.iter().any(|l| l.contains(" clusterissuers.cert-manager.io/")),
                "{env}: {out}"
            );
        }
        // Every token is one kubectl argument: nothing a shell or kubectl could read as more.
        for l in &lines {
            assert!(
                l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b" -=./:".contains(&b) || b == b'R'),
                "{l}"
            );
        }
    }
}
