//! `private-key-in-render`: private key material in a rendered object (any string, or a Secret
//! rendered with `tls.key`), in a release's state values, or in the environment's own values
//! (`environments.<env>.values`, and helmfile's merged `renderedvalues`). The policy file is
//! scanned once per run when it is loaded (`rules::policy::settings_findings`). Messages name the
//! place, never the key.

use super::PRIVATE_KEY_IN_RENDER;
use crate::finding::Finding;
use crate::redact::key_places;
use crate::rules::Ctx;
use serde_json::Value;

const HELP: &str = "remove the key: private keys are issued in the cluster (cert-manager writes them into \
                    Secrets) or created there by the customer, never rendered, committed or put in values; treat \
                    this one as exposed and rotate it";

pub(super) fn private_key_in_render(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        let mut places = key_places(&obj.body, "");
        if obj.group().is_empty() && obj.kind == "Secret" {
            for field in ["data", "stringData"] {
                let v = obj.at(&format!("/{field}/tls.key"));
                let set = v.is_some_and(|v| !matches!(v, Value::Null) && v.as_str() != Some(""));
                let path = format!("{field}.tls.key");
                if set && !places.iter().any(|(p, _)| *p == path) {
                    places.push((path, "a TLS private key (a Secret rendered with tls.key)"));
                }
            }
        }
        for (path, what) in places {
            out.push(
                Finding::object_at(
                    PRIVATE_KEY_IN_RENDER,
                    obj,
                    path.rsplit('.').next().unwrap_or(&path),
                    format!("{}: `{path}` holds {what}; its content is not shown", obj.display()),
                )
                .with_help(HELP),
            );
        }
    }
    if let Some(state) = ctx.state {
        // The environment's values: its own entries first; the merged `renderedvalues` of the same
        // file only when those hold no key (values from files or bases helmfile did not embed).
        let mut files_with_keys: Vec<&str> = Vec::new();
        for v in &state.environment_values {
            if v.path == "renderedvalues" && files_with_keys.contains(&v.file.as_str()) {
                continue;
            }
            let places = key_places(&v.value, &v.path);
            if !places.is_empty() {
                files_with_keys.push(&v.file);
            }
            for (path, what) in places {
                out.push(
                    Finding::state(
                        PRIVATE_KEY_IN_RENDER,
                        Some(ctx.environment),
                        None,
                        &v.file,
                        Some(v.line),
                        format!(
                            "environment {}: state `{path}` holds {what}; its content is not shown",
                            ctx.environment
                        ),
                    )
                    .with_help(HELP),
                );
            }
        }
        for r in &state.releases {
            let mut places = key_places(&r.values, "values");
            for (i, v) in r.declared_values.iter().enumerate() {
                places.extend(key_places(v, &format!("values[{i}]")));
            }
            for (name, v) in &r.set {
                places.extend(key_places(v, &format!("set {}", crate::redact::cap(name, 60))));
            }
            places.sort();
            places.dedup();
            for (path, what) in places {
                out.push(
                    Finding::state(
                        PRIVATE_KEY_IN_RENDER,
                        Some(ctx.environment),
                        Some(r.id()),
                        &r.file,
                        r.line,
                        format!(
                            "release {}: state `{path}` holds {what}; its content is not shown",
                            r.id()
                        ),
                    )
                    .with_help(HELP),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{b64, pem_key};
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn keys_in_environment_values_fire_once_and_are_never_echoed() {
        let g = crate::testkit::graph("e", "");
        let p = Policy::default();
        let mut state = crate::testkit::state(Vec::new(), Vec::new());
        let value = |path: &str, v: serde_json::Value| crate::stack::StateValues {
            file: "helmfile.yaml".into(),
            line: 1,
            path: path.into(),
            value: v,
        };
        state.environment_values = vec![
            value(
                "environments.default.values",
                serde_json::json!([{"serverKey": pem_key()}]),
            ),
            value("renderedvalues", serde_json::json!({"serverKey": pem_key()})),
        ];
        let ctx = crate::rules::Ctx {
            state: Some(&state),
            ..crate::testkit::ctx(&g, &p)
        };
        let f = private_key_in_render(&ctx);
        let got: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(got.len(), 1, "{got:#?}");
        assert!(
            got[0].contains("`environments.default.values[0].serverKey` holds a PEM private key"),
            "{got:#?}"
        );
        assert!(!got[0].contains("MHcC"));
        // A key only in the merged values (from a values file helmfile did not embed) is found too.
        state.environment_values.remove(0);
        let ctx = crate::rules::Ctx {
            state: Some(&state),
            ..crate::testkit::ctx(&g, &p)
        };
        assert!(private_key_in_render(&ctx)[0]
            .message
            .contains("`renderedvalues.serverKey`"));
        state.environment_values[0].value =
            serde_json::json!({"serverCert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"});
        let ctx = crate::rules::Ctx {
            state: Some(&state),
            ..crate::testkit::ctx(&g, &p)
        };
        assert!(private_key_in_render(&ctx).is_empty());
    }

    #[test]
    fn keys_in_objects_fire_once_per_place_and_are_never_echoed() {
        let yaml = format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: s, namespace: ns}}\ntype: kubernetes.io/tls\n\
             data: {{tls.crt: Y2VydA==, tls.key: \"{}\"}}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: ns}}\ndata: {{key.pem: {:?}}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: opaque, namespace: ns}}\ndata: {{tls.key: c2hvcnQ=}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: empty, namespace: ns}}\ndata: {{tls.key: \"\"}}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: clean, namespace: ns}}\ndata: {{ca.crt: x}}\n",
            b64(&pem_key()),
            pem_key()
        );
        let g = crate::testkit::graph("e", &yaml);
        let p = Policy::default();
        let f = private_key_in_render(&crate::testkit::ctx(&g, &p));
        let got: Vec<String> = f.iter().map(|f| f.message.clone()).collect();
        assert_eq!(f.len(), 3, "{got:#?}");
        assert!(
            got[0].contains("Secret ns/s") && got[0].contains("`data.tls.key` holds a base64-encoded PEM"),
            "{got:#?}"
        );
        assert!(got[1].contains("ConfigMap ns/c") && got[1].contains("`data.key.pem` holds a PEM private key"));
        assert!(got[2].contains("Secret ns/opaque") && got[2].contains("tls.key"));
        for m in &got {
            assert!(!m.contains("MHcC") && !m.contains("BEGIN"), "{m}");
        }
    }
}
