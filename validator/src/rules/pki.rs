//! Rule family: pki. Certificates workers verify, trust bundles they anchor in, and TLS material
//! the router must reload in place. Names are matched with X.509 rules as rustls-webpki applies
//! them (`crate::pki::names`); real certificates (bundles, a pre-created Secret's public chain)
//! go through the same strict parser as `nvcf-validate fingerprint` and `cert verify`.
//!
//! Shared model, built per check from the graph:
//! - `RouterWorkload` (`crate::router`): a workload container that passes the router's contract
//!   flags.
//! - `Identity`: what a TLS Secret will hold — the cert-manager Certificate that writes it (names
//!   on paper) or a public chain given in a Secret's `tls.crt` (a real certificate). Unknown
//!   Secrets (customer-created, no chain given) yield no identity and no finding.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::{Graph, Object};
use crate::pki::{self, names, CertInfo};
use crate::router::{
    routers, RouterWorkload, ADVERTISED_HOSTNAME_TEMPLATE as F_TEMPLATE, GRPC_PYLON_DIAL_ADDR as F_GRPC_DIAL,
    TLS_CERT_PATH as F_CERT, TLS_KEY_PATH as F_KEY,
};
use rustls_pki_types::CertificateDer;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::IpAddr;

const CM: &str = "cert-manager.io";
const GW: &str = "gateway.networking.k8s.io";
const FP_ANNOTATION: &str = "nvcf.io/trust-bundle-fingerprint";
const TRUST_BUNDLE: &str = "nvcf-trust-bundle";
const WORKER_PROFILE: &str = "nvcf-worker-profile";
const ROLE_CONFIGMAP: &str = "openbao-pki-role";

pub static RULES: &[Rule] = &[
    Rule {
        id: "san-covers-advertised-name",
        family: "pki",
        severity: Severity::Error,
        summary:
            "an SNI name workers will present (advertised hostname expansions, gRPC dial host where TLS ends at the \
                  router, TLS/HTTPS listener hostnames) is not covered by the serving Certificate's SANs (X.509 rules)",
        explain: EXPLAIN_SAN,
        scope: Scope::Objects,
        check: check_san,
    },
    Rule {
        id: "certificate-server-auth",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a serving Certificate lacks `server auth` usage, or its key algorithm/CN/names/duration cannot be issued \
                  by the OpenBao role that signs it",
        explain: EXPLAIN_SERVER_AUTH,
        scope: Scope::Objects,
        check: check_server_auth,
    },
    Rule {
        id: "certificate-issuer-resolves",
        family: "pki",
        severity: Severity::Error,
        summary: "an issuerRef names no Issuer/ClusterIssuer in the stack and none is declared external",
        explain: EXPLAIN_ISSUER,
        scope: Scope::Objects,
        check: check_issuer_resolves,
    },
    Rule {
        id: "vault-issuer-secure",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a Vault issuer is not https, has no CA bundle, does not use a `/sign/` path, or authenticates with a \
                  static token instead of a ServiceAccount",
        explain: EXPLAIN_VAULT,
        scope: Scope::Objects,
        check: check_vault,
    },
    Rule {
        id: "trust-bundle-valid",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a trust bundle is empty, holds anything but CERTIFICATE blocks (a private key above all), or holds a \
                  non-CA or expired certificate; duplicates and not-yet-valid CAs are warnings",
        explain: EXPLAIN_BUNDLE,
        scope: Scope::Objects,
        check: check_bundle,
    },
    Rule {
        id: "trust-bundle-fingerprint",
        family: "pki",
        severity: Severity::Error,
        summary: "a recorded fingerprint differs from `nvcf-trust-bundle-v1` of the bundle it describes",
        explain: EXPLAIN_FINGERPRINT,
        scope: Scope::Objects,
        check: check_fingerprint,
    },
    Rule {
        id: "tls-mount-reloadable",
        family: "pki",
        severity: Severity::Error,
        summary:
            "a server's TLS Secret is mounted with subPath, via env, cert and key from different volumes, or the pod \
                  template carries a checksum of it",
        explain: EXPLAIN_RELOAD,
        scope: Scope::Objects,
        check: check_reloadable,
    },
    Rule {
        id: "tls-paths-consistent",
        family: "pki",
        severity: Severity::Error,
        summary: "`--tls-cert-path`/`--tls-key-path` are half-set or point outside a mounted TLS volume",
        explain: EXPLAIN_PATHS,
        scope: Scope::Objects,
        check: check_paths,
    },
];

// =============================================================================================
// Shared helpers

fn ns_of(o: &Object) -> &str {
    o.namespace.as_deref().unwrap_or("default")
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn items<'a>(v: &'a Value, ptr: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(ptr).and_then(Value::as_array).into_iter().flatten()
}

fn strings(v: &Value, ptr: &str) -> Vec<String> {
    items(v, ptr).filter_map(Value::as_str).map(str::to_string).collect()
}

/// A YAML boolean that may have been written as a string.
fn boolean(v: Option<&Value>) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// `[a, b, …]` for messages (bounded).
fn list(v: &[String]) -> String {
    const MAX: usize = 8;
    let mut s = v.iter().take(MAX).cloned().collect::<Vec<_>>().join(", ");
    if v.len() > MAX {
        s.push_str(&format!(", … ({} more)", v.len() - MAX));
    }
    format!("[{s}]")
}

fn is_certificate(o: &Object) -> bool {
    o.kind == "Certificate" && o.group() == CM
}

fn is_issuer(o: &Object) -> bool {
    (o.kind == "Issuer" || o.kind == "ClusterIssuer") && o.group() == CM
}

fn is_workload(o: &Object) -> bool {
    !o.prov.external && o.pod_spec().is_some()
}

// ---------------------------------------------------------------------------------------------
// Volumes and mounts

struct Mount<'a> {
    mount: &'a Value,
    volume: Option<&'a Value>,
    mount_path: String,
    /// Path of the file relative to the mount (empty when the path is the mount itself).
    rel: String,
}

