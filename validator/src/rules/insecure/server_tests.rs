//! OpenBao/Vault servers as both rules see them: which `tls_disable` is a listener's (judged by
//! plaintext-endpoint) and which is a client's switch (insecure-flag); every form of HCL a
//! listener is written in; configuration without a listener, and text that is not configuration;
//! and which server a dial address reaches, so that the dials of one plaintext server are one
//! finding with it and the dials of a server that merely resembles it are not.

use super::tests::rule;
use super::*;
use crate::policy::Policy;
use crate::testkit::*;

/// The findings of rule `id` over multi-document YAML.
fn findings(id: &str, yaml: &str) -> Vec<Finding> {
    let g = graph("default", yaml);
    let p = Policy::default();
    (rule(id).check)(&ctx(&g, &p))
        .into_iter()
        .filter(|f| f.rule == id)
        .collect()
}

/// A ConfigMap `openbao/config` holding `text` under `key`.
fn configmap(key: &str, text: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: config, namespace: openbao}}\ndata:\n  {key}: {}\n",
        serde_json::to_string(text).unwrap()
    )
}

#[test]
fn a_listeners_tls_disable_is_plaintext_endpoint_and_a_clients_is_insecure_flag() {
    // A listener serving plaintext beyond the pod: plaintext-endpoint's (the server the clients
    // reach), and never a second finding of insecure-flag.
    let listener = "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_disable = true\n}\n";
    let yaml = configmap("server.hcl", listener);
    let f = findings(PLAINTEXT_ENDPOINT, &yaml);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("`server.hcl` configures a listener with tls_disable"),
        "{f:#?}"
    );
    assert!(findings(INSECURE_FLAG, &yaml).is_empty());
    // A loopback listener (an agent's local cache) serves nothing beyond the pod: neither rule.
    let local = configmap("agent.hcl", &listener.replace("[::]", "127.0.0.1"));
    assert!(findings(PLAINTEXT_ENDPOINT, &local).is_empty());
    assert!(findings(INSECURE_FLAG, &local).is_empty());
    // The same switch outside any listener is a client's: it talks to its server without TLS.
    for (key, text) in [
        (
            "agent.hcl",
            "vault {\n  address = \"https://openbao.openbao.svc:8200\"\n  tls_disable = true\n}\n",
        ),
        (
            "client.yaml",
            "vault:\n  address: https://openbao.openbao.svc:8200\n  tls_disable: true\n",
        ),
        (
            "client.json",
            "{\"storage\": {\"path\": \"/data\"}, \"tls_disable\": 1}",
        ),
    ] {
        let yaml = configmap(key, text);
        let f = findings(INSECURE_FLAG, &yaml);
        assert_eq!(f.len(), 1, "{key}: {f:#?}");
        assert!(
            f[0].message.contains(&format!("file `{key}`")) && f[0].message.contains("tls_disable"),
            "{f:#?}"
        );
        // No listener: no plaintext server.
        assert!(findings(PLAINTEXT_ENDPOINT, &yaml).is_empty(), "{key}");
    }
}

