//! `helmfile build` must print every release helmfile itself sees. `helmfile list` (run with the
//! same environment and selectors) is helmfile's own listing of the releases of every state it
//! loaded, sub-helmfiles and their `selectors:` included; the build's documents must hold exactly
//! those releases. A build that leaves one out (a state document we could not read, a state
//! printed twice) would leave it unrendered and unjudged, so any difference is exit 2, never a
//! smaller pass. The list is asked only when the render does not vouch for the build itself
//! (`render::helmfile::render_env_witnessed`: a `helmfile template` of every release but those the
//! gate renders otherwise, which rendered exactly the build's local releases). What that render
//! cannot show is a release helmfile renders in no case (`installed: false`, a false `condition:`)
//! missing from the build; the build's reader refuses every state document it cannot attribute
//! (`tools::build::parse_build`), which is how such a release would go missing.

use super::load::Listed;
use crate::tools::build::StateDoc;
use anyhow::{bail, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// `namespace/name` as helmfile names a release (`name` alone without a namespace).
fn id(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

/// Check `docs` (one environment's build) against `listed` (helmfile's list of the same
/// selection).
pub fn check_build_complete(docs: &[StateDoc], listed: &[Listed], environment: &str) -> Result<()> {
    let mut count: BTreeMap<String, i64> = BTreeMap::new();
    for l in listed {
        *count.entry(id(&l.namespace, &l.name)).or_default() += 1;
    }
    let mut printed: BTreeMap<String, String> = BTreeMap::new();
    for d in docs {
        for r in d.doc.get("releases").and_then(Value::as_array).into_iter().flatten() {
            let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
            let ns = r.get("namespace").and_then(Value::as_str).unwrap_or_default();
            let k = id(ns, name);
            *count.entry(k.clone()).or_default() -= 1;
            printed.entry(k).or_insert_with(|| d.path.display().to_string());
        }
    }
    for (release, n) in count {
        if n > 0 {
            bail!(
                "environment {environment}: `helmfile list` reports release {release}, which `helmfile build` did not \
                 print (or printed fewer times); it would not be rendered or validated"
            );
        }
        if n < 0 {
            bail!(
                "environment {environment}: `helmfile build` printed release {release} (in {}) more times than \
                 `helmfile list` reports it; its state cannot be attributed reliably",
                printed.get(&release).map(String::as_str).unwrap_or("?")
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn listed(ns: &str, name: &str) -> Listed {
        Listed {
            name: name.into(),
            namespace: ns.into(),
            enabled: true,
            installed: true,
            chart: "./charts/app".into(),
            version: String::new(),
        }
    }

    fn doc(file: &str, rels: &[(&str, &str)]) -> StateDoc {
        StateDoc {
            path: PathBuf::from(file),
            doc: json!({"releases": rels.iter().map(|(ns, n)| if ns.is_empty() {
                json!({"name": n})
            } else {
                json!({"name": n, "namespace": ns})
            }).collect::<Vec<_>>()}),
        }
    }

    #[test]
    fn a_build_must_print_what_helmfile_lists() {
        let l = [listed("a", "x"), listed("", "y"), listed("b", "x")];
        let full = [
            doc("/s/sub.yaml", &[("b", "x")]),
            doc("/s/h.yaml", &[("a", "x"), ("", "y")]),
        ];
        assert!(check_build_complete(&full, &l, "e").is_ok());
        // A state document lost (e.g. a path with a `---` line in it).
        let e = check_build_complete(&full[1..], &l, "e").unwrap_err();
        assert!(e.to_string().contains("reports release b/x"), "{e}");
        // A release without a namespace is one of its own, not `default/y`.
        let e = check_build_complete(
            &[doc("/s/h.yaml", &[("a", "x"), ("default", "y"), ("b", "x")])],
            &l,
            "e",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("release default/y (in /s/h.yaml) more times"),
            "{e}"
        );
        // The same release printed twice where helmfile lists it once.
        let e = check_build_complete(&[full[0].clone(), full[0].clone(), full[1].clone()], &l, "e").unwrap_err();
        assert!(e.to_string().contains("more times"), "{e}");
        assert!(check_build_complete(&[], &[], "e").is_ok());
    }
}
