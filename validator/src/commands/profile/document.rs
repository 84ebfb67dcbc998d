//! nvcf-cli's `ControlPlaneProfile` (`apiVersion: nvcf.nvidia.com/v1alpha1`): its schema, its
//! validation rules and the merge of what this stack owns into an operator's base profile.
//!
//! Source of every rule here: NVIDIA/nvcf `src/clis/nvcf-cli/internal/selfhosted/
//! controlplaneprofile/profile.go` (`ParseAndValidate`, read at fadc0f81) and
//! `internal/trustbundle/fingerprint.go`. nvcf-cli decodes with yaml.v3 `KnownFields(true)`, so
//! a field it does not know makes it refuse the whole document: [`SCHEMA`] is that struct tree,
//! the one table here. The messages follow upstream's `field: problem` form. This is our own
//! code written from upstream's rules; the tests in `tests` are written from those rules.
//!
//! Where upstream leans on Go's parsers (`net.SplitHostPort`, `url.Parse`) we implement the
//! parts it depends on; where ours could disagree we are stricter (text with whitespace or
//! control characters, a port that is not a number), never looser.

use serde_json::{Map, Value};

pub const API_VERSION: &str = "nvcf.nvidia.com/v1alpha1";
pub const KIND: &str = "ControlPlaneProfile";
pub const TRUST_MODE_BUNDLE: &str = "bundle";
pub const TRUST_MODE_SYSTEM: &str = "system";
/// Where this stack writes the router address (upstream `LLMAddon.RequestRouterAddress`).
pub const ROUTER_ADDRESS_PATH: [&str; 4] = ["controlPlane", "addons", "llm", "requestRouterAddress"];

/// A node of upstream's struct tree: a string field, or a struct with its fields in
/// declaration order (which is also the order yaml.v3 marshals them in).
pub enum Node {
    Str,
    Map(&'static [(&'static str, Node)]),
}

const SCOPE: Node = Node::Map(&[("icmsURL", Node::Str), ("revalURL", Node::Str), ("natsURL", Node::Str)]);

/// `ControlPlaneProfile` as nvcf-cli declares it (profile.go, the yaml tags).
pub const SCHEMA: Node = Node::Map(&[
    ("apiVersion", Node::Str),
    ("kind", Node::Str),
    (
        "controlPlane",
        Node::Map(&[
            ("clusterName", Node::Str),
            ("ncaID", Node::Str),
            ("region", Node::Str),
            (
                "endpoints",
                Node::Map(&[("inCluster", SCOPE), ("computeReachable", SCOPE)]),
            ),
            ("gateway", Node::Map(&[("httpURL", Node::Str), ("grpcURL", Node::Str)])),
            (
                "hosts",
                Node::Map(&[
                    ("api", Node::Str),
                    ("apiKeys", Node::Str),
                    ("sis", Node::Str),
                    ("reval", Node::Str),
                    ("nats", Node::Str),
                    ("invocation", Node::Str),
                ]),
            ),
            (
                "addons",
                Node::Map(&[("llm", Node::Map(&[("requestRouterAddress", Node::Str)]))]),
            ),
        ]),
    ),
    (
        "managementTls",
        Node::Map(&[("trustMode", Node::Str), ("caBundlePem", Node::Str)]),
    ),
    (
        "transportTls",
        Node::Map(&[
            ("trustMode", Node::Str),
            ("trustBundleFingerprint", Node::Str),
            ("trustBundlePem", Node::Str),
        ]),
    ),
]);

/// Which checks of upstream's `ParseAndValidate` apply. `Full` is nvcf-cli's own (default
/// `--require any`); `Fragment` is for a profile written without a base: only the parts this
/// stack writes are judged (nvcf-cli will refuse the fragment until the operator's fields are in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Full,
    Fragment,
}

