//! The router's advertised hostnames (per-pod expansions included) against the serving
//! certificate's SANs, judged without enumerating the pods.

use super::*;

/// QUIC: every expansion of the advertised hostname template against the router's certificate.
pub(super) fn check_advertised(g: &Graph, r: &RouterWorkload) -> Vec<Finding> {
    let Some(template) = r.flag(F_TEMPLATE).filter(|t| !t.is_empty()) else {
        return Vec::new();
    };
    let obj = r.obj;
    let ns = ns_of(obj);
    // A literal POD_NAME (one pod with a stable identity, e.g. a one-pod Deployment) is the name.
    let literal = match &r.pod_name {
        crate::router::PodName::Literal(n) => Some(n.clone()),
        _ => None,
    };
    if template.contains("{pod_name}") && obj.kind != "StatefulSet" && literal.is_none() {
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
    let Some(secret) = router_tls_secret(g, r) else {
        return Vec::new();
    };
    let Some(id) = identity(g, ns, &secret) else {
        return Vec::new();
    };
    let expansions: Vec<(String, String)> = if let Some(n) = literal.filter(|_| template.contains("{pod_name}")) {
        vec![(
            template.replace("{pod_name}", &n).replace("{namespace}", ns),
            format!("every replica, POD_NAME={n}"),
        )]
    } else if template.contains("{pod_name}") {
        // Judged as a pattern, never one name per replica: `replicas` is a number from the input.
        // An autoscaler targeting the workload counts with its maxReplicas.
        let replicas = crate::router::pod_count(g, obj).max(1);
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
pub(super) const ENUMERATED_REPLICAS: u64 = 64;

/// The ordinals whose advertised names decide whether `replicas` pods are covered, without
/// enumerating the pods: every ordinal below `replicas` whose digits appear in a SAN, and for each
/// digit count one ordinal whose digits appear in no SAN. Names of unmentioned ordinals with the
/// same digit count differ only in digits no SAN contains, so no SAN names one of them exactly and
/// a wildcard covers all of them or none: one stands for all (the second number says how many).
pub(super) fn judged_ordinals(replicas: u64, sans: &[String]) -> Vec<(u64, u64)> {
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
