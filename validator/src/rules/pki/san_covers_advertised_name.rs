//! `san-covers-advertised-name`: every name a worker or client sends as SNI is covered by the
//! serving certificate's SANs (listener hostnames, advertised hostname expansions, the gRPC dial host).

use super::*;

const SAN: &str = "san-covers-advertised-name";

pub(super) fn check_san(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = router_identity::undetermined(g, "san-covers-advertised-name", router_identity::NAME_FLAGS);
    // Listener hostnames first; remember what was judged so the gRPC check does not repeat it.
    let mut judged: BTreeSet<(String, String, String)> = BTreeSet::new();
    for gw in g.of(GW, "Gateway") {
        for l in items(&gw.body, "/spec/listeners") {
            let Some(ids) = listener_identities(g, gw, l) else {
                continue;
            };
            let lname = l.get("name").and_then(Value::as_str).unwrap_or("?");
            for name in listener_names(g, gw, l) {
                judged.insert((gw.display(), lname.to_string(), name.to_ascii_lowercase()));
                if let Some(id) = ids.iter().find(|id| !id.covers(&name)) {
                    out.push(listener_finding(gw, l, lname, &name, id));
                }
            }
        }
    }
    out.extend(check_ingress_tls(g));
    for r in routers(g) {
        out.extend(check_advertised(g, &r));
        out.extend(check_grpc_dial(g, &r, &judged));
    }
    out
}

/// Ingress TLS: every host of a `spec.tls` entry against the certificate its `secretName` will
/// hold (the Ingress controller presents it for exactly those SNI names).
fn check_ingress_tls(g: &Graph) -> Vec<Finding> {
    let mut out = Vec::new();
    let ingresses = g
        .objects
        .iter()
        .filter(|o| !o.prov.external && o.group() == "networking.k8s.io" && o.kind == "Ingress");
    for ing in ingresses {
        for t in items(&ing.body, "/spec/tls") {
            let Some(secret) = t.get("secretName").and_then(Value::as_str) else {
                continue;
            };
            let Some(id) = identity(g, ns_of(ing), secret) else {
                continue;
            };
            for host in strings(t, "/hosts") {
                if !id.covers(&host) {
                    out.push(
                        Finding::object_at(SAN, ing, &host, format!(
                            "{}: TLS host {host} (Secret {secret}) is not covered by {}{}; add {host}{}",
                            ing.display(),
                            id.describe(),
                            depth_hint(&id.dns_names(), &host),
                            names::one_label_wildcard(&host)
                                .map(|w| format!(" or the one-label wildcard {w}"))
                                .unwrap_or_default()
                        ))
                        .with_help("Clients match the SNI against subjectAltNames only (the CN is ignored); a `*` covers one label."),
                    );
                }
            }
        }
    }
    out
}

fn listener_finding(gw: &Object, l: &Value, lname: &str, name: &str, id: &Identity) -> Finding {
    let lhost = l.get("hostname").and_then(Value::as_str);
    let msg = if name.starts_with("*.") {
        format!(
            "listener `{lname}` of {} serves {name}: Gateway API sends names of any depth under it to this listener, \
             but an X.509 wildcard covers exactly one label and {} has no {name}; add {name} (and exact names or deeper \
             wildcards for deeper hosts), or give the listener a specific hostname",
            gw.display(),
            id.describe()
        )
    } else {
        format!(
            "hostname {name} served by listener `{lname}`{} of {} is not covered by {}{}; add {name}{}",
            lhost
                .filter(|h| !h.eq_ignore_ascii_case(name))
                .map(|h| format!(" ({h})"))
                .unwrap_or_default(),
            gw.display(),
            id.describe(),
            depth_hint(&id.dns_names(), name),
            names::one_label_wildcard(name)
                .map(|w| format!(" or the one-label wildcard {w}"))
                .unwrap_or_default()
        )
    };
    Finding::object_at(SAN, gw, lhost.unwrap_or(lname), msg).with_help(
        "Workers and clients match the SNI against subjectAltNames only (the CN is ignored); a `*` covers one label.",
    )
}

