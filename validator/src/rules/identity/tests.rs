//! Tests of the identity family: the fixtures under `tests/fixtures/identity/` (each firing fixture
//! must make the rule fire with the `# expect:` texts of its header, each silent one must leave it
//! silent), and the bound on the work a replica count read from the input can cause.

use super::*;
use crate::testkit::{check_fixtures, Silent};

#[test]
fn fixtures_fire_and_stay_silent() {
    check_fixtures("identity", RULES, Silent::Rule);
}

#[test]
fn a_huge_autoscaler_is_judged_by_the_graph_not_by_its_number() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/identity/silent-worker-reaches-named-pod-per-pod.yaml"),
    )
    .unwrap();
    let hpa = "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: request-router, namespace: nvcf}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: request-router}\n  minReplicas: 2\n  maxReplicas: 4000000000\n";
    let g = crate::testkit::graph("split-cluster", &format!("{base}{hpa}"));
    let started = std::time::Instant::now();
    let f = worker_reaches_named_pod::check_graph(&g);
    // Not a speed assertion: the count is only ever compared, so this returns at all.
    let _ = started.elapsed();
    assert!(
        f.iter().any(|f| f.message.contains("can run 4000000000 pods")),
        "{:#?}",
        f.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    assert!(f.len() <= 3 * 4 + 1, "{}", f.len());
}

/// A Service that selects more pods than a message names: the first four are named and the rest
/// counted (six pods: four Services of their own, so all six are judged one by one).
#[test]
fn a_shared_service_names_four_pods_and_counts_the_rest() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/identity/fires-worker-reaches-named-pod-shared-service.yaml"),
    )
    .unwrap()
    .replace("replicas: 2", "replicas: 6");
    let more: String = (2..4)
        .map(|i| {
            format!("---\napiVersion: v1\nkind: Service\nmetadata: {{name: request-router-{i}, namespace: nvcf}}\nspec:\n  selector: {{statefulset.kubernetes.io/pod-name: request-router-{i}}}\n  ports: [{{name: grpc, port: 50071}}]\n")
        })
        .collect();
    let g = crate::testkit::graph("split-cluster", &format!("{base}{more}"));
    let f = worker_reaches_named_pod::check_graph(&g);
    let names = "which selects 6 pods (pod request-router-0, pod request-router-1, pod request-router-2, pod \
                 request-router-3 and 2 more)";
    let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
    assert!(shown.iter().any(|m| m.contains(names)), "{shown:#?}");
    // Six failing gRPC legs: four shown, the last of them counting the other two; a leg of four
    // failing pods (QUIC: pods 2 to 5 have no UDPRoute) is shown whole with no count.
    let counted: Vec<&&str> = shown.iter().filter(|m| m.contains(" more pods of ")).collect();
    assert_eq!(counted.len(), 1, "{shown:#?}");
    assert!(
        counted[0].ends_with("(and 2 more pods of StatefulSet nvcf/request-router like it)"),
        "{shown:#?}"
    );
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/identity")
            .join(name),
    )
    .unwrap()
}

fn messages(f: &[crate::finding::Finding]) -> Vec<&str> {
    f.iter().map(|f| f.message.as_str()).collect()
}

/// An exact route hostname wins over a wildcard of the same length (the wildcard's `*` standing
/// for a one-letter label): Gateway API ranks exact before wildcard whatever the length.
#[test]
fn an_exact_hostname_wins_over_a_wildcard_of_the_same_length() {
    let yaml = fixture("silent-worker-reaches-named-pod-exact-route-wins.yaml")
        .replace("template={pod_name}.router", "template=x.{pod_name}.router")
        .replace(
            "\"request-router-0.router.nvcf.example.com\"",
            "\"x.request-router-0.router.nvcf.example.com\"",
        )
        .replace(
            "\"request-router-1.router.nvcf.example.com\"",
            "\"x.request-router-1.router.nvcf.example.com\"",
        )
        .replace(
            "\"*.router.nvcf.example.com\"",
            "\"*.request-router-0.router.nvcf.example.com\"",
        );
    let g = crate::testkit::graph("split-cluster", &yaml);
    let f = worker_reaches_named_pod::check_graph(&g);
    assert!(f.is_empty(), "{:#?}", messages(&f));
    // The near miss: without the exact route, the wildcard wins and leads to the shared Service.
    let yaml = yaml.replace(
        "\"x.request-router-0.router.nvcf.example.com\"",
        "\"y.request-router-0.router.nvcf.example.com\"",
    );
    let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
    assert_eq!(messages(&f).len(), 1, "{:#?}", messages(&f));
    assert!(
        f[0].message
            .contains("to Service nvcf/request-router, which selects 2 pods"),
        "{:#?}",
        messages(&f)
    );
}

