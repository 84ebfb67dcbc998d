//! `worker-reaches-named-pod`, the QUIC leg: pod X's dial address must lead to X alone, through
//! the pod's headless DNS name, a Service selecting X alone, or (outside the cluster) a UDPRoute
//! that names the host for DNS on a listener whose routes all select X alone.

use super::*;

/// external-dns' hostname annotation on routes and Services (the `alpha` spelling before v0.22
/// and the current one): where DNS for a UDP dial host points.
const EXTERNAL_DNS_HOSTNAME: [&str; 2] = [
    "external-dns.alpha.kubernetes.io/hostname",
    "external-dns.kubernetes.io/hostname",
];

fn help_quic() -> &'static str {
    "Advertise a per-pod QUIC dial address ({pod_name} in router.quicDialAddress, rendered as $(POD_NAME)): in the \
     cluster the pod's headless DNS name (<pod>.<headless Service>.<namespace>.svc.cluster.local:50072); outside it \
     a host whose DNS leads to a Gateway of that pod alone (a UDPRoute naming the host in external-dns' hostname \
     annotation, to a Service selecting that pod). UDP carries no hostname a Gateway could route by."
}

/// QUIC: pod `p`'s dial address must lead to `p` alone.
pub(super) fn quic_leg(
    g: &Graph,
    r: &RouterWorkload<'_>,
    pods: &mut Pods<'_>,
    p: usize,
    judged: usize,
) -> Option<Finding> {
    let raw = r
        .flag(router::REVERSE_TUNNEL_PYLON_DIAL_ADDR)
        .filter(|d| !d.is_empty())?;
    let flag = router::REVERSE_TUNNEL_PYLON_DIAL_ADDR;
    let per_pod = raw.contains(router::POD_NAME_PLACEHOLDER);
    let who = pods.all[p].describe();
    let finding = |msg: String| Some(Finding::object_at(ID, r.obj, flag, msg).with_help(help_quic()));
    let addr = if per_pod {
        raw.replace(router::POD_NAME_PLACEHOLDER, pods.all[p].name.as_deref()?)
    } else if judged > 1 {
        // One address for every pod: it leads to at most one of them.
        if pods.all[p].ordinal != 0 {
            return None;
        }
        return finding(format!(
            "{} advertises one QUIC dial address `{raw}` for all its pods ({}): it leads to at most one of them, \
             so a worker that names another pod (SNI) may reach the wrong one",
            r.obj.display(),
            count_source(g, r.obj)
        ));
    } else {
        raw.to_string()
    };
    let dial = parse_addr(&addr);
    if dial.host.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let reached: Vec<usize> = if in_cluster(g, &dial.host) {
        match cluster_dns(g, r, pods, &dial.host) {
            Ok(sel) => sel,
            Err(why) => return finding(format!("{who} advertises the QUIC dial address `{addr}`: {why}")),
        }
    } else {
        match external_dns(g, pods, &dial.host, dial.port.map(u64::from)) {
            Ok(sel) => sel,
            // One pod: whatever reaches the router reaches it (worker-routes-complete judges that).
            Err(_) if judged == 1 => return None,
            Err(why) => return finding(format!("{who} advertises the QUIC dial address `{addr}`: {why}")),
        }
    };
    if reached == [p] {
        return None;
    }
    let what = match reached.as_slice() {
        [] => "no router pod".to_string(),
        [one] => format!("{}, another pod", pods.all[*one].describe()),
        many => format!("{} pods ({})", many.len(), pods.names(many)),
    };
    finding(format!(
        "{who} advertises the QUIC dial address `{addr}`, which leads to {what}: a worker that names that pod (SNI) \
         may reach another"
    ))
}

