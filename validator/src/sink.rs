//! The one place where severities, overrides and waivers are applied to findings.
//!
//! Order: a finding starts at its rule's default severity (or the lower one its rule chose for a
//! variant); the policy's `severity:` map and then the command line's `-D/-W/-A` override it;
//! then waivers mark it waived. Expired, forbidden and unused waivers become findings of their own.

use crate::finding::{Finding, Severity, SourceRef};
use crate::policy::{Level, Policy, Waiver};
use crate::rules::{self, policy as prules};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use time::Date;

/// Severity overrides from the policy and the command line (the command line wins).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    map: BTreeMap<String, Level>,
}

impl Overrides {
    /// Validate and merge overrides. Unknown rules and attempts to lower a rule that may never be
    /// waived are errors (the gate fails closed rather than ignore a mistyped switch); the policy's
    /// `severity:` map cannot lower the findings about the policy itself either, the command line can.
    pub fn new(policy: &Policy, deny: &[String], warn: &[String], allow: &[String]) -> Result<Overrides> {
        let mut map = BTreeMap::new();
        let policy_name = policy.file.as_deref().unwrap_or("policy");
        for (rule, level) in &policy.severity {
            check_override(policy, rule, *level, &format!("{policy_name}: severity"))?;
            if *level != Level::Error && about_the_policy(rule) {
                bail!("{policy_name}: severity: `{rule}` reports on the policy itself, which cannot lower it (-W/-A on the command line can)");
            }
            map.insert(rule.clone(), *level);
        }
        for (flag, list, level) in [
            ("-D", deny, Level::Error),
            ("-W", warn, Level::Warning),
            ("-A", allow, Level::Allow),
        ] {
            for rule in list {
                if rules::find(rule).is_none() {
                    bail!("{flag} {rule}: unknown rule (see `nvcf-validate rules`)");
                }
                check_override(policy, rule, level, flag)?;
                map.insert(rule.clone(), level);
            }
        }
        Ok(Overrides { map })
    }

    pub fn get(&self, rule: &str) -> Option<Level> {
        self.map.get(rule).copied()
    }
}

/// Whether `rule` reports on the policy file itself (its waivers, its allow-lists, its absence:
/// the `policy` family). The policy cannot lower, allow or waive such a finding, or it could hide
/// its own weakening; `-W`/`-A` on the command line still can (the operator's choice, visible in
/// the command that ran the gate).
pub fn about_the_policy(rule: &str) -> bool {
    rules::family_of(rule) == Some("policy")
}

/// Whether the policy itself (a waiver, its `severity:` map) may waive or lower `rule`: not a
/// never-waived rule, and not a finding about the policy (`about_the_policy`).
pub fn may_waive(policy: &Policy, rule: &str) -> bool {
    !policy.never_waived(rule) && !about_the_policy(rule)
}

fn check_override(policy: &Policy, rule: &str, level: Level, origin: &str) -> Result<()> {
    if level != Level::Error && policy.never_waived(rule) {
        bail!(
            "{origin}: `{rule}` may never be waived or lowered (settings.neverWaive); fix the finding instead of overriding it"
        );
    }
    Ok(())
}