/// QUIC: every expansion of the advertised hostname template against the router's certificate.
fn check_advertised(g: &Graph, r: &RouterWorkload) -> Vec<Finding> {
    let Some(template) = r.flag(F_TEMPLATE).filter(|t| !t.is_empty()) else {
        return Vec::new();
    };
    let obj = r.obj;
    let ns = ns_of(obj);
    if template.contains("{pod_name}") && obj.kind != "StatefulSet" {
        return vec![Finding::object_at(
            SAN,
            obj,
            F_TEMPLATE,
            format!(
                "{F_TEMPLATE}={template} of {} depends on {{pod_name}}, but {} pods get generated names \
                 (<name>-<hash>-<suffix>) with no per-pod DNS record: workers cannot resolve or verify the advertised name; \
                 run the router as a StatefulSet with a headless Service, or advertise a stable name",
                r.describe(),
                obj.kind
            ),
        )];
    }
    let Some(secret) = router_tls_secret(r) else {
        return Vec::new();
    };
    let Some(id) = identity(g, ns, &secret) else {
        return Vec::new();
    };
    let expansions: Vec<(String, String)> = if template.contains("{pod_name}") {
        // Judged as a pattern, never one name per replica: `replicas` is a number from the input.
        let replicas = obj.at("/spec/replicas").and_then(Value::as_u64).unwrap_or(1).max(1);
        judged_ordinals(replicas, &id.dns_names())
            .into_iter()
            .map(|(i, alike)| {
                let n = template
                    .replace("{pod_name}", &format!("{}-{i}", obj.name))
                    .replace("{namespace}", ns);
                let which = match alike {
                    1 => format!("replica {i}"),
                    n => format!(
                        "replica {i}, and {} more replicas of {} digits like it",
                        n - 1,
                        i.to_string().len()
                    ),
                };
                (n, which)
            })
            .collect()
    } else {
        vec![(template.replace("{namespace}", ns), "every replica".into())]
    };
    let mut out = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    for (name, which) in expansions {
        if !names::is_valid_reference(&name) {
            out.push(Finding::object_at(
                SAN,
                obj,
                F_TEMPLATE,
                format!(
                    "{F_TEMPLATE}={template} of {} expands to `{name}` ({which}), which is not a valid DNS name; \
                     only {{pod_name}} and {{namespace}} are expanded",
                    r.describe()
                ),
            ));
        } else if !id.covers(&name) {
            missing.push((name, which));
        }
    }
    if missing.is_empty() {
        return out;
    }
    let names_only: Vec<String> = missing.iter().map(|(n, _)| n.clone()).collect();
    let wildcard = names::one_label_wildcard(&names_only[0])
        .filter(|w| names_only.iter().all(|n| names::san_covers(std::slice::from_ref(w), n)));
    let what = if missing.len() == 1 {
        format!(
            "advertised name {} ({} of {})",
            missing[0].0,
            missing[0].1,
            obj.display()
        )
    } else {
        let shown: Vec<String> = missing.iter().map(|(n, w)| format!("{n} ({w})")).collect();
        format!("advertised names {} of {}", list(&shown), obj.display())
    };
    let verb = if missing.len() == 1 { "is" } else { "are" };
    out.push(
        Finding::object_at(
            SAN,
            obj,
            F_TEMPLATE,
            format!(
                "{what} {verb} not covered by {}{}; add {}{}",
                id.describe(),
                depth_hint(&id.dns_names(), &names_only[0]),
                if missing.len() == 1 { "it" } else { "them" },
                wildcard.map(|w| format!(" or the one-label wildcard {w}")).unwrap_or_default()
            ),
        )
        .with_help(format!(
            "Workers dial the QUIC address and send the advertised name as SNI; the router presents the Secret `{secret}`. \
             The QUIC dial address itself is not an SNI name."
        )),
    );
    out
}

/// Up to this many replicas, every ordinal is named in findings.
const ENUMERATED_REPLICAS: u64 = 64;

