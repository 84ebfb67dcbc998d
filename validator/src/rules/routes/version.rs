//! Which route apiVersions a Gateway API release serves, per channel.
//!
//! Checked against the upstream release notes and CRDs (kubernetes-sigs/gateway-api):
//! - HTTPRoute: `v1` and `v1beta1` since v1.0 (`v1alpha2` no longer served since v0.8).
//! - GRPCRoute: `v1` since v1.1; `v1alpha2` only in the experimental channel up to v1.1 (removed from
//!   both channels in v1.2).
//! - TLSRoute: `v1` since v1.5 (standard); before that experimental only: `v1alpha2` (≤ v1.5) and
//!   `v1alpha3` (v1.4–v1.5); v1.6 removed the alpha versions from the experimental channel too.
//! - TCPRoute, UDPRoute: `v1` since v1.6 (standard; the v1.6 standard CRDs keep `v1alpha2` with
//!   `served: false`); `v1alpha2` only in the experimental channel (still served, deprecated, in v1.6).
//!
//! Releases after the newest one known here are judged like the newest one.

/// Newest Gateway API minor release this table knows.
pub const NEWEST_MINOR: u32 = 6;

/// apiVersions (`v1`, `v1alpha2`, …) of `kind` served by Gateway API `v1.<minor>` on the given
/// channel. Empty: the kind does not exist there.
pub fn served(kind: &str, minor: u32, experimental: bool) -> Vec<&'static str> {
    let m = minor.min(NEWEST_MINOR);
    let mut v = Vec::new();
    match kind {
        "HTTPRoute" => v.extend(["v1", "v1beta1"]),
        "GRPCRoute" => {
            if m >= 1 {
                v.push("v1");
            }
            if experimental && m <= 1 {
                v.push("v1alpha2");
            }
        }
        "TLSRoute" => {
            if m >= 5 {
                v.push("v1");
            }
            if experimental && m <= 5 {
                v.push("v1alpha2");
                if m >= 4 {
                    v.push("v1alpha3");
                }
            }
        }
        "TCPRoute" | "UDPRoute" => {
            if m >= 6 {
                v.push("v1");
            }
            if experimental {
                v.push("v1alpha2");
            }
        }
        _ => {}
    }
    v
}
