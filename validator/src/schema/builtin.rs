//! The Kubernetes schemas built into the binary (see `build.rs`): the `_definitions.json` of each
//! Kubernetes minor the project supports, deflate-compressed, so a copied binary validates without
//! `.tools/schemas`. `$NVCF_SCHEMAS` overrides them (see `SchemaSet::load`).

use std::io::Read;

include!(concat!(env!("OUT_DIR"), "/embedded_schemas.rs"));

/// The built-in minors (`1.35`, …), oldest first.
pub fn versions() -> Vec<&'static str> {
    EMBEDDED.iter().map(|(v, _, _)| *v).collect()
}

/// The definitions text of a built-in minor (`1.35`), or `None` when it is not built in.
pub fn definitions(version: &str) -> Option<String> {
    let (_, deflated, len) = EMBEDDED.iter().find(|(v, _, _)| *v == version)?;
    let mut text = String::with_capacity(*len);
    // Our own data, checked against ci/tools.lock when it was built in: it inflates, to `len`.
    flate2::read::DeflateDecoder::new(*deflated)
        .take(*len as u64)
        .read_to_string(&mut text)
        .expect("the built-in schemas inflate");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supported_minors_are_built_in_and_inflate_to_json() {
        assert_eq!(versions(), vec!["1.35", "1.36", "1.37"]);
        assert!(versions().contains(&super::super::DEFAULT_KUBERNETES_VERSION));
        for v in versions() {
            let text = definitions(v).unwrap();
            let (_, _, len) = EMBEDDED.iter().find(|(x, _, _)| *x == v).unwrap();
            assert_eq!(text.len(), *len, "{v}");
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(doc["$defs"].as_object().is_some_and(|d| d.len() > 500), "{v}");
        }
        assert!(definitions("1.30").is_none(), "only the supported minors are built in");
    }
}
