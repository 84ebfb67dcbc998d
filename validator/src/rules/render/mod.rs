//! Rule family: render. What rendering produced, judged per release: a pass must mean every
//! installed release was rendered and judged. (An environment with no objects at all is not a
//! finding but exit 2: there was nothing to judge; see `engine`.) And every object is read as the
//! API server reads it: a kind whose scope nobody declares is reported, never guessed.

use super::{Rule, Scope};
use crate::finding::Severity;

mod object_scope_known;
mod release_renders_nothing;
mod render_depends_on_cluster;

pub const RELEASE_RENDERS_NOTHING: &str = "release-renders-nothing";
pub const OBJECT_SCOPE_KNOWN: &str = "object-scope-known";
pub const RENDER_DEPENDS_ON_CLUSTER: &str = "render-depends-on-cluster";

pub static RULES: &[Rule] = &[
    Rule {
        id: RELEASE_RENDERS_NOTHING,
        family: "render",
        severity: Severity::Error,
        summary: "an installed release rendered no objects",
        explain: include_str!("release-renders-nothing.md"),
        scope: Scope::Objects,
        check: release_renders_nothing::release_renders_nothing,
    },
    Rule {
        id: OBJECT_SCOPE_KNOWN,
        family: "render",
        severity: Severity::Error,
        summary: "an object's kind is neither a built-in kind nor declared by a rendered or policy CustomResourceDefinition, so its scope (namespaced or cluster) is unknown",
        explain: include_str!("object-scope-known.md"),
        scope: Scope::Objects,
        check: object_scope_known::object_scope_known,
    },
    Rule {
        id: RENDER_DEPENDS_ON_CLUSTER,
        family: "render",
        severity: Severity::Error,
        summary: "what a release installs depends on the live cluster at apply time (`lookup` in a template, \
                  `helmDefaults.reuseValues`), so no offline render is the one applied, or a hook changes what the \
                  render does not include",
        explain: include_str!("render-depends-on-cluster.md"),
        scope: Scope::State,
        check: render_depends_on_cluster::render_depends_on_cluster,
    },
];
