//! The router's pods as the gate counts and names them (issue 26): what `{pod_name}` stands for
//! (`pod_name_of`), how many pods a workload can run (`pod_count`, autoscalers included), each
//! pod's name and labels, and the names the pods advertise. Each case has a near miss beside it
//! (another namespace, kind or name; a Deployment beside a StatefulSet), so a changed condition
//! changes a result.

use super::*;
use crate::testkit;
use serde_json::json;

fn router_graph(yaml: &str) -> Graph {
    testkit::graph("default", yaml)
}

fn only_router(g: &Graph) -> RouterWorkload<'_> {
    let mut all = routers(g);
    assert_eq!(all.len(), 1, "one router container");
    all.remove(0)
}

fn workload(kind: &str, name: &str, replicas: Option<u64>, env: Value, args: Value) -> String {
    let replicas = replicas.map(|r| format!("  replicas: {r}\n")).unwrap_or_default();
    format!(
        "apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: nvcf}}\nspec:\n{replicas}  template:\n    \
         metadata: {{labels: {{app: r}}}}\n    spec:\n      containers:\n        - name: router\n          \
         env: {env}\n          args: {args}\n"
    )
}

fn hpa(ns: &str, kind: &str, name: &str, max: u64) -> String {
    let id = format!("h-{ns}-{kind}-{name}").to_lowercase();
    format!(
        "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: {id}, namespace: {ns}}}\n\
         spec: {{scaleTargetRef: {{apiVersion: apps/v1, kind: {kind}, name: {name}}}, minReplicas: 1, maxReplicas: {max}}}\n"
    )
}

