//! Chart tests (issue #2): the four local charts and the Helmfile state, with the real pinned
//! `helm` and `helmfile` from `.tools/bin` (installed by `./ci/setup`).
//!
//! - every environment renders offline (local releases; the remote cert-manager and openbao
//!   charts are excluded by selector) and shows the properties the design relies on;
//! - `helm lint --strict` of every chart with every environment's values;
//! - one test per render-time guard, asserting its exact message, so deleting a guard fails
//!   a test.
//!
//! Only `std`: the rendered YAML is inspected as text, document by document.

use std::collections::HashMap;
mod support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use support::{repo, tool};

const ENVIRONMENTS: &[&str] = &["default", "split-cluster", "customer-issuer", "customer-secret"];
const CHARTS: &[&str] = &[
    "nvcf-admission",
    "openbao-issuer",
    "nvcf-pki",
    "request-router",
    "gateway-routes",
];
/// The releases of upstream charts: pinned, fetched by helm, not rendered offline.
const REMOTE_SELECTOR: &str = "name!=cert-manager,name!=openbao";

// ------------------------------------------------------------------ tools and files

fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh scratch directory under the system temp dir.
fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "nvcf-charts-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("write scratch file");
    p
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

// ------------------------------------------------------------------ rendered documents

/// One rendered YAML document, kept as text.
#[derive(Clone, Debug)]
struct Doc {
    kind: String,
    name: String,
    namespace: String,
    body: String,
}

impl Doc {
    fn has(&self, needle: &str) -> bool {
        self.body.contains(needle)
    }
    /// The value of the first `key: value` line (any indentation).
    fn field(&self, key: &str) -> Option<String> {
        let prefix = format!("{key}: ");
        self.body
            .lines()
            .map(str::trim_start)
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_string())
    }
    /// The `- item` lines directly under the first `key:` line.
    fn list(&self, key: &str) -> Vec<String> {
        let mut lines = self.body.lines();
        let header = format!("{key}:");
        let Some(start) = lines.by_ref().find(|l| l.trim_start() == header) else {
            return Vec::new();
        };
        let indent = start.len() - start.trim_start().len();
        let mut out = Vec::new();
        for l in lines {
            let t = l.trim_start();
            let i = l.len() - t.len();
            if t.starts_with("- ") && i >= indent {
                out.push(t[2..].trim().trim_matches('"').trim_matches('\'').to_string());
            } else if t.starts_with('#') {
                continue;
            } else {
                break;
            }
        }
        out
    }
}

fn parse_docs(yaml: &str) -> Vec<Doc> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, docs: &mut Vec<Doc>| {
        let body = std::mem::take(cur);
        let kind = body
            .lines()
            .find_map(|l| l.strip_prefix("kind: "))
            .map(|s| s.trim().to_string());
        let Some(kind) = kind else { return };
        let mut in_meta = false;
        let (mut name, mut namespace) = (String::new(), String::new());
        for l in body.lines() {
            if l == "metadata:" {
                in_meta = true;
                continue;
            }
            if in_meta {
                if !l.starts_with(' ') {
                    break;
                }
                if let Some(v) = l.strip_prefix("  name: ") {
                    name = v.trim().trim_matches('"').to_string();
                }
                if let Some(v) = l.strip_prefix("  namespace: ") {
                    namespace = v.trim().trim_matches('"').to_string();
                }
            }
        }
        docs.push(Doc {
            kind,
            name,
            namespace,
            body,
        });
    };
    for line in yaml.lines() {
        if line == "---" {
            flush(&mut cur, &mut docs);
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    flush(&mut cur, &mut docs);
    docs
}

struct Rendered {
    env: String,
    docs: Vec<Doc>,
}

impl Rendered {
    fn all(&self, kind: &str) -> Vec<&Doc> {
        self.docs.iter().filter(|d| d.kind == kind).collect()
    }
    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<&Doc> {
        self.docs
            .iter()
            .find(|d| d.kind == kind && d.name == name && d.namespace == namespace)
    }
    fn get(&self, kind: &str, namespace: &str, name: &str) -> &Doc {
        self.find(kind, namespace, name)
            .unwrap_or_else(|| panic!("environment {}: no {kind} {namespace}/{name} rendered", self.env))
    }
}

/// Render an environment's local releases with helmfile, once per test binary.
fn render(env: &str) -> &'static Rendered {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static Rendered>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(r) = cache.lock().unwrap().get(env) {
        return r;
    }
    let out = Command::new(tool("helmfile"))
        .current_dir(repo())
        .args(["--file", "helmfile.yaml", "--environment", env, "--helm-binary"])
        .arg(tool("helm"))
        .args(["--no-color", "--selector", REMOTE_SELECTOR, "template", "--skip-deps"])
        .output()
        .expect("run helmfile");
    assert!(
        out.status.success(),
        "helmfile -e {env} template failed:\n{}",
        text(&out)
    );
    let yaml = String::from_utf8(out.stdout).expect("UTF-8 render");
    let r: &'static Rendered = Box::leak(Box::new(Rendered {
        env: env.to_string(),
        docs: parse_docs(&yaml),
    }));
    cache.lock().unwrap().insert(env.to_string(), r);
    r
}

// ------------------------------------------------------------------ helmfile state

/// The (name, namespace) of every release declared in helmfile.yaml, in order.
fn declared_releases() -> Vec<(String, String)> {
    let state = read("helmfile.yaml");
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    for l in state.lines() {
        if let Some(n) = l.strip_prefix("  - name: ") {
            name = Some(n.trim().to_string());
        } else if let (Some(ns), Some(n)) = (l.strip_prefix("    namespace: "), name.as_ref()) {
            out.push((n.clone(), ns.trim().to_string()));
            name = None;
        }
    }
    out
}

#[test]
fn every_release_is_declared_once_in_its_namespace() {
    let got = declared_releases();
    let want = [
        ("nvcf-admission", "nvcf"),
        ("cert-manager", "cert-manager"),
        ("openbao-issuer", "openbao"),
        ("openbao", "openbao"),
        ("nvcf-pki", "nvcf"),
        ("request-router", "nvcf"),
        ("gateway-routes", "nvcf-gateway"),
    ];
    assert_eq!(got.len(), want.len(), "releases declared in helmfile.yaml: {got:?}");
    for (n, ns) in want {
        let hits: Vec<_> = got.iter().filter(|(gn, _)| gn == n).collect();
        assert_eq!(hits.len(), 1, "release {n} must be declared exactly once: {got:?}");
        assert_eq!(hits[0].1, ns, "release {n} must live in namespace {ns}");
    }
}

