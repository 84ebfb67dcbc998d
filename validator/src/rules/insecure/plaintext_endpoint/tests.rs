//! `plaintext-endpoint` unit tests.

use super::super::tests::*;
use super::*;
use crate::graph::Graph;
use crate::policy::Policy;
use crate::render::ReleaseStatus;

use crate::testkit::*;
use serde_json::json;

/// Generated: every way of writing a host (loopback in every literal form, and names that
/// only look like loopback) in every place an OpenBao address is read (env of a container,
/// a listener `address` in HCL configuration). Loopback is silent; anything else fires.
#[test]
fn loopback_is_decided_by_parsing_in_every_place() {
    let loopback = [
        "127.0.0.1",
        "127.8.9.10",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "localhost",
        "LOCALHOST.",
    ];
    let lookalike = [
        "127.bao.corp.example.net",
        "127.0.0.1.nip.io",
        "localhost.example.net",
        "[::ffff:10.0.0.1]",
        "10.0.0.1",
        "127.1",
    ];
    let policy = Policy::default();
    type Make<'a> = &'a dyn Fn(&str) -> String;
    let places: [(&str, Make); 3] = [
        ("BAO_ADDR", &|h| env_pod("BAO_ADDR", &format!("http://{h}:8200"))),
        ("VAULT_ADDR", &|h| env_pod("VAULT_ADDR", &format!("http://{h}:8200"))),
        ("listener", &|h| {
            let hcl = format!("listener \"tcp\" {{\n  address = \"{h}:8200\"\n  tls_disable = 1\n}}\n");
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: openbao}}\ndata:\n  server.hcl: {}\n",
                serde_json::to_string(&hcl).unwrap()
            )
        }),
    ];
    for (place, make) in places {
        for (hosts, fires) in [(&loopback[..], false), (&lookalike[..], true)] {
            for h in hosts {
                let g = graph("e", &make(h));
                let f: Vec<_> = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&g, &policy))
                    .into_iter()
                    .filter(|f| f.rule == PLAINTEXT_ENDPOINT)
                    .collect();
                assert_eq!(!f.is_empty(), fires, "{place} {h}: {f:#?}");
            }
        }
    }
}