/// Apply overrides and waivers. `today` decides expiry.
pub fn apply(findings: Vec<Finding>, policy: &Policy, overrides: &Overrides, today: Date) -> Vec<Finding> {
    let mut used = vec![false; policy.waivers.len()];
    let mut out = Vec::with_capacity(findings.len());
    for mut f in findings {
        let default = rules::find(f.rule).map(|r| r.severity).unwrap_or(Severity::Error);
        let base = f.severity.map(|s| s.min(default)).unwrap_or(default);
        let sev = match overrides.get(f.rule) {
            // A finding its rule marks unwaivable is never lowered either (`Finding::unwaivable`).
            Some(Level::Allow | Level::Warning) if f.unwaivable => base,
            Some(Level::Allow) => continue,
            Some(Level::Error) => Severity::Error,
            Some(Level::Warning) => Severity::Warning,
            None => base,
        };
        f.severity = Some(sev);
        // What reaches any report: no URL userinfo, no unbounded value.
        f.message = crate::redact::message(&f.message);
        f.help = f.help.as_deref().map(crate::redact::message);
        for (i, w) in policy.waivers.iter().enumerate() {
            if w.expires < today || !may_waive(policy, &w.rule) {
                continue;
            }
            if !f.unwaivable && matches(w, &f) {
                used[i] = true;
                if f.waived.is_none() {
                    f.waived = Some(w.reason.clone());
                }
            }
        }
        out.push(f);
    }
    let policy_source = |w: &Waiver| policy.file.clone().map(|file| SourceRef { file, line: w.line });
    for (i, w) in policy.waivers.iter().enumerate() {
        let (rule, sev, msg) = if !may_waive(policy, &w.rule) {
            let why = if policy.never_waived(&w.rule) {
                "this rule may never be waived (settings.neverWaive)"
            } else {
                "this rule reports on the policy itself, which cannot waive it"
            };
            (
                prules::WAIVER_FORBIDDEN,
                Severity::Error,
                format!(
                    "waiver #{} for `{}` is refused: {why}; the findings it targets stand",
                    w.index, w.rule
                ),
            )
        } else if w.expires < today {
            (
                prules::WAIVER_EXPIRED,
                Severity::Error,
                format!(
                    "waiver #{} for `{}` expired on {} (reason was: {}); it no longer waives anything",
                    w.index, w.rule, w.expires, w.reason
                ),
            )
        } else if !used[i] {
            (
                prules::WAIVER_UNUSED,
                Severity::Warning,
                format!(
                    "waiver #{} for `{}` matched no finding; delete it or correct its target",
                    w.index, w.rule
                ),
            )
        } else {
            continue;
        };
        let sev = match overrides.get(rule) {
            Some(Level::Allow) => continue,
            Some(Level::Error) => Severity::Error,
            Some(Level::Warning) => Severity::Warning,
            None => sev,
        };
        let mut f = Finding::new(rule, msg).with_severity(sev);
        f.environment = w.target.environment.clone();
        f.source = policy_source(w);
        out.push(f);
    }
    out
}

fn matches(w: &Waiver, f: &Finding) -> bool {
    if w.rule != f.rule {
        return false;
    }
    let t = &w.target;
    let eq = |want: &Option<String>, got: Option<&str>| want.as_deref().is_none_or(|w| Some(w) == got);
    eq(&t.environment, f.environment.as_deref())
        && eq(&t.release, f.release.as_deref())
        && eq(&t.kind, f.object.as_ref().map(|o| o.kind.as_str()))
        && eq(&t.namespace, f.object.as_ref().and_then(|o| o.namespace.as_deref()))
        && eq(&t.name, f.object.as_ref().map(|o| o.name.as_str()))
}

/// Counts for the summary line and exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
    pub waived: usize,
}