impl Mount<'_> {
    fn volume_name(&self) -> &str {
        self.mount.get("name").and_then(Value::as_str).unwrap_or("?")
    }

    fn sub_path(&self) -> Option<&str> {
        self.mount
            .get("subPath")
            .or_else(|| self.mount.get("subPathExpr"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

/// The mount of `container` that holds `path` (longest mountPath wins).
fn mount_for<'a>(pod: &'a Value, container: &'a Value, path: &str) -> Option<Mount<'a>> {
    let mut best: Option<Mount<'a>> = None;
    for m in items(container, "/volumeMounts") {
        let Some(mp) = m.get("mountPath").and_then(Value::as_str) else {
            continue;
        };
        let mp = mp.trim_end_matches('/');
        let rel = if path == mp {
            String::new()
        } else if let Some(r) = path.strip_prefix(mp).and_then(|r| r.strip_prefix('/')) {
            r.to_string()
        } else {
            continue;
        };
        if best.as_ref().is_some_and(|b| b.mount_path.len() >= mp.len()) {
            continue;
        }
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        let volume = items(pod, "/volumes").find(|v| v.get("name").and_then(Value::as_str) == Some(name));
        best = Some(Mount {
            mount: m,
            volume,
            mount_path: mp.to_string(),
            rel,
        });
    }
    best
}

/// `(secret name, items)` of every Secret a volume projects.
fn volume_secrets(vol: &Value) -> Vec<(&str, Option<&Vec<Value>>)> {
    let mut out = Vec::new();
    if let Some(name) = str_at(vol, "/secret/secretName") {
        out.push((name, vol.pointer("/secret/items").and_then(Value::as_array)));
    }
    for src in items(vol, "/projected/sources") {
        if let Some(name) = str_at(src, "/secret/name") {
            out.push((name, src.pointer("/secret/items").and_then(Value::as_array)));
        }
    }
    out
}

/// The Secret and key whose content appears at `rel` inside a volume.
fn secret_key_at(vol: &Value, rel: &str) -> Option<(String, String)> {
    for (secret, its) in volume_secrets(vol) {
        match its {
            Some(its) => {
                if let Some(it) = its.iter().find(|i| i.get("path").and_then(Value::as_str) == Some(rel)) {
                    return Some((secret.to_string(), it.get("key").and_then(Value::as_str)?.to_string()));
                }
            }
            None if !rel.contains('/') && !rel.is_empty() => return Some((secret.to_string(), rel.to_string())),
            None => {}
        }
    }
    None
}

/// The Secret the router's certificate comes from: the Secret behind `--tls-cert-path`.
fn router_tls_secret(r: &RouterWorkload) -> Option<String> {
    let pod = r.obj.pod_spec()?;
    let path = r.flag(F_CERT).filter(|p| !p.is_empty())?;
    let m = mount_for(pod, r.container, path)?;
    let vol = m.volume?;
    let rel = match m.sub_path() {
        Some(sp) if m.rel.is_empty() => sp.to_string(),
        _ => m.rel.clone(),
    };
    secret_key_at(vol, &rel)
        .map(|(s, _)| s)
        .or_else(|| volume_secrets(vol).first().map(|(s, _)| s.to_string()))
}

/// Secrets whose content is renewed TLS material in a namespace: written by a Certificate, or of
/// type `kubernetes.io/tls`.
fn tls_secrets(g: &Graph, ns: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for o in &g.objects {
        if o.namespace.as_deref() != Some(ns) {
            continue;
        }
        if is_certificate(o) {
            if let Some(s) = o.str_at("/spec/secretName") {
                out.insert(s.to_string());
            }
        } else if o.kind == "Secret" && o.group().is_empty() && o.str_at("/type") == Some("kubernetes.io/tls") {
            out.insert(o.name.clone());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Serving identities

enum Identity<'a> {
    /// A cert-manager Certificate (names on paper).
    Cert(&'a Object),
    /// A real leaf from a Secret's public `tls.crt`.
    Chain {
        secret: &'a Object,
        leaf: CertificateDer<'static>,
        info: CertInfo,
    },
}

impl Identity<'_> {
    fn dns_names(&self) -> Vec<String> {
        match self {
            Identity::Cert(c) => strings(&c.body, "/spec/dnsNames"),
            Identity::Chain { info, .. } => info.dns_sans.clone(),
        }
    }

    fn ip_names(&self) -> Vec<IpAddr> {
        match self {
            Identity::Cert(c) => strings(&c.body, "/spec/ipAddresses")
                .iter()
                .filter_map(|s| s.parse().ok())
                .collect(),
            Identity::Chain { info, .. } => info.ip_sans.clone(),
        }
    }

    /// X.509 coverage of a concrete name; a wildcard name `*.S` (a Gateway hostname that stands
    /// for every one-label name under S) is covered only by the same wildcard SAN.
    fn covers(&self, name: &str) -> bool {
        if name.starts_with("*.") {
            return self.dns_names().iter().any(|s| s.eq_ignore_ascii_case(name));
        }
        match self {
            Identity::Cert(_) => names::covers(&self.dns_names(), &self.ip_names(), name),
            Identity::Chain { leaf, .. } => names::cert_covers(leaf, name),
        }
    }

    fn describe(&self) -> String {
        let mut sans = self.dns_names();
        sans.extend(self.ip_names().iter().map(IpAddr::to_string));
        match self {
            Identity::Cert(c) => format!(
                "Certificate {}/{} {} {}",
                ns_of(c),
                c.name,
                if self.ip_names().is_empty() { "dnsNames" } else { "SANs" },
                list(&sans)
            ),
            Identity::Chain { secret, info, .. } => {
                format!(
                    "the tls.crt leaf `{}` of {} (subjectAltNames {})",
                    info.subject,
                    secret.display(),
                    list(&sans)
                )
            }
        }
    }
}

/// What the Secret `ns/name` will hold, if the stack says so.
fn identity<'a>(g: &'a Graph, ns: &str, secret: &str) -> Option<Identity<'a>> {
    if let Some(c) = g.objects.iter().find(|o| {
        is_certificate(o) && o.namespace.as_deref() == Some(ns) && o.str_at("/spec/secretName") == Some(secret)
    }) {
        return Some(Identity::Cert(c));
    }
    let s = g.get("", "Secret", Some(ns), secret)?;
    let raw = s.str_at("/data/tls.crt").or_else(|| s.str_at("/stringData/tls.crt"))?;
    let pem = pki::pem_text_of(raw)?;
    let leaf = pki::parse_bundle(&pem).ok()?.into_iter().next()?;
    let info = pki::describe(leaf.as_ref()).ok()?;
    Some(Identity::Chain { secret: s, leaf, info })
}

/// "`*.S` covers exactly one label" hint when a wildcard SAN sits above `name` at the wrong depth.
fn depth_hint(sans: &[String], name: &str) -> String {
    let lname = name.to_ascii_lowercase();
    for s in sans {
        if let Some(suffix) = s.to_ascii_lowercase().strip_prefix("*.") {
            if let Some(prefix) = lname.strip_suffix(&format!(".{suffix}")) {
                if prefix.contains('.') {
                    return format!(" ({s} covers exactly one label, not `{prefix}`)");
                }
            }
        }
    }
    String::new()
}

// =============================================================================================
// san-covers-advertised-name

const SAN: &str = "san-covers-advertised-name";

fn check_san(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
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
    for r in routers(g) {
        out.extend(check_advertised(g, &r));
        out.extend(check_grpc_dial(g, &r, &judged));
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

/// The identities behind a terminating listener's certificateRefs; `None` when the listener
/// does not terminate TLS or no reference resolves to something the stack describes.
fn listener_identities<'a>(g: &'a Graph, gw: &Object, l: &Value) -> Option<Vec<Identity<'a>>> {
    let proto = l.get("protocol").and_then(Value::as_str)?;
    let terminates =
        proto == "HTTPS" || (proto == "TLS" && str_at(l, "/tls/mode").unwrap_or("Terminate") == "Terminate");
    if !terminates {
        return None;
    }
    let ids: Vec<_> = items(l, "/tls/certificateRefs")
        .filter(|r| r.get("kind").and_then(Value::as_str).unwrap_or("Secret") == "Secret")
        .filter(|r| r.get("group").and_then(Value::as_str).unwrap_or("").is_empty())
        .filter_map(|r| {
            let name = r.get("name").and_then(Value::as_str)?;
            let ns = r.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(gw));
            identity(g, ns, name)
        })
        .collect();
    (!ids.is_empty()).then_some(ids)
}

fn route_hostnames(route: &Object) -> Vec<String> {
    strings(&route.body, "/spec/hostnames")
}

fn gateway_routes(g: &Graph) -> impl Iterator<Item = &Object> {
    g.objects
        .iter()
        .filter(|o| o.group() == GW && matches!(o.kind.as_str(), "HTTPRoute" | "GRPCRoute" | "TLSRoute"))
}

/// Does parentRef `pr` of `route` attach to listener `l` of `gw` (name, section, port)?
fn attaches(route: &Object, pr: &Value, gw: &Object, l: &Value) -> bool {
    let kind = pr.get("kind").and_then(Value::as_str).unwrap_or("Gateway");
    let group = pr.get("group").and_then(Value::as_str).unwrap_or(GW);
    let ns = pr.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(route));
    if kind != "Gateway" || group != GW || ns != ns_of(gw) || pr.get("name").and_then(Value::as_str) != Some(&gw.name) {
        return false;
    }
    let lname = l.get("name").and_then(Value::as_str);
    if let Some(sec) = pr.get("sectionName").and_then(Value::as_str) {
        if Some(sec) != lname {
            return false;
        }
    }
    if let Some(port) = pr.get("port").and_then(Value::as_u64) {
        if l.get("port").and_then(Value::as_u64) != Some(port) {
            return false;
        }
    }
    let proto = l.get("protocol").and_then(Value::as_str).unwrap_or("");
    match route.kind.as_str() {
        "TLSRoute" => proto == "TLS",
        _ => proto == "HTTPS" || proto == "HTTP",
    }
}

/// The names clients will send to a listener: its exact hostname; or, for a wildcard or empty
/// hostname, the hostnames of attached routes intersected with it (a route without hostnames
/// inherits the listener's wildcard); the wildcard itself when no route attaches.
fn listener_names(g: &Graph, gw: &Object, l: &Value) -> Vec<String> {
    let lhost = l.get("hostname").and_then(Value::as_str).filter(|h| !h.is_empty());
    if let Some(h) = lhost.filter(|h| !h.starts_with("*.")) {
        return vec![h.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut attached = false;
    for route in gateway_routes(g) {
        if !items(&route.body, "/spec/parentRefs").any(|pr| attaches(route, pr, gw, l)) {
            continue;
        }
        attached = true;
        let hosts = route_hostnames(route);
        if hosts.is_empty() {
            out.extend(lhost.map(str::to_string));
        }
        for h in hosts {
            match lhost {
                None => out.push(h),
                Some(lh) => out.extend(names::gateway_intersection(lh, &h)),
            }
        }
    }
    if !attached {
        out.extend(lhost.map(str::to_string));
    }
    let mut seen = BTreeSet::new();
    out.retain(|n| seen.insert(n.to_ascii_lowercase()));
    out
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
        let replicas = obj.at("/spec/replicas").and_then(Value::as_u64).unwrap_or(1).max(1);
        (0..replicas)
            .map(|i| {
                let n = template
                    .replace("{pod_name}", &format!("{}-{i}", obj.name))
                    .replace("{namespace}", ns);
                (n, format!("replica {i}"))
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

/// Host of an `https://host[:port][/…]` dial address; `None` for plaintext or unparsable values.
fn https_host(addr: &str) -> Option<String> {
    let rest = addr.strip_prefix("https://")?;
    let hostport = rest.split('/').next()?;
    let host = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split(']').next()?.to_string()
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h.to_string(),
            _ => hostport.to_string(),
        }
    };
    (!host.is_empty()).then_some(host)
}

enum Terminator<'a> {
    Router,
    Listener {
        gw: &'a Object,
        listener: &'a Value,
    },
    /// Carried by a route whose Gateway or listener the stack does not describe: not judged here.
    Unknown,
}

/// Who terminates TLS for the gRPC dial host: the Gateway listener a route carries it through,
/// else the router itself.
fn grpc_terminator<'a>(g: &'a Graph, host: &str) -> Terminator<'a> {
    let mut carried = false;
    let mut best: Option<(u8, &'a Object, &'a Value)> = None;
    for route in gateway_routes(g) {
        let hosts = route_hostnames(route);
        let explicit = hosts.iter().any(|h| names::gateway_matches(h, host));
        if !hosts.is_empty() && !explicit {
            continue;
        }
        carried |= explicit;
        for pr in items(&route.body, "/spec/parentRefs") {
            let ns = pr.get("namespace").and_then(Value::as_str).unwrap_or(ns_of(route));
            let Some(name) = pr.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(gw) = g.get(GW, "Gateway", Some(ns), name) else {
                carried |= explicit;
                continue;
            };
            for l in items(&gw.body, "/spec/listeners").filter(|l| attaches(route, pr, gw, l)) {
                let rank = match l.get("hostname").and_then(Value::as_str) {
                    Some(h) if h.starts_with("*.") && names::gateway_matches(h, host) => 1,
                    Some(h) if names::gateway_matches(h, host) => 2,
                    Some(_) => continue,
                    None => 0,
                };
                carried = true;
                if best.is_none_or(|(r, _, _)| rank > r) {
                    best = Some((rank, gw, l));
                }
            }
        }
    }
    match best {
        Some((_, gw, l)) => match (l.get("protocol").and_then(Value::as_str), str_at(l, "/tls/mode")) {
            (Some("HTTPS"), _) | (Some("TLS"), None | Some("Terminate")) => Terminator::Listener { gw, listener: l },
            (Some("TLS"), Some("Passthrough")) => Terminator::Router,
            _ => Terminator::Unknown, // plaintext listener: plaintext-endpoint's business
        },
        None if carried => Terminator::Unknown,
        None => Terminator::Router,
    }
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

// =============================================================================================
// certificate-server-auth

const SERVER_AUTH: &str = "certificate-server-auth";

fn usages(c: &Object) -> Vec<String> {
    strings(&c.body, "/spec/usages")
        .iter()
        .map(|u| u.to_ascii_lowercase())
        .collect()
}

fn check_server_auth(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let roles = openbao_roles(g);
    let mut out = Vec::new();
    for c in g.objects.iter().filter(|o| is_certificate(o) && !o.prov.external) {
        if boolean(c.at("/spec/isCA")) == Some(true) {
            continue;
        }
        let u = usages(c);
        let client_only = u.iter().any(|x| x == "client auth") && !u.iter().any(|x| x == "server auth");
        if !client_only && !u.iter().any(|x| x == "server auth") {
            let what = if u.is_empty() {
                "sets no spec.usages, so cert-manager requests its code default (digital signature, key encipherment) without server auth".to_string()
            } else {
                format!("has spec.usages {} without server auth", list(&u))
            };
            out.push(Finding::object_at(
                SERVER_AUTH,
                c,
                if u.is_empty() { "spec:" } else { "usages" },
                format!(
                    "{} {what}; workers (webpki) refuse a serving certificate whose extendedKeyUsage lacks serverAuth; \
                     set usages: [server auth, digital signature, key encipherment]",
                    c.display()
                ),
            ));
        }
        if client_only {
            continue;
        }
        for (cm, role) in &roles {
            if role.signs(c) {
                out.extend(role.judge(c, cm));
            }
        }
    }
    out
}

/// The signing role parameters the openbao-issuer chart publishes (ConfigMap `openbao-pki-role`:
/// `role.json` = role parameters, `issuer` = the ClusterIssuer name or `Kind/name`).
struct OpenBaoRole {
    issuer_kind: String,
    issuer_name: String,
    params: Value,
}

fn openbao_roles(g: &Graph) -> Vec<(&Object, OpenBaoRole)> {
    g.of_kind("ConfigMap")
        .filter(|cm| cm.name == ROLE_CONFIGMAP)
        .filter_map(|cm| {
            let params: Value = serde_json::from_str(cm.str_at("/data/role.json")?).ok()?;
            let issuer = cm.str_at("/data/issuer")?.trim();
            let (kind, name) = issuer.split_once('/').unwrap_or(("ClusterIssuer", issuer));
            Some((
                cm,
                OpenBaoRole {
                    issuer_kind: kind.to_string(),
                    issuer_name: name.to_string(),
                    params,
                },
            ))
        })
        .collect()
}

/// Vault/OpenBao durations: seconds as a number, or Go-style text with an optional `d` unit.
fn parse_duration(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => go_duration(s),
        _ => None,
    }
}

/// `2160h`, `1h30m`, `90d`, `3600` (seconds) → seconds. Sub-second parts are ignored.
fn go_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(n) = s.parse::<u64>() {
        return Some(n);
    }
    let (mut total, mut num) = (0f64, String::new());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphabetic() || n == 'µ' {
                unit.push(n);
                chars.next();
            } else {
                break;
            }
        }
        let x: f64 = num.parse().ok()?;
        num.clear();
        total += x * match unit.as_str() {
            "d" => 86400.0,
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" | "us" | "µs" | "ns" => 0.0,
            _ => return None,
        };
    }
    num.is_empty().then_some(total as u64)
}

