//! `vault-token-static` against the mutants of `is_schema` the rule tests let through (issue 31;
//! ci/mutants names them): a schema that describes a `tokenSecretRef` field is not a reference
//! to a token, whatever kind carries it, and a reference is not a schema for having a description.

use super::super::tests::*;
use super::*;

/// A Crossplane CompositeResourceDefinition (not a CustomResourceDefinition, so judged by its
/// spec) whose OpenAPI schema describes `tokenSecretRef` `properties`.
fn xrd(token_secret_ref_schema: &str) -> String {
    format!(
        "apiVersion: apiextensions.crossplane.io/v1\nkind: CompositeResourceDefinition\nmetadata: {{name: xvaults.example.io}}\n\
         spec:\n  group: example.io\n  names: {{kind: XVault, plural: xvaults}}\n  versions:\n  - name: v1\n    served: true\n    referenceable: true\n\
         \x20   schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n\
         \x20           properties:\n              tokenSecretRef: {token_secret_ref_schema}\n"
    )
}

#[test]
fn a_schema_of_the_field_in_any_kind_is_no_token() {
    // A leaf schema: a type and a description, no properties.
    let f = run(
        TOKEN,
        &xrd("{type: object, description: The Secret holding the token.}"),
    );
    assert!(f.is_empty(), "{}", messages(&f));
    // A schema with properties and no description.
    let f = run(
        TOKEN,
        &xrd("{type: object, properties: {name: {type: string}, key: {type: string}}}"),
    );
    assert!(f.is_empty(), "{}", messages(&f));
    // The near miss: the same place holding a reference to a Secret is judged.
    let f = run(TOKEN, &xrd("{name: vault-token, key: token}"));
    assert_eq!(f.len(), 1, "{}", messages(&f));
}

/// A reference to a Secret that carries a description (as chart values document their fields)
/// is still a static token: only a node with a string `type` is a schema.
#[test]
fn a_described_secret_reference_is_still_a_token() {
    let store = "apiVersion: external-secrets.io/v1beta1\nkind: SecretStore\nmetadata: {name: vault, namespace: nvcf}\n\
                 spec:\n  provider:\n    vault:\n      server: https://openbao.openbao.svc:8200\n      auth:\n        tokenSecretRef:\n\
                 \x20         name: vault-token\n          key: token\n          description: the bootstrap token\n";
    let f = run(TOKEN, store);
    assert_eq!(f.len(), 1, "{}", messages(&f));
    assert!(
        f[0].message.contains("`spec.provider.vault.auth.tokenSecretRef`")
            && f[0].message.contains("Secret `vault-token`"),
        "{}",
        messages(&f)
    );
}