pub(super) fn env_pod(var: &str, value: &str) -> String {
    format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: openbao}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/openbao/openbao:2.4.1\n    command: [bao, status]\n    env: [{{name: {var}, value: \"{value}\"}}]\n"
        )
}

fn openbao(values: serde_json::Value) -> crate::stack::Release {
    let mut r = rel(
        "helmfile.yaml",
        25,
        "openbao",
        "openbao",
        repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
    );
    r.version = Some("0.23.2".into());
    r.values = values;
    r
}

pub(super) const TLS_CONFIG: &str = "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_cert_file = \"/openbao/userconfig/tls/tls.crt\"\n  tls_key_file = \"/openbao/userconfig/tls/tls.key\"\n}\n";

#[test]
fn openbao_values_when_not_rendered() {
    // Chart defaults: tlsDisable unset and no config → two findings.
    let f = run(
        PLAINTEXT_ENDPOINT,
        &state(
            vec![openbao(json!({"server": {"standalone": {"enabled": true}}}))],
            vec![],
        ),
        &[],
    );
    assert_eq!(f.len(), 2, "{f:#?}");
    // Explicitly insecure: tlsDisable true, dev mode, ha raft config with tls_disable.
    let bad = openbao(json!({
        "global": {"tlsDisable": true},
        "server": {"dev": {"enabled": true}, "ha": {"enabled": true, "raft": {"enabled": true, "config": "listener \"tcp\" {\n address = \"[::]:8200\"\n tls_disable = \"1\"\n}"}}}
    }));
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![bad.clone()], vec![]), &[]);
    assert_eq!(f.len(), 3, "{f:#?}");
    insta::assert_json_snapshot!(f);
    // insecure-flag leaves the OpenBao chart's global.tlsDisable to plaintext-endpoint.
    assert!(run(INSECURE_FLAG, &state(vec![bad], vec![]), &[]).is_empty());
    // TLS on: silent; also via `set:`.
    let good = openbao(json!({"global": {"tlsDisable": false}, "server": {"standalone": {"config": TLS_CONFIG}}}));
    assert!(run(PLAINTEXT_ENDPOINT, &state(vec![good], vec![]), &[]).is_empty());
    let mut via_set = openbao(json!({"server": {"standalone": {"config": TLS_CONFIG}}}));
    via_set.set = vec![("global.tlsDisable".into(), json!("false"))];
    assert!(run(PLAINTEXT_ENDPOINT, &state(vec![via_set.clone()], vec![]), &[]).is_empty());
    // A config written as a map (the chart renders it as JSON) is read too.
    for (tls_disable, findings) in [(1, 1), (0, 0)] {
        let listener = json!({"listener": {"tcp": {"address": "[::]:8200", "tls_disable": tls_disable, "tls_cert_file": "/tls/tls.crt", "tls_key_file": "/tls/tls.key"}}});
        let r = openbao(json!({"global": {"tlsDisable": false}, "server": {"standalone": {"config": listener}}}));
        let f = run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &[]);
        assert_eq!(f.len(), findings, "tls_disable = {tls_disable}: {f:#?}");
        assert!(
            f.iter().all(|f| f
                .message
                .contains("`server.standalone.config` sets tls_disable on the listener")),
            "{f:#?}"
        );
    }
    // `set:` is read by its own name: tlsDisable true there is reported as set.
    via_set.set = vec![("global.tlsDisable".into(), json!("true"))];
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![via_set], vec![]), &[]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("`global.tlsDisable: true` serves the API over plain HTTP"),
        "{f:#?}"
    );
    // Rendered (its ConfigMap is checked instead), values unknown, or server disabled: silent.
    let defaults = openbao(json!({}));
    let rendered = ReleaseStatus {
        name: "openbao".into(),
        namespace: "openbao".into(),
        chart: "openbao/openbao".into(),
        installed: true,
        version: None,
        rendered: true,
        reason: None,
        objects: 9,
        mirror: None,
    };
    assert!(run(PLAINTEXT_ENDPOINT, &state(vec![defaults], vec![]), &[rendered]).is_empty());
    assert!(run(
        PLAINTEXT_ENDPOINT,
        &state(vec![openbao(serde_json::Value::Null)], vec![]),
        &[]
    )
    .is_empty());
    assert!(run(
        PLAINTEXT_ENDPOINT,
        &state(vec![openbao(json!({"server": {"enabled": false}}))], vec![]),
        &[]
    )
    .is_empty());
    // A local chart named openbao-issuer is not the upstream server chart.
    let mut issuer = rel(
        "helmfile.yaml",
        18,
        "openbao",
        "openbao-issuer",
        local("charts/openbao-issuer"),
    );
    issuer.values = json!({});
    assert!(run(PLAINTEXT_ENDPOINT, &state(vec![issuer], vec![]), &[]).is_empty());
}

#[test]
fn externals_are_not_checked() {
    let mut g = Graph::new("default", Vec::new());
    let policy = Policy {
            externals: crate::yaml::from_str("- {apiVersion: cert-manager.io/v1, kind: ClusterIssuer, name: legacy, spec: {vault: {server: 'http://vault.example.com'}}}").unwrap(),
            ..Policy::default()
        };
    policy.add_externals(&mut g);
    assert_eq!(g.len(), 1);
    assert!((rule(PLAINTEXT_ENDPOINT).check)(&crate::testkit::ctx(&g, &policy)).is_empty());
}

/// The rule's findings over YAML, folded as the engine reports them; objects whose name is a
/// key of `releases` are placed in that release.
pub(super) fn folded(yaml: &str, releases: &[(&str, &str)]) -> Vec<Finding> {
    let mut g = crate::testkit::graph("default", yaml);
    for o in &mut g.objects {
        if let Some((_, r)) = releases.iter().find(|(n, _)| *n == o.name) {
            o.prov.release = Some(r.to_string());
        }
    }
    let p = Policy::default();
    crate::fold::fold((rule(PLAINTEXT_ENDPOINT).check)(&crate::testkit::ctx(&g, &p)))
}