fn human_duration(secs: u64) -> String {
    if secs % 86400 == 0 {
        format!("{}h ({} days)", secs / 3600, secs / 86400)
    } else {
        format!("{}s", secs)
    }
}

/// Shell-style glob with `*` only (what OpenBao's allow_glob_domains uses).
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(p) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            let Some(pos) = rest.find(p) else { return false };
            rest = &rest[pos + p.len()..];
        }
    }
    true
}

impl OpenBaoRole {
    fn p(&self, key: &str) -> Option<&Value> {
        self.params.get(key)
    }

    fn flag(&self, key: &str, default: bool) -> bool {
        boolean(self.p(key)).unwrap_or(default)
    }

    fn signs(&self, c: &Object) -> bool {
        let group = c.str_at("/spec/issuerRef/group").unwrap_or(CM);
        let kind = c.str_at("/spec/issuerRef/kind").unwrap_or("Issuer");
        group == CM && kind == self.issuer_kind && c.str_at("/spec/issuerRef/name") == Some(&self.issuer_name)
    }

    fn allowed_domains(&self) -> Vec<String> {
        match self.p("allowed_domains") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_lowercase).collect(),
            Some(Value::String(s)) => s
                .split(',')
                .map(|d| d.trim().to_lowercase())
                .filter(|d| !d.is_empty())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// OpenBao's name validation for the role (allow_any_name, localhost, bare/sub/glob domains,
    /// wildcards).
    fn allows(&self, name: &str) -> bool {
        if self.flag("allow_any_name", false) {
            return true;
        }
        let lname = name.to_ascii_lowercase();
        let (wild, base) = match lname.strip_prefix("*.") {
            Some(b) => (true, b.to_string()),
            None => (false, lname.clone()),
        };
        if wild && !self.flag("allow_wildcard_certificates", true) {
            return false;
        }
        if self.flag("allow_localhost", true) && (base == "localhost" || base == "localdomain") && !wild {
            return true;
        }
        self.allowed_domains().iter().any(|d| {
            (self.flag("allow_bare_domains", false) && base == *d)
                || (self.flag("allow_subdomains", false) && (base.ends_with(&format!(".{d}")) || (wild && base == *d)))
                || (self.flag("allow_glob_domains", false) && glob(d, &lname))
        })
    }

