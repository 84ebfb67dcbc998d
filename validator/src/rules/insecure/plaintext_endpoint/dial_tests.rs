//! `plaintext-endpoint` unit tests of how dial addresses are found and attributed: each address
//! once, at its own line, folded into the plaintext server it reaches; which names are OpenBao
//! addresses; which words of free text are URLs.

use super::super::tests::*;
use super::tests::{client, env_pod, folded, TLS_CONFIG};
use super::*;
use crate::policy::Policy;
use crate::testkit::*;
use serde_json::json;

/// A container's dial addresses: each address is judged once however often it is written (a
/// flag, then the same URL in the environment), two different addresses are two findings, an
/// https:// gRPC dial address in the environment is silent, and a listen address (`BIND_URL`)
/// is not dialed.
#[test]
fn container_dials_are_judged_once_each_and_listen_addresses_not_at_all() {
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec:\n  containers:\n  - name: c\n    image: quay.io/x/y:1.0.0\n    command: [app, --upstream=http://a.example.com, --backup=http://b.example.com]\n    env:\n    - {name: GRPC_PYLON_DIAL_ADDR, value: 'https://router.example.com:443'}\n    - {name: BIND_URL, value: 'http://web.example.com:8080'}\n    - {name: UPSTREAM_URL, value: 'http://a.example.com'}\n";
    let g = graph("e", yaml);
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&g, &p));
    let shown: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert!(
        shown[0].contains("`--upstream` dials `http://a.example.com`"),
        "{shown:#?}"
    );
    assert!(
        shown[1].contains("`--backup` dials `http://b.example.com`"),
        "{shown:#?}"
    );
    // The gRPC dial address in the environment, in plain http://: its own finding.
    let plain = yaml.replace("https://router", "http://router");
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", &plain), &p));
    assert!(
        f.iter().any(|f| f
            .message
            .contains("the workers' gRPC dial address GRPC_PYLON_DIAL_ADDR is `http://router.example.com:443`")),
        "{f:#?}"
    );
}

/// An OpenBao/Vault address variable is named by a `VAULT` or `BAO` word and ends in `ADDR` or
/// `ADDRESS`; any other `*_ADDR` is an ordinary dial address (judged by where it leads, not as
/// OpenBao's).
#[test]
fn openbao_address_variables_are_named_by_whole_words() {
    for name in ["VAULT_ADDR", "bao_addr", "AGENT_INJECT_VAULT_ADDR", "BAO_API_ADDRESS"] {
        assert!(is_vault_addr_env(name), "{name}");
    }
    for name in ["UPSTREAM_ADDR", "VAULT_TOKEN", "BAO_ADDR_FILE", "BAOBAB_ADDR", "ADDR"] {
        assert!(!is_vault_addr_env(name), "{name}");
    }
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(
        &graph("e", &env_pod("UPSTREAM_ADDR", "http://up.example.com:8200")),
        &p,
    ));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("`UPSTREAM_ADDR` dials `http://up.example.com:8200`, plain http://"),
        "{f:#?}"
    );
}

/// A workload that runs a dev server is a plaintext server: a client dialing it through its
/// Service folds into the dev server's finding. A workload that serves no plaintext (its
/// `*_LOCAL_CONFIG` listener has TLS) is not one: two ports of its Service dialed in plain
/// http:// stay two findings.
#[test]
fn a_dev_server_is_the_cause_of_its_clients_and_other_workloads_are_not() {
    let yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: openbao, namespace: openbao}}\nspec:\n  selector: {{app: openbao}}\n  ports: [{{name: http, port: 8200}}]\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: openbao, namespace: openbao}}\nspec:\n  serviceName: openbao\n  selector: {{matchLabels: {{app: openbao}}}}\n  template:\n    metadata: {{labels: {{app: openbao}}}}\n    spec:\n      containers:\n        - {{name: openbao, image: 'quay.io/openbao/openbao:2.4.1', args: [server, -dev]}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: app}}\nspec:\n  selector: {{app: web}}\n  ports: [{{name: a, port: 80}}, {{name: b, port: 8080}}]\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: app}}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n        - {{name: web, image: 'quay.io/x/web:1.0.0', env: [{{name: A_URL, value: 'http://web.app.svc:80/'}}, {{name: B_URL, value: 'http://web.app.svc:8080/'}}, {{name: WEB_LOCAL_CONFIG, value: {}}}]}}\n{}",
        serde_json::to_string(TLS_CONFIG).unwrap(),
        client("vault-client", "app", "http://openbao.openbao.svc:8200"),
    );
    let f = folded(&yaml, &[]);
    let shown: Vec<(&str, usize)> = f.iter().map(|f| (f.message.as_str(), f.related.len())).collect();
    assert_eq!(shown.len(), 3, "{shown:#?}");
    assert!(
        shown[0].0.contains("runs `(image entrypoint) server -dev`") && shown[0].1 == 1,
        "{shown:#?}"
    );
    assert_eq!(f[0].related[0].object.as_ref().unwrap().name, "vault-client");
    assert!(
        shown[1].0.contains("`A_URL` dials `http://web.app.svc:80/`") && shown[1].1 == 0,
        "{shown:#?}"
    );
    assert!(
        shown[2].0.contains("`B_URL` dials `http://web.app.svc:8080/`") && shown[2].1 == 0,
        "{shown:#?}"
    );
}