/// The pods judged one by one are one more than the namespace's Services: with 3 Services, 4 pods
/// are each judged and a fifth is reported as beyond what the Services can give their own name.
#[test]
fn pods_beyond_the_services_plus_one_are_counted() {
    let base = fixture("fires-worker-reaches-named-pod-shared-service.yaml");
    for (replicas, beyond) in [(4, false), (5, true)] {
        let yaml = base.replace("replicas: 2", &format!("replicas: {replicas}"));
        let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
        let counted = f.iter().any(|f| {
            f.message
                .contains(&format!("can run {replicas} pods (replicas {replicas})"))
        });
        assert_eq!(counted, beyond, "replicas {replicas}: {:#?}", messages(&f));
    }
}

/// Only Deployments' and StatefulSets' pods are addressed by name: the same pods under a bare
/// ReplicaSet (what a Deployment owns, never written by a chart for the router) are not judged.
#[test]
fn a_bare_replica_set_is_not_judged() {
    let deployment = fixture("fires-worker-reaches-named-pod-deployment-two-pods.yaml");
    let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &deployment));
    assert!(
        f.iter().any(|f| f
            .message
            .starts_with("Deployment nvcf/request-router advertises one QUIC dial address")),
        "{:#?}",
        messages(&f)
    );
    let yaml = deployment
        .replace("kind: Deployment\n", "kind: ReplicaSet\n")
        .replace("  strategy: {type: Recreate}\n", "");
    let g = crate::testkit::graph("split-cluster", &yaml);
    assert_eq!(g.of("apps", "ReplicaSet").count(), 1);
    let f = worker_reaches_named_pod::check_graph(&g);
    assert!(f.is_empty(), "{:#?}", messages(&f));
}

fn documents(yaml: &str) -> Vec<String> {
    yaml.split("\n---\n").map(str::to_string).collect()
}

fn check_documents(docs: &[String]) -> Vec<crate::finding::Finding> {
    worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &docs.join("\n---\n")))
}

/// Which route wins a name does not depend on the order the routes are rendered in: a wildcard
/// after the exact routes still loses, and two exact routes for one name are a tie (the one to the
/// shared Service is reported) whichever comes first.
#[test]
fn route_precedence_does_not_depend_on_the_order_of_routes() {
    let mut docs = documents(&fixture("silent-worker-reaches-named-pod-exact-route-wins.yaml"));
    let i = docs
        .iter()
        .position(|d| d.contains("name: request-router-worker-grpc\n"))
        .unwrap();
    let wildcard = docs.remove(i);
    docs.push(wildcard.clone());
    let f = check_documents(&docs);
    assert!(f.is_empty(), "{:#?}", messages(&f));
    let tie = wildcard
        .replace("name: request-router-worker-grpc\n", "name: request-router-0-shared\n")
        .replace(
            "    - \"grpc.nvcf.example.com\"\n    - \"*.router.nvcf.example.com\"\n",
            "    - \"request-router-0.router.nvcf.example.com\"\n",
        );
    let own = docs
        .iter()
        .position(|d| d.contains("name: request-router-0-worker-grpc\n"))
        .unwrap();
    for at in [own, own + 1] {
        let mut docs = docs.clone();
        docs.insert(at, tie.clone());
        let f = check_documents(&docs);
        assert!(
            f.iter().any(|f| f.message.starts_with(
                "GRPCRoute nvcf/request-router-0-shared carries the advertised name request-router-0.router.nvcf.example.com"
            )),
            "tie at {at}: {:#?}",
            messages(&f)
        );
    }
}

