//! `render-depends-on-cluster`: what a release installs depends on the live cluster at apply
//! time (`lookup` in its templates, `helmDefaults.reuseValues`), so no offline render, this
//! gate's included, is the one applied.

use super::RENDER_DEPENDS_ON_CLUSTER;
use crate::finding::Finding;
use crate::rules::Ctx;

pub(super) fn render_depends_on_cluster(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else { return Vec::new() };
    let mut out = Vec::new();
    for r in state.installed() {
        for read in &r.cluster_reads {
            let (file, line) = match &read.file {
                Some(f) => (f.as_str(), read.line),
                None => (r.file.as_str(), r.helm_defaults_line.or(r.line)),
            };
            let msg = match read.what.as_str() {
                "lookup" => format!(
                    "release {}: the template calls `lookup`, which reads the live cluster at apply time; offline it \
                     returns nothing, so what is judged here may not be what is installed",
                    r.id()
                ),
                other if other.starts_with("helmDefaults.reuseValues") => format!(
                    "release {}: {other}: at upgrade helm merges the values stored in the cluster for this release, \
                     which the gate cannot see, so what is judged here may not be what is installed",
                    r.id()
                ),
                other => format!("release {}: {other}", r.id()),
            };
            out.push(
                Finding::state(
                    RENDER_DEPENDS_ON_CLUSTER,
                    Some(ctx.environment),
                    Some(r.id()),
                    file,
                    line,
                    msg,
                )
                .with_help(
                    "make the render a function of the state and values alone (pass what `lookup` reads as a \
                         value; drop reuseValues), or waive with the reason the cluster's answer is known",
                ),
            );
        }
    }
    out
}
