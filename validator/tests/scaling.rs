//! Scaling the router (issue 26, docs/scaling.md), end to end on the real stack: a copy of the
//! repository's state, charts and values, with only the router's workload values changed, rendered
//! by the pinned helmfile/helm and judged by `nvcf-validate check` in all four environments.
//!
//! - Deployment mode (`router.workloadKind: Deployment`, one pod) and the autoscaler (maxReplicas 4
//!   and the largest the charts allow, 64) pass the gate: exit 0, nothing unwaived.
//! - `ci/per-pod-paths`, which follows the rendered objects independently of the rule, shows every
//!   pod the workload can run reached by exactly itself on gRPC and on QUIC (so a values edit that
//!   did not take effect cannot pass: the pod count is asserted from its table).
//! - Near misses fail with the exact rule: per-pod objects short of the autoscaler's maxReplicas
//!   (`worker-reaches-named-pod` for exactly the uncovered pods, both transports), per-pod QUIC
//!   Gateways short of it (QUIC only, only where workers are external), and a Deployment with two
//!   replicas (refused at render time, exit 2, naming the value to set).
//! - `ci/per-pod-paths` itself: its table for split-cluster agrees with the render read here, and
//!   it fails clearly on a defect (exit 1, the row marked), an unknown environment, a stack that does
//!   not render, and a missing pyyaml (exit 2 each, saying why).

mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use support::run::{run, unwaived_rules};
use support::{copy_dir, path_with_tools, repo, tool};

const ENVIRONMENTS: [&str; 4] = ["default", "split-cluster", "customer-issuer", "customer-secret"];
/// Workers are outside the cluster here: QUIC goes through one Gateway per pod.
const EXTERNAL: [&str; 3] = ["split-cluster", "customer-issuer", "customer-secret"];
/// As ci/consumers/check: after the notBefore (2026-12-01) of the re-issued example chains.
const NOW: &str = "2026-12-04T12:00:00Z";

/// A copy of the repository's stack (state, charts, values, policy, lock, ci scripts, examples).
fn stack_copy() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in ["helmfile.yaml", "charts.lock.yaml", "validator-policy.yaml"] {
        std::fs::copy(repo().join(f), d.path().join(f)).unwrap();
    }
    for dir in ["charts", "values", "ci", "examples"] {
        copy_dir(&repo().join(dir), &d.path().join(dir));
    }
    d
}

/// Replace the one occurrence of `old` in `dir/rel` by `new` (a panic when it is not there exactly
/// once, so a changed file cannot turn the edit into a no-op).
fn edit(dir: &Path, rel: &str, old: &str, new: &str) {
    let p = dir.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(text.matches(old).count(), 1, "{rel}: expected {old:?} exactly once");
    std::fs::write(&p, text.replacen(old, new, 1)).unwrap();
}

/// The router's workload values in values/base.yaml (every environment inherits them).
fn set_router(dir: &Path, kind: &str, replicas: u32, autoscale_max: Option<u32>) {
    edit(
        dir,
        "values/base.yaml",
        "  workloadKind: StatefulSet\n",
        &format!("  workloadKind: {kind}\n"),
    );
    edit(
        dir,
        "values/base.yaml",
        "  replicas: 2\n",
        &format!("  replicas: {replicas}\n"),
    );
    if let Some(max) = autoscale_max {
        edit(
            dir,
            "values/base.yaml",
            "  autoscaling:\n    enabled: false\n    minReplicas: 2\n    maxReplicas: 4\n",
            &format!("  autoscaling:\n    enabled: true\n    minReplicas: 2\n    maxReplicas: {max}\n"),
        );
    }
}

/// `nvcf-validate check` of every environment of the copy, offline, as JSON.
fn check(dir: &Path) -> (i32, Value, String) {
    let cache = dir.join(".cache");
    let r = run(
        dir,
        &["check", "--file", "helmfile.yaml", "--offline", "--format", "json"],
        &[("NVCF_VALIDATE_NOW", NOW), ("XDG_CACHE_HOME", cache.to_str().unwrap())],
        None,
    );
    let report = r.report().unwrap_or(Value::Null);
    (r.code, report, format!("{}{}", r.stdout, r.stderr))
}

