//! `plaintext-endpoint` unit tests of how a dial address is read (`dial.rs`): an http:// URL is
//! judged by the host a client would dial, read as Go's net/url reads it (an IPv6 address with
//! or without brackets, a variable still to be expanded in either spelling, a name that only
//! looks like a Service's), and a URL no client dials (no host, no address) is not a dial.

use super::tests::*;
use super::*;
use crate::policy::Policy;
use crate::testkit::*;

/// The findings of `plaintext-endpoint` on a Pod with these environment variables and this
/// `sh -c` script, as (variable or `curl`, host) of each plain-http finding, in order.
fn http_hosts(env: &[(&str, &str)], script: &str) -> Vec<(String, String)> {
    let env: Vec<String> = env
        .iter()
        .map(|(n, v)| format!("{{name: {n}, value: '{v}'}}"))
        .collect();
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: app}}\nspec:\n  containers:\n  - name: c\n    image: quay.io/x/y:1.0.0\n    command: [sh, -c, '{script}']\n    env: [{}]\n",
        env.join(", ")
    );
    let g = graph("e", &yaml);
    let p = Policy::default();
    (rule(PLAINTEXT_ENDPOINT).check)(&ctx(&g, &p))
        .iter()
        .map(|f| {
            let m = &f.message;
            let who = m.split('`').nth(3).unwrap_or_default().to_string();
            let host = m.split("plain http:// to `").nth(1).and_then(|r| r.split('`').next());
            (
                who,
                host.unwrap_or_else(|| panic!("not a plain-http finding: {m}"))
                    .to_string(),
            )
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// IPv6 hosts: bracketed, or without brackets where Go's net/url takes the last group for the
/// port (`http://fd00::5:8200` dials fd00::5 port 8200 in cleartext), are reported by their
/// host; `http://::1:8200`, read the same way, is loopback. `http://fd00::5` leaves the host
/// `fd00:`, which no client can dial, and `http://:8200` has no host at all (Go: `no Host in
/// request URL`): neither is a dial.
#[test]
fn ipv6_and_hostless_http_urls_are_read_as_clients_read_them() {
    let env = [
        ("A_URL", "http://fd00::5:8200/v1"),
        ("B_URL", "http://[fd00::6]:8200"),
        ("C_URL", "http://::1:8200"),
        ("D_URL", "http://fd00::7"),
        ("E_URL", "http://:8200"),
        ("F_URL", "http://[::1]:8200"),
    ];
    assert_eq!(
        http_hosts(&env, "true"),
        pairs(&[("A_URL", "fd00::5"), ("B_URL", "fd00::6")])
    );
    // Each near miss on its own stays silent (not only beside the reported ones).
    for (name, value) in &env[2..] {
        assert_eq!(http_hosts(&[(name, value)], "true"), [], "{value}");
    }
}

/// A host that only looks like a Service (`svc` with no namespace label before it) is an
/// ordinary name: its plain http:// is reported, by its name.
#[test]
fn a_name_with_a_svc_label_but_no_service_form_is_judged_by_its_name() {
    assert_eq!(
        http_hosts(
            &[
                ("A_URL", "http://openbao.svc:8200"),
                ("B_URL", "http://svc.openbao:8200")
            ],
            "true"
        ),
        pairs(&[("A_URL", "openbao.svc"), ("B_URL", "svc.openbao")])
    );
}

/// A URL whose host is a variable the gate cannot resolve is judged as plain http:// to that
/// host, whether the script writes `$HOST` or `${HOST}` (the braces were once not read as part
/// of a host, so `${HOST}` escaped); a variable the container sets to a loopback address is
/// resolved and silent in both spellings.
#[test]
fn a_variable_host_is_judged_in_either_spelling() {
    let script = "curl -fsS http://${UP_HOST}:8200/v1/sys/health; curl -fsS http://$UP_HOST:8300/";
    assert_eq!(
        http_hosts(&[], script),
        pairs(&[("curl", "${UP_HOST}"), ("curl", "$UP_HOST")])
    );
    assert_eq!(
        http_hosts(&[("UP_URL", "http://${UP_HOST}:8200")], "true"),
        pairs(&[("UP_URL", "${UP_HOST}")])
    );
    assert_eq!(http_hosts(&[("UP_HOST", "127.0.0.1")], script), []);
}