/// Every problem nvcf-cli would report for `doc` (empty: it accepts it), in upstream's order.
pub fn validate(doc: &Value, scope: Scope) -> Vec<String> {
    let mut p = Vec::new();
    if !doc.is_object() {
        p.push("schema: the document is not a mapping".to_string());
        return p;
    }
    schema_problems(doc, &SCHEMA, "", &mut p);
    let s = |path: &str| -> &str { doc.pointer(path).and_then(Value::as_str).unwrap_or("") };
    let mut add = |field: &str, msg: &str| p.push(format!("{field}: {msg}"));

    // validateTopLevel
    match s("/apiVersion") {
        "" => add("apiVersion", "required"),
        API_VERSION => {}
        _ => add("apiVersion", &format!("must be {API_VERSION:?}")),
    }
    match s("/kind") {
        "" => add("kind", "required"),
        KIND => {}
        _ => add("kind", &format!("must be {KIND:?}")),
    }
    if scope == Scope::Full {
        for f in ["clusterName", "ncaID", "region"] {
            if s(&format!("/controlPlane/{f}")).trim().is_empty() {
                add(&format!("controlPlane.{f}"), "required");
            }
        }
        // validateGateway
        http_url(
            &mut add,
            "controlPlane.gateway.httpURL",
            s("/controlPlane/gateway/httpURL"),
            true,
        );
        grpc_address(
            &mut add,
            "controlPlane.gateway.grpcURL",
            s("/controlPlane/gateway/grpcURL"),
            true,
        );
        // validateEndpointScope x2, --require any
        let mut usable = false;
        for scope_name in ["inCluster", "computeReachable"] {
            let field = format!("controlPlane.endpoints.{scope_name}");
            let get = |k: &str| s(&format!("/controlPlane/endpoints/{scope_name}/{k}")).to_string();
            let (icms, reval, nats) = (get("icmsURL"), get("revalURL"), get("natsURL"));
            let present = !icms.is_empty() || !reval.is_empty() || !nats.is_empty();
            if !present {
                continue;
            }
            let mut local = Vec::new();
            {
                let mut add_local = |f: &str, m: &str| local.push(format!("{f}: {m}"));
                http_url(&mut add_local, &format!("{field}.icmsURL"), &icms, true);
                http_url(&mut add_local, &format!("{field}.revalURL"), &reval, true);
                nats_url(&mut add_local, &format!("{field}.natsURL"), &nats, true);
            }
            usable |= local.is_empty();
            for l in local {
                let (f, m) = l.split_once(": ").unwrap_or((&l, ""));
                add(f, m);
            }
        }
        // validateHosts
        for h in ["api", "apiKeys", "sis", "reval", "nats", "invocation"] {
            let v = s(&format!("/controlPlane/hosts/{h}"));
            if !v.trim().is_empty() && (v.contains("://") || v.contains([' ', '\t', '\r', '\n'])) {
                add(
                    &format!("controlPlane.hosts.{h}"),
                    "must be a hostname or Host header value, not a URL",
                );
            }
        }
        // validateNoDNSHostHeaders
        for (url_field, url_ptr, host_field, host_ptr) in [
            (
                "controlPlane.gateway.httpURL",
                "/controlPlane/gateway/httpURL",
                "controlPlane.hosts.api",
                "/controlPlane/hosts/api",
            ),
            (
                "controlPlane.endpoints.computeReachable.icmsURL",
                "/controlPlane/endpoints/computeReachable/icmsURL",
                "controlPlane.hosts.sis",
                "/controlPlane/hosts/sis",
            ),
            (
                "controlPlane.endpoints.computeReachable.revalURL",
                "/controlPlane/endpoints/computeReachable/revalURL",
                "controlPlane.hosts.reval",
                "/controlPlane/hosts/reval",
            ),
        ] {
            if let Some(host) = url_parts(s(url_ptr)).map(|u| u.hostname) {
                let no_dns = host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok();
                if no_dns && s(host_ptr).trim().is_empty() {
                    add(
                        host_field,
                        &format!("required as Host header when {url_field} uses a gateway address"),
                    );
                }
            }
        }
        if !usable {
            add("controlPlane.endpoints", "at least one endpoint scope is required");
        }
        // validateManagementTLS
        let (mode, pem) = (s("/managementTls/trustMode"), s("/managementTls/caBundlePem"));
        if !(mode.is_empty() && pem.trim().is_empty()) {
            match mode {
                TRUST_MODE_SYSTEM if !pem.trim().is_empty() => {
                    add("managementTls.caBundlePem", "must be empty when trustMode=system")
                }
                TRUST_MODE_SYSTEM => {}
                TRUST_MODE_BUNDLE if pem.trim().is_empty() => {
                    add("managementTls.caBundlePem", "required when trustMode=bundle")
                }
                TRUST_MODE_BUNDLE => {
                    if let Err(e) = certificates_only(pem) {
                        add("managementTls.caBundlePem", &e)
                    }
                }
                _ => add("managementTls.trustMode", "must be system or bundle"),
            }
        }
    }
    // validateTransportTLS
    let (mode, fp, pem) = (
        s("/transportTls/trustMode"),
        s("/transportTls/trustBundleFingerprint"),
        s("/transportTls/trustBundlePem"),
    );
    if !(mode.is_empty() && pem.trim().is_empty() && fp.is_empty()) {
        match mode {
            TRUST_MODE_SYSTEM => {
                if !pem.trim().is_empty() {
                    add("transportTls.trustBundlePem", "must be empty when trustMode=system");
                }
                if !fp.trim().is_empty() {
                    add(
                        "transportTls.trustBundleFingerprint",
                        "must be empty when trustMode=system",
                    );
                }
            }
            TRUST_MODE_BUNDLE => {
                if pem.trim().is_empty() {
                    add("transportTls.trustBundlePem", "required when trustMode=bundle");
                } else if let Err(e) = certificates_only(pem) {
                    add("transportTls.trustBundlePem", &e);
                } else if !crate::pki::fingerprint::is_well_formed(fp) {
                    add(
                        "transportTls.trustBundleFingerprint",
                        "must match ^sha256:[0-9a-f]{64}$",
                    );
                } else {
                    match crate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()) {
                        Err(e) => add("transportTls.trustBundlePem", &e.to_string()),
                        Ok(got) if got != fp => add(
                            "transportTls.trustBundleFingerprint",
                            &format!("mismatch: advertised {fp}, computed {got}"),
                        ),
                        Ok(_) => {}
                    }
                }
            }
            _ => add("transportTls.trustMode", "must be system or bundle"),
        }
    }
    // validateAddons
    let addr = s("/controlPlane/addons/llm/requestRouterAddress").trim();
    if !addr.is_empty() && split_host_port(addr).is_none() {
        add("controlPlane.addons.llm.requestRouterAddress", "must be host:port");
    }
    p
}

