//! `nvcf-validate readiness -e ENV`: the waits that say an applied environment is serving, as
//! kubectl argument lines, from the objects the gate rendered for it (never a hand-kept list):
//!
//! 1. every cert-manager `ClusterIssuer`/`Issuer` the stack renders: `condition=Ready`;
//! 2. every `Certificate` it renders: `condition=Ready` (issued, Secret written);
//! 3. every router workload (`StatefulSet`/`Deployment`/`DaemonSet` running the router):
//!    `rollout status`.
//!
//! One command per line, arguments separated by single spaces (every token is a Kubernetes name,
//! kind or flag: `ci/apply` runs them as argument lists, never through a shell). Objects the
//! policy declares external are the operator's and are not waited for. Exit 2 when the
//! environment cannot be rendered or an object's name is not a Kubernetes name.

use crate::engine;
use crate::graph::Object;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The helmfile state (default: as helmfile finds it here).
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// The environment.
    #[arg(long = "environment", short = 'e')]
    pub environment: String,
    /// How long each wait may take (kubectl duration).
    #[arg(long, default_value = "600s")]
    pub timeout: String,
    /// Do not fetch remote charts.
    #[arg(long)]
    pub offline: bool,
    /// Render remote charts from tarballs in DIR.
    #[arg(long, value_name = "DIR")]
    pub chart_mirror: Option<PathBuf>,
}

/// A Kubernetes object name (DNS subdomain), as kubectl receives it.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

fn is_duration(s: &str) -> bool {
    let digits = s.trim_end_matches(['s', 'm', 'h']);
    !digits.is_empty() && digits.len() < s.len() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The wait lines for the objects of one rendered environment, in order.
pub fn plan(objects: &[&Object], routers: &[&Object], timeout: &str) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let mut push = |o: &Object, verb: &str| -> Result<(), String> {
        let ns = o.namespace.as_deref();
        for n in [Some(o.name.as_str()), ns].into_iter().flatten() {
            if !is_name(n) {
                return Err(format!("{}: {n:?} is not a Kubernetes name", o.display()));
            }
        }
        let kind = match (o.kind.as_str(), o.group()) {
            ("ClusterIssuer", g) => format!("clusterissuers.{g}"),
            ("Issuer", g) => format!("issuers.{g}"),
            ("Certificate", g) => format!("certificates.{g}"),
            ("StatefulSet", _) => "statefulset".into(),
            ("Deployment", _) => "deployment".into(),
            ("DaemonSet", _) => "daemonset".into(),
            (k, _) => return Err(format!("{}: no readiness wait for kind {k}", o.display())),
        };
        let ns_args = ns
            .filter(|_| o.kind != "ClusterIssuer")
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default();
        lines.push(match verb {
            "wait" => format!(
                "wait --for=condition=Ready --timeout={timeout}{ns_args} {kind}/{}",
                o.name
            ),
            _ => format!("rollout status --timeout={timeout}{ns_args} {kind}/{}", o.name),
        });
        Ok(())
    };
    for kind in ["ClusterIssuer", "Issuer", "Certificate"] {
        for o in objects
            .iter()
            .filter(|o| o.kind == kind && o.group() == "cert-manager.io")
        {
            push(o, "wait")?;
        }
    }
    for o in routers {
        push(o, "rollout")?;
    }
    Ok(lines)
}

pub fn run(a: &Args) -> i32 {
    if !is_duration(&a.timeout) {
        eprintln!(
            "nvcf-validate readiness: --timeout {:?} is not a duration like 600s, 10m",
            a.timeout
        );
        return 2;
    }
    let args = super::render_args(
        a.file.as_deref(),
        vec![a.environment.clone()],
        a.offline,
        a.chart_mirror.as_ref(),
    );
    let envs = match engine::check_graphs(&args) {
        Ok((_, e)) => e,
        Err(e) => {
            eprintln!(
                "nvcf-validate readiness: could not render {}: {e:#}",
                engine::describe(&args)
            );
            return 2;
        }
    };
    let Some(env) = envs.iter().find(|e| e.name == a.environment) else {
        eprintln!(
            "nvcf-validate readiness: environment {} was not rendered",
            a.environment
        );
        return 2;
    };
    let g = &env.graph;
    let objects: Vec<&Object> = g.objects.iter().filter(|o| !o.prov.external).collect();
    let mut routers: Vec<&Object> = Vec::new();
    for r in crate::router::routers(g) {
        if !routers.iter().any(|o| o.key() == r.obj.key()) {
            routers.push(r.obj);
        }
    }
    if routers.is_empty() {
        eprintln!(
            "nvcf-validate readiness: environment {} renders no router workload",
            a.environment
        );
        return 2;
    }
    match plan(&objects, &routers, &a.timeout) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("nvcf-validate readiness: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    const OBJECTS: &str = r#"
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: request-router, namespace: nvcf}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: openbao-pki}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: bootstrap-ca, namespace: openbao}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-waited, namespace: nvcf}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: request-router, namespace: nvcf}
"#;

    #[test]
    fn issuers_then_certificates_then_the_router() {
        let g = testkit::graph("e", OBJECTS);
        let all: Vec<&Object> = g.objects.iter().collect();
        let routers: Vec<&Object> = g.objects.iter().filter(|o| o.kind == "StatefulSet").collect();
        assert_eq!(
            plan(&all, &routers, "90s").unwrap(),
            [
                "wait --for=condition=Ready --timeout=90s clusterissuers.cert-manager.io/openbao-pki",
                "wait --for=condition=Ready --timeout=90s -n openbao issuers.cert-manager.io/bootstrap-ca",
                "wait --for=condition=Ready --timeout=90s -n nvcf certificates.cert-manager.io/request-router",
                "rollout status --timeout=90s -n nvcf statefulset/request-router",
            ]
        );
    }

    #[test]
    fn a_name_kubectl_would_read_as_more_than_a_name_is_refused() {
        let g = testkit::graph(
            "e",
            "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: 'a --all', namespace: nvcf}\n",
        );
        let all: Vec<&Object> = g.objects.iter().collect();
        assert!(plan(&all, &[], "90s").unwrap_err().contains("is not a Kubernetes name"));
        assert!(is_duration("10m") && is_duration("600s") && !is_duration("10") && !is_duration("$(x)s"));
    }
}