#[test]
fn every_hcl_form_of_a_listener_is_read() {
    let fires = |text: &str| findings(PLAINTEXT_ENDPOINT, &configmap("server.hcl", text)).len() == 1;
    // TLS off by every value HCL can write it with, on a network address.
    for on in ["true", "1", "\"true\"", "(true)", "(1)"] {
        let text = format!("listener \"tcp\" {{\n  address = \"0.0.0.0:8200\"\n  tls_disable = {on}\n}}\n");
        assert!(fires(&text), "{text}");
    }
    for off in ["false", "0", "\"false\"", "(false)", "(0)"] {
        let text = format!("listener \"tcp\" {{\n  address = \"0.0.0.0:8200\"\n  tls_disable = {off}\n}}\n");
        assert!(!fires(&text), "{text}");
    }
    // An interpolated address is a network address (`${…}` is no loopback host), written with a
    // template or without one.
    assert!(fires(
        "listener \"tcp\" {\n  address = \"${POD_IP}:8200\"\n  tls_disable = 1\n}\n"
    ));
    assert!(fires(
        "listener \"tcp\" {\n  address = \"{{ GetPrivateIP }}:8200\"\n  tls_disable = 1\n}\n"
    ));
    // The attribute form (`listener = { tcp = { … } }`), with its near misses: a loopback address,
    // TLS on beside another switch of the listener that is on, a listener that is no object.
    assert!(fires(
        "listener = {\n  tcp = {\n    address = \"0.0.0.0:8200\"\n    tls_disable = true\n  }\n}\n"
    ));
    assert!(fires(
        "listener = {\n  tcp = {\n    tls_disable = 1\n    address = \"10.0.0.5:8200\"\n  }\n}\n"
    ));
    for silent in [
        "listener = {\n  tcp = {\n    address = \"127.0.0.1:8200\"\n    tls_disable = true\n  }\n}\n",
        "listener = {\n  tcp = {\n    tls_disable = true\n    address = \"127.0.0.1:8200\"\n  }\n}\n",
        "listener = {\n  tcp = {\n    address = \"0.0.0.0:8200\"\n    tls_disable = false\n    tls_disable_client_certs = true\n  }\n}\n",
        "listener = {\n  tcp = {\n    address = \"0.0.0.0:8200\"\n    tls_require_and_verify_client_cert = true\n  }\n}\n",
        "listener = {\n  tcp = \"0.0.0.0:8200\"\n}\n",
    ] {
        assert!(!fires(silent), "{silent}");
    }
    // Only the attribute named `listener` holds listeners.
    assert!(!fires(
        "ui = true\nlisteners = {\n  tcp = {\n    address = \"0.0.0.0:8200\"\n    tls_disable = true\n  }\n}\n"
    ));
}

#[test]
fn configuration_without_a_listener_serves_nothing_and_text_that_is_no_configuration_is_scanned() {
    let plain = |text: &str| findings(PLAINTEXT_ENDPOINT, &configmap("server.hcl", text));
    // Parsed HCL or JSON with no listener: no server listens, whatever other blocks say.
    for text in [
        "tls_disable = 1\nstorage \"raft\" {\n  path = \"/data\"\n}\n",
        "{\"tls_disable\": true, \"storage\": {\"raft\": {\"path\": \"/data\"}}}",
        "{\n  \"storage\": {\"raft\": {\"path\": \"/data\"}},\n  \"tls_disable\": \"1\"\n}",
    ] {
        assert!(plain(text).is_empty(), "{text}");
    }
    // Configuration of another format that names no listener: a client's switch (insecure-flag's,
    // the test above), no server.
    for text in [
        "[vault]\naddress = https://openbao.openbao.svc:8200\ntls_disable = 1\n",
        "[vault]\naddress = \"https://openbao.openbao.svc:8200\"\ntls_disable = true\n",
        "vault:\n  tls_disable: true\n",
    ] {
        assert!(plain(text).is_empty(), "{text}");
    }
    // Text that is no configuration is scanned, so nothing unparseable passes: a script that
    // writes the configuration, one that appends the switch to it, a YAML file that carries a
    // server's configuration as a string.
    let script = "cat > /tmp/server.hcl <<EOF\nlistener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_disable = 1\n}\nEOF\nexec bao server -config=/tmp/server.hcl\n";
    for text in [
        script,
        "#!/bin/sh\necho 'tls_disable = 1' >> /vault/config/extra.hcl\n",
        "server:\n  config: |\n    listener \"tcp\" {\n      tls_disable = 1\n    }\n",
    ] {
        let f = plain(text);
        assert_eq!(f.len(), 1, "{text}: {f:#?}");
        assert!(
            plain(&text.replace("tls_disable = 1", "tls_disable = 0")).is_empty(),
            "{text}"
        );
    }
}