pub fn count(findings: &[Finding]) -> Counts {
    let mut c = Counts::default();
    for f in findings {
        if f.waived.is_some() {
            c.waived += 1;
            continue;
        }
        match f.sev() {
            Severity::Error => c.errors += 1,
            Severity::Warning => c.warnings += 1,
            Severity::Note => c.notes += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn policy(text: &str) -> Policy {
        Policy::parse(text, "validator-policy.yaml", crate::rules::family_of).unwrap()
    }

    fn finding(rule: &'static str, env: &str) -> Finding {
        let mut f = Finding::new(rule, "m");
        f.environment = Some(env.into());
        f.release = Some("nvcf/request-router".into());
        f
    }

    #[test]
    fn waivers_valid_expired_unused_forbidden() {
        let p = policy(
            "waivers:\n\
             - {rule: image-pinned, target: {environment: default}, reason: r1, expires: 2027-01-01}\n\
             - {rule: image-pinned, target: {environment: other}, reason: r2, expires: 2026-01-01}\n\
             - {rule: object-one-owner, target: {environment: default}, reason: r3, expires: 2027-01-01}\n\
             - {rule: insecure-flag, target: {environment: default}, reason: r4, expires: 2027-01-01}\n",
        );
        let out = apply(
            vec![
                finding("image-pinned", "default"),
                finding("image-pinned", "other"),
                finding("insecure-flag", "default"),
            ],
            &p,
            &Overrides::default(),
            date!(2026 - 11 - 29),
        );
        assert_eq!(out[0].waived.as_deref(), Some("r1"));
        assert_eq!(out[1].waived, None, "expired waiver must not waive");
        assert_eq!(out[2].waived, None, "insecure-flag may never be waived");
        let rules: Vec<_> = out[3..].iter().map(|f| (f.rule, f.sev())).collect();
        assert_eq!(
            rules,
            vec![
                (prules::WAIVER_EXPIRED, Severity::Error),
                (prules::WAIVER_UNUSED, Severity::Warning),
                (prules::WAIVER_FORBIDDEN, Severity::Error)
            ]
        );
        let c = count(&out);
        assert_eq!((c.errors, c.warnings, c.waived), (4, 1, 1));
    }

    #[test]
    fn count_tallies_each_severity_and_waived_separately() {
        // Notes are counted on their own (a mutant that miscounted them went unnoticed: no
        // rule emits a note by default).
        let with = |sev: Severity, waived: bool| {
            let mut f = finding("image-pinned", "d");
            f.severity = Some(sev);
            if waived {
                f.waived = Some("r".into());
            }
            f
        };
        let findings = vec![
            with(Severity::Note, false),
            with(Severity::Note, false),
            with(Severity::Note, false),
            with(Severity::Warning, false),
            with(Severity::Warning, false),
            with(Severity::Error, false),
            with(Severity::Error, true),
        ];
        assert_eq!(
            count(&findings),
            Counts {
                errors: 1,
                warnings: 2,
                notes: 3,
                waived: 1
            }
        );
    }

    #[test]
    fn overrides_apply_and_never_waive_cannot_be_lowered() {
        let p = Policy::default();
        let o = Overrides::new(&p, &[], &["image-pinned".into()], &["object-one-owner".into()]).unwrap();
        let out = apply(
            vec![finding("image-pinned", "d"), finding("object-one-owner", "d")],
            &p,
            &o,
            date!(2026 - 11 - 29),
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].sev(), Severity::Warning);
        let err = Overrides::new(&p, &[], &[], &["insecure-flag".into()]).unwrap_err();
        assert!(err.to_string().contains("may never be waived"), "{err}");
        assert!(Overrides::new(&p, &["no-such-rule".into()], &[], &[]).is_err());
    }

    #[test]
    fn never_waive_only_adds_to_the_built_in_list() {
        // A policy that empties neverWaive still cannot waive or lower the built-in rules.
        let p = policy(
            "settings: {neverWaive: []}\n\
             waivers:\n\
             - {rule: insecure-flag, target: {environment: d}, reason: r, expires: 2027-01-01}\n",
        );
        for rule in crate::policy::DEFAULT_NEVER_WAIVE {
            assert!(!may_waive(&p, rule), "{rule}");
            assert!(Overrides::new(&p, &[], &[rule.to_string()], &[]).is_err(), "{rule}");
        }
        let out = apply(
            vec![finding("insecure-flag", "d")],
            &p,
            &Overrides::default(),
            date!(2026 - 11 - 29),
        );
        assert_eq!(out[0].waived, None);
        assert_eq!(out[1].rule, prules::WAIVER_FORBIDDEN);
        let o = Overrides::new(&p, &[], &[], &[]).unwrap();
        assert!(o.get("insecure-flag").is_none());
        // neverWaive adds rules.
        let p = policy("settings: {neverWaive: [image-pinned]}\n");
        assert!(!may_waive(&p, "image-pinned") && !may_waive(&p, "insecure-flag") && may_waive(&p, "object-one-owner"));
    }

    #[test]
    fn waiver_on_its_expiry_day_still_waives_and_the_day_after_is_an_error() {
        let p = policy("waivers:\n- {rule: image-pinned, target: {environment: d}, reason: r, expires: 2027-01-01}\n");
        let on = apply(
            vec![finding("image-pinned", "d")],
            &p,
            &Overrides::default(),
            date!(2027 - 01 - 01),
        );
        assert_eq!(on.len(), 1, "{on:#?}");
        assert_eq!(on[0].waived.as_deref(), Some("r"));
        let after = apply(
            vec![finding("image-pinned", "d")],
            &p,
            &Overrides::default(),
            date!(2027 - 01 - 02),
        );
        assert_eq!(after[0].waived, None);
        assert_eq!(
            (after[1].rule, after[1].sev()),
            (prules::WAIVER_EXPIRED, Severity::Error)
        );
        assert_eq!(count(&after).errors, 2);
    }

    #[test]
    fn messages_leave_the_sink_redacted() {
        let mut f = finding("plaintext-endpoint", "d");
        f.message = format!("sets `BAO_ADDR=http://root:hunter2@openbao:8200/{}`", "x".repeat(500));
        let out = apply(
            vec![f],
            &Policy::default(),
            &Overrides::default(),
            date!(2026 - 11 - 29),
        );
        assert!(!out[0].message.contains("hunter2"), "{}", out[0].message);
        assert!(
            out[0].message.contains("http://***@openbao:8200/"),
            "{}",
            out[0].message
        );
        assert!(out[0].message.len() < 300, "{}", out[0].message);
    }

    #[test]
    fn externals_keep_their_environment_so_environment_waivers_match_them() {
        let p = policy(
            "externals:\n- {apiVersion: v1, kind: Secret, namespace: nvcf, name: router-tls, environments: [customer-secret]}\n\
             waivers:\n- {rule: tls-secret-one-owner, target: {environment: customer-secret, name: router-tls}, reason: r, expires: 2027-01-01}\n",
        );
        let mut g = crate::graph::Graph::new("customer-secret", Vec::new());
        p.add_externals(&mut g);
        let ext = g.objects.iter().find(|o| o.prov.external).expect("external added");
        assert_eq!(ext.prov.environment, "customer-secret");
        let f = Finding::object("tls-secret-one-owner", ext, "m");
        assert_eq!(f.environment.as_deref(), Some("customer-secret"));
        let out = apply(vec![f], &p, &Overrides::default(), date!(2026 - 11 - 29));
        assert_eq!(out[0].waived.as_deref(), Some("r"), "{out:#?}");
        // The external exists only where the policy says.
        let mut other = crate::graph::Graph::new("default", Vec::new());
        p.add_externals(&mut other);
        assert!(other.objects.is_empty());
    }

    #[test]
    fn waiver_needs_reason_and_expiry() {
        let e = Policy::parse(
            "waivers:\n- {rule: image-pinned, target: {environment: d}, expires: 2027-01-01}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("no `reason`"), "{e:#}");
        let e = Policy::parse(
            "waivers:\n- {rule: image-pinned, target: {environment: d}, reason: x}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("no `expires`"), "{e:#}");
        let e = Policy::parse(
            "waivers:\n- {rule: image-pinned, target: {environment: d}, reason: x, expires: soon}\n",
            "p.yaml",
            crate::rules::family_of,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("not a date"), "{e:#}");
    }

    #[test]
    fn the_policy_cannot_lower_or_waive_findings_about_itself_the_command_line_can() {
        // The policy's own severity map (built directly: `Policy::parse` refuses it with a line).
        let mut p = Policy::default();
        p.severity.insert(prules::POLICY_ALLOWS_ANY.into(), Level::Allow);
        let e = Overrides::new(&p, &[], &[], &[]).unwrap_err();
        assert!(e.to_string().contains("reports on the policy itself"), "{e}");
        p.severity.insert(prules::POLICY_ALLOWS_ANY.into(), Level::Warning);
        assert!(Overrides::new(&p, &[], &[], &[]).is_err());
        p.severity.insert(prules::POLICY_ALLOWS_ANY.into(), Level::Error);
        let o = Overrides::new(&p, &[], &[], &[]).unwrap();
        assert_eq!(o.get(prules::POLICY_ALLOWS_ANY), Some(Level::Error));
        // The command line may (the operator's visible choice).
        let o = Overrides::new(&Policy::default(), &[], &[], &[prules::POLICY_ALLOWS_ANY.into()]).unwrap();
        let out = apply(
            vec![Finding::new(prules::POLICY_ALLOWS_ANY, "m")],
            &Policy::default(),
            &o,
            date!(2026 - 11 - 29),
        );
        assert!(out.is_empty(), "{out:#?}");
        // A waiver for a finding about the policy is refused, and says why.
        let p = policy(
            "waivers:\n\
             - {rule: policy-allows-any, target: {environment: d}, reason: r, expires: 2027-01-01}\n\
             - {rule: plaintext-endpoint, target: {environment: d}, reason: r, expires: 2027-01-01}\n",
        );
        let mut f = Finding::new(prules::POLICY_ALLOWS_ANY, "m");
        f.environment = Some("d".into());
        let out = apply(vec![f], &p, &Overrides::default(), date!(2026 - 11 - 29));
        assert_eq!(out[0].waived, None, "{out:#?}");
        assert_eq!((out[1].rule, out[1].sev()), (prules::WAIVER_FORBIDDEN, Severity::Error));
        assert!(
            out[1].message.contains("reports on the policy itself"),
            "{}",
            out[1].message
        );
        assert!(
            out[2].message.contains("may never be waived (settings.neverWaive)"),
            "{}",
            out[2].message
        );
        assert_eq!(
            out[1].source.as_ref().map(|s| (s.file.as_str(), s.line)),
            Some(("validator-policy.yaml", Some(2)))
        );
        assert_eq!(out[2].source.as_ref().and_then(|s| s.line), Some(3));
        assert_eq!(out[1].environment.as_deref(), Some("d"));
    }

    #[test]
    fn raising_a_never_waived_rule_is_allowed_lowering_it_is_not() {
        let p = Policy::default();
        let o = Overrides::new(&p, &["insecure-flag".into()], &[], &[]).unwrap();
        assert_eq!(o.get("insecure-flag"), Some(Level::Error));
        let e = Overrides::new(&p, &[], &["insecure-flag".into()], &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("-W: `insecure-flag` may never be waived"),
            "{e}"
        );
        let mut p = Policy {
            file: Some("pol.yaml".into()),
            ..Policy::default()
        };
        p.severity.insert("plaintext-endpoint".into(), Level::Allow);
        let e = Overrides::new(&p, &[], &[], &[]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("pol.yaml: severity: `plaintext-endpoint` may never be waived"),
            "{e}"
        );
        // The command line wins over the policy's map.
        let p = policy("severity: {image-pinned: warning}\n");
        let o = Overrides::new(&p, &["image-pinned".into()], &[], &[]).unwrap();
        assert_eq!(o.get("image-pinned"), Some(Level::Error));
        let o = Overrides::new(&p, &[], &[], &[]).unwrap();
        assert_eq!(o.get("image-pinned"), Some(Level::Warning));
        assert_eq!(o.get("object-one-owner"), None);
    }

    #[test]
    fn a_waiver_matches_only_when_every_field_of_its_target_agrees() {
        use crate::finding::ObjectRef;
        let mut f = finding("image-pinned", "d");
        f.object = Some(ObjectRef {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            namespace: Some("ns".into()),
            name: "j".into(),
        });
        let all = "environment: d, release: nvcf/request-router, kind: Job, namespace: ns, name: j";
        let one_off = [
            "environment: e, release: nvcf/request-router, kind: Job, namespace: ns, name: j",
            "environment: d, release: nvcf/other, kind: Job, namespace: ns, name: j",
            "environment: d, release: nvcf/request-router, kind: Pod, namespace: ns, name: j",
            "environment: d, release: nvcf/request-router, kind: Job, namespace: other, name: j",
            "environment: d, release: nvcf/request-router, kind: Job, namespace: ns, name: k",
        ];
        let waiver = |t: &str| format!("- {{rule: image-pinned, target: {{{t}}}, reason: r, expires: 2027-01-01}}\n");
        let p = policy(&format!("waivers:\n{}", waiver(all)));
        let out = apply(vec![f.clone()], &p, &Overrides::default(), date!(2026 - 11 - 29));
        assert_eq!((out.len(), out[0].waived.as_deref()), (1, Some("r")), "{out:#?}");
        for t in one_off {
            let p = policy(&format!("waivers:\n{}", waiver(t)));
            let out = apply(vec![f.clone()], &p, &Overrides::default(), date!(2026 - 11 - 29));
            assert_eq!(out[0].waived, None, "{t}");
            assert_eq!(out[1].rule, prules::WAIVER_UNUSED, "{t}");
        }
        // Another rule's waiver never applies.
        let p =
            policy("waivers:\n- {rule: object-one-owner, target: {environment: d}, reason: r, expires: 2027-01-01}\n");
        let out = apply(vec![f], &p, &Overrides::default(), date!(2026 - 11 - 29));
        assert_eq!(out[0].waived, None);
        // The first matching waiver's reason is kept; both count as used.
        let p = policy(&format!(
            "waivers:\n{}{}",
            waiver("environment: d"),
            waiver("kind: Job").replace("reason: r", "reason: r2")
        ));
        let mut g = finding("image-pinned", "d");
        g.object = Some(ObjectRef {
            api_version: "v1".into(),
            kind: "Job".into(),
            namespace: None,
            name: "x".into(),
        });
        let out = apply(vec![g], &p, &Overrides::default(), date!(2026 - 11 - 29));
        assert_eq!((out.len(), out[0].waived.as_deref()), (1, Some("r")), "{out:#?}");
    }

    #[test]
    fn waiver_findings_take_overrides_too() {
        let p = policy("waivers:\n- {rule: image-pinned, target: {environment: d}, reason: r, expires: 2027-01-01}\n");
        let o = Overrides::new(&p, &[], &[], &[prules::WAIVER_UNUSED.into()]).unwrap();
        assert!(apply(vec![], &p, &o, date!(2026 - 11 - 29)).is_empty());
        let o = Overrides::new(&p, &[prules::WAIVER_UNUSED.into()], &[], &[]).unwrap();
        let out = apply(vec![], &p, &o, date!(2026 - 11 - 29));
        assert_eq!((out[0].rule, out[0].sev()), (prules::WAIVER_UNUSED, Severity::Error));
        let o = Overrides::new(&p, &[], &[prules::WAIVER_EXPIRED.into()], &[]).unwrap();
        let out = apply(vec![], &p, &o, date!(2027 - 02 - 01));
        assert_eq!((out[0].rule, out[0].sev()), (prules::WAIVER_EXPIRED, Severity::Warning));
        // A finding keeps the lower severity its rule chose for a variant, unless overridden.
        let mut f = finding("image-pinned", "d");
        f.severity = Some(Severity::Warning);
        let out = apply(
            vec![f.clone()],
            &Policy::default(),
            &Overrides::default(),
            date!(2026 - 11 - 29),
        );
        assert_eq!(out[0].sev(), Severity::Warning);
        let o = Overrides::new(&Policy::default(), &["image-pinned".into()], &[], &[]).unwrap();
        let out = apply(vec![f], &Policy::default(), &o, date!(2026 - 11 - 29));
        assert_eq!(out[0].sev(), Severity::Error);
    }

    #[test]
    fn never_waived_rules_and_rules_about_the_policy() {
        let p = policy("settings: {neverWaive: [image-pinned]}\n");
        for rule in crate::policy::DEFAULT_NEVER_WAIVE.iter().chain(&["image-pinned"]) {
            assert!(p.never_waived(rule) && !may_waive(&p, rule), "{rule}");
        }
        assert!(!p.never_waived("object-one-owner") && may_waive(&p, "object-one-owner"));
        assert!(!Policy::default().never_waived("image-pinned"));
        for rule in [
            "policy-allows-any",
            "policy-file-missing",
            "waiver-expired",
            "waiver-forbidden",
            "waiver-unused",
        ] {
            assert!(about_the_policy(rule), "{rule}");
            assert!(!p.never_waived(rule) && !may_waive(&p, rule), "{rule}");
        }
        assert!(!about_the_policy("image-pinned") && !about_the_policy("no-such-rule"));
    }

    /// `vault-token-static` marks a required token unwaivable: neither a waiver nor `-W` lowers
    /// it; an optional one may be lowered and waived.
    #[test]
    fn required_vault_tokens_are_never_waived_optional_ones_may_be() {
        let rule = crate::rules::find("vault-token-static").unwrap();
        let run = |stem: &str| {
            let text =
                std::fs::read_to_string(crate::testkit::fixture_dir("pki").join(format!("{stem}.yaml"))).unwrap();
            let g = crate::testkit::graph("test", &text);
            (rule.check)(&crate::testkit::ctx(&g, &Policy::default()))
        };
        let f = run("fires-vault-token-static-job-and-hook")
            .into_iter()
            .chain(run("fires-vault-token-static-optional-bootstrap"))
            .collect::<Vec<_>>();
        let policy = policy(
            "waivers:\n- {rule: vault-token-static, target: {environment: test}, reason: bootstrap only, expires: 2099-01-01}\n",
        );
        let warn = Overrides::new(&policy, &[], &["vault-token-static".into()], &[]).unwrap();
        let out = apply(f, &policy, &warn, date!(2026 - 11 - 29));
        let mine: Vec<(Severity, bool)> = out
            .iter()
            .filter(|f| f.rule == rule.id)
            .map(|f| (f.sev(), f.waived.is_some()))
            .collect();
        // Required: still errors, unwaived, whatever -W says; optional: lowered and waived.
        assert_eq!(
            mine,
            [
                (Severity::Error, false),
                (Severity::Error, false),
                (Severity::Warning, true)
            ]
        );
    }
}
