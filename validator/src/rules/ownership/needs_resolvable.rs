//! `needs-resolvable`: every `needs` entry names a release of the same state file.

use super::*;

/// A parsed `needs` entry: (namespace, name), or why it cannot be parsed.
fn parse_need<'a>(need: &'a str, own_namespace: &'a str) -> Result<(&'a str, &'a str), String> {
    let parts: Vec<&str> = need.trim().split('/').collect();
    let (ns, name) = match parts.as_slice() {
        [name] => (own_namespace, *name),
        [ns, name] => (*ns, *name),
        [_ctx, ns, name] => (*ns, *name),
        _ => {
            return Err(format!(
                "`{need}` is not `name`, `namespace/name` or `kubecontext/namespace/name`"
            ))
        }
    };
    if name.trim().is_empty() {
        return Err(format!("`{need}` names no release"));
    }
    Ok((ns.trim(), name.trim()))
}

pub(super) fn needs_resolvable(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in &state.releases {
        for need in &r.needs {
            let problem = match parse_need(need, &r.namespace) {
                Err(e) => Some((e, None)),
                Ok((ns, name)) => {
                    let same_file = state
                        .releases
                        .iter()
                        .any(|o| o.file == r.file && o.namespace == ns && o.name == name);
                    if same_file {
                        None
                    } else {
                        let elsewhere = state.releases.iter().find(|o| o.namespace == ns && o.name == name);
                        let similar = state.releases.iter().find(|o| o.file == r.file && o.name == name);
                        let hint = match (elsewhere, similar) {
                            (Some(o), _) => Some(format!("{}/{} is declared in {}, but helmfile resolves `needs` only within one state file; move the release or the need into one state file", o.namespace, o.name, at(o))),
                            (None, Some(o)) => Some(format!("did you mean `{}`? (the release {} is in namespace {})", o.id(), o.name, o.namespace)),
                            _ => None,
                        };
                        Some((format!("`{need}` names no release {ns}/{name} in {}", r.file), hint))
                    }
                }
            };
            if let Some((msg, hint)) = problem {
                out.push(
                    Finding::state(NEEDS_RESOLVABLE, Some(ctx.environment), Some(r.id()), &r.file, r.line, format!("release {}: needs {msg}; helmfile refuses to render this state", r.id()))
                        .with_help(hint.unwrap_or_else(|| "name an existing release of this state file as `namespace/name`, or declare the missing release".into())),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::policy::Policy;
    use crate::stack::Stack;
    use crate::testkit::*;

    #[test]
    fn needs_resolve_within_one_state_file() {
        let mut pki_off = rel("helmfile.yaml", 5, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        pki_off.installed = false; // helmfile only warns about a need on a disabled release
        let mut router = rel(
            "helmfile.yaml",
            12,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.needs = vec![
            "nvcf-pki".into(),
            "nvcf/nvcf-pki".into(),
            "kind-nvcf/nvcf/nvcf-pki".into(),
        ];
        let f = run_state(
            rule(NEEDS_RESOLVABLE),
            &state(vec![pki_off, router], vec![]),
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        assert!(f.is_empty(), "{f:#?}");
    }

    #[test]
    fn dangling_needs_fire_with_file_line_and_hint() {
        let mut gw = rel(
            "helmfile.yaml",
            30,
            "nvcf-gateway",
            "gateway-routes",
            local("charts/gateway-routes"),
        );
        gw.needs = vec![
            "nvcf/request-routr".into(), // typo
            "request-router".into(),     // bare name: gateway's own namespace
            "openbao/openbao".into(),    // declared in another state file
            "a/b/c/d".into(),            // malformed
        ];
        let st = state(
            vec![
                rel(
                    "helmfile.yaml",
                    20,
                    "nvcf",
                    "request-router",
                    local("charts/request-router"),
                ),
                rel(
                    "openbao/helmfile.yaml",
                    4,
                    "openbao",
                    "openbao",
                    repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
                ),
                gw,
            ],
            vec![],
        );
        let f = run_state(rule(NEEDS_RESOLVABLE), &st, &Stack::default(), &Policy::default(), &[]);
        assert_eq!(f.len(), 4, "{f:#?}");
        assert!(f
            .iter()
            .all(|f| f.rule == "needs-resolvable" && f.source.as_ref().unwrap().line == Some(30)));
        assert!(
            f[1].help
                .as_deref()
                .unwrap()
                .contains("did you mean `nvcf/request-router`"),
            "{:?}",
            f[1].help
        );
        assert!(
            f[2].help.as_deref().unwrap().contains("openbao/helmfile.yaml:4"),
            "{:?}",
            f[2].help
        );
        insta::assert_json_snapshot!(f);
    }
}