    fn judge(&self, c: &Object, cm: &Object) -> Vec<Finding> {
        let role = format!(
            "the OpenBao role published in {} (issuer {})",
            cm.display(),
            self.issuer_name
        );
        let mut out = Vec::new();
        // Role EKU.
        if !self.flag("server_flag", true) {
            out.push(Finding::object_at(SERVER_AUTH, c, "issuerRef", format!(
                "{} is signed by {role}, which has server_flag=false: OpenBao decides EKUs from the role, not the CSR, so the \
                 certificate will lack serverAuth whatever spec.usages says; set server_flag=true on the role",
                c.display()
            )));
        }
        // Key algorithm and size.
        let algo = c.str_at("/spec/privateKey/algorithm").unwrap_or("RSA");
        let (ktype, default_bits) = match algo.to_ascii_uppercase().as_str() {
            "ECDSA" => ("ec", 256),
            "ED25519" => ("ed25519", 0),
            _ => ("rsa", 2048),
        };
        let size = c
            .at("/spec/privateKey/size")
            .and_then(Value::as_u64)
            .unwrap_or(default_bits);
        let role_type = self
            .p("key_type")
            .and_then(Value::as_str)
            .unwrap_or("rsa")
            .to_ascii_lowercase();
        if role_type != "any" && role_type != ktype {
            out.push(Finding::object_at(SERVER_AUTH, c, "privateKey", format!(
                "{} requests an {algo} key, but {role} has key_type={role_type} and refuses it; set privateKey.algorithm to \
                 {} or the role's key_type to {ktype}",
                c.display(),
                match role_type.as_str() { "ec" => "ECDSA", "ed25519" => "Ed25519", _ => "RSA" }
            )));
        } else if role_type == ktype && ktype != "ed25519" {
            let bits = self
                .p("key_bits")
                .and_then(Value::as_u64)
                .filter(|b| *b > 0)
                .unwrap_or(default_bits);
            if size < bits {
                out.push(Finding::object_at(SERVER_AUTH, c, "privateKey", format!(
                    "{} requests a {size}-bit {algo} key, but {role} requires at least key_bits={bits}; set privateKey.size: {bits}",
                    c.display()
                )));
            }
        }
        // Common name.
        let cn = c.str_at("/spec/commonName").filter(|s| !s.is_empty());
        if cn.is_none() && self.flag("require_cn", true) {
            out.push(Finding::object_at(
                SERVER_AUTH,
                c,
                "dnsNames",
                format!(
                    "{} has no commonName, but {role} has require_cn=true (the OpenBao default) and rejects it; set \
                 require_cn=false on the role (workers match SANs only) rather than adding a CN",
                    c.display()
                ),
            ));
        }
        // Names.
        let mut names: Vec<String> = strings(&c.body, "/spec/dnsNames");
        names.extend(cn.map(str::to_string));
        let refused: Vec<String> = names.into_iter().filter(|n| !self.allows(n)).collect();
        if !refused.is_empty() {
            let wild_off =
                refused.iter().any(|n| n.starts_with("*.")) && !self.flag("allow_wildcard_certificates", true);
            out.push(Finding::object_at(SERVER_AUTH, c, "dnsNames", format!(
                "{} requests {} that {role} does not allow (allowed_domains {}, allow_subdomains={}, allow_bare_domains={}{}); \
                 widen the role or drop the names",
                c.display(),
                list(&refused),
                list(&self.allowed_domains()),
                self.flag("allow_subdomains", false),
                self.flag("allow_bare_domains", false),
                if wild_off { ", allow_wildcard_certificates=false" } else { "" }
            )));
        }
        // IP SANs.
        let ips = strings(&c.body, "/spec/ipAddresses");
        if !ips.is_empty() && !self.flag("allow_ip_sans", true) {
            out.push(Finding::object_at(
                SERVER_AUTH,
                c,
                "ipAddresses",
                format!(
                    "{} requests IP SANs {} but {role} has allow_ip_sans=false and rejects the request; drop \
                     ipAddresses or allow IP SANs on the role",
                    c.display(),
                    list(&ips)
                ),
            ));
        }
        // Duration.
        let duration = c.str_at("/spec/duration").map_or(Some(2160 * 3600), go_duration);
        let max_ttl = self.p("max_ttl").and_then(parse_duration).filter(|t| *t > 0);
        if let (Some(d), Some(max)) = (duration, max_ttl) {
            if d > max {
                out.push(Finding::object_at(SERVER_AUTH, c, "duration", format!(
                    "{} asks for duration {}, but {role} has max_ttl {}: OpenBao silently caps the certificate, so it expires \
                     earlier than cert-manager plans (renewBefore may then trigger constant renewals); set duration ≤ {} or \
                     raise max_ttl (and the mount's max lease TTL)",
                    c.display(),
                    human_duration(d),
                    human_duration(max),
                    human_duration(max)
                )));
            }
        }
        out
    }
}

// =============================================================================================
// certificate-issuer-resolves

const ISSUER: &str = "certificate-issuer-resolves";

fn issuer_exists(g: &Graph, group: &str, kind: &str, ns: &str, name: &str) -> bool {
    g.get(group, kind, Some(ns), name).is_some() || g.get(group, kind, None, name).is_some()
}

fn check_issuer_resolves(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    for c in g.objects.iter().filter(|o| is_certificate(o) && !o.prov.external) {
        let Some(name) = c.str_at("/spec/issuerRef/name").filter(|n| !n.is_empty()) else {
            out.push(Finding::object_at(
                ISSUER,
                c,
                "issuerRef",
                format!(
                    "{} has no spec.issuerRef.name; name the Issuer or ClusterIssuer that signs it",
                    c.display()
                ),
            ));
            continue;
        };
        let group = c
            .str_at("/spec/issuerRef/group")
            .filter(|s| !s.is_empty())
            .unwrap_or(CM);
        let kind = c
            .str_at("/spec/issuerRef/kind")
            .filter(|s| !s.is_empty())
            .unwrap_or("Issuer");
        if group == CM && kind != "Issuer" && kind != "ClusterIssuer" {
            out.push(Finding::object_at(
                ISSUER,
                c,
                "issuerRef",
                format!(
                    "{} has issuerRef kind {kind} in group {CM}; only Issuer and ClusterIssuer exist there",
                    c.display()
                ),
            ));
            continue;
        }
        if issuer_exists(g, group, kind, ns_of(c), name) {
            continue;
        }
        let other = if kind == "Issuer" { "ClusterIssuer" } else { "Issuer" };
        let hint = if group == CM && issuer_exists(g, CM, other, ns_of(c), name) {
            format!(" (a {other} {name} exists: set issuerRef.kind: {other})")
        } else if kind == "Issuer" {
            format!(" (an Issuer must be in the Certificate's namespace {})", ns_of(c))
        } else {
            String::new()
        };
        out.push(Finding::object_at(ISSUER, c, "issuerRef", format!(
            "{} is issued by {kind} {name} (group {group}), which the stack does not render and the policy does not declare \
             as external{hint}; cert-manager will leave it unissued. Render the issuer, fix issuerRef, or declare it under \
             `externals:` in the policy",
            c.display()
        )));
    }
    out
}

// =============================================================================================
// vault-issuer-secure

const VAULT: &str = "vault-issuer-secure";

