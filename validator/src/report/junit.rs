//! `--format junit`: JUnit XML as CI dashboards read it, valid against the strict Jenkins
//! schemas (xunit-plugin `junit-10.xsd`; and `junit-4.xsd`'s shape: no `skipped` attribute on
//! `<testsuites>`, no attributes on `<skipped>`, children in the order skipped, error, failure,
//! system-out).
//!
//! One test suite per environment. Inside it, **one test case per finding** — a failure for an
//! unwaived error, skipped for a waived finding, passed (with the text in system-out) for a
//! warning or note — and one passing test case per rule that reported nothing there. Per-finding
//! cases make `failures` equal the number of error findings the exit code counts (a per-rule case
//! would show 735 errors as 17 failures) and give each finding its own history in a dashboard;
//! the passing per-rule cases still show what was checked. Findings of no environment (an expired
//! waiver whose target names none, policy findings) get a suite of their own, so `failures ≥ 1`
//! whenever the exit code is 1. A release that was not rendered is a skipped case; a run that
//! could not validate (exit 2) is an `<error>` case.

use super::text::{xml_attr, xml_text};
use super::Context;
use crate::finding::{Finding, Severity};
use crate::report::Report;
use crate::rules;
use std::collections::HashMap;
use std::fmt::Write;

#[derive(Default)]
struct Suite {
    cases: String,
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    names: HashMap<String, usize>,
}

impl Suite {
    /// A unique case name within the suite (a repeated name gets ` #2`, ` #3`, …).
    fn name(&mut self, base: String) -> String {
        let n = self.names.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            format!("{base} #{n}")
        }
    }

    fn case(&mut self, classname: &str, name: String, body: &str) {
        let name = self.name(name);
        self.tests += 1;
        let _ = write!(
            self.cases,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_attr(classname),
            xml_attr(&name)
        );
        if body.is_empty() {
            self.cases.push_str("/>\n");
        } else {
            let _ = write!(self.cases, ">\n{body}    </testcase>\n");
        }
    }

    fn finding(&mut self, env: &str, f: &Finding) {
        let family = rules::find(f.rule)
            .map(|r| r.family.replace(' ', "-"))
            .unwrap_or_default();
        let classname = format!("{env}.{family}");
        let name = match super::object_label(f) {
            Some(o) => format!("{}: {o}", f.rule),
            None => format!("{}: {}", f.rule, super::location(f)),
        };
        let text = format!(
            "{}\nrule: {}\nlocation: {}\nrelease: {}\nhelp: {}",
            f.message,
            f.rule,
            super::location(f),
            f.release.as_deref().unwrap_or("-"),
            super::help(f)
        );
        let body = match (&f.waived, f.sev()) {
            (Some(reason), _) => {
                self.skipped += 1;
                format!(
                    "      <skipped/>\n      <system-out>waived: {}\n{}</system-out>\n",
                    xml_text(reason),
                    xml_text(&text)
                )
            }
            (None, Severity::Error) => {
                self.failures += 1;
                format!(
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                    xml_attr(&super::text::clip(&f.message, 500)),
                    xml_attr(f.rule),
                    xml_text(&text)
                )
            }
            (None, sev) => format!("      <system-out>{}: {}</system-out>\n", sev.as_str(), xml_text(&text)),
        };
        self.case(&classname, name, &body);
    }

    fn write(&self, out: &mut String, name: &str) {
        let _ = write!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n",
            xml_attr(name),
            self.tests,
            self.failures,
            self.errors,
            self.skipped,
            self.cases
        );
    }
}