const SERVER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: openbao-config, namespace: openbao}\ndata:\n  server.hcl: |\n    listener \"tcp\" {\n      address = \"[::]:8200\"\n      tls_disable = 1\n    }\n---\napiVersion: v1\nkind: Service\nmetadata: {name: openbao, namespace: openbao}\nspec:\n  selector: {app: openbao}\n  ports: [{name: http, port: 8200}]\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: openbao, namespace: openbao}\nspec:\n  serviceName: openbao\n  selector: {matchLabels: {app: openbao}}\n  template:\n    metadata: {labels: {app: openbao}}\n    spec:\n      containers:\n        - {name: openbao, image: 'quay.io/openbao/openbao:2.4.1'}\n      volumes:\n        - {name: config, configMap: {name: openbao-config}}\n";

pub(super) fn client(name: &str, ns: &str, addr: &str) -> String {
    format!("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n        - name: c\n          image: quay.io/x/y:1.0.0\n          env: [{{name: VAULT_ADDR, value: '{addr}'}}]\n")
}

#[test]
fn one_plaintext_server_is_one_finding_across_releases() {
    // A client of another release dials the server through its Service: folded into the
    // listener's finding. An unrelated plain address in another namespace stays its own.
    let yaml = format!(
        "{SERVER}{}{}{}",
        client("issuer-client", "cert-manager", "http://openbao.openbao.svc:8200"),
        client("app-client", "app", "http://openbao.openbao.svc.cluster.local:8200/v1"),
        client("unrelated", "app", "http://corp-vault.example.com:8200"),
    );
    let f = folded(
        &yaml,
        &[
            ("openbao-config", "openbao/openbao"),
            ("openbao", "openbao/openbao"),
            ("issuer-client", "cert-manager/issuer"),
            ("app-client", "app/app"),
            ("unrelated", "app/other"),
        ],
    );
    let shown: Vec<(&str, usize)> = f.iter().map(|f| (f.message.as_str(), f.related.len())).collect();
    assert_eq!(f.len(), 2, "{shown:#?}");
    assert!(
        f[0].message.contains("configures a listener with tls_disable"),
        "{shown:#?}"
    );
    let related: Vec<&str> = f[0]
        .related
        .iter()
        .map(|r| r.object.as_ref().unwrap().name.as_str())
        .collect();
    assert_eq!(related, ["issuer-client", "app-client"]);
    assert!(f[1].message.contains("corp-vault.example.com") && f[1].related.is_empty());
    // Without the Service the address reaches nothing known: the dial stays its own finding.
    let no_service = yaml.replace("kind: Service\n", "kind: ServiceAccount\n");
    assert_eq!(folded(&no_service, &[]).len(), 4);
}

#[test]
fn copies_of_one_address_fold_and_other_servers_do_not() {
    // One http:// value in a ConfigMap, its envFrom consumer and a literal copy: one finding.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: client-env, namespace: app}\ndata:\n  CALLBACK_URL: http://hooks.example.com/notify\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: client, namespace: app}\nspec:\n  selector: {matchLabels: {app: c}}\n  template:\n    metadata: {labels: {app: c}}\n    spec:\n      containers:\n        - name: a\n          image: quay.io/x/y:1.0.0\n          envFrom: [{configMapRef: {name: client-env}}]\n        - name: b\n          image: quay.io/x/y:1.0.0\n          env: [{name: CALLBACK_URL, value: 'http://hooks.example.com/other'}, {name: AUDIT_URL, value: 'http://audit.example.com/'}]\n";
    let f = folded(yaml, &[]);
    let shown: Vec<(&str, usize)> = f.iter().map(|f| (f.message.as_str(), f.related.len())).collect();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert_eq!((shown[0].1, shown[1].1), (2, 0), "{shown:#?}");
    assert!(shown[1].0.contains("audit.example.com"));
}