#[test]
fn state_is_plain_yaml_with_exact_upstream_versions() {
    let state = read("helmfile.yaml");
    assert!(
        !state.contains("{{"),
        "helmfile.yaml must stay untemplated (helmfile 1.x only templates .gotmpl)"
    );
    assert!(!state.contains("devel:"), "no devel: in helmfile.yaml");
    let lock = read("charts.lock.yaml");
    for (release, version) in [("cert-manager", "v1.21.2"), ("openbao", "0.29.2")] {
        assert!(
            state.contains(&format!("version: {version}")),
            "helmfile.yaml pins {release} {version}"
        );
        assert!(
            lock.contains(&format!("release: {release}")) && lock.contains(&format!("version: {version}")),
            "charts.lock.yaml pins {release} {version}"
        );
    }
    let digests: Vec<&str> = lock.lines().filter_map(|l| l.trim().strip_prefix("sha256: ")).collect();
    assert_eq!(digests.len(), 2, "one sha256 per upstream chart");
    for d in digests {
        assert!(
            d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "sha256 {d:?}"
        );
    }
}

#[test]
fn environment_namespaces_match_the_state() {
    // values/base.yaml repeats the namespaces for the release values templates; helmfile.yaml
    // is not templated, so the two must agree.
    let base = read("values/base.yaml");
    let ns_of = |key: &str| {
        base.lines()
            .find_map(|l| l.strip_prefix(&format!("  {key}: ")))
            .unwrap_or_else(|| panic!("values/base.yaml has no namespaces.{key}"))
            .trim()
            .to_string()
    };
    let releases = declared_releases();
    let ns = |release: &str| {
        releases
            .iter()
            .find(|(n, _)| n == release)
            .map(|(_, ns)| ns.clone())
            .unwrap()
    };
    assert_eq!(ns_of("certManager"), ns("cert-manager"));
    assert_eq!(ns_of("openbao"), ns("openbao"));
    assert_eq!(ns_of("nvcf"), ns("nvcf-pki"));
    assert_eq!(ns_of("nvcf"), ns("request-router"));
    assert_eq!(ns_of("gateway"), ns("gateway-routes"));
}

// ------------------------------------------------------------------ every environment

/// Issue #30: every environment renders the admission backstop — two ValidatingAdmissionPolicies
/// that fail closed, each bound with Deny to every namespace a release of the stack installs into.
#[test]
fn every_environment_renders_the_admission_policies() {
    let namespaces: Vec<String> = {
        let mut ns: Vec<String> = declared_releases().into_iter().map(|(_, ns)| ns).collect();
        ns.sort();
        ns.dedup();
        ns
    };
    for env in ENVIRONMENTS {
        let r = render(env);
        for name in ["nvcf-workload-transport", "nvcf-certificate-server-auth"] {
            let policy = r.get("ValidatingAdmissionPolicy", "", name);
            assert!(
                policy.has("apiVersion: admissionregistration.k8s.io/v1\n"),
                "{env}: {name}"
            );
            assert_eq!(policy.field("failurePolicy").as_deref(), Some("Fail"), "{env}: {name}");
            let binding = r.get("ValidatingAdmissionPolicyBinding", "", name);
            assert_eq!(binding.field("policyName").as_deref(), Some(name), "{env}");
            assert_eq!(binding.list("validationActions"), ["Deny"], "{env}: {name}");
            let mut bound = binding.list("values");
            bound.sort();
            assert_eq!(bound, namespaces, "{env}: {name} binds every release namespace");
        }
        let workloads = r.get("ValidatingAdmissionPolicy", "", "nvcf-workload-transport");
        for resource in ["pods", "deployments", "statefulsets", "daemonsets", "jobs", "cronjobs"] {
            assert!(workloads.has(resource), "{env}: the workload policy matches {resource}");
        }
    }
}

