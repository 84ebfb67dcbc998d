//! `--format junit`: one test suite per environment, one test case per rule (failed when the
//! rule reported an unwaived error), and a skipped test case per release that was not rendered.

use crate::finding::Severity;
use crate::model::Report;
use crate::rules;
use std::fmt::Write;

pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => o.push(c),
        }
    }
    o
}

pub fn render(report: &Report) -> String {
    let registry = rules::registry();
    let mut suites = String::new();
    let (mut total, mut total_fail, mut total_skip) = (0, 0, 0);
    for env in &report.environments {
        let manifests = report.environments.len() == 1 && env.name == "manifests";
        let in_env = |f: &&crate::finding::Finding| {
            f.environment.as_deref() == Some(env.name.as_str()) || (manifests && f.environment.is_none())
        };
        let (mut tests, mut failures, mut skipped) = (0, 0, 0);
        let mut cases = String::new();
        for r in &registry {
            tests += 1;
            let fs: Vec<_> = report
                .findings
                .iter()
                .filter(in_env)
                .filter(|f| f.rule == r.id)
                .collect();
            let errors: Vec<_> = fs
                .iter()
                .filter(|f| f.waived.is_none() && f.sev() == Severity::Error)
                .collect();
            let _ = write!(
                cases,
                "    <testcase classname=\"{}.{}\" name=\"{}\"",
                escape(&env.name),
                escape(&r.family.replace(' ', "-")),
                r.id
            );
            if errors.is_empty() && fs.is_empty() {
                cases.push_str("/>\n");
                continue;
            }
            cases.push_str(">\n");
            if !errors.is_empty() {
                failures += 1;
                let body: Vec<String> = errors
                    .iter()
                    .map(|f| format!("{}: {}", super::location(f), f.message))
                    .collect();
                let _ = writeln!(
                    cases,
                    "      <failure message=\"{} error(s)\" type=\"{}\">{}</failure>",
                    errors.len(),
                    r.id,
                    escape(&body.join("\n"))
                );
            }
            let other: Vec<String> = fs
                .iter()
                .filter(|f| f.waived.is_some() || f.sev() != Severity::Error)
                .map(|f| match &f.waived {
                    Some(w) => format!("waived ({w}): {}: {}", super::location(f), f.message),
                    None => format!("{}: {}: {}", f.sev().as_str(), super::location(f), f.message),
                })
                .collect();
            if !other.is_empty() {
                let _ = writeln!(cases, "      <system-out>{}</system-out>", escape(&other.join("\n")));
            }
            cases.push_str("    </testcase>\n");
        }
        for r in env.releases.iter().filter(|r| r.missing()) {
            tests += 1;
            skipped += 1;
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}.render\" name=\"{}/{}\">\n      <skipped message=\"{}\"/>\n    </testcase>",
                escape(&env.name),
                escape(&r.namespace),
                escape(&r.name),
                escape(r.reason.as_deref().unwrap_or("not rendered"))
            );
        }
        total += tests;
        total_fail += failures;
        total_skip += skipped;
        let _ = write!(suites, "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n{cases}  </testsuite>\n", escape(&env.name));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nvcf-validate\" tests=\"{total}\" failures=\"{total_fail}\" errors=\"0\" skipped=\"{total_skip}\">\n{suites}</testsuites>\n"
    )
}