#[test]
fn unrendered_server_defaults_are_one_finding() {
    let r = openbao(json!({"server": {"standalone": {"enabled": true}, "extraArgs": "-dev"}}));
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &[]);
    assert_eq!(f.len(), 3, "tlsDisable default, default config, -dev: {f:#?}");
    let f = crate::fold::fold(f);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].related.len(), 2);
}

#[test]
fn server_arguments_in_state_values() {
    let rel = |chart: crate::stack::ChartRef, values: serde_json::Value| {
        let mut r = crate::testkit::rel("helmfile.yaml", 3, "a", "r", chart);
        r.values = values;
        r
    };
    let local = || crate::testkit::local("charts/app");
    let fired = |r: crate::stack::Release| {
        let status = [ReleaseStatus {
            name: "r".into(),
            namespace: "a".into(),
            chart: "x".into(),
            installed: true,
            version: None,
            rendered: true,
            reason: None,
            objects: 1,
            mirror: None,
        }];
        run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &status)
    };
    // Any chart name, rendered or not: `server.extraArgs`, a list, a `server` subcommand
    // elsewhere, `set:`.
    for values in [
        json!({"server": {"extraArgs": "-dev"}}),
        json!({"server": {"extraArgs": ["-log-level=debug", "--dev"]}}),
        json!({"app": {"args": ["server", "-dev=true"]}}),
    ] {
        let f = fired(rel(local(), values.clone()));
        assert_eq!(f.len(), 1, "{values}: {f:#?}");
        assert!(f[0].message.contains("starts the OpenBao/Vault server with"), "{f:#?}");
    }
    let mut via_set = rel(local(), json!({}));
    via_set.set = vec![("server.extraArgs".into(), json!("-dev"))];
    assert_eq!(fired(via_set.clone()).len(), 1);
    // Through `set:` too, `-dev` outside a `server` key and with no `server` word is no server's.
    via_set.set = vec![("app.extraArgs".into(), json!("--dev"))];
    assert!(fired(via_set).is_empty());
    // Near misses: dev mode with TLS, other flags, `-dev` of something that is no server.
    for values in [
        json!({"server": {"extraArgs": "-dev -dev-tls"}}),
        json!({"server": {"extraArgs": "-config=/x -log-level=debug"}}),
        json!({"app": {"extraArgs": "--dev"}}),
        json!({"server": {"dev": {"args": "none"}}}),
        // A list holding a map is no command line.
        json!({"server": {"extraArgs": [{"name": "x"}, "-dev"]}}),
    ] {
        assert!(fired(rel(local(), values.clone())).is_empty(), "{values}");
    }
}

/// The walk of state values reaches as deep as the YAML reader nests (`yaml::MAX_DEPTH`): `args`
/// in the deepest map it can produce is read; nothing it parses is left unread.
#[test]
fn server_arguments_are_read_down_to_the_depth_bound() {
    let mut values = json!({"args": "server -dev"});
    for _ in 0..crate::yaml::MAX_DEPTH {
        values = json!({ "level": values });
    }
    let mut r = crate::testkit::rel("helmfile.yaml", 3, "a", "r", crate::testkit::local("charts/app"));
    r.values = values;
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![r.clone()], vec![]), &[]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].message.contains("`level.level"), "{f:#?}");
}

/// Which Services a DestinationRule's host reaches: `*` is every Service of the mesh, whatever the
/// rule's namespace; a ConfigMap or a Service kind of another API group with the host's name is no
/// Service a sidecar dials.
#[test]
fn destination_rule_hosts_reach_core_services() {
    let dr = |ns: &str, host: &str| {
        format!("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {{name: plain, namespace: {ns}}}\nspec:\n  host: '{host}'\n  trafficPolicy:\n    tls: {{mode: DISABLE}}\n")
    };
    let svc =
        "apiVersion: v1\nkind: Service\nmetadata: {name: router, namespace: nvcf}\nspec:\n  ports: [{port: 50071}]\n";
    let f = folded(&format!("{svc}{}", dr("mesh", "*")), &[]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("for host `*` makes the mesh's clients speak plaintext to Service nvcf/router"),
        "{f:#?}"
    );
    for other in [
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: router, namespace: nvcf}\ndata: {a: b}\n",
        "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: router, namespace: nvcf}\nspec: {}\n",
    ] {
        let f = folded(&format!("{other}{}", dr("nvcf", "router")), &[]);
        assert!(f.is_empty(), "{other}: {f:#?}");
    }
}

