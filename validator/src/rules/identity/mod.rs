//! Rule family: identity. The router's pods each advertise their own name, and workers address
//! one pod by it: the paths the render builds from those names must each lead to exactly that pod.

use super::{Rule, Scope};
use crate::finding::Severity;

mod worker_reaches_named_pod;

#[cfg(test)]
mod tests;

pub static RULES: &[Rule] = &[Rule {
    id: worker_reaches_named_pod::ID,
    family: "identity",
    severity: Severity::Error,
    summary:
        "a router pod's advertised name (gRPC :authority) or QUIC dial address does not lead to exactly that pod: \
              a route to a shared Service, a selector matching several pods, a missing per-pod Service or route, an \
              autoscaler allowing more pods than the per-pod objects, or one dial address for several pods",
    explain: include_str!("worker-reaches-named-pod.md"),
    scope: Scope::Objects,
    check: worker_reaches_named_pod::check,
}];