/// The ordinals whose advertised names decide whether `replicas` pods are covered, without
/// enumerating the pods: every ordinal below `replicas` whose digits appear in a SAN, and for each
/// digit count one ordinal whose digits appear in no SAN. Names of unmentioned ordinals with the
/// same digit count differ only in digits no SAN contains, so no SAN names one of them exactly and
/// a wildcard covers all of them or none: one stands for all (the second number says how many).
fn judged_ordinals(replicas: u64, sans: &[String]) -> Vec<(u64, u64)> {
    // Few replicas: name each one (a constant bound, not the input's number).
    if replicas <= ENUMERATED_REPLICAS {
        return (0..replicas.max(1)).map(|i| (i, 1)).collect();
    }
    let last = replicas.max(1) - 1;
    let mut mentioned = BTreeSet::new();
    for san in sans {
        for run in san.split(|c: char| !c.is_ascii_digit()).filter(|r| !r.is_empty()) {
            for start in 0..run.len() {
                for end in start + 1..=run.len().min(start + 20) {
                    let digits = &run[start..end];
                    if digits.len() > 1 && digits.starts_with('0') {
                        break;
                    }
                    match digits.parse::<u64>() {
                        Ok(i) if i <= last => {
                            mentioned.insert(i);
                        }
                        _ => break,
                    }
                }
            }
        }
    }
    let mut out: Vec<(u64, u64)> = mentioned.iter().map(|&i| (i, 1)).collect();
    let (mut lo, mut hi) = (0u64, 9u64);
    while lo <= last {
        let top = hi.min(last);
        let known = mentioned.range(lo..=top).count() as u64;
        let count = top - lo + 1;
        if count > known {
            // At most `known + 1` steps: some ordinal in the range is not mentioned.
            if let Some(generic) = (lo..=top).find(|i| !mentioned.contains(i)) {
                out.push((generic, count - known));
            }
        }
        if hi >= last {
            break;
        }
        lo = hi + 1;
        hi = hi.saturating_mul(10).saturating_add(9);
    }
    out.sort_unstable();
    out
}