/// A workload `kind` `ns/name` whose pods carry `app: <app>`, run the image's entrypoint with
/// `args` and mount the ConfigMap `config`.
fn workload(kind: &str, ns: &str, name: &str, app: &str, args: &str, config: Option<&str>) -> String {
    let volumes = config.map_or(String::new(), |c| {
        format!(", volumes: [{{name: config, configMap: {{name: {c}}}}}]")
    });
    let spec =
        format!("{{containers: [{{name: server, image: 'quay.io/openbao/openbao:2.4.1', args: [{args}]}}]{volumes}}}");
    let pod = format!("{{metadata: {{labels: {{app: {app}}}}}, spec: {spec}}}");
    let (api, spec) = match kind {
        "Pod" => ("v1", spec),
        "CronJob" => (
            "batch/v1",
            format!("{{schedule: '@hourly', jobTemplate: {{spec: {{template: {pod}}}}}}}"),
        ),
        _ => (
            "apps/v1",
            format!("{{selector: {{matchLabels: {{app: {app}}}}}, template: {pod}}}"),
        ),
    };
    let labels = if kind == "Pod" {
        format!(", labels: {{app: {app}}}")
    } else {
        String::new()
    };
    format!("---\napiVersion: {api}\nkind: {kind}\nmetadata: {{name: {name}, namespace: {ns}{labels}}}\nspec: {spec}\n")
}

fn service(ns: &str, name: &str, app: &str) -> String {
    format!("---\napiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  selector: {{app: {app}}}\n  ports: [{{name: http, port: 8200}}]\n")
}

/// A client in namespace `app` that dials `http://<svc>.<ns>.svc:8200`.
fn client(svc: &str, ns: &str) -> String {
    format!(
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: to-{svc}, namespace: app}}\nspec:\n  selector: {{matchLabels: {{app: to-{svc}}}}}\n  template:\n    metadata: {{labels: {{app: to-{svc}}}}}\n    spec:\n      containers:\n        - name: c\n          image: quay.io/x/y:1.0.0\n          env: [{{name: VAULT_ADDR, value: 'http://{svc}.{ns}.svc:8200'}}]\n"
    )
}

fn config(ns: &str, name: &str, tls: bool) -> String {
    let listener = if tls {
        "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_cert_file = \"/tls/tls.crt\"\n  tls_key_file = \"/tls/tls.key\"\n}\n"
    } else {
        "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_disable = 1\n}\n"
    };
    format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\ndata:\n  server.hcl: {}\n",
        serde_json::to_string(listener).unwrap()
    )
}

/// The folded findings as (object `ns/name`, the `ns/name` of each related location).
fn folded(yaml: &str) -> Vec<(String, Vec<String>)> {
    let name = |o: &Option<crate::finding::ObjectRef>| {
        let o = o.as_ref().expect("an object's finding");
        format!("{}/{}", o.namespace.as_deref().unwrap_or(""), o.name)
    };
    crate::fold::fold(findings(PLAINTEXT_ENDPOINT, yaml))
        .iter()
        .map(|f| (name(&f.object), f.related.iter().map(|r| name(&r.object)).collect()))
        .collect()
}

fn owned(expected: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    expected
        .iter()
        .map(|(o, r)| (o.to_string(), r.iter().map(|s| s.to_string()).collect()))
        .collect()
}

#[test]
fn a_service_reaches_the_pods_it_selects_in_its_own_namespace_whatever_owns_them() {
    // Dev servers run by a bare Pod and by a CronJob: the address of the Service that selects
    // their pods is about them (one finding with the server). A Service `openbao/bao` selects
    // `app: bao`, which a TLS server in its namespace carries, and also a dev server in another
    // namespace that it does not reach: its dial is its own finding.
    let dev = "server, -dev";
    let yaml = [
        workload("Pod", "openbao", "bao-pod", "bao-pod", dev, None),
        service("openbao", "bao-pod", "bao-pod"),
        workload("CronJob", "openbao", "bao-cron", "bao-cron", dev, None),
        service("openbao", "bao-cron", "bao-cron"),
        workload("Deployment", "openbao", "bao", "bao", "server", Some("tls")),
        config("openbao", "tls", true),
        workload("Deployment", "elsewhere", "bao-dev", "bao", dev, None),
        service("openbao", "bao", "bao"),
        client("bao-pod", "openbao"),
        client("bao-cron", "openbao"),
        client("bao", "openbao"),
    ]
    .concat();
    let expected: &[(&str, &[&str])] = &[
        ("openbao/bao-pod", &["app/to-bao-pod"]),
        ("openbao/bao-cron", &["app/to-bao-cron"]),
        ("elsewhere/bao-dev", &[]),
        ("app/to-bao", &[]),
    ];
    assert_eq!(folded(&yaml), owned(expected));
}