fn check_vault(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for iss in ctx.graph.objects.iter().filter(|o| is_issuer(o) && !o.prov.external) {
        let Some(v) = iss.at("/spec/vault") else { continue };
        let who = iss.display();
        let server = str_at(v, "/server").unwrap_or("");
        if !server.to_ascii_lowercase().starts_with("https://") {
            out.push(Finding::object_at(VAULT, iss, "server", format!(
                "{who} talks to Vault/OpenBao at `{server}`, not https: the CSR, the signed certificate and the \
                 ServiceAccount token cross the network in clear; set spec.vault.server to https://… and turn the OpenBao \
                 listener's TLS on"
            )));
        }
        let has_bundle = str_at(v, "/caBundle").is_some_and(|s| !s.trim().is_empty());
        let has_ref = v.pointer("/caBundleSecretRef").is_some_and(|r| !r.is_null());
        if !has_bundle && !has_ref {
            out.push(Finding::object_at(VAULT, iss, "vault:", format!(
                "{who} has neither caBundle nor caBundleSecretRef: cert-manager then trusts the system roots for the OpenBao \
                 listener instead of the stack's bootstrap CA; set caBundleSecretRef (or caBundle) to the CA that signed \
                 OpenBao's serving certificate"
            )));
        } else if has_bundle && has_ref {
            out.push(Finding::object_at(
                VAULT,
                iss,
                "caBundle",
                format!(
                "{who} sets both caBundle and caBundleSecretRef; cert-manager accepts only one: keep caBundleSecretRef"
            ),
            ));
        }
        let path = str_at(v, "/path").unwrap_or("");
        if !path.contains("/sign/") {
            out.push(Finding::object_at(VAULT, iss, "path", format!(
                "{who} uses path `{path}`, which is not a `<mount>/sign/<role>` path: cert-manager submits a CSR and needs \
                 the role-constrained sign endpoint (issue/ generates keys in OpenBao, sign-verbatim/ bypasses the role); \
                 set path: <intermediate mount>/sign/<role>"
            )));
        }
        let auth = v.get("auth");
        let sa = auth
            .and_then(|a| a.pointer("/kubernetes/serviceAccountRef/name"))
            .and_then(Value::as_str);
        if sa.is_none() {
            let method = match auth {
                Some(a) if a.get("tokenSecretRef").is_some() => "a static token (tokenSecretRef)",
                Some(a) if a.get("appRole").is_some() => "AppRole with a stored secret ID",
                Some(a) if a.pointer("/kubernetes/secretRef").is_some() => {
                    "a long-lived ServiceAccount token Secret (kubernetes.secretRef)"
                }
                Some(a) if a.get("clientCertificate").is_some() => "a client certificate stored in a Secret",
                _ => "no auth method",
            };
            out.push(Finding::object_at(VAULT, iss, "auth", format!(
                "{who} authenticates to OpenBao with {method}; use auth.kubernetes with serviceAccountRef (a short-lived, \
                 audience-bound token cert-manager requests for a dedicated ServiceAccount) and a Kubernetes auth role bound \
                 to it"
            )));
        }
    }
    out
}

// =============================================================================================
// Trust bundles (trust-bundle-valid, trust-bundle-fingerprint)

struct Bundle<'a> {
    obj: &'a Object,
    /// Where in the object (`key ca.crt`, `profile.yaml trustBundle`, `spec.vault.caBundle`).
    place: &'static str,
    needle: &'static str,
    pem: Vec<u8>,
}

fn profile(cm: &Object) -> Option<Value> {
    crate::yaml::value(cm.str_at("/data/profile.yaml")?)
        .ok()
        .filter(Value::is_object)
}

fn is_bundle_configmap(o: &Object) -> bool {
    o.kind == "ConfigMap"
        && o.group().is_empty()
        && (o.name == TRUST_BUNDLE || o.annotations().is_some_and(|a| a.contains_key(FP_ANNOTATION)))
        && o.name != WORKER_PROFILE
}

fn bundles(g: &Graph) -> Vec<Bundle<'_>> {
    let mut out = Vec::new();
    for o in &g.objects {
        if is_bundle_configmap(o) {
            if let Some(pem) = o.str_at("/data/ca.crt") {
                out.push(Bundle {
                    obj: o,
                    place: "key ca.crt",
                    needle: "ca.crt",
                    pem: pem.as_bytes().to_vec(),
                });
            } else if !o.prov.external {
                out.push(Bundle {
                    obj: o,
                    place: "key ca.crt (missing)",
                    needle: "data",
                    pem: Vec::new(),
                });
            }
        } else if o.kind == "ConfigMap" && o.name == WORKER_PROFILE {
            match profile(o) {
                Some(p) => {
                    let pem = p.get("trustBundle").and_then(Value::as_str).unwrap_or("");
                    out.push(Bundle {
                        obj: o,
                        place: "profile.yaml trustBundle",
                        needle: "trustBundle",
                        pem: pem.as_bytes().to_vec(),
                    });
                }
                // A profile workers cannot read gives them no bundle: judged as an empty one.
                None if !o.prov.external => out.push(Bundle {
                    obj: o,
                    place: "profile.yaml (missing, or not a YAML mapping)",
                    needle: "profile.yaml",
                    pem: Vec::new(),
                }),
                None => {}
            }
        } else if is_issuer(o) {
            if let Some(b) = o.str_at("/spec/vault/caBundle").filter(|b| !b.trim().is_empty()) {
                // Not base64 of PEM: judged as-is, so it is reported as holding no certificate.
                let pem = pki::pem_text_of(b).unwrap_or_else(|| b.as_bytes().to_vec());
                out.push(Bundle {
                    obj: o,
                    place: "spec.vault.caBundle",
                    needle: "caBundle",
                    pem,
                });
            }
        }
    }
    out
}

const BUNDLE: &str = "trust-bundle-valid";

fn check_bundle(ctx: &Ctx) -> Vec<Finding> {
    let now = ctx.now.unix_timestamp();
    let mut out = Vec::new();
    for b in bundles(ctx.graph) {
        let whose = format!("{} {}", b.obj.display(), b.place);
        let blocks = match pki::blocks(&b.pem) {
            Ok(bl) => bl,
            Err(e) => {
                out.push(Finding::object_at(
                    BUNDLE,
                    b.obj,
                    b.needle,
                    format!("{whose}: {e}; fix the PEM"),
                ));
                continue;
            }
        };
        if blocks.is_empty() {
            out.push(Finding::object_at(BUNDLE, b.obj, b.needle, format!(
                "{whose} holds no certificate: workers would have nothing to trust the router with (or fall back to system \
                 roots); put the PEM of the CA certificate(s) that issue the router's certificates there"
            )));
            continue;
        }
        let mut seen: Vec<String> = Vec::new();
        for bl in &blocks {
            if !bl.is_certificate() {
                let e = pki::PemError::NotCertificate {
                    index: bl.index,
                    label: bl.label.clone(),
                };
                let f = Finding::object_at(BUNDLE, b.obj, b.needle, format!("{whose}: {e}"));
                out.push(if e.is_private_key() {
                    f.with_help("A private key in a published ConfigMap is readable by everyone who can read the namespace: rotate it, do not just delete the block.")
                } else {
                    f
                });
                continue;
            }
            let der = match &bl.der {
                Some(Ok(d)) => d,
                Some(Err(reason)) => {
                    out.push(Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                            "{whose}: {}",
                            pki::PemError::Malformed {
                                index: bl.index,
                                reason
                            }
                        ),
                    ));
                    continue;
                }
                None => continue,
            };
            let info = match pki::describe(der) {
                Ok(i) => i,
                Err(reason) => {
                    out.push(Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                            "{whose}: {}",
                            pki::PemError::BadCertificate {
                                index: bl.index,
                                reason
                            }
                        ),
                    ));
                    continue;
                }
            };
            let cert = format!("{whose}: certificate {} {}", bl.index, info.label());
            if seen.contains(&info.sha256) {
                out.push(
                    Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!("{cert} appears more than once; remove the duplicate"),
                    )
                    .with_severity(Severity::Warning),
                );
                continue;
            }
            seen.push(info.sha256.clone());
            if !info.is_ca {
                out.push(Finding::object_at(BUNDLE, b.obj, b.needle, format!(
                    "{cert} is not a CA (no basicConstraints cA=true) — a leaf or server certificate; workers anchor trust \
                     in CA certificates, and pinning a leaf breaks at its first renewal; publish the issuing root CA instead"
                )));
            }
            if info.not_after < now {
                out.push(Finding::object_at(
                    BUNDLE,
                    b.obj,
                    b.needle,
                    format!(
                        "{cert} expired at {}; remove it and publish the current CA",
                        pki::rfc3339(info.not_after)
                    ),
                ));
            } else if info.not_before > now {
                out.push(
                    Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                    "{cert} is not valid before {}; clients that check anchor validity will not use it until then",
                    pki::rfc3339(info.not_before)
                ),
                    )
                    .with_severity(Severity::Warning),
                );
            }
        }
    }
    out
}