/// gRPC: the dial host against whoever terminates TLS for it.
fn check_grpc_dial(g: &Graph, r: &RouterWorkload, judged: &BTreeSet<(String, String, String)>) -> Vec<Finding> {
    let Some(addr) = r.flag(F_GRPC_DIAL) else {
        return Vec::new();
    };
    let Some(host) = https_host(addr) else {
        return Vec::new();
    };
    let ip_note = if host.parse::<IpAddr>().is_ok() {
        " (an IP: workers send no SNI and match iPAddress SANs)"
    } else {
        ""
    };
    match grpc_terminator(g, &host) {
        Terminator::Unknown => Vec::new(),
        Terminator::Listener { gw, listener } => {
            let lname = listener.get("name").and_then(Value::as_str).unwrap_or("?");
            if judged.contains(&(gw.display(), lname.to_string(), host.to_ascii_lowercase())) {
                return Vec::new();
            }
            let Some(ids) = listener_identities(g, gw, listener) else {
                return Vec::new();
            };
            let Some(id) = ids.iter().find(|id| !id.covers(&host)) else {
                return Vec::new();
            };
            vec![Finding::object_at(
                SAN,
                r.obj,
                F_GRPC_DIAL,
                format!(
                    "gRPC dial host {host}{ip_note} of {} ends TLS at listener `{lname}` of {}, whose {} does not cover it{}; \
                     add {host} to that certificate",
                    r.describe(),
                    gw.display(),
                    id.describe(),
                    depth_hint(&id.dns_names(), &host)
                ),
            )]
        }
        Terminator::Router => {
            let Some(secret) = router_tls_secret(r) else {
                return Vec::new();
            };
            let Some(id) = identity(g, ns_of(r.obj), &secret) else {
                return Vec::new();
            };
            if id.covers(&host) {
                return Vec::new();
            }
            let is_ip = !ip_note.is_empty();
            let fix = match (&id, is_ip) {
                (Identity::Cert(c), false) => format!(
                    "add {host} to spec.dnsNames of Certificate {}/{}, or terminate TLS at a Gateway HTTPS listener with a \
                     GRPCRoute for {host}",
                    ns_of(c),
                    c.name
                ),
                (Identity::Cert(c), true) => format!("add {host} to spec.ipAddresses of Certificate {}/{}", ns_of(c), c.name),
                (Identity::Chain { secret, .. }, _) => {
                    format!("have the certificate in {} reissued with {host} in its subjectAltNames", secret.display())
                }
            };
            vec![Finding::object_at(
                SAN,
                r.obj,
                F_GRPC_DIAL,
                format!(
                    "gRPC dial host {host}{ip_note} of {} is carried by no Gateway route, so TLS ends at the router; {} does \
                     not cover it{}; {fix}",
                    r.describe(),
                    id.describe(),
                    depth_hint(&id.dns_names(), &host)
                ),
            )]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::pki::testcerts;
    use crate::policy::Policy;
    use crate::router::parse_flags;
    use crate::testkit;

    #[test]
    fn uncovered_replica_is_named_with_a_wildcard_suggestion_and_the_flag_line() {
        let text = fixture("fires-san-covers-advertised-name-exact-pod-names");
        let f = run(SAN, &text);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        let m = &f[0].message;
        assert!(
            m.contains("advertised name request-router-2.request-router-headless.nvcf.svc.cluster.local (replica 2 of StatefulSet nvcf/request-router)"),
            "{m}"
        );
        assert!(
            m.contains("Certificate nvcf/request-router dnsNames [request-router-0."),
            "{m}"
        );
        assert!(
            m.contains("or the one-label wildcard *.request-router-headless.nvcf.svc.cluster.local"),
            "{m}"
        );
        let line = f[0].source.as_ref().unwrap().line.unwrap();
        assert!(
            text.lines()
                .nth(line - 1)
                .unwrap()
                .contains("--advertised-hostname-template"),
            "line {line}"
        );
    }

    #[test]
    fn many_replicas_are_judged_by_pattern() {
        let sans = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Ordinals named in a SAN are judged one by one, one more per digit count stands for the rest.
        let j = judged_ordinals(1000, &sans(&["r-0.h", "r-1.h", "r-12.h"]));
        // `12` also mentions 1 and 2 (any digit run inside a SAN counts).
        assert_eq!(j, vec![(0, 1), (1, 1), (2, 1), (3, 7), (10, 89), (12, 1), (100, 900)]);
        assert_eq!(j.iter().map(|(_, n)| n).sum::<u64>(), 1000);
        let j = judged_ordinals(u64::MAX, &[]);
        assert_eq!(j.len(), 20);
        assert_eq!(j.iter().map(|(_, n)| *n as u128).sum::<u128>(), u64::MAX as u128);
        assert_eq!(judged_ordinals(3, &[]), vec![(0, 1), (1, 1), (2, 1)]);
    }

    #[test]
    fn wildcard_one_level_too_high_explains_the_depth() {
        let f = run(SAN, &fixture("fires-san-covers-advertised-name-wildcard-two-labels"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("advertised names [request-router-0."),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains(
                "*.nvcf.svc.cluster.local covers exactly one label, not `request-router-0.request-router-headless`"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn replicas_default_to_one() {
        let text = fixture("silent-san-covers-advertised-name-exact-pod-names");
        // Certificate for ordinals 0..2 only; with replicas removed (default 1) still silent, with 4 it fires.
        let one = text.replace("  replicas: 3\n", "");
        assert!(run(SAN, &one).is_empty());
        let four = text.replace("  replicas: 3\n", "  replicas: 4\n");
        let f = run(SAN, &four);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.starts_with(
                "advertised name request-router-3.request-router-headless.nvcf.svc.cluster.local (replica 3 of"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn tls_at_the_gateway_is_judged_once_on_the_gateway() {
        let f = run(SAN, &fixture("fires-san-covers-advertised-name-grpc-gateway-cert"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert_eq!(f[0].object.as_ref().unwrap().kind, "Gateway");
        assert!(
            f[0].message
                .contains("hostname grpc.workers.example.com served by listener `worker-grpc`"),
            "{}",
            f[0].message
        );

        // Without a route the same dial host is judged against the router's own certificate.
        let f = run(SAN, &fixture("fires-san-covers-advertised-name-grpc-at-router"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message
                .contains("carried by no Gateway route, so TLS ends at the router"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn an_undescribed_gateway_is_not_guessed_at() {
        // The route carries the dial host to a Gateway the stack does not render: not judged.
        let text = fixture("fires-san-covers-advertised-name-grpc-at-router");
        let route = fixture("silent-san-covers-advertised-name-grpc-at-gateway");
        let grpcroute = route.split("---\n").find(|d| d.contains("kind: GRPCRoute")).unwrap();
        assert!(run(SAN, &format!("{text}---\n{grpcroute}")).is_empty());
    }

    #[test]
    fn listener_wildcard_without_routes_needs_the_same_wildcard() {
        let yaml = r#"apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: nvcf}
spec:
  listeners:
    - name: clients
      protocol: HTTPS
      port: 443
      hostname: "*.invocation.example.com"
      tls: {certificateRefs: [{name: clients-tls}]}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: clients, namespace: nvcf}
spec: {secretName: clients-tls, dnsNames: ["llm.invocation.example.com"], issuerRef: {kind: ClusterIssuer, name: x}}
"#;
        let f = run(SAN, yaml);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("serves *.invocation.example.com"),
            "{}",
            f[0].message
        );
        assert!(run(
            SAN,
            &yaml.replace("[\"llm.invocation.example.com\"]", "[\"*.invocation.example.com\"]")
        )
        .is_empty());
        // Passthrough TLS listeners terminate nothing.
        assert!(run(
            SAN,
            &yaml
                .replace("protocol: HTTPS", "protocol: TLS")
                .replace("tls: {", "tls: {mode: Passthrough, ")
        )
        .is_empty());
    }

    /// Secret mode: a policy external carries the public chain; the same webpki check applies.
    #[test]
    fn customer_secret_chain_from_the_policy_is_checked_and_absent_chains_are_not_guessed() {
        let router = fixture("silent-san-covers-advertised-name-customer-secret");
        let policy = |data: &str| {
            Policy::parse(
                &format!(
                    "externals:\n  - apiVersion: v1\n    kind: Secret\n    namespace: nvcf\n    name: request-router-tls\n    type: kubernetes.io/tls\n{data}"
                ),
                "validator-policy.yaml", crate::rules::family_of,
            )
            .unwrap()
        };
        let ca = testcerts::root("Customer Root");
        let narrow = testcerts::leaf(
            &["request-router-0.request-router-headless.nvcf.svc.cluster.local"],
            &ca,
            None,
        );
        let wide = testcerts::leaf(
            &[
                "*.request-router-headless.nvcf.svc.cluster.local",
                "request-router.nvcf.svc.cluster.local",
            ],
            &ca,
            None,
        );
        let data = |pem: &str| {
            format!(
                "    data:\n      tls.crt: |\n{}",
                pem.lines().map(|l| format!("        {l}\n")).collect::<String>()
            )
        };
        let with = |p: &Policy| testkit::with_externals(testkit::graph("customer-secret", &router), p);

        let p = policy(&data(&narrow));
        let f = run_graph(SAN, &with(&p), &p);
        assert_eq!(f.len(), 2, "{}", messages(&f)); // replicas 1 and 2, and the gRPC service name
        assert!(
            f.iter()
                .any(|f| f.message.contains("the tls.crt leaf `CN=request-router-0.")),
            "{}",
            messages(&f)
        );
        let p = policy(&data(&wide));
        assert!(run_graph(SAN, &with(&p), &p).is_empty());
        let p = policy("");
        assert!(
            run_graph(SAN, &with(&p), &p).is_empty(),
            "no chain given: nothing to judge"
        );
    }

    #[test]
    fn flags_in_both_forms_and_inside_shell_strings() {
        let c = serde_json::json!({
            "command": ["sh", "-c", "exec /stargate --tls-cert-path /a/tls.crt --tls-key-path=/a/tls.key"],
            "args": ["--advertised-hostname-template", "{pod_name}.h.ns.svc", "--quiet"],
        });
        let f = parse_flags(&c);
        let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get(F_CERT), Some(Some("/a/tls.crt".into())));
        assert_eq!(get(F_KEY), Some(Some("/a/tls.key".into())));
        assert_eq!(get(F_TEMPLATE), Some(Some("{pod_name}.h.ns.svc".into())));
        assert_eq!(get("--quiet"), Some(None));
        assert_eq!(https_host("https://[fd00::1]:443").as_deref(), Some("fd00::1"));
        assert_eq!(
            https_host("https://grpc.example.com").as_deref(),
            Some("grpc.example.com")
        );
        assert_eq!(https_host("grpc.example.com:443"), None);
    }
}