/// The gate passes in all four environments, each with the router rendered.
fn assert_gate_passes(dir: &Path, what: &str) {
    let (code, report, out) = check(dir);
    assert_eq!(code, 0, "{what}: the gate fails:\n{out}");
    assert_eq!(unwaived_rules(&report), Vec::<String>::new(), "{what}");
    let envs: Vec<&str> = report["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(envs, ENVIRONMENTS, "{what}: every environment checked");
    for e in report["environments"].as_array().unwrap() {
        let router = e["releases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "request-router")
            .unwrap_or_else(|| panic!("{what}: no request-router release in {}", e["name"]));
        assert_eq!(router["rendered"], true, "{what}: {} router not rendered", e["name"]);
    }
}

/// One row of a ci/per-pod-paths table.
#[derive(Debug)]
struct Row {
    pod: String,
    transport: String,
    path: String,
    reaches: String,
}

/// Run ci/per-pod-paths of the stack in `dir` with `args`: exit code, stdout, stderr.
fn per_pod_paths(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(dir.join("ci/per-pod-paths"));
    c.args(args).env("PATH", path_with_tools());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run ci/per-pod-paths (python3)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The tables of ci/per-pod-paths output, per environment (`### env` headings).
fn tables(out: &str) -> Vec<(String, Vec<Row>)> {
    let mut t: Vec<(String, Vec<Row>)> = Vec::new();
    for line in out.lines() {
        if let Some(env) = line.strip_prefix("### ") {
            t.push((env.to_string(), Vec::new()));
        } else if line.starts_with("| request-router") {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 4, "a row has 4 columns: {line}");
            t.last_mut().expect("a row under a heading").1.push(Row {
                pod: cells[0].into(),
                transport: cells[1].into(),
                path: cells[2].into(),
                reaches: cells[3].into(),
            });
        }
    }
    t
}

/// ci/per-pod-paths finds pods request-router-0..pods-1 in every environment, each reached by
/// exactly itself on gRPC and QUIC (exit 0).
fn assert_each_pod_reaches_itself(dir: &Path, pods: usize, what: &str) {
    let (code, out, err) = per_pod_paths(dir, &[], &[]);
    assert_eq!(code, 0, "{what}: ci/per-pod-paths:\n{out}{err}");
    let t = tables(&out);
    assert_eq!(
        t.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>(),
        ENVIRONMENTS,
        "{what}"
    );
    for (env, rows) in &t {
        assert_eq!(rows.len(), 2 * pods, "{what} {env}: pods x transports:\n{out}");
        for i in 0..pods {
            let pod = format!("request-router-{i}");
            for transport in ["gRPC", "QUIC"] {
                let r = rows
                    .iter()
                    .find(|r| r.pod == pod && r.transport == transport)
                    .unwrap_or_else(|| panic!("{what} {env}: no {transport} row for {pod}"));
                assert_eq!(r.reaches, pod, "{what} {env}: {r:?}");
            }
        }
    }
}

#[test]
fn deployment_mode_passes_the_gate_in_every_environment() {
    let d = stack_copy();
    set_router(d.path(), "Deployment", 1, None);
    assert_gate_passes(d.path(), "Deployment, 1 replica");
    assert_each_pod_reaches_itself(d.path(), 1, "Deployment, 1 replica");
}

#[test]
fn autoscaled_router_passes_the_gate_in_every_environment() {
    // 4, and 64: the largest maxReplicas the charts' schemas allow (request-router and the
    // per-pod Gateways of gateway-routes).
    for max in [4, 64] {
        let d = stack_copy();
        set_router(d.path(), "StatefulSet", 2, Some(max));
        let what = format!("StatefulSet, autoscaler maxReplicas {max}");
        assert_gate_passes(d.path(), &what);
        assert_each_pod_reaches_itself(d.path(), max as usize, &what);
    }
    // One above the largest is refused by the chart's schema, naming the value.
    let d = stack_copy();
    set_router(d.path(), "StatefulSet", 2, Some(65));
    let (code, _, out) = check(d.path());
    assert_eq!(code, 2, "maxReplicas 65:\n{out}");
    assert!(out.contains("maxReplicas"), "maxReplicas 65: names the value:\n{out}");
}

/// The worker-reaches-named-pod findings of a report as (environment, pod, transport).
fn reach_findings(report: &Value) -> BTreeSet<(String, String, &'static str)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "worker-reaches-named-pod" && f["waived"].is_null())
        .map(|f| {
            let m = f["message"].as_str().unwrap();
            let pod = m
                .strip_prefix("pod ")
                .and_then(|s| s.split(' ').next())
                .unwrap_or_else(|| panic!("message names no pod first: {m}"));
            let transport = if m.contains("(gRPC :authority)") {
                "gRPC"
            } else if m.contains("QUIC dial address") {
                "QUIC"
            } else {
                panic!("message names no transport: {m}")
            };
            (
                f["environment"].as_str().unwrap().to_string(),
                pod.to_string(),
                transport,
            )
        })
        .collect()
}

fn expected(envs: &[&str], pods: &[&str], transports: &[&'static str]) -> BTreeSet<(String, String, &'static str)> {
    let mut s = BTreeSet::new();
    for e in envs {
        for p in pods {
            for t in transports {
                s.insert((e.to_string(), p.to_string(), *t));
            }
        }
    }
    s
}

#[test]
fn per_pod_objects_short_of_the_autoscaler_fire_worker_reaches_named_pod() {
    // The chart forgets the autoscaler when counting pods: per-pod Services and routes exist for
    // ordinals 0..replicas-1 only, while the HorizontalPodAutoscaler may run 4 pods.
    let d = stack_copy();
    set_router(d.path(), "StatefulSet", 2, Some(4));
    edit(
        d.path(),
        "charts/request-router/templates/_helpers.tpl",
        "{{- else if .Values.autoscaling.enabled -}}{{ max (int .Values.workload.replicas) (int .Values.autoscaling.maxReplicas) }}\n",
        "",
    );
    let (code, report, out) = check(d.path());
    assert_eq!(code, 1, "{out}");
    // gRPC: no route carries pods 2 and 3's names anywhere. QUIC: in the cluster the headless DNS
    // record still leads to the pod; outside, no UDPRoute names pods 2 and 3's dial hosts.
    let mut want = expected(&ENVIRONMENTS, &["request-router-2", "request-router-3"], &["gRPC"]);
    want.extend(expected(
        &EXTERNAL,
        &["request-router-2", "request-router-3"],
        &["QUIC"],
    ));
    assert_eq!(reach_findings(&report), want, "{out}");
    // The only other rule: worker-routes-complete (the Gateway answers 404 for the names).
    let others: BTreeSet<String> = unwaived_rules(&report)
        .into_iter()
        .filter(|r| r != "worker-reaches-named-pod")
        .collect();
    assert_eq!(others, BTreeSet::from(["worker-routes-complete".to_string()]), "{out}");

    // ci/per-pod-paths sees the same defect on its own: exit 1, pods 2 and 3's gRPC rows marked.
    let (code, text, err) = per_pod_paths(d.path(), &["-e", "default"], &[]);
    assert_eq!(code, 1, "{text}{err}");
    let t = tables(&text);
    assert_eq!(t.len(), 1);
    for r in &t[0].1 {
        let uncovered = r.transport == "gRPC" && (r.pod == "request-router-2" || r.pod == "request-router-3");
        if uncovered {
            assert!(r.path.ends_with("→ no GRPCRoute"), "{r:?}");
            assert_eq!(r.reaches, "none **(not exactly its pod)**", "{r:?}");
        } else {
            assert_eq!(r.reaches, r.pod, "{r:?}");
        }
    }
    assert_eq!(t[0].1.len(), 8, "{text}");
}

#[test]
fn quic_gateways_short_of_the_autoscaler_fire_only_where_workers_are_external() {
    // The environment wiring forgets the autoscaler when counting the per-pod QUIC Gateways:
    // UDPRoutes of pods 2 and 3 have no Gateway (external workers); in-cluster workers dial the
    // headless DNS names and are unaffected.
    let d = stack_copy();
    set_router(d.path(), "StatefulSet", 2, Some(4));
    edit(
        d.path(),
        "values/releases/gateway-routes.yaml.gotmpl",
        "{{ else if $r.autoscaling.enabled }}{{ max (int $r.replicas) (int $r.autoscaling.maxReplicas) }}",
        "",
    );
    let (code, report, out) = check(d.path());
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        reach_findings(&report),
        expected(&EXTERNAL, &["request-router-2", "request-router-3"], &["QUIC"]),
        "{out}"
    );
}

#[test]
fn a_deployment_with_two_replicas_is_refused_at_render_time() {
    let d = stack_copy();
    set_router(d.path(), "Deployment", 2, None);
    let (code, _, out) = check(d.path());
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("workload.kind=Deployment runs exactly one pod") && out.contains("set workload.replicas=1"),
        "names the cause and the fix:\n{out}"
    );
}

/// The rendered objects of `env` of the repository's stack (local releases), read here.
fn render(env: &str) -> Vec<Value> {
    let out = Command::new(tool("helmfile"))
        .current_dir(repo())
        .env("PATH", path_with_tools())
        .args(["--file", "helmfile.yaml", "--environment", env, "--no-color"])
        .args([
            "--selector",
            "name!=cert-manager,name!=openbao",
            "template",
            "--skip-deps",
        ])
        .output()
        .expect("run helmfile");
    assert!(
        out.status.success(),
        "helmfile -e {env}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    nvcf_validate::yaml::documents(&String::from_utf8(out.stdout).unwrap())
        .expect("rendered YAML parses")
        .into_iter()
        .map(|d| d.value)
        .filter(|v| v.is_object())
        .collect()
}

fn arg<'a>(w: &'a Value, flag: &str) -> &'a str {
    w["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str()?.strip_prefix(flag)?.strip_prefix('='))
        .next()
        .unwrap_or_else(|| panic!("router has no {flag}"))
}

fn named<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no rendered {kind} {name}"))
}