/// The router pods an in-cluster DNS name resolves to: `<hostname>.<service>.<ns>.svc…` (a
/// headless Service's pod record), `<service>.<ns>.svc…`, `<service>.<ns>` or `<service>`.
fn cluster_dns(g: &Graph, r: &RouterWorkload<'_>, pods: &mut Pods<'_>, host: &str) -> Result<Vec<usize>, String> {
    let labels: Vec<&str> = host.split('.').collect();
    let svc_at = labels.iter().position(|l| *l == "svc");
    let (pod_host, service, ns) = match (svc_at, labels.as_slice()) {
        (Some(3), [h, s, n, ..]) => (Some(*h), *s, *n),
        (Some(2), [s, n, ..]) => (None, *s, *n),
        (None, [s]) => (None, *s, ns_of(r.obj)),
        (None, [s, n]) => (None, *s, *n),
        _ => {
            return Err(format!(
                "`{host}` is not a Service or pod name of cluster DNS the gate can follow"
            ))
        }
    };
    let Some(svc) = g.get("", "Service", Some(ns), service) else {
        return Err(format!(
            "no Service {ns}/{service} is rendered, so `{host}` does not resolve"
        ));
    };
    let selected = pods.of_service(svc).to_vec();
    let Some(h) = pod_host else {
        return Ok(selected);
    };
    if svc.str_at("/spec/clusterIP") != Some("None") {
        return Err(format!(
            "Service {ns}/{service} is not headless (clusterIP: None), so it publishes no pod record `{host}`"
        ));
    }
    Ok(selected
        .into_iter()
        .filter(|&i| {
            let pod = &pods.all[i];
            pod.hostname.as_deref() == Some(h) && pod.subdomain.as_deref() == Some(service)
        })
        .collect())
}

/// Whether `o` names `host` for DNS (external-dns' hostname annotation, a comma-separated list).
fn names_host(o: &Object, host: &str) -> bool {
    o.annotations().is_some_and(|a| {
        EXTERNAL_DNS_HOSTNAME.iter().any(|k| {
            a.get(*k).and_then(Value::as_str).is_some_and(|v| {
                v.split(',')
                    .any(|h| h.trim().trim_end_matches('.').eq_ignore_ascii_case(host))
            })
        })
    })
}

/// The router pods an external UDP dial host leads to: DNS for it points at the Gateway of the
/// UDPRoutes naming it (or at a Service naming it); every UDPRoute on the UDP listeners of the dial
/// port there takes the traffic.
fn external_dns(g: &Graph, pods: &mut Pods<'_>, host: &str, port: Option<u64>) -> Result<Vec<usize>, String> {
    let mut out: Vec<usize> = Vec::new();
    let mut found = false;
    for svc in g.of("", "Service").filter(|s| names_host(s, host)) {
        found = true;
        out.extend(pods.of_service(svc).iter().copied());
    }
    let named: Vec<&Object> = routes(g)
        .filter(|r| r.kind == "UDPRoute" && names_host(r, host))
        .collect();
    let mut on_port = false;
    for route in &named {
        found = true;
        for pr in parent_refs(route) {
            let Attach::Accepted { listeners: ls, .. } = attach(g, route, &pr) else {
                continue;
            };
            for l in ls
                .iter()
                .filter(|l| l.protocol == "UDP" && (port.is_none() || l.port == port))
            {
                on_port = true;
                // Every UDPRoute Accepted on that listener shares it.
                for other in routes(g).filter(|o| o.kind == "UDPRoute") {
                    let shares = parent_refs(other).iter().any(|opr| {
                        opr.namespace == pr.namespace
                            && opr.name == pr.name
                            && matches!(attach(g, other, opr), Attach::Accepted { listeners: ols, .. }
                                if ols.iter().any(|x| x.name == l.name))
                    });
                    if !shares {
                        continue;
                    }
                    for b in backend_refs(other) {
                        if let Backend::Resolved { service, .. } = resolve(g, other, &b) {
                            out.extend(pods.of_service(service).iter().copied());
                        }
                    }
                }
            }
        }
    }
    if !found {
        return Err(format!(
            "nothing in the render says where `{host}` leads (no UDPRoute or Service names it in the \
             external-dns hostname annotation), so the gate cannot tell that it reaches that pod alone"
        ));
    }
    if !named.is_empty() && !on_port {
        return Err(format!(
            "the UDPRoutes naming `{host}` ({}) are Accepted on no UDP listener of port {}",
            named.iter().map(|r| r.display()).collect::<Vec<_>>().join(", "),
            port.map_or_else(|| "?".to_string(), |p| p.to_string())
        ));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
