//! Rule family: render. What rendering produced, judged per release: a pass must mean every
//! installed release was rendered and judged. (An environment with no objects at all is not a
//! finding but exit 2: there was nothing to judge; see `engine`.)

use super::{Rule, Scope};
use crate::finding::Severity;

mod release_renders_nothing;

pub const RELEASE_RENDERS_NOTHING: &str = "release-renders-nothing";

pub static RULES: &[Rule] = &[Rule {
    id: RELEASE_RENDERS_NOTHING,
    family: "render",
    severity: Severity::Error,
    summary: "an installed release rendered no objects",
    explain: include_str!("release-renders-nothing.md"),
    scope: Scope::Objects,
    check: release_renders_nothing::release_renders_nothing,
}];