#[test]
fn per_pod_paths_table_agrees_with_the_render() {
    let env = "split-cluster";
    let (code, out, err) = per_pod_paths(&repo(), &["-e", env], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let t = tables(&out);
    assert_eq!(t.len(), 1, "{out}");
    assert_eq!(t[0].0, env);
    let rows = &t[0].1;

    let objs = render(env);
    let sts = named(&objs, "StatefulSet", "request-router");
    let ns = sts["metadata"]["namespace"].as_str().unwrap();
    let replicas = sts["spec"]["replicas"].as_u64().unwrap() as usize;
    assert!(replicas >= 2, "the stack runs several router pods");
    assert_eq!(rows.len(), 2 * replicas, "{out}");
    let template = arg(sts, "--advertised-hostname-template");
    let dial = arg(sts, "--reverse-tunnel-pylon-dial-addr");
    let (dial_host, dial_port) = dial.rsplit_once(':').unwrap();
    for i in 0..replicas {
        let pod = format!("request-router-{i}");
        let row = |transport: &str| {
            rows.iter()
                .find(|r| r.pod == pod && r.transport == transport)
                .unwrap_or_else(|| panic!("no {transport} row for {pod}:\n{out}"))
        };
        // The Service a backendRef names must select this pod alone (by the StatefulSet's label).
        let selects_pod = |svc: &str| {
            let s = named(&objs, "Service", svc);
            assert_eq!(
                s["spec"]["selector"]["statefulset.kubernetes.io/pod-name"], pod,
                "Service {svc} selects {pod}"
            );
        };

        // gRPC: the GRPCRoute whose hostname is the pod's advertised name, and its Service.
        let advertised = template.replace("{pod_name}", &pod).replace("{namespace}", ns);
        let route = objs
            .iter()
            .find(|o| {
                o["kind"] == "GRPCRoute"
                    && o["spec"]["hostnames"]
                        .as_array()
                        .is_some_and(|h| h.iter().any(|h| h == advertised.as_str()))
            })
            .unwrap_or_else(|| panic!("no GRPCRoute names {advertised}"));
        let backend = &route["spec"]["rules"][0]["backendRefs"][0];
        let svc = backend["name"].as_str().unwrap();
        selects_pod(svc);
        let g = row("gRPC");
        let hop = format!(
            "GRPCRoute {} → Service {svc}:{}",
            route["metadata"]["name"].as_str().unwrap(),
            backend["port"]
        );
        assert!(g.path.starts_with(&format!(":authority {advertised} → ")), "{g:?}");
        assert!(g.path.contains(&hop), "{g:?} lacks {hop}");
        assert_eq!(g.reaches, pod);

        // QUIC: the UDPRoute named for DNS by the pod's dial host, its Gateway and Service.
        let host = dial_host.replace("$(POD_NAME)", &pod).replace("$(POD_NAMESPACE)", ns);
        let udp = objs
            .iter()
            .find(|o| {
                o["kind"] == "UDPRoute"
                    && o["metadata"]["annotations"]["external-dns.alpha.kubernetes.io/hostname"] == host.as_str()
            })
            .unwrap_or_else(|| panic!("no UDPRoute named for {host}"));
        let parent = &udp["spec"]["parentRefs"][0];
        let gw = named(&objs, "Gateway", parent["name"].as_str().unwrap());
        let section = parent["sectionName"].as_str().unwrap();
        let listener = gw["spec"]["listeners"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == section)
            .unwrap();
        assert_eq!(listener["protocol"], "UDP");
        assert_eq!(listener["port"].to_string(), dial_port);
        let backend = &udp["spec"]["rules"][0]["backendRefs"][0];
        let svc = backend["name"].as_str().unwrap();
        selects_pod(svc);
        let q = row("QUIC");
        let hop = format!(
            "DNS {host} → Gateway {} listener {section} UDP:{dial_port} → UDPRoute {} → Service {svc}:{}",
            gw["metadata"]["name"].as_str().unwrap(),
            udp["metadata"]["name"].as_str().unwrap(),
            backend["port"]
        );
        assert_eq!(q.path, format!("dial {host}:{dial_port} → {hop}"), "{q:?}");
        assert_eq!(q.reaches, pod);
    }
}

#[test]
fn per_pod_paths_fails_clearly_on_bad_input() {
    // An environment the stack does not declare: argparse's usage error, exit 2.
    let (code, out, err) = per_pod_paths(&repo(), &["-e", "nonsense"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("invalid choice: 'nonsense'"), "{err}");
    assert!(out.is_empty(), "no table: {out}");

    // A stack that does not render: exit 2 with helmfile's reason (the chart's message).
    let d = stack_copy();
    set_router(d.path(), "Deployment", 2, None);
    let (code, out, err) = per_pod_paths(d.path(), &["-e", "default"], &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("ci/per-pod-paths: helmfile -e default template failed")
            && err.contains("workload.kind=Deployment runs exactly one pod"),
        "{err}"
    );
    assert!(out.is_empty(), "no table: {out}");

    // Without pyyaml (a module `yaml` that cannot be imported shadows it): exit 2, saying so.
    let shadow = tempfile::tempdir().unwrap();
    std::fs::write(
        shadow.path().join("yaml.py"),
        "raise ImportError('no pyyaml in this test')\n",
    )
    .unwrap();
    let (code, out, err) = per_pod_paths(
        &repo(),
        &["-e", "default"],
        &[("PYTHONPATH", shadow.path().to_str().unwrap())],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("needs the Python package pyyaml"), "{err}");
}
