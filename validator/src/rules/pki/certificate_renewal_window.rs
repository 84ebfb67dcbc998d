//! `certificate-renewal-window`: a Certificate's `duration` and `renewBefore` are ones cert-manager
//! accepts, so the certificate is issued and renewed before it expires.

use super::certificate_server_auth::go_duration;
use super::*;

const RENEWAL: &str = "certificate-renewal-window";
/// cert-manager's lower bounds: a certificate lives at least an hour, and renewal starts at least
/// five minutes before expiry.
const MIN_DURATION: u64 = 3600;
const MIN_RENEW_BEFORE: u64 = 5 * 60;
/// cert-manager's default `duration` (90 days) when the Certificate sets none.
const DEFAULT_DURATION: u64 = 2160 * 3600;

pub(super) fn check_renewal_window(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in ctx
        .graph
        .objects
        .iter()
        .filter(|o| !o.prov.external && is_certificate(o))
    {
        let who = format!("Certificate {}/{}", ns_of(c), c.name);
        let duration_text = c.str_at("/spec/duration");
        // Values that are not durations are left to the API server's schema check.
        let duration = match duration_text {
            Some(t) => go_duration(t),
            None => Some(DEFAULT_DURATION),
        };
        let shown_duration = duration_text.unwrap_or("2160h (cert-manager's default)");
        if let (Some(d), Some(text)) = (duration, duration_text) {
            if d < MIN_DURATION {
                out.push(
                    Finding::object_at(
                        RENEWAL,
                        c,
                        "duration",
                        format!("{who}: duration {text} is shorter than cert-manager's minimum of 1h; cert-manager refuses the Certificate and no certificate is issued"),
                    )
                    .with_help("set spec.duration to 1h or more (the stack's serving certificates use 2160h)"),
                );
            }
        }
        let Some(renew_text) = c.str_at("/spec/renewBefore") else {
            continue; // cert-manager renews after two thirds of the duration
        };
        let Some(renew) = go_duration(renew_text) else {
            continue;
        };
        if renew < MIN_RENEW_BEFORE {
            out.push(
                Finding::object_at(
                    RENEWAL,
                    c,
                    "renewBefore",
                    format!("{who}: renewBefore {renew_text} is below cert-manager's minimum of 5m; cert-manager refuses the Certificate"),
                )
                .with_help("renew well before expiry: set spec.renewBefore to about a third of spec.duration, or leave it out"),
            );
        }
        if duration.is_some_and(|d| renew >= d) {
            out.push(
                Finding::object_at(
                    RENEWAL,
                    c,
                    "renewBefore",
                    format!("{who}: renewBefore {renew_text} is not shorter than its duration {shown_duration}; cert-manager refuses the Certificate, so it is never issued or renewed"),
                )
                .with_help("set spec.renewBefore shorter than spec.duration (about a third of it), or leave it out"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    fn cert(spec: &str) -> String {
        format!(
            "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {{name: router, namespace: nvcf}}\nspec:\n  secretName: router-tls\n{spec}  issuerRef: {{kind: ClusterIssuer, name: openbao}}\n"
        )
    }

    #[test]
    fn each_refused_window_is_reported_on_its_line() {
        let f = run(RENEWAL, &cert("  duration: 30m\n  renewBefore: 1m\n"));
        assert_eq!(f.len(), 2, "{}", messages(&f));
        assert!(
            f[0].message.contains("duration 30m is shorter than"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].source.as_ref().and_then(|s| s.line), Some(6));
        assert!(f[1].message.contains("renewBefore 1m is below"), "{}", f[1].message);
        assert_eq!(f[1].source.as_ref().and_then(|s| s.line), Some(7));
    }

    /// cert-manager's minimum renewBefore is 5m itself: 5m passes, a second less does not.
    #[test]
    fn renew_before_of_exactly_five_minutes_is_accepted() {
        assert!(run(RENEWAL, &cert("  renewBefore: 5m\n")).is_empty());
        let f = run(RENEWAL, &cert("  renewBefore: 4m59s\n"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(f[0].message.contains("renewBefore 4m59s is below"), "{}", f[0].message);
    }

    #[test]
    fn renew_before_is_compared_with_the_default_duration() {
        let f = run(RENEWAL, &cert("  renewBefore: 2160h\n"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("2160h (cert-manager's default)"),
            "{}",
            f[0].message
        );
        assert!(run(RENEWAL, &cert("  renewBefore: 2159h\n")).is_empty());
    }

    #[test]
    fn unset_or_unparsable_values_and_externals_are_not_judged() {
        assert!(run(RENEWAL, &cert("")).is_empty());
        assert!(run(RENEWAL, &cert("  duration: ninety days\n  renewBefore: soon\n")).is_empty());
        // An external Certificate (declared to exist outside the render) with a refused window is
        // not this stack's to fix; the same object rendered here is reported.
        let bad = cert("  duration: 30m\n  renewBefore: 1m\n");
        let mut g = crate::testkit::graph("test", &bad);
        assert_eq!(run_graph(RENEWAL, &g, &crate::policy::Policy::default()).len(), 2);
        for o in &mut g.objects {
            o.prov.external = true;
        }
        assert!(run_graph(RENEWAL, &g, &crate::policy::Policy::default()).is_empty());
    }
}