const FINGERPRINT: &str = "trust-bundle-fingerprint";

fn check_fingerprint(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    let mismatch = |obj: &Object, needle: &str, what: &str, recorded: &str, computed: &str| {
        Finding::object_at(FINGERPRINT, obj, needle, format!(
            "{} records {what} {recorded}, but the bundle it describes has nvcf-trust-bundle-v1 fingerprint {computed}; \
             workers that pin the recorded value will refuse the bundle; recompute it with `nvcf-validate fingerprint` (or \
             let the chart compute it) instead of copying it by hand",
            obj.display()
        ))
    };
    for b in bundles(g).into_iter().filter(|b| b.obj.kind == "ConfigMap") {
        let Ok(computed) = pki::fingerprint::bundle_fingerprint(&b.pem) else {
            continue;
        };
        let recorded = b
            .obj
            .annotations()
            .and_then(|a| a.get(FP_ANNOTATION))
            .and_then(Value::as_str);
        let contract = (b.obj.name == TRUST_BUNDLE || b.obj.name == WORKER_PROFILE) && !b.obj.prov.external;
        match recorded {
            Some(r) if r.trim() != computed => {
                out.push(mismatch(b.obj, FP_ANNOTATION, &format!("annotation {FP_ANNOTATION}:"), r, &computed));
            }
            None if contract && b.obj.name == TRUST_BUNDLE => out.push(Finding::object_at(FINGERPRINT, b.obj, "annotations", format!(
                "{} records no {FP_ANNOTATION} annotation; the contract requires it so workers and operators can pin the \
                 bundle; set it to {computed}",
                b.obj.display()
            ))),
            _ => {}
        }
        if b.obj.name == WORKER_PROFILE {
            let p = profile(b.obj).unwrap_or(Value::Null);
            match p.get("trustBundleFingerprint").and_then(Value::as_str) {
                Some(r) if r.trim() != computed => {
                    out.push(mismatch(b.obj, "trustBundleFingerprint", "profile.yaml trustBundleFingerprint", r, &computed))
                }
                None if contract => out.push(Finding::object_at(FINGERPRINT, b.obj, "profile.yaml", format!(
                    "{} profile.yaml has no trustBundleFingerprint; workers need it to pin the bundle; set it to {computed}",
                    b.obj.display()
                ))),
                _ => {}
            }
            // The profile must publish the same bundle as nvcf-trust-bundle.
            if let Some(tb) = g.get("", "ConfigMap", b.obj.namespace.as_deref(), TRUST_BUNDLE) {
                let theirs = tb
                    .str_at("/data/ca.crt")
                    .and_then(|p| pki::fingerprint::bundle_fingerprint(p.as_bytes()).ok());
                if let Some(theirs) = theirs.filter(|t| *t != computed) {
                    out.push(Finding::object_at(FINGERPRINT, b.obj, "trustBundle", format!(
                        "{} publishes a trust bundle with fingerprint {computed}, but {} holds {theirs}; workers registered \
                         from the profile would trust different CAs than the published bundle; render both from the same PEM",
                        b.obj.display(),
                        tb.display()
                    )));
                }
            }
        }
    }
    out
}

// =============================================================================================
// tls-mount-reloadable

const RELOAD: &str = "tls-mount-reloadable";

fn check_reloadable(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let all_routers = routers(g);
    let mut out = Vec::new();
    for obj in g.objects.iter().filter(|o| is_workload(o)) {
        let Some(pod) = obj.pod_spec() else { continue };
        let mut tls = tls_secrets(g, ns_of(obj));
        let mine: Vec<&RouterWorkload> = all_routers.iter().filter(|r| std::ptr::eq(r.obj, obj)).collect();
        tls.extend(mine.iter().filter_map(|r| router_tls_secret(r)));
        if tls.is_empty() {
            continue;
        }
        let vol_tls = |name: &str| -> Option<String> {
            let v = items(pod, "/volumes").find(|v| v.get("name").and_then(Value::as_str) == Some(name))?;
            volume_secrets(v)
                .into_iter()
                .map(|(s, _)| s)
                .find(|s| tls.contains(*s))
                .map(str::to_string)
        };
        let mut uses_tls = false;
        for (_, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            for m in items(c, "/volumeMounts") {
                let vname = m.get("name").and_then(Value::as_str).unwrap_or("");
                let Some(secret) = vol_tls(vname) else { continue };
                uses_tls = true;
                let sub = m
                    .get("subPath")
                    .or_else(|| m.get("subPathExpr"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                if let Some(sp) = sub {
                    out.push(Finding::object_at(RELOAD, obj, &format!("subPath: {sp}"), format!(
                        "container {cname} of {} mounts the TLS Secret {secret} (volume {vname}) with subPath {sp}: subPath \
                         mounts never receive updates, so the renewed certificate never reaches the process; mount the whole \
                         volume as a directory and point the path flags into it",
                        obj.display()
                    )));
                }
            }
            for e in items(c, "/env") {
                let Some(secret) = str_at(e, "/valueFrom/secretKeyRef/name").filter(|s| tls.contains(*s)) else {
                    continue;
                };
                uses_tls = true;
                let var = e.get("name").and_then(Value::as_str).unwrap_or("?");
                out.push(Finding::object_at(RELOAD, obj, "secretKeyRef", format!(
                    "container {cname} of {} reads the TLS Secret {secret} through env {var}: environment variables are \
                     fixed at start, so renewals never reach the process; mount the Secret as a volume instead",
                    obj.display()
                )));
            }
            for e in items(c, "/envFrom") {
                let Some(secret) = str_at(e, "/secretRef/name").filter(|s| tls.contains(*s)) else {
                    continue;
                };
                uses_tls = true;
                out.push(Finding::object_at(RELOAD, obj, "secretRef", format!(
                    "container {cname} of {} imports the TLS Secret {secret} with envFrom: environment variables are fixed \
                     at start, so renewals never reach the process; mount the Secret as a volume instead",
                    obj.display()
                )));
            }
        }
        // Cert and key from different volumes or Secrets.
        for r in &mine {
            let (Some(cp), Some(kp)) = (
                r.flag(F_CERT).filter(|p| !p.is_empty()),
                r.flag(F_KEY).filter(|p| !p.is_empty()),
            ) else {
                continue;
            };
            let (Some(cm), Some(km)) = (mount_for(pod, r.container, cp), mount_for(pod, r.container, kp)) else {
                continue;
            };
            let key_of = |m: &Mount| m.volume.and_then(|v| secret_key_at(v, &m.rel)).map(|(s, _)| s);
            let (cs, ks) = (key_of(&cm), key_of(&km));
            if cm.volume_name() != km.volume_name() {
                out.push(Finding::object_at(RELOAD, obj, F_KEY, format!(
                    "{} reads {F_CERT} from volume {} and {F_KEY} from volume {}: keys of one Secret flip together only \
                     within one volume, so during a renewal the router can load a certificate with the other key; mount one \
                     volume with both tls.crt and tls.key",
                    r.describe(),
                    cm.volume_name(),
                    km.volume_name()
                )));
            } else if let (Some(cs), Some(ks)) = (cs, ks) {
                if cs != ks {
                    out.push(Finding::object_at(RELOAD, obj, F_KEY, format!(
                        "{} takes the certificate from Secret {cs} and the key from Secret {ks}: they renew independently, \
                         so the pair will not match after a renewal; take both from the one Secret cert-manager writes",
                        r.describe()
                    )));
                }
            }
        }
        // Restart-on-change annotations.
        if !uses_tls && mine.is_empty() {
            continue;
        }
        let tmpl_ann = obj.at("/spec/template/metadata/annotations").and_then(Value::as_object);
        for k in tmpl_ann.into_iter().flatten().map(|(k, _)| k) {
            let lk = k.to_ascii_lowercase();
            if lk.contains("checksum")
                && (["tls", "cert", "secret"].iter().any(|w| lk.contains(w))
                    || tls.iter().any(|s| lk.contains(&s.to_ascii_lowercase())))
            {
                out.push(Finding::object_at(RELOAD, obj, k, format!(
                    "the pod template of {} carries annotation {k}, a checksum of TLS material: every renewal changes it \
                     and restarts all pods (dropping every worker tunnel), although the router reloads certificates in \
                     place; remove the annotation",
                    obj.display()
                )));
            }
        }
        let meta_ann = obj.annotations();
        for (k, v) in meta_ann.into_iter().flatten().chain(tmpl_ann.into_iter().flatten()) {
            let val = v.as_str().unwrap_or("");
            let hit = match k.as_str() {
                "secret.reloader.stakater.com/reload" => val
                    .split(',')
                    .map(str::trim)
                    .find(|s| tls.contains(*s))
                    .map(str::to_string),
                "reloader.stakater.com/auto" | "secret.reloader.stakater.com/auto" if val == "true" && uses_tls => {
                    Some("its TLS Secret".to_string())
                }
                _ => None,
            };
            if let Some(what) = hit {
                out.push(Finding::object_at(RELOAD, obj, k, format!(
                    "{} has annotation {k}: {val}, which restarts its pods whenever {what} is renewed; the router reloads \
                     certificates in place, so drop the annotation (or exclude the TLS Secret from it)",
                    obj.display()
                )));
            }
        }
    }
    out
}

// =============================================================================================
// tls-paths-consistent

const PATHS: &str = "tls-paths-consistent";
/// Keys cert-manager writes into a TLS Secret.
const TLS_KEYS: &[&str] = &["tls.crt", "tls.key", "ca.crt"];

fn check_paths(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let mut out = Vec::new();
    for r in routers(g) {
        let obj = r.obj;
        let cert = r.flag(F_CERT).filter(|p| !p.is_empty());
        let key = r.flag(F_KEY).filter(|p| !p.is_empty());
        match (cert, key) {
            (None, None) => continue,
            (Some(_), None) | (None, Some(_)) => {
                let (set, unset) = if cert.is_some() {
                    (F_CERT, F_KEY)
                } else {
                    (F_KEY, F_CERT)
                };
                out.push(Finding::object_at(PATHS, obj, set, format!(
                    "{} sets {set} but not {unset}: the router needs both (or neither) and the half-set pair either fails \
                     at start or leaves QUIC without the intended certificate; set {unset} to the other file of the same \
                     mounted TLS Secret",
                    r.describe()
                )));
                continue;
            }
            (Some(_), Some(_)) => {}
        }
        let Some(pod) = obj.pod_spec() else { continue };
        let tls = tls_secrets(g, ns_of(obj));
        for (flag, path, want) in [
            (F_CERT, cert.unwrap_or(""), "tls.crt"),
            (F_KEY, key.unwrap_or(""), "tls.key"),
        ] {
            let Some(m) = mount_for(pod, r.container, path) else {
                out.push(Finding::object_at(
                    PATHS,
                    obj,
                    flag,
                    format!(
                    "{flag}={path} of {} is not inside any volume mounted in the container; mount the TLS Secret as a \
                     directory and point {flag} at its {want}",
                    r.describe()
                ),
                ));
                continue;
            };
            let Some(vol) = m.volume.filter(|v| !volume_secrets(v).is_empty()) else {
                let kind = m
                    .volume
                    .and_then(|v| v.as_object())
                    .and_then(|o| o.keys().find(|k| *k != "name").cloned())
                    .unwrap_or_else(|| "undeclared".into());
                out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} points into volume {} ({kind}) mounted at {}, not a secret or projected volume \
                     holding the TLS Secret; mount the Secret and point {flag} at its {want}",
                    r.describe(),
                    m.volume_name(),
                    m.mount_path
                )));
                continue;
            };
            if m.sub_path().is_some() {
                continue; // tls-mount-reloadable reports subPath mounts
            }
            match secret_key_at(vol, &m.rel) {
                None => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} names {} inside volume {} (mounted at {}), but the volume projects no such file; \
                     point {flag} at {}/{want}",
                    r.describe(),
                    if m.rel.is_empty() { "the mount directory itself".to_string() } else { format!("`{}`", m.rel) },
                    m.volume_name(),
                    m.mount_path,
                    m.mount_path
                ))),
                Some((secret, k)) if tls.contains(&secret) && !TLS_KEYS.contains(&k.as_str()) => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} names `{k}` inside volume {} (mounted at {}), but the TLS Secret {secret} has only \
                     the keys tls.crt, tls.key and ca.crt; point {flag} at {}/{want}",
                    r.describe(),
                    m.volume_name(),
                    m.mount_path,
                    m.mount_path
                ))),
                Some((secret, k)) if tls.contains(&secret) && k != want => out.push(Finding::object_at(PATHS, obj, flag, format!(
                    "{flag}={path} of {} reads key `{k}` of the TLS Secret {secret}, but the {} is in `{want}`; point {flag} \
                     at {}/{want}",
                    r.describe(),
                    if want == "tls.crt" { "certificate chain" } else { "private key" },
                    m.mount_path
                ))),
                Some(_) => {}
            }
        }
    }
    out
}