/// A release is an OpenBao/Vault server by its chart or by its values: a local chart whose values
/// carry a server configuration with tls_disable is judged like the OpenBao chart.
#[test]
fn a_server_by_its_values_is_judged_whatever_its_chart() {
    let mut r = rel("helmfile.yaml", 7, "vault", "vault", local("charts/vault"));
    let config = "listener \"tcp\" {\n address = \"[::]:8200\"\n tls_disable = 1\n}";
    r.values = json!({"global": {"tlsDisable": false}, "server": {"standalone": {"config": config}}});
    let f = run(PLAINTEXT_ENDPOINT, &state(vec![r], vec![]), &[]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.contains(
            "(an OpenBao/Vault server by its values, not rendered): `server.standalone.config` sets tls_disable"
        ),
        "{f:#?}"
    );
}

/// A dial address in a container is reported at that container's line, even when an earlier
/// container sets the same variable (to https://, silent).
#[test]
fn a_container_dial_is_reported_at_its_own_line() {
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec:\n  containers:\n  - name: a\n    image: quay.io/x/y:1.0.0\n    env: [{name: B_URL, value: 'https://same.example.com'}]\n  - name: b\n    image: quay.io/x/y:1.0.0\n    env: [{name: B_URL, value: 'http://same.example.com'}]\n";
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", yaml), &p));
    let lines: Vec<Option<usize>> = f.iter().map(|f| f.source.as_ref().and_then(|s| s.line)).collect();
    assert_eq!(lines, [Some(11)], "{f:#?}");
}

/// Free text yields its `http://` words, each once, and none from comment lines (`#`, `//`):
/// a scheme-less `host:port` or any other word in prose is not read as a dial address.
#[test]
fn http_words_are_the_urls_of_non_comment_lines() {
    let text = "# see http://a.example.com\n  // and http://b.example.com\nfetch http://c.example.com auth.nvcf.svc:9090 \"http://d.example.com\"\nretry http://c.example.com\n";
    assert_eq!(http_words(text), ["http://c.example.com", "http://d.example.com"]);
}

/// An `http://` URL inside a value of a configuration file (a command line in YAML) is a dial
/// address, judged once however many values repeat it.
#[test]
fn urls_inside_configuration_values_are_judged_once() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\ndata:\n  app.yaml: |\n    notify:\n      command: curl -s http://hooks.example.com/x\n      retry: curl -s http://hooks.example.com/x\n";
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", yaml), &p));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("key `app.yaml` (`notify.command`) dials `http://hooks.example.com/x`"),
        "{f:#?}"
    );
}

