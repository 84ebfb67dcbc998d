//! `certificate-server-auth`: the serving Certificate can authenticate a TLS server (usages, and
//! the OpenBao signing role that will sign it).

use super::*;

const SERVER_AUTH: &str = "certificate-server-auth";

fn usages(c: &Object) -> Vec<String> {
    strings(&c.body, "/spec/usages")
        .iter()
        .map(|u| u.to_ascii_lowercase())
        .collect()
}

pub(super) fn check_server_auth(ctx: &Ctx) -> Vec<Finding> {
    let g = ctx.graph;
    let roles = openbao_roles(g);
    let mut out = unreadable_roles(g);
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

/// A published role that cannot be read is a finding, never a role that allows nothing to judge:
/// `role.json` that is not a JSON object, or no `issuer` to say which issuer it signs for.
fn unreadable_roles(g: &Graph) -> Vec<Finding> {
    let mut out = Vec::new();
    for cm in g.of_kind("ConfigMap").filter(|cm| is_role_configmap(cm)) {
        let problem = match cm.str_at("/data/role.json").map(serde_json::from_str::<Value>) {
            None => Some("has no data key `role.json`".to_string()),
            Some(Err(e)) => Some(format!(
                "has a `role.json` that is not JSON (line {}, column {})",
                e.line(),
                e.column()
            )),
            Some(Ok(v)) if !v.is_object() => Some("has a `role.json` that is not a JSON object".to_string()),
            Some(Ok(_)) if cm.str_at("/data/issuer").is_none_or(|i| i.trim().is_empty()) => {
                Some("has no data key `issuer` naming the issuer the role signs for".to_string())
            }
            Some(Ok(_)) => None,
        };
        if let Some(p) = problem {
            out.push(
                Finding::object_at(
                    "certificate-server-auth",
                    cm,
                    "role.json",
                    format!(
                        "{} {p}: the OpenBao role cannot be read, so no Certificate can be judged against it",
                        cm.display()
                    ),
                )
                .with_help("publish the role exactly as provisioned (the openbao-issuer chart renders role.json and issuer from one helper)"),
            );
        }
    }
    out
}

fn openbao_roles(g: &Graph) -> Vec<(&Object, OpenBaoRole)> {
    g.of_kind("ConfigMap")
        .filter(|cm| is_role_configmap(cm))
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
pub(super) fn go_duration(s: &str) -> Option<u64> {
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

#[cfg(test)]
mod role_tests;

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn openbao_role_mismatches_are_each_reported() {
        let f = run(SERVER_AUTH, &fixture("fires-certificate-server-auth-openbao-role"));
        let all = messages(&f);
        assert_eq!(f.len(), 4, "{all}");
        for want in [
            "requests an ECDSA key, but the OpenBao role published in ConfigMap openbao/openbao-pki-role (issuer openbao) has key_type=rsa",
            "has no commonName, but the OpenBao role",
            "requests [router.other.example]",
            "asks for duration 2160h (90 days), but the OpenBao role published in ConfigMap openbao/openbao-pki-role (issuer openbao) has max_ttl 720h (30 days)",
        ] {
            assert!(all.contains(want), "missing `{want}` in\n{all}");
        }
    }

    #[test]
    fn openbao_role_name_rules() {
        let role = |v: serde_json::Value| OpenBaoRole {
            issuer_kind: "ClusterIssuer".into(),
            issuer_name: "x".into(),
            params: v,
        };
        let r = role(serde_json::json!({"allowed_domains": "example.com", "allow_subdomains": true}));
        assert!(r.allows("a.example.com") && r.allows("*.example.com") && r.allows("a.b.example.com"));
        assert!(!r.allows("example.com") && !r.allows("a.example.org"));
        let r = role(serde_json::json!({"allowed_domains": ["example.com"], "allow_bare_domains": "true"}));
        assert!(r.allows("example.com") && !r.allows("a.example.com"));
        let r = role(
            serde_json::json!({"allowed_domains": ["example.com"], "allow_subdomains": true, "allow_wildcard_certificates": false}),
        );
        assert!(!r.allows("*.example.com") && r.allows("a.example.com"));
        let r = role(serde_json::json!({"allowed_domains": ["router-*.example.com"], "allow_glob_domains": true}));
        assert!(r.allows("router-1.example.com") && !r.allows("api.example.com"));
        assert_eq!(go_duration("2160h"), Some(2160 * 3600));
        assert_eq!(go_duration("1h30m"), Some(5400));
        assert_eq!(go_duration("30d"), Some(30 * 86400));
        assert_eq!(go_duration("86400"), Some(86400));
        assert_eq!(go_duration("2160h0m0s"), Some(2160 * 3600));
        assert_eq!(go_duration("soon"), None);
    }

    #[test]
    fn ip_sans_against_a_role_without_them() {
        let text = fixture("silent-certificate-server-auth-openbao-role");
        let with_ip = text.replace("  usages:\n", "  ipAddresses:\n    - 10.0.0.1\n  usages:\n");
        assert!(run(SERVER_AUTH, &with_ip).is_empty(), "allow_ip_sans defaults to true");
        let f = run(
            SERVER_AUTH,
            &with_ip.replace("\"max_ttl\"", "\"allow_ip_sans\": false, \"max_ttl\""),
        );
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(f[0].message.contains("requests IP SANs [10.0.0.1]"), "{}", f[0].message);
    }

    #[test]
    fn server_flag_off_is_reported() {
        let text = fixture("silent-certificate-server-auth-openbao-role")
            .replace("\"server_flag\": true", "\"server_flag\": false");
        let f = run(SERVER_AUTH, &text);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(f[0].message.contains("server_flag=false"));
    }

    #[test]
    fn an_unreadable_published_role_is_a_finding() {
        for (data, says) in [
            ("{role.json: \"{not json\", issuer: openbao}", "not JSON"),
            ("{role.json: \"[1]\", issuer: openbao}", "not a JSON object"),
            ("{issuer: openbao}", "no data key `role.json`"),
            ("{role.json: \"{}\"}", "no data key `issuer`"),
        ] {
            let g = crate::testkit::graph(
                "e",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: openbao-pki-role, namespace: openbao}}\ndata: {data}\n"),
            );
            let f = unreadable_roles(&g);
            assert_eq!(f.len(), 1, "{data}");
            assert!(f[0].message.contains(says), "{}", f[0].message);
        }
        let g = crate::testkit::graph(
            "e",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: openbao-pki-role, namespace: openbao}\ndata: {role.json: \"{}\", issuer: openbao}\n",
        );
        assert!(unreadable_roles(&g).is_empty());
    }

    /// OpenBao's `allowed_domains` globs: `*` only, the whole name matched. A pattern without `*`
    /// is the exact name; the last part must end the name; a middle part is consumed where it is
    /// found, so the last part must come after it.
    #[test]
    fn globs_match_whole_names_and_parts_in_order() {
        assert!(glob("router.nvcf.svc", "router.nvcf.svc"));
        assert!(!glob("router.nvcf.svc", "router.nvcf.svc.evil"));
        assert!(glob("*.nvcf.svc", "a.nvcf.svc"));
        assert!(!glob("*.nvcf.svc", "a.nvcf.svc.x"));
        assert!(glob("*ab*b", "abxb"));
        assert!(!glob("*ab*b", "ab"));
        assert!(!glob("*ab*ab", "xab"));
        assert!(glob("r-*.nvcf.*.svc", "r-0.nvcf.a.svc"));
        assert!(!glob("r-*.nvcf.*.svc", "x-0.nvcf.a.svc"));
    }

    /// TTLs as OpenBao writes them: seconds as a number or text, Go durations with `d`; sub-second
    /// parts count nothing, and a unit of several letters (`ms`, `µs`) is one unit.
    #[test]
    fn durations_are_read_as_openbao_writes_them() {
        assert_eq!(parse_duration(&serde_json::json!(3600)), Some(3600));
        assert_eq!(parse_duration(&serde_json::json!("3600")), Some(3600));
        assert_eq!(parse_duration(&serde_json::json!(true)), None);
        assert_eq!(go_duration("1h30m"), Some(5400));
        assert_eq!(go_duration("90d"), Some(90 * 86400));
        assert_eq!(go_duration("1h500ms"), Some(3600));
        assert_eq!(go_duration("1m1µs"), Some(60));
        assert_eq!(go_duration("1h2x"), None);
        assert_eq!(go_duration("1h2"), None);
    }
}
