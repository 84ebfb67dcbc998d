//! `release-one-owner`: a release is declared once across all state files of an environment.

use super::*;

pub(super) fn release_one_owner(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut first: BTreeMap<String, &Release> = BTreeMap::new();
    let mut out = Vec::new();
    for r in &state.releases {
        match first.get(&r.id()) {
            None => {
                first.insert(r.id(), r);
            }
            Some(f) => out.push(
                Finding::state(RELEASE_ONE_OWNER, Some(ctx.environment), Some(r.id()), &r.file, r.line, format!("release {} is declared again here; it is already declared at {}", r.id(), at(f)))
                    .with_help("keep one declaration of the release; express environment differences with values or one `condition:`"),
            ),
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
    fn release_declared_in_two_state_files() {
        let mut gated = rel("pki/helmfile.yaml", 3, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        gated.installed = false; // a disabled declaration is still a second owner
        let st = state(
            vec![
                rel("helmfile.yaml", 10, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
                rel(
                    "helmfile.yaml",
                    20,
                    "nvcf",
                    "request-router",
                    local("charts/request-router"),
                ),
                gated,
                // near miss: the same name in another namespace is another release
                rel(
                    "pki/helmfile.yaml",
                    9,
                    "nvcf-staging",
                    "nvcf-pki",
                    local("charts/nvcf-pki"),
                ),
            ],
            vec![],
        );
        let f = run_state(rule(RELEASE_ONE_OWNER), &st, &Stack::default(), &Policy::default(), &[]);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].rule, "release-one-owner");
        assert_eq!(f[0].release.as_deref(), Some("nvcf/nvcf-pki"));
        assert_eq!(
            f[0].source.as_ref().map(|s| (s.file.as_str(), s.line)),
            Some(("pki/helmfile.yaml", Some(3)))
        );
        assert!(f[0].message.contains("helmfile.yaml:10"), "{}", f[0].message);
        insta::assert_json_snapshot!(f);
    }
}