/// Fields nvcf-cli does not know (its decoder runs with `KnownFields(true)`) and values of the
/// wrong shape: a mapping where a string is declared, or the reverse. A scalar that is not a
/// string is refused too (quote it): YAML 1.1 and 1.2 read `no` or `0x10` differently, and a
/// profile must mean the same to both readers.
fn schema_problems(v: &Value, node: &Node, path: &str, out: &mut Vec<String>) {
    let shown = |p: &str| {
        if p.is_empty() {
            "(document)".to_string()
        } else {
            p.to_string()
        }
    };
    match (node, v) {
        (_, Value::Null) => {}
        (Node::Str, Value::String(_)) => {}
        (Node::Str, _) => out.push(format!("schema: {}: must be a string (quote it)", shown(path))),
        (Node::Map(fields), Value::Object(m)) => {
            for (k, child) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match fields.iter().find(|(name, _)| name == k) {
                    Some((_, n)) => schema_problems(child, n, &p, out),
                    None => out.push(format!(
                        "schema: {p}: field not found in ControlPlaneProfile (nvcf-cli refuses unknown fields)"
                    )),
                }
            }
        }
        (Node::Map(_), _) => out.push(format!("schema: {}: must be a mapping", shown(path))),
    }
}

/// Go's `net.SplitHostPort` as upstream uses it (host and port non-blank). `None`: refused.
pub fn split_host_port(addr: &str) -> Option<(&str, &str)> {
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let end = rest.find(']')?;
        let (h, after) = (&rest[..end], &rest[end + 1..]);
        (h, after.strip_prefix(':')?)
    } else {
        let i = addr.rfind(':')?;
        let (h, p) = (&addr[..i], &addr[i + 1..]);
        if h.contains([':', '[', ']']) {
            return None;
        }
        (h, p)
    };
    if port.contains([']', '[']) || host.trim().is_empty() || port.trim().is_empty() {
        return None;
    }
    Some((host, port))
}