/// Generated: worker gRPC reached through every route kind (TCPRoute, HTTPRoute, GRPCRoute) on
/// every listener protocol, with the Service's targetPort written as a number, as a name the
/// selected pods map to the gRPC port, and as a name they map to a web port; and a LoadBalancer
/// Service with the same target ports. Fires exactly when gRPC is reached through a listener that
/// does not terminate TLS (or exposed by the LoadBalancer).
#[test]
fn worker_grpc_through_every_route_kind_and_target_port_form() {
    let pods = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b", "namespace": "nvcf"},
        "spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [
            {"name": "b", "image": "quay.io/x/b:1.0.0", "ports": [{"name": "wg", "containerPort": 50071}, {"name": "web", "containerPort": 8080}]}]}}}});
    let p = Policy::default();
    let mut checked = 0;
    for (target, grpc) in [
        (json!(50071), true),
        (json!("wg"), true),
        (json!("web"), false),
        (json!(8080), false),
    ] {
        let svc = |ty: &str| {
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "nvcf"},
            "spec": {"type": ty, "selector": {"app": "b"}, "ports": [{"name": "edge", "port": 9443, "targetPort": target}]}})
        };
        for kind in ["TCPRoute", "HTTPRoute", "GRPCRoute"] {
            for (proto, plain) in [("TCP", true), ("HTTP", true), ("HTTPS", false), ("TLS", false)] {
                let mut listener = json!({"name": "l", "protocol": proto, "port": 443});
                if !plain {
                    listener["tls"] = json!({"mode": "Terminate", "certificateRefs": [{"name": "c"}]});
                }
                let gw = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw", "namespace": "nvcf"},
                    "spec": {"gatewayClassName": "eg", "listeners": [listener]}});
                let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": {"name": "r", "namespace": "nvcf"},
                    "spec": {"parentRefs": [{"name": "gw", "sectionName": "l"}], "rules": [{"backendRefs": [{"name": "s", "port": 9443}]}]}});
                let yaml = [&pods, &svc("ClusterIP"), &gw, &route]
                    .map(|v| serde_json::to_string(v).unwrap())
                    .join("\n---\n");
                let g = graph("e", &yaml);
                let found = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&g, &p));
                let case = format!("{kind} on {proto} to targetPort {target}");
                if grpc && plain {
                    assert_eq!(found.len(), 1, "{case}: {found:#?}");
                    assert!(
                        found[0].message.contains(&format!("{kind} nvcf/r: routes worker gRPC")),
                        "{case}"
                    );
                } else {
                    assert!(found.is_empty(), "{case}: {found:#?}");
                }
                checked += 1;
            }
        }
        let yaml = [&pods, &svc("LoadBalancer")]
            .map(|v| serde_json::to_string(v).unwrap())
            .join("\n---\n");
        let found = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", &yaml), &p));
        assert_eq!(
            found.len(),
            usize::from(grpc),
            "LoadBalancer to targetPort {target}: {found:#?}"
        );
        checked += 1;
    }
    assert_eq!(checked, 4 * (3 * 4 + 1));
}