/// A ConfigMap key holding a dial address is left to the container that reads it (where its
/// `*_PLAINTEXT` companion decides) only when that container reads THIS ConfigMap's key: the same
/// key of another ConfigMap, or `envFrom` of another ConfigMap, leaves it judged where it is
/// written.
#[test]
fn a_configmap_address_is_left_only_to_its_own_readers() {
    let cm = |name: &str, data: &str| {
        format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: argocd}}\ndata: {{{data}}}\n"
        )
    };
    let reader = |env: &str| {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: controller, namespace: argocd}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/argoproj/argocd:v3.1.8\n{env}")
    };
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: argocd-repo-server, namespace: argocd}\nspec:\n  selector: {app: repo}\n  ports: [{name: https-repo-server, port: 8081, targetPort: 8081}]\n";
    let addr = "repo.server: 'argocd-repo-server:8081'";
    // By key: `params` is read with its companion (false: TLS), `other` holds the same key unread.
    let by_key = reader("    env:\n    - {name: REPO_SERVER, valueFrom: {configMapKeyRef: {name: params, key: repo.server}}}\n    - {name: REPO_SERVER_PLAINTEXT, value: 'false'}\n");
    let f = folded(
        &format!("{svc}{}{}{by_key}", cm("params", addr), cm("other", addr)),
        &[],
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.starts_with("ConfigMap argocd/other: key `repo.server`"),
        "{f:#?}"
    );
    // envFrom: the reader takes `settings` whole; `addrs` holds REPO_SERVER unread.
    let from = |source: &str| {
        reader(&format!("    envFrom: [{{configMapRef: {{name: {source}}}}}]\n    env:\n    - {{name: REPO_SERVER_PLAINTEXT, value: 'false'}}\n"))
    };
    let objects = format!(
        "{svc}{}{}",
        cm("addrs", "REPO_SERVER: 'argocd-repo-server:8081'"),
        cm("settings", "LOG_LEVEL: info")
    );
    let f = folded(&format!("{objects}{}", from("settings")), &[]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message.starts_with("ConfigMap argocd/addrs: key `REPO_SERVER`"),
        "{f:#?}"
    );
    // The near miss: envFrom of `addrs` itself leaves the address to the reader, whose companion says TLS.
    let f = folded(&format!("{objects}{}", from("addrs")), &[]);
    assert!(f.is_empty(), "{f:#?}");
}

/// A scheme-less address is judged by its client's `*_PLAINTEXT` companion when that companion can
/// be read, whatever else of the environment cannot; a companion that cannot be read leaves the
/// address judged as written.
#[test]
fn a_companion_is_read_unless_it_is_itself_unreadable() {
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: argocd-repo-server, namespace: argocd}\nspec:\n  selector: {app: repo}\n  ports: [{name: https-repo-server, port: 8081, targetPort: 8081}]\n";
    let pod = |companion: &str| {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: controller, namespace: argocd}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/argoproj/argocd:v3.1.8\n    env:\n    - {{name: REPO_SERVER, value: 'argocd-repo-server:8081'}}\n    - {companion}\n    - {{name: TOKEN, valueFrom: {{secretKeyRef: {{name: absent, key: token}}}}}}\n")
    };
    let f = folded(
        &format!("{svc}{}", pod("{name: REPO_SERVER_PLAINTEXT, value: 'false'}")),
        &[],
    );
    assert!(f.is_empty(), "{f:#?}");
    let f = folded(
        &format!(
            "{svc}{}",
            pod("{name: REPO_SERVER_PLAINTEXT, valueFrom: {secretKeyRef: {name: absent, key: plaintext}}}")
        ),
        &[],
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("`REPO_SERVER` dials `argocd-repo-server:8081` with no scheme"),
        "{f:#?}"
    );
}

/// A dial address read from a rendered Secret is shown by its source, never by its value.
#[test]
fn a_dial_address_from_a_secret_names_the_secret() {
    let yaml = "apiVersion: v1\nkind: Secret\nmetadata: {name: upstream, namespace: app}\nstringData: {url: 'http://a.example.com'}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: app}\nspec:\n  containers:\n  - name: c\n    image: quay.io/x/y:1.0.0\n    env:\n    - {name: UPSTREAM_URL, valueFrom: {secretKeyRef: {name: upstream, key: url}}}\n";
    let p = Policy::default();
    let f = (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&graph("e", yaml), &p));
    let pod: Vec<&str> = f
        .iter()
        .map(|f| f.message.as_str())
        .filter(|m| m.starts_with("Pod app/p"))
        .collect();
    assert_eq!(pod.len(), 1, "{f:#?}");
    assert!(
        pod[0].contains("`UPSTREAM_URL` (from Secret app/upstream key `url`) dials"),
        "{pod:#?}"
    );
    assert!(f.iter().all(|f| !f.message.contains("a.example.com")), "{f:#?}");
}