#[test]
fn only_the_plaintext_server_itself_takes_the_dials_of_its_services() {
    // Each server is selected by two Services, each dialed by a client. The dials of a plaintext
    // server (a mounted configuration with TLS off, a dev server) are one finding with it; a
    // server that only resembles one (another configuration of the namespace, a configuration
    // of the same name in another namespace, a workload of the same name of another kind or
    // namespace, another workload of the same kind and namespace) is no plaintext server, and
    // each address that dials it stays a finding of its own.
    let mut yaml = String::new();
    let mut expected: Vec<(String, Vec<String>)> = Vec::new();
    let two_services = |yaml: &mut String, ns: &str, app: &str| -> [String; 2] {
        [format!("{app}-a"), format!("{app}-b")].map(|svc| {
            yaml.push_str(&service(ns, &svc, app));
            yaml.push_str(&client(&svc, ns));
            format!("app/to-{svc}")
        })
    };
    // The plaintext servers: the configuration and the dev server are the findings.
    yaml.push_str(&config("openbao", "openbao-config", false));
    yaml.push_str(&workload(
        "StatefulSet",
        "openbao",
        "openbao",
        "openbao",
        "server",
        Some("openbao-config"),
    ));
    let dials = two_services(&mut yaml, "openbao", "openbao");
    expected.push(("openbao/openbao-config".into(), dials.to_vec()));
    yaml.push_str(&workload("Deployment", "dev", "bao", "bao-dev", "server, -dev", None));
    let dials = two_services(&mut yaml, "dev", "bao-dev");
    expected.push(("dev/bao".into(), dials.to_vec()));
    // The near misses.
    for (kind, ns, name, config_name) in [
        ("Deployment", "openbao", "tls-server", Some("tls-config")),
        ("StatefulSet", "mirror", "mirror", Some("openbao-config")),
        ("StatefulSet", "dev", "bao", None),
        ("Deployment", "other", "bao", None),
        ("Deployment", "dev", "bao-tls", None),
    ] {
        if let Some(c) = config_name {
            yaml.push_str(&config(ns, c, true));
        }
        let app = format!("{name}-{}", kind.to_ascii_lowercase());
        yaml.push_str(&workload(kind, ns, name, &app, "server", config_name));
        for d in two_services(&mut yaml, ns, &app) {
            expected.push((d, Vec::new()));
        }
    }
    let order = |mut v: Vec<(String, Vec<String>)>| {
        v.sort();
        v
    };
    assert_eq!(order(folded(&yaml)), order(expected));
}

/// A release is an OpenBao/Vault server by what its values configure, wherever they carry the
/// configuration: in a list, and in lists as deep as the YAML reader nests (`yaml::MAX_DEPTH`
/// collections, the top map included). Text that only mentions a listener configures none.
#[test]
fn a_server_configuration_in_lists_of_values_makes_the_release_a_server() {
    let config = "listener \"tcp\" {\n  address = \"[::]:8200\"\n  tls_disable = 1\n}";
    let mut deep = serde_json::json!(config);
    for _ in 1..crate::yaml::MAX_DEPTH {
        deep = serde_json::json!([deep]);
    }
    let judged = |values: serde_json::Value| {
        let mut r = rel("helmfile.yaml", 7, "vault", "vault", local("charts/vault"));
        r.values = values;
        super::tests::run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &[])
    };
    for values in [
        serde_json::json!({"configs": ["ui = true", config]}),
        serde_json::json!({ "configs": deep }),
    ] {
        let f = judged(values);
        assert!(!f.is_empty());
        assert!(
            f.iter().all(|f| f
                .message
                .contains("(an OpenBao/Vault server by its values, not rendered)")),
            "{f:#?}"
        );
    }
    assert!(judged(serde_json::json!({"docs": ["the listener of the router", "ui = true"]})).is_empty());
}