/// Only the listeners that take the gRPC dial address (HTTPS, its port, its host) decide where a
/// pod's name goes: a route for pod 0's name to the shared Service on an HTTPS listener of another
/// port is not one workers use.
#[test]
fn routes_on_listeners_of_another_port_do_not_compete() {
    let other = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: other, namespace: nvcf-gateway}\nspec:\n  gatewayClassName: envoy\n  listeners:\n    - name: alt\n      protocol: HTTPS\n      port: 8443\n      hostname: \"*.nvcf.example.com\"\n      tls: {mode: Terminate, certificateRefs: [{name: worker-grpc-tls}]}\n      allowedRoutes: {kinds: [{kind: GRPCRoute}], namespaces: {from: All}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: alt-shared, namespace: nvcf}\nspec:\n  parentRefs: [{name: other, namespace: nvcf-gateway, sectionName: alt}]\n  hostnames: [\"request-router-0.router.nvcf.example.com\"]\n  rules:\n    - backendRefs: [{name: request-router, port: 50071}]\n";
    let base = fixture("silent-worker-reaches-named-pod-exact-route-wins.yaml");
    let f = check_documents(&[base.clone(), other.to_string()]);
    assert!(f.is_empty(), "{:#?}", messages(&f));
    // The near miss: the same listener on the dial port competes, and ties with pod 0's own route.
    let f = check_documents(&[base, other.replace("port: 8443", "port: 443")]);
    assert!(
        f.iter()
            .any(|f| f.message.starts_with("GRPCRoute nvcf/alt-shared carries")),
        "{:#?}",
        messages(&f)
    );
}

/// Each leg's finding says how to fix it: for gRPC a Service per pod selected by its pod name and a
/// route for its advertised name, for QUIC a per-pod dial address.
#[test]
fn each_leg_says_how_to_fix_it() {
    for (name, help) in [
        (
            "fires-worker-reaches-named-pod-shared-service.yaml",
            "statefulset.kubernetes.io/pod-name: <pod>",
        ),
        (
            "fires-worker-reaches-named-pod-shared-quic-dial.yaml",
            "Advertise a per-pod QUIC dial address",
        ),
    ] {
        let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &fixture(name)));
        assert!(
            f.iter().any(|f| f.help.as_deref().is_some_and(|h| h.contains(help))),
            "{name}: {:#?}",
            f.iter().map(|f| &f.help).collect::<Vec<_>>()
        );
    }
}

/// One QUIC dial address for all pods is one finding however many pods share it; for a single pod,
/// a dial host the gate cannot follow is left to worker-routes-complete.
#[test]
fn a_shared_quic_dial_address_is_one_finding_and_one_pod_is_not_judged_by_it() {
    let base = fixture("fires-worker-reaches-named-pod-shared-quic-dial.yaml");
    let shared = "StatefulSet nvcf/request-router advertises one QUIC dial address";
    let yaml = base.replace("replicas: 2", "replicas: 3");
    let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
    assert_eq!(
        f.iter().filter(|f| f.message.starts_with(shared)).count(),
        1,
        "{:#?}",
        messages(&f)
    );
    let yaml = base.replace("replicas: 2", "replicas: 1");
    let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
    assert!(f.is_empty(), "{:#?}", messages(&f));
}

/// A QUIC dial address naming the pod's own Service by cluster DNS leads to that pod in each form
/// the cluster resolves: `<service>.<ns>.svc.cluster.local`, `<service>.<ns>` and `<service>`.
#[test]
fn each_cluster_dns_form_of_a_per_pod_service_is_followed() {
    let base = fixture("silent-worker-reaches-named-pod-in-cluster-headless.yaml");
    let headless = "$(POD_NAME).request-router-headless.$(POD_NAMESPACE).svc.cluster.local:50072";
    assert!(base.contains(headless));
    for dial in [
        "$(POD_NAME).$(POD_NAMESPACE).svc.cluster.local:50072",
        "$(POD_NAME).$(POD_NAMESPACE):50072",
        "$(POD_NAME):50072",
    ] {
        let yaml = base.replace(headless, dial);
        let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
        assert!(f.is_empty(), "{dial}: {:#?}", messages(&f));
    }
}

/// A UDPRoute that names the dial host leads there only through a UDP listener of the dial port:
/// the same routes on listeners of another port take no traffic for it.
#[test]
fn udp_routes_count_only_on_listeners_of_the_dial_port() {
    let base = fixture("silent-worker-reaches-named-pod-per-pod.yaml");
    let listener = "      protocol: UDP\n      port: 50072\n";
    assert_eq!(base.matches(listener).count(), 2);
    let yaml = base.replace(listener, "      protocol: UDP\n      port: 50073\n");
    let f = worker_reaches_named_pod::check_graph(&crate::testkit::graph("split-cluster", &yaml));
    assert_eq!(f.len(), 2, "{:#?}", messages(&f));
    assert!(
        f.iter().all(|f| f
            .message
            .contains("-worker-quic) are Accepted on no UDP listener of port 50072")),
        "{:#?}",
        messages(&f)
    );
}