struct UrlParts<'a> {
    scheme: String,
    hostname: &'a str,
}

/// The parts of Go's `url.Parse` upstream reads: scheme (lower-cased) and host. `None` when the
/// text is no absolute URL with a host, or holds what `url.Parse` refuses (controls, spaces in
/// the host, a non-numeric port).
fn url_parts(raw: &str) -> Option<UrlParts<'_>> {
    if raw.chars().any(|c| c.is_control()) {
        return None;
    }
    let (scheme, rest) = raw.split_once("://")?;
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic() || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() || host.contains(' ') {
        return None;
    }
    let hostname = if let Some(r) = host.strip_prefix('[') {
        let end = r.find(']')?;
        let after = &r[end + 1..];
        if !(after.is_empty()
            || after
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())))
        {
            return None;
        }
        &r[..end]
    } else {
        match host.rsplit_once(':') {
            Some((h, p)) => {
                if !p.bytes().all(|b| b.is_ascii_digit()) || h.contains(':') {
                    return None;
                }
                h
            }
            None => host,
        }
    };
    Some(UrlParts {
        scheme: scheme.to_ascii_lowercase(),
        hostname,
    })
}

fn http_url(add: &mut impl FnMut(&str, &str), field: &str, v: &str, required: bool) {
    if v.trim().is_empty() {
        if required {
            add(field, "required");
        }
        return;
    }
    match url_parts(v) {
        None => add(field, "must be an absolute http or https URL"),
        Some(u) if u.scheme != "http" && u.scheme != "https" => add(field, "scheme must be http or https"),
        Some(_) => {}
    }
}

fn nats_url(add: &mut impl FnMut(&str, &str), field: &str, v: &str, required: bool) {
    if v.trim().is_empty() {
        if required {
            add(field, "required");
        }
        return;
    }
    match url_parts(v) {
        None => add(field, "must be an absolute nats or tls URL"),
        Some(u) if u.scheme != "nats" && u.scheme != "tls" => add(field, "scheme must be nats or tls"),
        Some(_) => {}
    }
}

fn grpc_address(add: &mut impl FnMut(&str, &str), field: &str, v: &str, required: bool) {
    if v.trim().is_empty() {
        if required {
            add(field, "required");
        }
        return;
    }
    if v.contains("://") {
        match url_parts(v) {
            None => add(field, "must be a host:port address or absolute URL"),
            Some(u) if !["grpc", "grpcs", "https"].contains(&u.scheme.as_str()) => {
                add(field, "scheme must be grpc, grpcs, or https")
            }
            Some(_) => {}
        }
    } else if split_host_port(v).is_none() {
        add(field, "must be a host:port address");
    }
}

