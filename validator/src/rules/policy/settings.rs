//! Findings about the policy itself, reported once per run (not per environment) by the engine
//! before the sink: a missing policy file (strict defaults apply) and allow-lists opened with `"*"`.

use super::{POLICY_ALLOWS_ANY, POLICY_FILE_MISSING};
use crate::finding::{Finding, SourceRef};
use crate::policy::{Policy, ALLOW_ALL, DEFAULT_NEVER_WAIVE};

pub fn settings_findings(policy: &Policy) -> Vec<Finding> {
    let mut out = Vec::new();
    if let (None, Some(looked)) = (&policy.file, &policy.missing) {
        out.push(
            Finding::new(
                POLICY_FILE_MISSING,
                format!(
                    "no policy file ({looked} not found, no --policy given): strict defaults apply: no chart \
                     repository and no image registry is allowed, no externals are declared, no waivers, and {} \
                     may never be waived",
                    DEFAULT_NEVER_WAIVE.join(", ")
                ),
            )
            .with_help("write a validator-policy.yaml beside the state (or pass --policy FILE) that lists the allowed chart repositories and image registries"),
        );
    }
    for (path, what) in &policy.key_places {
        let mut f = Finding::new(
            crate::rules::secrets::PRIVATE_KEY_IN_RENDER,
            format!("the policy's `{path}` holds {what}; its content is not shown"),
        )
        .with_help("remove the key from the policy and rotate it: an external Secret is declared with its public tls.crt chain only");
        f.source = policy.file.clone().map(|file| SourceRef { file, line: None });
        out.push(f);
    }
    let s = &policy.settings;
    for (key, list, what) in [
        (
            "allowedChartRepositories",
            &s.allowed_chart_repositories,
            "chart repository",
        ),
        ("allowedImageRegistries", &s.allowed_image_registries, "image registry"),
    ] {
        if list.iter().any(|e| e.trim() == ALLOW_ALL) {
            let mut f = Finding::new(
                POLICY_ALLOWS_ANY,
                format!("settings.{key} holds \"{ALLOW_ALL}\": every {what} is allowed, so the gate does not judge where they come from"),
            )
            .with_help(format!("list the {what} prefixes you reviewed instead of \"{ALLOW_ALL}\""));
            f.source = policy.file.clone().map(|file| SourceRef { file, line: None });
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_and_star_are_reported_and_a_listed_policy_is_quiet() {
        let p = Policy {
            missing: Some("x/validator-policy.yaml".into()),
            ..Policy::default()
        };
        let f = settings_findings(&p);
        assert_eq!(f.iter().map(|f| f.rule).collect::<Vec<_>>(), vec![POLICY_FILE_MISSING]);
        assert!(f[0].message.contains("x/validator-policy.yaml"), "{}", f[0].message);
        assert!(settings_findings(&Policy::default()).is_empty());

        let p = Policy::parse(
            "settings: {allowedChartRepositories: [\"*\"], allowedImageRegistries: [quay.io]}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        let f = settings_findings(&p);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, POLICY_ALLOWS_ANY);
        assert!(f[0].message.contains("allowedChartRepositories"), "{}", f[0].message);
        let p = Policy::parse(
            "settings: {allowedImageRegistries: [quay.io, \" * \"]}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        assert_eq!(settings_findings(&p).len(), 1);
        let p = Policy::parse(
            "settings: {allowedImageRegistries: [quay.io]}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        assert!(settings_findings(&p).is_empty());
        let key =
            "-----BEGIN PRIVATE KEY-----\n      MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n      -----END PRIVATE KEY-----";
        let p = Policy::parse(
            &format!("externals:\n- apiVersion: v1\n  kind: Secret\n  name: s\n  data:\n    tls.key: |\n      {key}\n"),
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap();
        let f = settings_findings(&p);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].rule, "private-key-in-render");
        assert!(f[0].message.contains("`externals[0].data.tls.key`"), "{}", f[0].message);
        assert!(!f[0].message.contains("MIIE"), "{}", f[0].message);
    }
}