pub fn render(report: &Report, ctx: &Context) -> String {
    let registry = rules::registry();
    let manifests = report.environments.len() == 1 && report.environments[0].name == "manifests";
    let known = |f: &Finding| {
        f.environment
            .as_deref()
            .is_some_and(|e| report.environments.iter().any(|x| x.name == e))
    };
    let mut suites: Vec<(String, Suite)> = Vec::new();
    if let Some(cause) = &ctx.failure {
        let mut s = Suite::default();
        s.errors += 1;
        let body = format!(
            "      <error message=\"could not validate\" type=\"could-not-validate\">{}</error>\n",
            xml_text(cause)
        );
        s.case("nvcf-validate", "validate".into(), &body);
        suites.push(("nvcf-validate".into(), s));
    }
    for env in &report.environments {
        let mut s = Suite::default();
        let mine: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.environment.as_deref() == Some(env.name.as_str()) || (manifests && !known(f)))
            .collect();
        for f in &mine {
            s.finding(&env.name, f);
        }
        for r in &registry {
            if !mine.iter().any(|f| f.rule == r.id) {
                s.case(
                    &format!("{}.{}", env.name, r.family.replace(' ', "-")),
                    r.id.to_string(),
                    "",
                );
            }
        }
        for r in env.releases.iter().filter(|r| r.missing()) {
            s.skipped += 1;
            let body = format!(
                "      <skipped/>\n      <system-out>not rendered ({} {}): {}</system-out>\n",
                xml_text(&r.chart),
                xml_text(r.version.as_deref().unwrap_or("-")),
                xml_text(r.reason.as_deref().unwrap_or("not rendered"))
            );
            s.case(
                &format!("{}.render", env.name),
                format!("{}/{}", r.namespace, r.name),
                &body,
            );
        }
        suites.push((env.name.clone(), s));
    }
    if !manifests {
        let general: Vec<&Finding> = report.findings.iter().filter(|f| !known(f)).collect();
        if !general.is_empty() {
            let mut s = Suite::default();
            for f in general {
                s.finding("general", f);
            }
            suites.push(("general".into(), s));
        }
    }
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    let mut body = String::new();
    for (name, s) in &suites {
        tests += s.tests;
        failures += s.failures;
        errors += s.errors;
        s.write(&mut body, name);
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nvcf-validate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n{body}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Finding;

    fn ctx(failure: Option<&str>) -> Context {
        Context::new(std::path::Path::new("."), failure.map(str::to_string))
    }

    fn env(name: &str) -> crate::report::EnvReport {
        crate::report::EnvReport {
            name: name.into(),
            releases: Vec::new(),
            objects: 1,
            render_error: None,
            schema_coverage: None,
        }
    }

    #[test]
    fn findings_without_an_environment_are_failures_of_their_own_suite() {
        let f = Finding::new("waiver-expired", "waiver #1 expired").with_severity(Severity::Error);
        let report = Report {
            environments: vec![env("default")],
            findings: vec![f],
        };
        assert_eq!(report.exit_code(), 1);
        let x = render(&report, &ctx(None));
        assert!(
            x.contains("<testsuite name=\"general\" tests=\"1\" failures=\"1\""),
            "{x}"
        );
        assert!(x.contains("<testsuites name=\"nvcf-validate\" tests=\""), "{x}");
        assert!(x.contains("failures=\"1\" errors=\"0\">"), "{x}");
    }

    #[test]
    fn one_failure_per_error_finding() {
        let mk = |i: usize| {
            Finding::new("image-pinned", format!("container c{i}"))
                .with_severity(Severity::Error)
                .with_environment("default")
        };
        let report = Report {
            environments: vec![env("default")],
            findings: (0..5).map(mk).collect(),
        };
        let x = render(&report, &ctx(None));
        assert_eq!(x.matches("<failure ").count(), 5);
        assert!(x.contains("failures=\"5\""), "{x}");
    }

    #[test]
    fn a_run_that_could_not_validate_is_an_error_case() {
        let x = render(&super::super::empty(), &ctx(Some("bad <policy>\u{FFFF}")));
        assert!(x.contains("errors=\"1\""), "{x}");
        assert!(
            x.contains(
                "<error message=\"could not validate\" type=\"could-not-validate\">bad &lt;policy&gt;[U+FFFF]</error>"
            ),
            "{x}"
        );
    }
}