#[test]
fn every_environment_renders_with_the_router_contract() {
    for env in ENVIRONMENTS {
        let r = render(env);
        let sts = r.get("StatefulSet", "nvcf", "request-router");
        let args = sts.list("args");
        let want_prefix = [
            "--listen-addr=0.0.0.0:50071",
            "--reverse-tunnel-listen-addr=0.0.0.0:50072",
            "--backend-connectivity=reverse",
        ];
        assert_eq!(&args[..3], &want_prefix, "{env}: router args {args:?}");
        let flag = |f: &str| {
            args.iter()
                .find_map(|a| a.strip_prefix(&format!("{f}=")))
                .unwrap_or_else(|| panic!("{env}: no {f} in {args:?}"))
        };
        assert!(
            flag("--advertised-hostname-template").starts_with("{pod_name}."),
            "{env}"
        );
        assert!(flag("--grpc-pylon-dial-addr").starts_with("https://"), "{env}");
        // Each pod dials its own QUIC address: $(POD_NAME) is expanded by Kubernetes per pod.
        let quic_dial = flag("--reverse-tunnel-pylon-dial-addr");
        assert!(!quic_dial.contains("://"), "{env}");
        assert!(quic_dial.starts_with("$(POD_NAME)."), "{env}: {quic_dial}");
        assert_eq!(flag("--tls-cert-path"), "/etc/stargate/tls/tls.crt", "{env}");
        assert_eq!(flag("--tls-key-path"), "/etc/stargate/tls/tls.key", "{env}");
        assert_eq!(args.len(), 8, "{env}: exactly the contract flags: {args:?}");

        // TLS: one whole secret volume, no subPath, no env, no checksum annotation.
        assert!(
            sts.has(
                "      volumes:\n        - name: tls\n          secret:\n            secretName: request-router-tls\n"
            ),
            "{env}: {}",
            sts.body
        );
        assert!(sts.has("mountPath: /etc/stargate/tls\n"), "{env}");
        for bad in [
            "subPath:",
            "checksum/",
            "STARGATE_QUIC_INSECURE",
            "--quic-insecure",
            "--enable-dev-peer-forwarding",
            "--allow-insecure-remote-watch-http",
            ":latest",
        ] {
            assert!(!sts.has(bad), "{env}: StatefulSet contains {bad}");
        }
        assert!(sts.has("image: \"nvcr.io/"), "{env}: router image from nvcr.io");

        // Services: headless + ClusterIP with the four ports; gRPC is h2c, QUIC is UDP.
        for svc in ["request-router", "request-router-headless"] {
            let s = r.get("Service", "nvcf", svc);
            assert!(
                s.has("port: 50071\n      targetPort: grpc\n      protocol: TCP\n"),
                "{env}: {svc} grpc port"
            );
            assert!(s.has("appProtocol: kubernetes.io/h2c"), "{env}: {svc} grpc is h2c");
            assert!(
                s.has("port: 50072\n      targetPort: quic\n      protocol: UDP\n"),
                "{env}: {svc} quic is UDP"
            );
            assert!(
                s.has("port: 8000\n") && s.has("port: 9090\n"),
                "{env}: {svc} http/metrics"
            );
        }
        assert!(
            r.get("Service", "nvcf", "request-router-headless")
                .has("clusterIP: None"),
            "{env}"
        );

        // Worker gRPC: GRPCRoute on the Gateway's HTTPS listener. SNI is the dial host, :authority
        // the pod's advertised name: the route lists both, the listener hostname covers both.
        let grpc_host = flag("--grpc-pylon-dial-addr")
            .trim_start_matches("https://")
            .split(':')
            .next()
            .unwrap()
            .to_string();
        let authority = flag("--advertised-hostname-template")
            .replace("{pod_name}", "*")
            .replace("{namespace}", "nvcf");
        // The dial host (discovery: any pod answers) goes to the shared Service; each pod's
        // advertised name has its own route to a Service that selects that pod alone.
        let route = r.get("GRPCRoute", "nvcf", "request-router-worker-grpc");
        assert!(route.has("apiVersion: gateway.networking.k8s.io/v1\n"), "{env}");
        assert_eq!(route.list("hostnames"), vec![grpc_host.clone()], "{env}");
        assert!(
            route.has("sectionName: worker-grpc") && route.has("name: request-router\n          port: 50071"),
            "{env}: {}",
            route.body
        );
        for pod in ["request-router-0", "request-router-1"] {
            let per_pod = r.get("GRPCRoute", "nvcf", &format!("{pod}-worker-grpc"));
            assert_eq!(per_pod.list("hostnames"), vec![authority.replace('*', pod)], "{env}");
            assert!(
                per_pod.has(&format!("name: {pod}\n          port: 50071")),
                "{env}: {}",
                per_pod.body
            );
            let svc = r.get("Service", "nvcf", pod);
            assert!(
                svc.has(&format!("statefulset.kubernetes.io/pod-name: {pod}\n")),
                "{env}: {}",
                svc.body
            );
        }
        assert!(
            r.find("Service", "nvcf", "request-router-2").is_none(),
            "{env}: two replicas, two per-pod Services"
        );
        // Readiness is the router's own health endpoint, not a TCP check of the plaintext port.
        assert!(
            sts.has("readinessProbe:\n            httpGet:\n              path: /readyz\n              port: http\n"),
            "{env}: {}",
            sts.body
        );
        assert!(
            sts.has("livenessProbe:\n            httpGet:\n              path: /healthz\n"),
            "{env}"
        );
        assert!(!sts.has("tcpSocket"), "{env}");
        assert!(sts.has("- name: POD_NAME\n              valueFrom:\n                fieldRef:\n                  fieldPath: metadata.name\n"), "{env}");
        let gw = r.get("Gateway", "nvcf-gateway", "nvcf-gateway");
        let listener_host = match *env {
            // cluster-local advertised names share no suffix with the dial host: no hostname
            "default" => String::new(),
            _ => "      hostname: \"*.workers.nvcf.example.com\"\n".to_string(),
        };
        assert!(gw.has(&format!("    - name: worker-grpc\n      protocol: HTTPS\n      port: 443\n{listener_host}      tls:\n        mode: Terminate\n")), "{env}: {}", gw.body);
        assert!(gw.has("kubernetes.io/metadata.name: nvcf\n        kinds:\n          - group: gateway.networking.k8s.io\n            kind: GRPCRoute"), "{env}: worker-grpc admits GRPCRoutes from nvcf");
        assert!(!gw.has("protocol: TCP"), "{env}: no plain TCP listener");
        assert!(
            gw.has("hostname: \"llm.invocation.nvcf.example.com\""),
            "{env}: client listener"
        );
        assert!(r.find("HTTPRoute", "nvcf-gateway", "llm-invocation").is_some(), "{env}");
        assert!(
            r.find("ReferenceGrant", "nvcf", "nvcf-gateway-to-request-router")
                .is_some(),
            "{env}"
        );

        // Contract ConfigMaps.
        let bundle = r.get("ConfigMap", "nvcf", "nvcf-trust-bundle");
        assert!(bundle.has("  ca.crt: |\n    -----BEGIN CERTIFICATE-----"), "{env}");
        assert!(!bundle.has("PRIVATE KEY"), "{env}");
        let profile = r.get("ConfigMap", "nvcf", "nvcf-worker-profile");
        assert!(profile.has("  profile.yaml: |\n    trustMode: bundle\n"), "{env}");
        assert_eq!(
            profile.field("grpcDialAddress").as_deref(),
            Some(flag("--grpc-pylon-dial-addr")),
            "{env}"
        );
        assert_eq!(
            profile.field("quicDialAddress"),
            Some(
                quic_dial
                    .replace("$(POD_NAME)", "{pod_name}")
                    .replace("$(POD_NAMESPACE)", "{namespace}")
            ),
            "{env}"
        );
        assert_eq!(
            profile.field("trustBundleFingerprint"),
            bundle.field("nvcf.io/trust-bundle-fingerprint"),
            "{env}"
        );

        // Nothing anywhere renders an insecure toggle, a Secret, or a floating image.
        for d in &r.docs {
            assert!(d.kind != "Secret", "{env}: the stack renders no Secret ({})", d.name);
            for bad in ["tls_disable", "insecureSkipVerify: true", ":latest\"", "devel: true"] {
                assert!(
                    !d.has(bad),
                    "{env}: {} {}/{} contains {bad}",
                    d.kind,
                    d.namespace,
                    d.name
                );
            }
            // provision.sh names plaintext loopback addresses only to accept them for test servers;
            // the admission policies match `http://` in order to deny it.
            if d.name != "openbao-pki-provision" && d.kind != "ValidatingAdmissionPolicy" {
                assert!(
                    !d.has("http://"),
                    "{env}: {} {}/{} contains http://",
                    d.kind,
                    d.namespace,
                    d.name
                );
            }
        }
    }
}