#[test]
fn pod_name_comes_from_env_pod_name() {
    let of = |env: Value| pod_name_of(None, "nvcf", &json!({"name": "c", "env": env}));
    assert_eq!(of(json!([])), PodName::PerPod, "not set: the router's own pod name");
    let field = json!([{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]);
    assert_eq!(of(field), PodName::PerPod, "the downward API's metadata.name");
    assert_eq!(
        of(json!([{"name": "POD_NAME", "value": "router-a"}])),
        PodName::Literal("router-a".into())
    );
    let from_secret = json!([{"name": "POD_NAME", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]);
    match of(from_secret) {
        PodName::Unknown(why) => assert!(why.starts_with("POD_NAME: ") && why.contains("Secret"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Not set, but an envFrom source the gate cannot read may set it.
    let c = json!({"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]});
    match pod_name_of(None, "nvcf", &c) {
        PodName::Unknown(why) => assert!(why.starts_with("POD_NAME may come from"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pod_count_is_replicas_or_the_largest_autoscaler_of_that_workload() {
    let sts = workload("StatefulSet", "r", Some(3), json!([]), json!(["--tls-cert-path=/c"]));
    let count = |extra: &str| {
        let g = router_graph(&format!("{sts}{extra}"));
        let obj = g.objects.iter().find(|o| o.kind == "StatefulSet").unwrap();
        pod_count(&g, obj)
    };
    assert_eq!(count(""), 3);
    // Near misses that target another workload count nothing: another namespace, another kind
    // with the same name, the same kind with another name.
    let near = [
        hpa("other", "StatefulSet", "r", 9),
        hpa("nvcf", "Deployment", "r", 8),
        hpa("nvcf", "StatefulSet", "r2", 7),
    ]
    .concat();
    assert_eq!(count(&near), 3, "autoscalers of other workloads");
    assert_eq!(count(&format!("{near}{}", hpa("nvcf", "StatefulSet", "r", 5))), 5);
    assert_eq!(
        count(&hpa("nvcf", "StatefulSet", "r", 2)),
        3,
        "replicas above maxReplicas"
    );
    // No replicas: Kubernetes' default of one.
    let g = router_graph(&workload(
        "Deployment",
        "d",
        None,
        json!([]),
        json!(["--tls-cert-path=/c"]),
    ));
    assert_eq!(pod_count(&g, &g.objects[0]), 1);
}

#[test]
fn pod_names_and_labels_of_a_statefulset_and_of_a_deployment() {
    let g = router_graph(&format!(
        "{}---\n{}",
        workload("StatefulSet", "s", Some(2), json!([]), json!(["--tls-cert-path=/c"])),
        workload("Deployment", "d", Some(1), json!([]), json!(["--tls-cert-path=/c"]))
    ));
    let sts = g.objects.iter().find(|o| o.kind == "StatefulSet").unwrap();
    let dep = g.objects.iter().find(|o| o.kind == "Deployment").unwrap();
    assert_eq!(pod_name(sts, &PodName::PerPod, 1).as_deref(), Some("s-1"));
    assert_eq!(
        pod_name(dep, &PodName::PerPod, 0),
        None,
        "a Deployment's pods get generated names"
    );
    let lit = PodName::Literal("s-0".into());
    assert_eq!(pod_name(dep, &lit, 0).as_deref(), Some("s-0"));
    assert_eq!(
        pod_name(sts, &lit, 1).as_deref(),
        Some("s-0"),
        "a literal is every pod's name"
    );
    assert_eq!(pod_name(sts, &PodName::Unknown("x".into()), 0), None);

    let labels = pod_labels(sts, 1);
    assert_eq!(labels.get("app"), Some(&json!("r")));
    assert_eq!(labels.get(STATEFULSET_POD_NAME_LABEL), Some(&json!("s-1")));
    assert_eq!(labels.get(STATEFULSET_POD_INDEX_LABEL), Some(&json!("1")));
    assert_eq!(labels.len(), 3);
    let labels = pod_labels(dep, 0);
    assert_eq!(labels.len(), 1, "only the template's labels: {labels:?}");
    assert_eq!(labels.get("app"), Some(&json!("r")));
}

#[test]
fn a_router_flag_written_where_parsing_stopped_still_identifies_the_container() {
    let g = router_graph(&workload(
        "Deployment",
        "d",
        Some(1),
        json!([]),
        json!(["serve", "--tls-cert-path=/c"]),
    ));
    let r = only_router(&g);
    assert!(r.flags.is_empty(), "{:?}", r.flags);
    assert_eq!(r.ignored, vec![(TLS_CERT_PATH.to_string(), "serve".to_string())]);
}

#[test]
fn advertised_names_per_pod_up_to_the_autoscaler() {
    let names = |kind: &str, replicas: u64, env: Value, template: &str, extra: &str| {
        let args = json!([format!("--advertised-hostname-template={template}")]);
        let g = router_graph(&format!("{}{extra}", workload(kind, "r", Some(replicas), env, args)));
        let r = only_router(&g);
        advertised_names(&g, &r)
    };
    let t = "{pod_name}.H.{namespace}.svc";
    assert_eq!(
        names("StatefulSet", 2, json!([]), t, ""),
        ["r-0.h.nvcf.svc", "r-1.h.nvcf.svc"]
    );
    assert_eq!(
        names("StatefulSet", 1, json!([]), t, &hpa("nvcf", "StatefulSet", "r", 3)),
        ["r-0.h.nvcf.svc", "r-1.h.nvcf.svc", "r-2.h.nvcf.svc"]
    );
    // A template without {pod_name}: one name for every pod.
    assert_eq!(
        names("StatefulSet", 3, json!([]), "Router.{namespace}.svc", ""),
        ["router.nvcf.svc"]
    );
    // An empty template advertises nothing.
    assert_eq!(names("StatefulSet", 2, json!([]), "", ""), Vec::<String>::new());
    // A Deployment: no name the render decides, unless POD_NAME is a literal (the same in each pod).
    assert_eq!(names("Deployment", 1, json!([]), t, ""), Vec::<String>::new());
    let lit = json!([{"name": "POD_NAME", "value": "r-0"}]);
    assert_eq!(names("Deployment", 3, lit, t, ""), ["r-0.h.nvcf.svc"]);
    // The count read from the input is bounded.
    assert_eq!(
        names("StatefulSet", 1_000_000, json!([]), t, "").len() as u64,
        MAX_REPLICAS_CHECKED
    );
}