/// Upstream's `assertCertificatesOnly`: at least one block, every block a parseable X.509
/// `CERTIFICATE`, and no text outside the blocks (a pasted secret between blocks is refused,
/// not skipped). Messages never show block content.
pub fn certificates_only(pem: &str) -> Result<(), String> {
    let mut inside = false;
    for line in pem.lines() {
        let t = line.trim();
        if t.starts_with("-----BEGIN ") {
            inside = true;
        } else if t.starts_with("-----END ") {
            inside = false;
        } else if !inside && !t.is_empty() {
            return Err("unexpected non-whitespace data outside PEM CERTIFICATE blocks".into());
        }
    }
    crate::pki::parse_bundle(pem.as_bytes())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// What this stack writes into a profile.
#[derive(Debug, Clone)]
pub struct Owned {
    pub trust_bundle_pem: String,
    pub trust_bundle_fingerprint: String,
    pub request_router_address: String,
}

/// A change the merge made to a field the base already held (shown to the operator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    pub field: String,
}

/// Merge `owned` into `base` (an operator's profile, or an empty mapping): `transportTls` and
/// `controlPlane.addons.llm.requestRouterAddress` are set, `apiVersion` and `kind` added when
/// absent; every other field, known or not, keeps its value and its place. Err: `base` is not a
/// mapping, or a parent of an owned field is not one.
pub fn merge(base: Value, owned: &Owned) -> Result<(Value, Vec<Replaced>), String> {
    let mut doc = match base {
        Value::Null => Map::new(),
        Value::Object(m) => m,
        _ => return Err("the base profile is not a mapping".into()),
    };
    let mut replaced = Vec::new();
    // apiVersion and kind lead the document when the base lacks them.
    if !doc.contains_key("apiVersion") || !doc.contains_key("kind") {
        let mut head = Map::new();
        head.insert(
            "apiVersion".into(),
            doc.remove("apiVersion").unwrap_or_else(|| API_VERSION.into()),
        );
        head.insert("kind".into(), doc.remove("kind").unwrap_or_else(|| KIND.into()));
        head.extend(doc);
        doc = head;
    }
    let mut m = &mut doc;
    for seg in &ROUTER_ADDRESS_PATH[..3] {
        m = child_map(m, seg)?;
    }
    set(
        m,
        ROUTER_ADDRESS_PATH[3],
        &owned.request_router_address,
        &ROUTER_ADDRESS_PATH.join("."),
        &mut replaced,
    );
    let transport = child_map(&mut doc, "transportTls")?;
    for (k, v) in [
        ("trustMode", TRUST_MODE_BUNDLE),
        ("trustBundleFingerprint", owned.trust_bundle_fingerprint.as_str()),
        ("trustBundlePem", owned.trust_bundle_pem.as_str()),
    ] {
        set(transport, k, v, &format!("transportTls.{k}"), &mut replaced);
    }
    Ok((Value::Object(doc), replaced))
}

fn child_map<'m>(m: &'m mut Map<String, Value>, key: &str) -> Result<&'m mut Map<String, Value>, String> {
    let slot = m.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| format!("the base profile's `{key}` is not a mapping"))
}

fn set(m: &mut Map<String, Value>, key: &str, value: &str, field: &str, replaced: &mut Vec<Replaced>) {
    match m.get_mut(key) {
        Some(old) => {
            if old.as_str() != Some(value) && !old.is_null() && old.as_str() != Some("") {
                replaced.push(Replaced {
                    field: field.to_string(),
                });
            }
            *old = Value::String(value.to_string());
        }
        None => {
            m.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
}

/// Encode DER certificates as PEM text (64-column base64), in the given order.
pub fn pem_of(ders: &[&[u8]]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for der in ders {
        let mut b64 = String::with_capacity(der.len().div_ceil(3) * 4);
        for chunk in der.chunks(3) {
            let n = (u32::from(chunk[0]) << 16)
                | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
                | u32::from(*chunk.get(2).unwrap_or(&0));
            for i in 0..4 {
                if i <= chunk.len() {
                    b64.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    b64.push('=');
                }
            }
        }
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

#[cfg(test)]
mod tests;
