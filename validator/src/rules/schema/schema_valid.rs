//! `schema-valid`: every rendered object against its Kubernetes or CRD schema.

use crate::finding::Finding;
use crate::graph::Object;
use crate::rules::Ctx;
use crate::schema::{self, Compiled, Issue, Source, MAX_ISSUES_PER_OBJECT};
use std::collections::HashMap;

const ID: &str = "schema-valid";

pub fn check(ctx: &Ctx) -> Vec<Finding> {
    let Some(set) = ctx.schemas else {
        return Vec::new();
    };
    let env = set.for_graph(ctx.graph);
    let mut out = Vec::new();
    for (i, why) in &env.problems {
        out.push(
            Finding::object(
                ID,
                &ctx.graph.objects[*i],
                format!("this CRD's schemas cannot be read: {why}"),
            )
            .with_help("objects of its kinds are reported without a schema; fix the CRD"),
        );
    }
    // One lookup and one compiled validator per apiVersion/kind.
    let mut by_kind: HashMap<(&str, &str), Option<(Source, Compiled)>> = HashMap::new();
    let mut jobs: Vec<(&Object, &jsonschema::Validator, Source)> = Vec::new();
    let mut reported_compile = std::collections::HashSet::new();
    for o in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        let entry = by_kind
            .entry((o.api_version.as_str(), o.kind.as_str()))
            .or_insert_with(|| env.find(&o.api_version, &o.kind).map(|s| (s, env.validator(s))));
        match entry {
            None => {
                if let Some(served) = env.unserved_builtin(&o.api_version, &o.kind) {
                    out.push(unserved(o, env.kubernetes_version(), &served));
                } else if ctx.policy.settings.schema_required(o.group(), &o.kind) {
                    out.push(
                        Finding::object(
                            ID,
                            o,
                            format!(
                                "no schema for {} {}: not a Kubernetes {} kind, and no rendered or declared CRD \
                                 defines it; the policy requires one (settings.requireSchemas)",
                                o.api_version,
                                o.kind,
                                env.kubernetes_version()
                            ),
                        )
                        .with_help("add its CRD to settings.crdFiles, or fix the apiVersion/kind"),
                    );
                }
            }
            Some((source, compiled)) => match compiled.as_ref() {
                Ok(_) => {}
                Err(e) => {
                    if reported_compile.insert((o.api_version.as_str(), o.kind.as_str())) {
                        out.push(Finding::object(
                            ID,
                            o,
                            format!(
                                "the schema of {} {} from {} cannot be compiled ({e}); no object of this kind was \
                                 validated",
                                o.api_version,
                                o.kind,
                                source.describe(env.kubernetes_version())
                            ),
                        ));
                    }
                }
            },
        }
    }
    for o in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        if let Some(Some((source, compiled))) = by_kind.get(&(o.api_version.as_str(), o.kind.as_str())) {
            if let Ok(v) = compiled.as_ref() {
                jobs.push((o, v, *source));
            }
        }
    }
    let results = validate_all(&jobs);
    for ((o, _, source), issues) in jobs.iter().zip(results) {
        let total = issues.len();
        for issue in issues.into_iter().take(MAX_ISSUES_PER_OBJECT) {
            out.push(finding(o, source, env.kubernetes_version(), &issue));
        }
        if total > MAX_ISSUES_PER_OBJECT {
            out.push(Finding::object(
                ID,
                o,
                format!(
                    "{} more schema violations in this object are not listed",
                    total - MAX_ISSUES_PER_OBJECT
                ),
            ));
        }
    }
    out
}

/// A built-in kind in an apiVersion the API server of this Kubernetes version does not serve
/// (`apps/v1beta2`): it refuses the object (`no matches for kind`), whatever its fields.
fn unserved(o: &Object, version: &str, served: &[String]) -> Finding {
    let since = match schema::removed::removal(&o.api_version, &o.kind) {
        Some((when, _)) => format!(" (removed in Kubernetes {when})"),
        None => String::new(),
    };
    let instead = match (schema::removed::removal(&o.api_version, &o.kind), served) {
        (_, [first, ..]) => format!("use apiVersion {first} (served: {})", served.join(", ")),
        (Some((_, instead)), []) => format!("the kind is gone; replacement: {instead}"),
        (None, []) => format!(
            "no version of {} serves kind {}: check the apiVersion and kind",
            if o.group().is_empty() {
                "the core group"
            } else {
                o.group()
            },
            o.kind
        ),
    };
    Finding::object(
        ID,
        o,
        format!(
            "{} {} is not served by Kubernetes {version}{since}: the API server refuses this object",
            o.api_version, o.kind
        ),
    )
    .with_help(instead)
}

fn finding(o: &Object, source: &Source, version: &str, issue: &Issue) -> Finding {
    let path = schema::display_path(&issue.path);
    let mut f = Finding::object(
        ID,
        o,
        format!("{path}: {} (per {})", issue.message, source.describe(version)),
    )
    .with_help(match issue.message.as_str() {
        "unknown field" => "the API server rejects or drops this field: check its spelling and indentation",
        "missing required field" => "set this field; the API server refuses the object without it",
        _ => "give the field a value its schema accepts",
    });
    if let Some(src) = f.source.as_mut() {
        src.line = schema::line_of(o, &issue.path);
    }
    f
}

/// Validate every job, on up to 4 threads when there are many.
fn validate_all(jobs: &[(&Object, &jsonschema::Validator, Source)]) -> Vec<Vec<Issue>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    if threads < 2 || jobs.len() < 256 {
        return jobs.iter().map(|(o, v, _)| schema::validate(v, &o.body)).collect();
    }
    let chunk = jobs.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(o, v, _)| schema::validate(v, &o.body))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("schema validation thread"))
            .collect()
    })
}