// =============================================================================================
// Documentation

const EXPLAIN_SAN: &str = r#"## What it does
Computes every name a worker (or client) sends as SNI and checks it against the serving certificate's
subjectAltNames with the rules rustls-webpki applies: SANs only (the CN is never used), a `*` is the
whole left-most label and covers exactly one label, at least two labels after it, case-insensitive,
IP addresses match iPAddress SANs only.

- **QUIC (50072/UDP)**: every expansion of the router's `--advertised-hostname-template`
  (`{pod_name}` → `<statefulset>-<ordinal>` for each of `spec.replicas`, default 1; `{namespace}` →
  the namespace) against the certificate of the Secret behind `--tls-cert-path`. A Deployment (or any
  non-StatefulSet) whose template uses `{pod_name}` is refused outright: its pod names are generated and
  have no DNS record. The QUIC dial address (`--reverse-tunnel-pylon-dial-addr`, often an IP or a load
  balancer) is not an SNI name and is not checked.
- **gRPC (50071)**: the host of `--grpc-pylon-dial-addr` (`https://host:port`) against whoever ends TLS
  for it: the Gateway listener when an HTTPRoute/GRPCRoute/TLSRoute carries that host (hostname +
  `certificateRefs` → the Certificate writing that Secret), else the router's own certificate.
- **Listeners**: every HTTPS listener and TLS listener in `Terminate` mode with `certificateRefs`. Gateway
  API wildcards differ from X.509: a listener `*.example.com` receives names of *any* depth. For a
  wildcard (or empty) listener hostname the rule checks the names clients actually use: the hostnames
  of attached routes intersected with the listener; a route without hostnames (or a listener without
  routes) stands for the wildcard itself, which only the same wildcard SAN covers (one label deep).
  Deeper route hostnames (`a.b.example.com`) need their own SAN (`*.b.example.com` or the exact name).

Certificates are taken from the cert-manager Certificate whose `spec.secretName` is the Secret (its
`dnsNames`/`ipAddresses`), or, when no Certificate writes it, from a public `tls.crt` chain in a rendered
Secret or in a policy external's `data` (checked with webpki itself). When neither exists — the
customer-secret mode without a chain in the policy — nothing is reported: the rule does not guess.

## Why it matters
A name the certificate does not cover fails every worker handshake with `NotValidForName`: the router
is up, the pods are ready, and no worker can register. Wildcard depth is the classic trap: `*.nvcf.svc`
does not cover `request-router-0.request-router-headless.nvcf.svc`.

## How to fix
Add the missing name to the Certificate's `dnsNames`, or the one-label wildcard the message suggests
(`*.request-router-headless.nvcf.svc.cluster.local` covers every replica, so scaling needs no change).
For the gRPC dial host, add it to the certificate of the listener that terminates it.

## Example
```yaml
args: ["--advertised-hostname-template={pod_name}.request-router-headless.{namespace}.svc.cluster.local"]
# StatefulSet nvcf/request-router, replicas: 3, Certificate dnsNames:
dnsNames:
  - request-router-0.request-router-headless.nvcf.svc.cluster.local   # replicas 1 and 2 are not covered
  # fix: - "*.request-router-headless.nvcf.svc.cluster.local"
```
"#;