/// Generated: a TCPRoute on a plain TCP listener to a Service port that carries worker gRPC by one
/// sign alone (its name, an unresolved named targetPort, appProtocol gRPC or h2c) fires; a web
/// port stays silent. The backend is judged only when it is a core Service (a ServiceImport of
/// the same name is not read as the Service); a Service the render lacks is judged by the port
/// number (the router's gRPC port, 50071 by default); a route whose parent the render lacks
/// (or names a listener the Gateway lacks) counts as plaintext for a TCPRoute only (the others
/// are `route-parent-resolves`' to report).
#[test]
fn worker_grpc_by_each_sign_of_a_service_port_and_each_backend_form() {
    let p = Policy::default();
    let gw = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw", "namespace": "nvcf"},
        "spec": {"gatewayClassName": "eg", "listeners": [{"name": "l", "protocol": "TCP", "port": 443}]}});
    let found = |port: serde_json::Value, kind: &str, parent: serde_json::Value, backend: serde_json::Value| {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "nvcf"},
            "spec": {"selector": {"app": "b"}, "ports": [port]}});
        let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": {"name": "r", "namespace": "nvcf"},
            "spec": {"parentRefs": [parent], "rules": [{"backendRefs": [backend]}]}});
        let yaml = [&gw, &svc, &route]
            .map(|v| serde_json::to_string(v).unwrap())
            .join("\n---\n");
        let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", &yaml), &p));
        assert!(f.len() <= 1, "{f:#?}");
        f.first().map(|f| f.message.clone())
    };
    let to_s = json!({"name": "s", "port": 9000});
    let gw_ref = json!({"name": "gw"});
    for (port, grpc) in [
        (json!({"name": "grpc-edge", "port": 9000}), true),
        (json!({"name": "edge", "port": 9000, "targetPort": "grpc-x"}), true),
        (json!({"name": "edge", "port": 9000, "appProtocol": "grpc"}), true),
        (
            json!({"name": "edge", "port": 9000, "appProtocol": "kubernetes.io/h2c"}),
            true,
        ),
        (
            json!({"name": "edge", "port": 9000, "targetPort": "web-x", "appProtocol": "http"}),
            false,
        ),
    ] {
        let m = found(port.clone(), "TCPRoute", gw_ref.clone(), to_s.clone());
        assert_eq!(m.is_some(), grpc, "{port}: {m:?}");
        if let Some(m) = m {
            assert!(
                m.contains("routes worker gRPC to Service nvcf/s port 9000 through a plain TCP listener"),
                "{m}"
            );
        }
    }
    let grpc = json!({"name": "grpc-edge", "port": 9000});
    let import = json!({"kind": "ServiceImport", "name": "s", "port": 9000});
    assert_eq!(found(grpc.clone(), "TCPRoute", gw_ref.clone(), import), None);
    let missing = |port: u16| json!({"name": "gone", "port": port});
    assert!(found(grpc.clone(), "TCPRoute", gw_ref.clone(), missing(50071)).is_some());
    assert_eq!(found(grpc.clone(), "TCPRoute", gw_ref.clone(), missing(8080)), None);
    assert!(found(
        grpc.clone(),
        "TCPRoute",
        json!({"name": "no-such-gateway"}),
        to_s.clone()
    )
    .is_some());
    // A listener the parentRef names but the Gateway lacks: as unresolved.
    let no_section = json!({"name": "gw", "sectionName": "other"});
    assert!(found(grpc.clone(), "TCPRoute", no_section, json!({"name": "s", "port": 9000})).is_some());
    assert_eq!(found(grpc, "HTTPRoute", json!({"name": "no-such-gateway"}), to_s), None);
}

/// An Ingress backend's port is found by its number, not by a port that merely lacks a name: a
/// host without TLS sent to the router's gRPC port (the second of two unnamed ports) fires.
#[test]
fn ingress_backend_port_by_number_among_unnamed_ports() {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: nvcf}\nspec:\n  selector: {app: b}\n  ports: [{port: 80}, {port: 50071}]\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i, namespace: nvcf}\nspec:\n  rules:\n  - host: grpc.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: s, port: {number: 50071}}}}\n";
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", yaml), &p));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("host `grpc.example.com` has no TLS entry but routes to Service nvcf/s port 50071"),
        "{f:#?}"
    );
}
