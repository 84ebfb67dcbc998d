//! `offline-seal-partial`: reported once per `--offline` run by the engine, from what
//! `tools::seal::weaknesses` says this machine does not enforce (a pure function of that list).

use super::OFFLINE_SEAL_PARTIAL;
use crate::finding::Finding;

pub fn seal_findings(weaknesses: &[String]) -> Vec<Finding> {
    if weaknesses.is_empty() {
        return Vec::new();
    }
    vec![Finding::new(
        OFFLINE_SEAL_PARTIAL,
        format!(
            "the --offline seal is partial on this machine: {}",
            weaknesses.join("; ")
        ),
    )
    .with_help(
        "run on Linux 6.7+ with Landlock enabled so hooks and templates cannot write outside the scratch directory \
         or open TCP connections; otherwise run the gate without secrets on a throw-away runner",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_only_a_weaker_seal() {
        assert!(seal_findings(&[]).is_empty());
        let f = seal_findings(&["not enforced by the kernel: TCP connections (loopback included)".into()]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, OFFLINE_SEAL_PARTIAL);
        assert!(f[0].message.contains("TCP connections"));
    }
}