const EXPLAIN_SERVER_AUTH: &str = r#"## What it does
Checks every serving cert-manager Certificate (not `isCA`, not client-only) for `server auth` in
`spec.usages`; absent usages means cert-manager's code default (`digital signature`,
`key encipherment`) and fires. When the Certificate is signed by the stack's OpenBao role — the
openbao-issuer chart publishes the role in ConfigMap `openbao-pki-role` (`role.json`: `allowed_domains`,
`allow_subdomains`, `allow_bare_domains`, `allow_wildcard_certificates`, `allow_glob_domains`,
`allow_any_name`, `server_flag`, `key_type`, `key_bits`, `require_cn`, `max_ttl`; `issuer`: the
ClusterIssuer name) — it also checks that the role can issue it: `server_flag`, key algorithm against
`key_type` and size against `key_bits`, a missing commonName against `require_cn`, every dnsName and the
CN against the domain flags, and `spec.duration` (default 2160h) against `max_ttl`.

## Why it matters
Workers require the serverAuth EKU (`InvalidPurpose` otherwise). OpenBao's defaults break cert-manager
quietly: `require_cn=true` rejects dnsNames-only requests, `key_type=rsa` rejects ECDSA keys, and a
duration above `max_ttl` is silently capped so the certificate expires before cert-manager expects.

## How to fix
Set `usages: [server auth, digital signature, key encipherment]`. Align the role with the Certificate:
`server_flag=true`, `key_type` matching `privateKey.algorithm`, `require_cn=false`, domains covering every
dnsName, `max_ttl` ≥ the duration (and tune the mount's max lease TTL).

## Example
```yaml
kind: Certificate
spec:
  privateKey: {algorithm: ECDSA, size: 256}   # role key_type=rsa → refused
  duration: 2160h                            # role max_ttl=720h → capped
  # usages missing → no serverAuth
```
"#;

const EXPLAIN_ISSUER: &str = r#"## What it does
Resolves every Certificate's `spec.issuerRef` (group default `cert-manager.io`, kind default `Issuer`)
against the Issuers and ClusterIssuers the environment renders and the externals the policy declares.
An `Issuer` must live in the Certificate's namespace; a `ClusterIssuer` is cluster-scoped.

## Why it matters
A Certificate whose issuer does not exist is never issued: the Secret never appears, the router cannot
start with TLS, and nothing fails at apply time.

## How to fix
Render the issuer in the stack, correct `issuerRef` (kind, name, group), or — for a customer's issuer
that exists outside the stack — declare it in the policy file.

## Example
```yaml
externals:
  - apiVersion: cert-manager.io/v1
    kind: ClusterIssuer
    name: corp-pki
    environments: [customer-issuer]
```
"#;

const EXPLAIN_VAULT: &str = r#"## What it does
Checks every Issuer/ClusterIssuer of type `vault`: `server` must be `https://`; exactly one of
`caBundle`/`caBundleSecretRef` must be set; `path` must be a `<mount>/sign/<role>` path; authentication
must be `auth.kubernetes` with `serviceAccountRef` (not `tokenSecretRef`, `appRole`, a stored
ServiceAccount token `secretRef`, or a stored client certificate).

## Why it matters
The issuer carries CSRs, signed certificates and credentials to OpenBao. Over plain HTTP or against the
system roots anyone on the path can impersonate OpenBao; `issue/` and `sign-verbatim/` paths bypass
the role's constraints; static tokens are long-lived secrets that leak and never rotate.

## How to fix
Use the bootstrap CA: `server: https://openbao.openbao.svc:8200`, `caBundleSecretRef` to the CA Secret,
`path: pki_int/sign/<role>`, and Kubernetes auth with a dedicated ServiceAccount (plus the Role that
lets cert-manager create tokens for it).

## Example
```yaml
spec:
  vault:
    server: https://openbao.openbao.svc:8200
    path: pki_int/sign/nvcf-router
    caBundleSecretRef: {name: openbao-bootstrap-ca, key: ca.crt}
    auth:
      kubernetes:
        role: cert-manager
        mountPath: /v1/auth/kubernetes
        serviceAccountRef: {name: openbao-issuer}
```
"#;

const EXPLAIN_BUNDLE: &str = r#"## What it does
Inspects every trust bundle the stack publishes: ConfigMap `nvcf-trust-bundle` key `ca.crt` (and any
ConfigMap annotated `nvcf.io/trust-bundle-fingerprint`), the `trustBundle` of ConfigMap
`nvcf-worker-profile`'s `profile.yaml`, and Vault issuers' `caBundle`. Errors: an empty bundle, any PEM
block that is not `CERTIFICATE` (a private key above all — reported by block number and label, never by
content), broken PEM or DER, a certificate that is not a CA, an expired certificate (at the validation
time). Warnings: duplicate certificates, a CA that is not valid yet.

## Why it matters
Workers anchor their trust in this bundle. An empty bundle or a leaf pins nothing useful and breaks at
the next renewal; an expired CA is refused by many clients; a private key in a ConfigMap is published to
everyone who can read the namespace.

## How to fix
Publish only the public CA certificate(s) that issue the router's certificates (for OpenBao: the root of
the PKI mount, not the router Secret's `ca.crt`). If a key was published, rotate it.

## Example
```yaml
data:
  ca.crt: |
    -----BEGIN CERTIFICATE-----      # the root CA: fine
    …
    -----BEGIN PRIVATE KEY-----      # refused: block 2 is a PRIVATE KEY
```
"#;

const EXPLAIN_FINGERPRINT: &str = r#"## What it does
Recomputes the `nvcf-trust-bundle-v1` fingerprint (SHA-256 over the sorted, de-duplicated SHA-256 of
each certificate's DER; see `nvcf-validate fingerprint`) of every bundle ConfigMap and compares it with
what is recorded: the `nvcf.io/trust-bundle-fingerprint` annotation, and the worker profile's
`trustBundleFingerprint`. The contract ConfigMaps must record it (`nvcf-trust-bundle`'s annotation,
the profile's field), and the worker profile must publish the same bundle as `nvcf-trust-bundle`.
Bundles that do not parse are left to `trust-bundle-valid`.

## Why it matters
Operators and compute planes pin the fingerprint. A stale or hand-copied value makes workers refuse a
correct bundle — or accept a bundle nobody reviewed.

## How to fix
Let the chart compute the fingerprint from the same PEM it publishes, or set it to the output of
`nvcf-validate fingerprint ca.crt`.

## Example
```yaml
metadata:
  annotations:
    nvcf.io/trust-bundle-fingerprint: "sha256:…"   # must equal `nvcf-validate fingerprint` of data.ca.crt
```
"#;

const EXPLAIN_RELOAD: &str = r#"## What it does
For every workload that uses renewed TLS material — a Secret written by a Certificate, a
`kubernetes.io/tls` Secret, or the Secret behind the router's `--tls-cert-path` — reports: a volume
mount of it with `subPath`/`subPathExpr`; env vars or `envFrom` reading it; the router's certificate and
key coming from different volumes or different Secrets; a pod-template annotation holding a checksum of
TLS material; Reloader annotations that restart the pods when the TLS Secret changes.

## Why it matters
Secret and projected volumes update in place (about a minute after renewal) and the router reloads its
certificate every ~30 s. `subPath` mounts and env vars never update, so the process keeps serving the old
certificate until it expires. Keys of one Secret flip together only within one volume. Checksums and
Reloader restart every pod on each renewal, dropping every worker's tunnel for nothing.

## How to fix
Mount the whole Secret as one directory (no `subPath`), point `--tls-cert-path`/`--tls-key-path` at
`tls.crt`/`tls.key` inside it, and remove checksum/reloader annotations that cover the TLS Secret.

## Example
```yaml
volumeMounts:
  - name: tls
    mountPath: /etc/stargate/tls/tls.crt
    subPath: tls.crt          # refused: never updated on renewal
```
"#;

const EXPLAIN_PATHS: &str = r#"## What it does
For every router container: `--tls-cert-path` and `--tls-key-path` must be set together, and each must
point to a file inside a `secret` or `projected` volume mounted in that container — and, for a TLS
Secret, at its `tls.crt` and `tls.key` respectively (item remapping is followed).

## Why it matters
A half-set pair or a path outside the mounted Secret means the router starts without the intended
certificate (or not at all), and the reference stack's fallback was to run QUIC without TLS.

## How to fix
Mount the TLS Secret at one directory and set `--tls-cert-path=<dir>/tls.crt` and
`--tls-key-path=<dir>/tls.key`.

## Example
```yaml
args:
  - --tls-cert-path=/etc/stargate/tls/tls.crt
  - --tls-key-path=/etc/stargate/key/tls.key   # refused: /etc/stargate/key is not mounted
```
"#;

#[cfg(test)]
mod tests;