#[test]
fn trust_bundle_fingerprint_matches_the_validator() {
    for env in ENVIRONMENTS {
        let r = render(env);
        let bundle = r.get("ConfigMap", "nvcf", "nvcf-trust-bundle");
        let pem: String = bundle
            .body
            .lines()
            .skip_while(|l| !l.starts_with("  ca.crt: |"))
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| format!("{}\n", &l[4..]))
            .collect();
        let dir = scratch();
        let file = write(&dir, "bundle.pem", &pem);
        let r = support::run::run(&dir, &["fingerprint", file.to_str().unwrap()], &[], None);
        assert_eq!(r.code, 0, "{env}: nvcf-validate fingerprint:\n{}", r.text());
        let want = r.stdout.split_whitespace().next().unwrap_or("").to_string();
        assert_eq!(
            bundle.field("nvcf.io/trust-bundle-fingerprint").as_deref(),
            Some(want.as_str()),
            "{env}: template fingerprint vs nvcf-validate"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn default_environment_is_managed_with_in_cluster_workers() {
    let r = render("default");
    let cert = r.get("Certificate", "nvcf", "request-router");
    assert_eq!(cert.field("name").as_deref(), Some("request-router"));
    assert!(
        cert.has("    kind: ClusterIssuer\n    name: openbao\n    group: cert-manager.io"),
        "{}",
        cert.body
    );
    assert_eq!(
        cert.list("usages"),
        vec!["server auth", "digital signature", "key encipherment"]
    );
    assert!(cert.has("algorithm: ECDSA\n    size: 256\n    rotationPolicy: Always"));
    assert_eq!(cert.field("secretName").as_deref(), Some("request-router-tls"));
    assert_eq!(cert.field("duration").as_deref(), Some("2160h"));
    assert_eq!(cert.field("renewBefore").as_deref(), Some("720h"));
    let dns = cert.list("dnsNames");
    for n in [
        "request-router.nvcf.svc",
        "request-router.nvcf.svc.cluster.local",
        "*.request-router-headless.nvcf.svc.cluster.local",
    ] {
        assert!(dns.iter().any(|d| d == n), "default: dnsNames {dns:?} lack {n}");
    }
    assert!(
        r.find("UDPRoute", "nvcf", "request-router-worker-quic").is_none(),
        "in-cluster workers need no UDPRoute"
    );
    assert!(!r.get("Gateway", "nvcf-gateway", "nvcf-gateway").has("protocol: UDP"));

    // openbao-issuer: https Vault issuer with CA bundle and SA auth, bootstrap chain, RBAC.
    let vault = r.get("ClusterIssuer", "", "openbao");
    assert!(
        vault.has("server: https://openbao.openbao.svc:8200\n"),
        "{}",
        vault.body
    );
    assert!(vault.has("path: pki_int/sign/nvcf-router\n"));
    assert!(vault.has("caBundleSecretRef:\n      name: openbao-bootstrap-ca\n      key: ca.crt"));
    assert!(vault.has("mountPath: /v1/auth/kubernetes\n        role: cert-manager\n        serviceAccountRef:\n          name: openbao-issuer"));
    let role = r.get("Role", "cert-manager", "openbao-issuer-tokenrequest");
    assert!(
        role.has(
            "resources: [\"serviceaccounts/token\"]\n    resourceNames: [\"openbao-issuer\"]\n    verbs: [\"create\"]"
        ),
        "{}",
        role.body
    );
    assert!(r
        .get("RoleBinding", "cert-manager", "openbao-issuer-tokenrequest")
        .has("name: cert-manager\n    namespace: cert-manager"));
    assert!(r
        .get("Issuer", "cert-manager", "openbao-bootstrap-ca-selfsigned")
        .has("selfSigned: {}"));
    assert!(r
        .get("Certificate", "cert-manager", "openbao-bootstrap-ca")
        .has("isCA: true"));
    assert!(r
        .get("ClusterIssuer", "", "openbao-bootstrap-ca")
        .has("secretName: openbao-bootstrap-ca"));
    let server = r.get("Certificate", "openbao", "openbao-server-tls");
    assert!(
        server.has("- openbao.openbao.svc\n") && server.has("- server auth"),
        "{}",
        server.body
    );
    let role_cm = r.get("ConfigMap", "openbao", "openbao-pki-role");
    assert_eq!(role_cm.field("issuer").as_deref(), Some("openbao"));
    for kv in [
        "\\\"server_flag\\\":true",
        "\\\"client_flag\\\":false",
        "\\\"key_type\\\":\\\"ec\\\"",
        "\\\"key_bits\\\":256",
        "\\\"require_cn\\\":false",
        "\\\"allow_glob_domains\\\":false",
        "\\\"max_ttl\\\":\\\"2160h\\\"",
    ] {
        assert!(role_cm.has(kv), "role.json lacks {kv}: {}", role_cm.body);
    }
    let provision = r.get("ConfigMap", "openbao", "openbao-pki-provision");
    assert!(provision.has("  provision.sh: |\n    #!/bin/sh\n"));
    assert!(r
        .all("Job")
        .iter()
        .any(|j| j.name.starts_with("openbao-pki-provision-") && j.has("image: \"quay.io/openbao/openbao:2.6.2\"")));
}

#[test]
fn split_cluster_exposes_workers_through_the_gateway() {
    let r = render("split-cluster");
    // UDP has no hostname to route by: each pod has its own Gateway (own address), its own
    // UDPRoute to its own Service, and its dial host in the route's external-dns annotation.
    assert!(r.find("UDPRoute", "nvcf", "request-router-worker-quic").is_none());
    for (i, pod) in ["request-router-0", "request-router-1"].iter().enumerate() {
        let udp = r.get("UDPRoute", "nvcf", &format!("{pod}-worker-quic"));
        assert!(
            udp.has("apiVersion: gateway.networking.k8s.io/v1\n"),
            "Gateway API v1.6 standard: UDPRoute v1"
        );
        assert!(udp.has(&format!("name: nvcf-gateway-quic-{i}\n")) && udp.has("sectionName: worker-quic"));
        assert!(udp.has(&format!("name: {pod}\n          port: 50072")), "{}", udp.body);
        assert!(
            udp.has(&format!(
                "external-dns.alpha.kubernetes.io/hostname: \"{pod}.router.workers.nvcf.example.com\""
            )),
            "{}",
            udp.body
        );
        let gw = r.get("Gateway", "nvcf-gateway", &format!("nvcf-gateway-quic-{i}"));
        assert!(
            gw.has("    - name: worker-quic\n      protocol: UDP\n      port: 50072\n"),
            "{}",
            gw.body
        );
    }
    assert!(!r.get("Gateway", "nvcf-gateway", "nvcf-gateway").has("protocol: UDP"));
    let dns = r.get("Certificate", "nvcf", "request-router").list("dnsNames");
    // The per-pod QUIC dial hosts are the advertised names: one wildcard covers both.
    assert!(
        dns.iter().any(|d| d == "*.router.workers.nvcf.example.com"),
        "split-cluster: dnsNames {dns:?}"
    );
    let grpc = r.get("Certificate", "nvcf-gateway", "worker-grpc");
    // The dial host (SNI) and the per-pod names the listener admits as :authority.
    assert_eq!(
        grpc.list("dnsNames"),
        vec!["grpc.workers.nvcf.example.com", "*.router.workers.nvcf.example.com"]
    );
    assert_eq!(grpc.field("secretName").as_deref(), Some("worker-grpc-tls"));
}

#[test]
fn customer_issuer_uses_the_customer_issuer_and_no_openbao() {
    let r = render("customer-issuer");
    for c in r.all("Certificate") {
        assert!(
            c.has("kind: ClusterIssuer\n    name: customer-ca\n    group: cert-manager.io"),
            "{}/{}: {}",
            c.namespace,
            c.name,
            c.body
        );
    }
    assert_eq!(r.all("Certificate").len(), 3, "router + two listener certificates");
    for d in &r.docs {
        assert!(
            d.namespace != "openbao" && !d.name.contains("openbao"),
            "customer-issuer renders nothing OpenBao: {} {}",
            d.kind,
            d.name
        );
    }
    assert!(r
        .get("ConfigMap", "nvcf", "nvcf-trust-bundle")
        .has(&first_cert_line("examples/pki/customer-issuer-root.pem")));
}

#[test]
fn customer_secret_renders_no_certificate_and_no_secret() {
    let r = render("customer-secret");
    assert!(r.all("Certificate").is_empty(), "secret mode renders no Certificate");
    assert!(r.all("Issuer").is_empty() && r.all("ClusterIssuer").is_empty());
    assert!(r
        .get("StatefulSet", "nvcf", "request-router")
        .has("secretName: request-router-tls"));
    let gw = r.get("Gateway", "nvcf-gateway", "nvcf-gateway");
    assert!(gw.has("name: worker-grpc-tls") && gw.has("name: llm-invocation-tls"));
    assert!(r
        .get("ConfigMap", "nvcf", "nvcf-trust-bundle")
        .has(&first_cert_line("examples/pki/customer-secret-root.pem")));
    let policy = read("validator-policy.yaml");
    for s in [
        "name: request-router-tls",
        "name: worker-grpc-tls",
        "name: llm-invocation-tls",
    ] {
        assert!(
            policy.contains(s),
            "validator-policy.yaml declares the pre-created Secret ({s})"
        );
    }
}

/// The first base64 line of a PEM file (identifies the certificate in a rendered bundle).
fn first_cert_line(rel: &str) -> String {
    read(rel).lines().nth(1).expect("PEM body").to_string()
}

#[test]
fn example_pems_are_public_certificates_only() {
    for entry in std::fs::read_dir(repo().join("examples/pki")).expect("examples/pki") {
        let p = entry.unwrap().path();
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(!t.contains("PRIVATE KEY"), "{} holds a private key", p.display());
        assert!(
            t.contains("-----BEGIN CERTIFICATE-----"),
            "{} holds no certificate",
            p.display()
        );
    }
}

// ------------------------------------------------------------------ helm lint

#[test]
fn helm_lint_every_chart_with_every_environment() {
    for env in ENVIRONMENTS {
        let dir = scratch();
        let out = Command::new(tool("helmfile"))
            .current_dir(repo())
            .args(["--file", "helmfile.yaml", "--environment", env, "--helm-binary"])
            .arg(tool("helm"))
            .args([
                "--no-color",
                "--selector",
                REMOTE_SELECTOR,
                "write-values",
                "--skip-deps",
                "--output-file-template",
            ])
            .arg(format!("{}/{{{{ .Release.Name }}}}.yaml", dir.display()))
            .output()
            .expect("run helmfile write-values");
        assert!(out.status.success(), "helmfile -e {env} write-values:\n{}", text(&out));
        let mut linted = 0;
        for chart in CHARTS {
            let values = dir.join(format!("{chart}.yaml"));
            if !values.exists() {
                continue; // release switched off in this environment
            }
            let out = Command::new(tool("helm"))
                .current_dir(repo())
                .args(["lint", "--strict", &format!("charts/{chart}"), "-f"])
                .arg(&values)
                .output()
                .expect("run helm lint");
            assert!(
                out.status.success(),
                "helm lint charts/{chart} ({env}):\n{}",
                text(&out)
            );
            linted += 1;
        }
        assert!(linted >= 3, "{env}: linted {linted} charts");
        let _ = std::fs::remove_dir_all(dir);
    }
}

// ------------------------------------------------------------------ render-time guards

/// Values under which each chart renders; a guard test adds exactly the refused combination.
fn base_values(chart: &str) -> String {
    let bundle = read("examples/pki/openbao-root-example.pem");
    let indented: String = bundle.lines().map(|l| format!("    {l}\n")).collect();
    match chart {
        "request-router" => "router:\n  grpcDialAddress: https://grpc.workers.nvcf.example.com:443\n  quicDialAddress: \"{pod_name}.router.workers.nvcf.example.com:50072\"\n".into(),
        "nvcf-pki" => format!(
            "router:\n  grpcDialAddress: https://grpc.workers.nvcf.example.com:443\n  quicDialAddress: quic.workers.nvcf.example.com:50072\ntrustBundle:\n  pem: |\n{indented}"
        ),
        "openbao-issuer" => format!(
            "trustBundle:\n  pem: |\n{indented}pki:\n  role:\n    allowedDomains: [request-router.nvcf.svc, workers.nvcf.example.com]\n"
        ),
        "gateway-routes" => "gateway:\n  className: nvcf\ntls:\n  issuerRef:\n    name: openbao\nlisteners:\n  invocation:\n    hostname: llm.invocation.nvcf.example.com\n  workerGrpc:\n    hostname: grpc.workers.nvcf.example.com\n".into(),
        "nvcf-admission" => "namespaces: [nvcf, openbao]\n".into(),
        other => panic!("unknown chart {other}"),
    }
}

fn helm_template(chart: &str, args: &[String]) -> Output {
    let dir = scratch();
    let values = write(&dir, "base.yaml", &base_values(chart));
    let out = Command::new(tool("helm"))
        .current_dir(repo())
        .args([
            "template",
            chart,
            &format!("charts/{chart}"),
            "--namespace",
            if chart == "gateway-routes" {
                "nvcf-gateway"
            } else {
                "nvcf"
            },
            "-f",
        ])
        .arg(&values)
        .args(args)
        .output()
        .expect("run helm template");
    let _ = std::fs::remove_dir_all(dir);
    out
}

fn assert_refused(chart: &str, args: &[&str], message: &str) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let out = helm_template(chart, &args);
    assert!(
        !out.status.success(),
        "charts/{chart} rendered with {args:?}; the guard must refuse it:\n{}",
        text(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(message),
        "charts/{chart} with {args:?}: expected the guard message\n  {message}\n{}",
        text(&out)
    );
}

#[test]
fn every_chart_renders_with_its_base_values() {
    for chart in CHARTS {
        let out = helm_template(chart, &[]);
        assert!(out.status.success(), "charts/{chart} with base values:\n{}", text(&out));
    }
}

macro_rules! guard {
    ($test:ident, $chart:literal, [$($arg:literal),* $(,)?], $msg:literal) => {
        #[test]
        fn $test() {
            assert_refused($chart, &[$($arg),*], $msg);
        }
    };
}

// nvcf-pki: the contract ConfigMaps cannot be renamed (the validator and workers find them by name).
guard!(
    pki_refuses_renamed_trust_bundle,
    "nvcf-pki",
    ["--set", "trustBundle.configMapName=ca-bundle"],
    "nvcf-trust-bundle"
);
guard!(
    pki_refuses_renamed_worker_profile,
    "nvcf-pki",
    ["--set", "workerProfile.configMapName=profile"],
    "nvcf-worker-profile"
);

// request-router
guard!(router_refuses_pki_off, "request-router", ["--set", "tls.enabled=false"],
    "request-router: tls.enabled=false would run the router without TLS (the reference stack fell back to --quic-insecure); keep tls.enabled=true and set tls.secretName to the Secret from nvcf-pki");
guard!(router_refuses_missing_tls_secret, "request-router", ["--set", "tls.secretName="],
    "request-router: tls.secretName is empty; set it to the kubernetes.io/tls Secret from nvcf-pki (certificate.secretName, default request-router-tls)");
guard!(router_refuses_half_set_tls_paths, "request-router", ["--set", "tls.keyPath="],
    "request-router: tls.certPath and tls.keyPath must be set together; set both (defaults /etc/stargate/tls/tls.crt and /etc/stargate/tls/tls.key)");
guard!(router_refuses_tls_paths_outside_the_mount, "request-router", ["--set", "tls.certPath=/etc/other/tls.crt"],
    "request-router: tls.certPath and tls.keyPath must be files directly in tls.mountPath (/etc/stargate/tls) so renewed certificates reach the router; set them to /etc/stargate/tls/tls.crt and /etc/stargate/tls/tls.key");
guard!(router_refuses_quic_insecure, "request-router", ["--set", "quicInsecure=true"],
    "request-router: quicInsecure=true would render --quic-insecure (QUIC without certificate verification); set quicInsecure=false");
guard!(router_refuses_dev_peer_forwarding, "request-router", ["--set", "enableDevPeerForwarding=true"],
    "request-router: enableDevPeerForwarding=true would render --enable-dev-peer-forwarding (unauthenticated peer traffic); set enableDevPeerForwarding=false");
guard!(router_refuses_insecure_remote_watch, "request-router", ["--set", "allowInsecureRemoteWatchHttp=true"],
    "request-router: allowInsecureRemoteWatchHttp=true would render --allow-insecure-remote-watch-http (plaintext watch); set allowInsecureRemoteWatchHttp=false");
guard!(
    router_refuses_insecure_extra_args,
    "request-router",
    ["--set-string", "extraArgs[0]=--quic-insecure"],
    "request-router: extraArgs may not contain the insecure flag --quic-insecure; remove it from extraArgs"
);
guard!(router_refuses_contract_flags_in_extra_args, "request-router", ["--set-string", "extraArgs[0]=--tls-cert-path=/tmp/x.crt"],
    "request-router: extraArgs may not repeat --tls-cert-path, which the chart renders; set it through router.* / tls.* values instead");
guard!(router_refuses_quic_insecure_env, "request-router", ["--set", "extraEnv[0].name=STARGATE_QUIC_INSECURE", "--set-string", "extraEnv[0].value=true"],
    "request-router: extraEnv may not set STARGATE_QUIC_INSECURE (QUIC without certificate verification); remove it from extraEnv");
guard!(router_refuses_plaintext_grpc_dial_address, "request-router", ["--set", "router.grpcDialAddress=http://grpc.workers.nvcf.example.com:80"],
    "request-router: router.grpcDialAddress must be https://host:port (workers dial gRPC in plaintext otherwise); got \"http://grpc.workers.nvcf.example.com:80\"");
guard!(router_refuses_quic_dial_address_with_scheme, "request-router", ["--set", "router.quicDialAddress=https://quic.workers.nvcf.example.com:50072"],
    "request-router: router.quicDialAddress must be host:port without a scheme; got \"https://quic.workers.nvcf.example.com:50072\"");
guard!(router_refuses_advertised_template_without_pod_name, "request-router", ["--set", "router.advertisedHostnameTemplate=router.nvcf.example.com"],
    "request-router: router.advertisedHostnameTemplate must start with \"{pod_name}.\" (one one-label wildcard in the Certificate covers every replica); got \"router.nvcf.example.com\"");
guard!(
    router_refuses_unknown_workload_kind,
    "request-router",
    ["--set", "workload.kind=DaemonSet"],
    "request-router: unknown workload.kind \"DaemonSet\"; set workload.kind to StatefulSet or Deployment"
);
guard!(router_refuses_plain_tcp_worker_grpc, "request-router", ["--set", "workerRoutes.grpc.kind=TCPRoute"],
    "request-router: workerRoutes.grpc.kind=TCPRoute would put worker gRPC on a plain TCP listener (cleartext); set workerRoutes.grpc.kind=GRPCRoute (HTTPS listener, TLS at the Gateway, h2c to 50071)");
guard!(router_refuses_a_deployment_of_two_pods, "request-router", ["--set", "workload.kind=Deployment"],
    "request-router: workload.kind=Deployment runs exactly one pod (its pods get generated names, so two could not each be reached by the name they advertise); set workload.replicas=1, or workload.kind=StatefulSet for 2 replicas");
guard!(
    router_refuses_an_autoscaled_deployment,
    "request-router",
    [
        "--set",
        "workload.kind=Deployment",
        "--set",
        "workload.replicas=1",
        "--set",
        "autoscaling.enabled=true"
    ],
    "request-router: autoscaling needs workload.kind=StatefulSet"
);
guard!(router_refuses_a_shared_quic_dial_address, "request-router", ["--set", "router.quicDialAddress=quic.workers.nvcf.example.com:50072"],
    "request-router: router.quicDialAddress \"quic.workers.nvcf.example.com:50072\" is the same for every pod, so a worker that names one pod may reach another");
guard!(
    router_refuses_pod_name_in_extra_env,
    "request-router",
    ["--set", "extraEnv[0].name=POD_NAME", "--set", "extraEnv[0].value=x"],
    "request-router: extraEnv may not set POD_NAME, which the chart sets"
);
guard!(router_refuses_udproute_unserved_by_gateway_api, "request-router", ["--set", "workerRoutes.quic.enabled=true", "--set", "gatewayApi.version=v1.5"],
    "request-router: UDPRoute is not served by Gateway API v1.5 standard channel; set gatewayApi.version=v1.6 (or later), or gatewayApi.channel=experimental for v1.5");

#[test]
fn router_udproute_api_version_follows_the_gateway_api_value() {
    let v = |args: &[&str]| {
        let mut a: Vec<String> = vec!["--set".into(), "workerRoutes.quic.enabled=true".into()];
        a.extend(args.iter().map(|s| s.to_string()));
        let out = helm_template("request-router", &a);
        assert!(out.status.success(), "{}", text(&out));
        let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
        let udp = docs
            .into_iter()
            .find(|d| d.kind == "UDPRoute")
            .expect("UDPRoute rendered");
        udp.field("apiVersion").unwrap()
    };
    assert_eq!(v(&[]), "gateway.networking.k8s.io/v1");
    assert_eq!(
        v(&[
            "--set",
            "gatewayApi.version=v1.5",
            "--set",
            "gatewayApi.channel=experimental"
        ]),
        "gateway.networking.k8s.io/v1alpha2"
    );
}

#[test]
fn router_deployment_runs_one_pod_with_a_stable_identity() {
    let out = helm_template(
        "request-router",
        &[
            "--set".into(),
            "workload.kind=Deployment".into(),
            "--set".into(),
            "workload.replicas=1".into(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
    assert!(!docs.iter().any(|d| d.kind == "StatefulSet"));
    let dep = docs
        .iter()
        .find(|d| d.kind == "Deployment")
        .expect("Deployment rendered");
    for want in [
        "  replicas: 1\n  strategy:\n    type: Recreate\n",
        "      hostname: request-router-0\n      subdomain: request-router-headless\n",
        "            - name: POD_NAME\n              value: \"request-router-0\"\n",
    ] {
        assert!(dep.has(want), "Deployment lacks {want:?}:\n{}", dep.body);
    }
    // One per-pod Service, selecting the chart's labels (one pod) without a StatefulSet label.
    let svc = docs
        .iter()
        .find(|d| d.kind == "Service" && d.name == "request-router-0")
        .expect("per-pod Service");
    assert!(!svc.has("statefulset.kubernetes.io"), "{}", svc.body);
    assert!(!docs.iter().any(|d| d.name == "request-router-1"));
}

#[test]
fn router_autoscaler_gets_per_pod_objects_up_to_max_replicas() {
    let out = helm_template(
        "request-router",
        &[
            "--set".into(),
            "autoscaling.enabled=true".into(),
            "--set".into(),
            "autoscaling.maxReplicas=5".into(),
            "--set".into(),
            "workerRoutes.quic.enabled=true".into(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
    let hpa = docs
        .iter()
        .find(|d| d.kind == "HorizontalPodAutoscaler")
        .expect("HPA rendered");
    assert!(
        hpa.has("    kind: StatefulSet\n    name: request-router\n") && hpa.has("maxReplicas: 5"),
        "{}",
        hpa.body
    );
    let sts = docs.iter().find(|d| d.kind == "StatefulSet").unwrap();
    assert!(
        !sts.has("  replicas:"),
        "the autoscaler owns spec.replicas:\n{}",
        sts.body
    );
    for kind in ["Service", "GRPCRoute", "UDPRoute"] {
        let per_pod = docs
            .iter()
            .filter(|d| {
                d.kind == kind && d.name.starts_with("request-router-") && d.name.as_bytes()[15].is_ascii_digit()
            })
            .count();
        assert_eq!(per_pod, 5, "{kind}: one per ordinal up to maxReplicas");
    }
}
// nvcf-admission
guard!(
    admission_refuses_no_namespaces,
    "nvcf-admission",
    ["--set", "namespaces=null"],
    "nvcf-admission: namespaces is empty; list the stack's namespaces"
);
guard!(
    admission_refuses_deny_with_warn,
    "nvcf-admission",
    ["--set", "validationActions={Deny,Warn}"],
    "nvcf-admission: validationActions may not hold both Deny and Warn"
);

// nvcf-pki
guard!(
    pki_refuses_unknown_mode,
    "nvcf-pki",
    ["--set", "mode=vault"],
    "nvcf-pki: unknown mode \"vault\"; set mode to one of managed, issuer, secret"
);
guard!(pki_refuses_managed_without_cluster_issuer, "nvcf-pki", ["--set", "managed.clusterIssuer="],
    "nvcf-pki: mode=managed needs managed.clusterIssuer (the OpenBao ClusterIssuer rendered by openbao-issuer, default openbao)");
guard!(
    pki_refuses_issuer_mode_without_issuer,
    "nvcf-pki",
    ["--set", "mode=issuer"],
    "nvcf-pki: mode=issuer needs the customer's issuer; set issuer.issuerRef.name (and issuer.issuerRef.kind/group)"
);
guard!(pki_refuses_plaintext_grpc_dial_address, "nvcf-pki", ["--set", "router.grpcDialAddress=grpc.workers.nvcf.example.com:443"],
    "nvcf-pki: router.grpcDialAddress must be https://host:port (workers dial gRPC in plaintext otherwise); got \"grpc.workers.nvcf.example.com:443\"");
guard!(pki_refuses_quic_dial_address_with_scheme, "nvcf-pki", ["--set", "router.quicDialAddress=quic://quic.workers.nvcf.example.com:50072"],
    "nvcf-pki: router.quicDialAddress must be host:port without a scheme; got \"quic://quic.workers.nvcf.example.com:50072\"");
guard!(pki_refuses_advertised_template_without_pod_name, "nvcf-pki", ["--set", "router.advertisedHostnameTemplate=router.nvcf.example.com"],
    "nvcf-pki: router.advertisedHostnameTemplate must start with \"{pod_name}.\" so one one-label wildcard covers every replica; got \"router.nvcf.example.com\"");
guard!(
    pki_refuses_other_trust_modes,
    "nvcf-pki",
    ["--set", "workerProfile.trustMode=system"],
    "nvcf-pki: workerProfile.trustMode must be \"bundle\" (workers trust only the published bundle); got \"system\""
);
guard!(pki_refuses_insecure_skip_verify, "nvcf-pki", ["--set", "workerProfile.insecureSkipVerify=true"],
    "nvcf-pki: workerProfile.insecureSkipVerify=true turns off worker TLS verification; set workerProfile.insecureSkipVerify=false");
guard!(pki_refuses_empty_trust_bundle, "nvcf-pki", ["--set", "trustBundle.pem="],
    "nvcf-pki: trustBundle.pem is empty; set it to the PEM of the CA certificate(s) workers must trust (mode managed: the exported OpenBao root, see docs/stack.md)");
guard!(pki_refuses_trust_bundle_without_certificates, "nvcf-pki", ["--set", "trustBundle.pem=not a certificate"],
    "nvcf-pki: trustBundle.pem holds no CERTIFICATE block; set it to the PEM of the CA certificate(s) workers must trust");

#[test]
fn the_example_material_marker_is_rendered_only_when_asked_for() {
    let marker = "nvcf.io/example-material: allowed";
    let out = helm_template("nvcf-pki", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(marker));
    let out = helm_template("nvcf-pki", &["--set".into(), "trustBundle.exampleMaterial=true".into()]);
    assert!(out.status.success(), "{}", text(&out));
    // On the trust bundle and on the worker profile.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).matches(marker).count(),
        2,
        "{}",
        text(&out)
    );
}

#[test]
fn pki_refuses_a_private_key_in_the_trust_bundle() {
    let dir = scratch();
    let mut pem = read("examples/pki/openbao-root-example.pem");
    // A syntactically plausible key block (not a real key): the guard must refuse the label.
    pem.push_str("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIExampleExampleExampleExampleExampleExampleoAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n");
    let file = write(&dir, "bundle.pem", &pem);
    assert_refused(
        "nvcf-pki",
        &["--set-file", &format!("trustBundle.pem={}", file.display())],
        "nvcf-pki: trustBundle.pem may contain only CERTIFICATE blocks; found \"-----BEGIN EC PRIVATE KEY-----\" - remove private keys and any other PEM block",
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn pki_secret_mode_renders_no_certificate_and_issuer_mode_uses_the_customer_issuer() {
    let out = helm_template("nvcf-pki", &["--set".into(), "mode=secret".into()]);
    assert!(out.status.success(), "{}", text(&out));
    let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
    assert!(
        docs.iter().all(|d| d.kind == "ConfigMap"),
        "mode secret renders only the two ConfigMaps: {:?}",
        docs.iter().map(|d| &d.kind).collect::<Vec<_>>()
    );
    let out = helm_template(
        "nvcf-pki",
        &[
            "--set".into(),
            "mode=issuer".into(),
            "--set".into(),
            "issuer.issuerRef.name=customer-ca".into(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
    let cert = docs.iter().find(|d| d.kind == "Certificate").expect("Certificate");
    assert!(
        cert.has("kind: ClusterIssuer\n    name: customer-ca\n    group: cert-manager.io"),
        "{}",
        cert.body
    );
}

// openbao-issuer
guard!(issuer_refuses_plaintext_openbao, "openbao-issuer", ["--set", "openbao.address=http://openbao.openbao.svc:8200"],
    "openbao-issuer: openbao.address must be https:// (OpenBao runs with TLS; a plaintext Vault issuer leaks tokens and certificates); got \"http://openbao.openbao.svc:8200\"");
guard!(issuer_refuses_empty_allowed_domains, "openbao-issuer", ["--set", "pki.role.allowedDomains=null"],
    "openbao-issuer: pki.role.allowedDomains is empty; set it to the router's domains (e.g. request-router.nvcf.svc, request-router-headless.nvcf.svc.cluster.local, workers.<domain>)");
guard!(issuer_refuses_broad_allowed_domains, "openbao-issuer", ["--set", "pki.role.allowedDomains={svc.cluster.local}"],
    "openbao-issuer: pki.role.allowedDomains entry \"svc.cluster.local\" is too broad (no globs, no bare cluster suffixes); list the router's own domains");
guard!(
    issuer_refuses_ec_key_size_mismatch,
    "openbao-issuer",
    ["--set", "pki.role.keyBits=2048"],
    "openbao-issuer: pki.role.keyBits=2048 does not fit keyType=ec; set pki.role.keyBits to 256 or 384"
);
guard!(
    issuer_refuses_rsa_key_size_mismatch,
    "openbao-issuer",
    ["--set", "pki.role.keyType=rsa"],
    "openbao-issuer: pki.role.keyBits=256 does not fit keyType=rsa; set pki.role.keyBits to 2048, 3072 or 4096"
);

// gateway-routes
guard!(gateway_refuses_plain_tcp_worker_grpc_listener, "gateway-routes", ["--set", "listeners.workerGrpc.protocol=TCP"],
    "gateway-routes: listeners.workerGrpc.protocol=TCP would carry worker gRPC in cleartext (plain TCP listener); set listeners.workerGrpc.protocol=HTTPS (TLS ends at the Gateway, GRPCRoute h2c to the router)");
guard!(gateway_refuses_unknown_tls_mode, "gateway-routes", ["--set", "tls.mode=none"],
    "gateway-routes: unknown tls.mode \"none\"; set tls.mode to certificate (cert-manager Certificates) or secret (existing Secrets)");
guard!(gateway_refuses_certificates_without_issuer, "gateway-routes", ["--set", "tls.issuerRef.name="],
    "gateway-routes: tls.mode=certificate needs an issuer for the listener certificates; set tls.issuerRef.name (and kind/group)");
guard!(gateway_refuses_missing_gateway_class, "gateway-routes", ["--set", "gateway.className="],
    "gateway-routes: gateway.className is empty; set it to the GatewayClass of your Gateway implementation (or gateway.create=false to attach to an existing Gateway)");
guard!(
    gateway_refuses_missing_invocation_hostname,
    "gateway-routes",
    ["--set", "listeners.invocation.hostname="],
    "gateway-routes: listeners.invocation.hostname is empty; set it to llm.invocation.<domain>"
);
guard!(gateway_refuses_listener_hostname_without_the_dial_host, "gateway-routes", ["--set", "listeners.workerGrpc.listenerHostname=*.router.workers.nvcf.example.com"],
    "gateway-routes: listeners.workerGrpc.listenerHostname \"*.router.workers.nvcf.example.com\" does not match \"grpc.workers.nvcf.example.com\"; a Gateway routes worker gRPC (SNI: the dial host, :authority: the advertised names) only within the listener hostname; set it to a wildcard covering the dial host and listeners.workerGrpc.authorityHostnames (e.g. *.workers.<domain>), or leave it empty");
guard!(gateway_refuses_missing_worker_grpc_hostname, "gateway-routes", ["--set", "listeners.workerGrpc.hostname="],
    "gateway-routes: listeners.workerGrpc.hostname is empty; set it to the host of the workers' gRPC dial address (request-router router.grpcDialAddress)");

#[test]
fn gateway_attaches_to_an_existing_gateway() {
    let out = helm_template("gateway-routes", &["--set".into(), "gateway.create=false".into()]);
    assert!(out.status.success(), "{}", text(&out));
    let docs = parse_docs(&String::from_utf8_lossy(&out.stdout));
    let kinds: Vec<&str> = docs.iter().map(|d| d.kind.as_str()).collect();
    assert!(
        !kinds.contains(&"Gateway") && !kinds.contains(&"Certificate"),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"HTTPRoute") && kinds.contains(&"ReferenceGrant"),
        "{kinds:?}"
    );
}
