//! Generated, property-style: values by meaning (issue 24 items 4 and 6), over inputs drawn by a
//! seeded generator rather than listed by hand, each judged in several places and spellings.
//!
//! - Tags: any word that is not a version moves; any `MAJOR.MINOR[.PATCH]` (with or without `v`,
//!   with a word before or after) names a version. Judged by image-pinned in five holders.
//! - Loopback: any address of 127.0.0.0/8 and `::1`, in every spelling (bare, with a port, in a
//!   URL with userinfo and path, IPv4-mapped IPv6, bracketed), is loopback; the same digits as the
//!   first labels of a DNS name are not. Judged by plaintext-endpoint in a container's env, a
//!   flag's value and a ConfigMap.
//! - Waiver reasons: any string of blanks, punctuation, invisible and format characters, written
//!   raw, as YAML escapes or in a block scalar, is refused by the policy; the same string with one
//!   letter or digit of any script is accepted.

use crate::seeded::Gen;
use crate::testkit::*;
use serde_json::{json, Value};

const CASES: usize = 60;

fn run(rule_id: &str, yaml: &str) -> Vec<crate::finding::Finding> {
    let policy = default_fixture_policy();
    let g = graph("e", yaml);
    let rule = crate::rules::registry().into_iter().find(|r| r.id == rule_id).unwrap();
    (rule.check)(&ctx(&g, &policy))
}

/// Five holders of one container with `image`.
fn holders(image: &str) -> Vec<Value> {
    let c = json!({"name": "c", "image": image, "command": ["tool"]});
    let ok = json!({"name": "ok", "image": "quay.io/example/tool:1.2.3", "command": ["tool"]});
    let meta = json!({"name": "w", "namespace": "nvcf"});
    let tpl = |spec: Value| json!({"metadata": {"labels": {"a": "w"}}, "spec": spec});
    vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"selector": {"matchLabels": {"a": "w"}}, "template": tpl(json!({"containers": [c]}))}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
            "spec": {"serviceName": "w", "selector": {"matchLabels": {"a": "w"}},
                "template": tpl(json!({"initContainers": [c], "containers": [ok]}))}}),
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": tpl(json!({"restartPolicy": "Never", "containers": [c]}))}}}}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": meta,
            "spec": {"template": tpl(json!({"containers": [c]}))}}),
        json!({"apiVersion": "tekton.dev/v1", "kind": "Task", "metadata": meta, "spec": {"steps": [ok, c]}}),
    ]
}

#[test]
fn generated_tags_move_unless_they_name_a_version_in_every_holder() {
    use crate::meaning::tags::{classify, Tag};
    let mut g = Gen(0x5eed_0024);
    for _ in 0..CASES {
        let word = g.word();
        let parts = 2 + g.below(2);
        let version: Vec<String> = (0..parts).map(|_| g.below(40).to_string()).collect();
        let version = version.join(".");
        let moving_tag = match classify(&word, None) {
            Tag::Moving => word.clone(),
            // A generated word that marks a development build: refused too, by another reason.
            Tag::Development(_) => continue,
            Tag::Version => panic!("`{word}` has no version part, yet reads as one"),
        };
        let version_tags = [
            version.clone(),
            format!("v{version}"),
            format!("{version}-{word}"),
            format!("{word}-{version}"),
        ];
        for t in &version_tags {
            assert_ne!(classify(t, None), Tag::Moving, "`{t}` names version {version}");
        }
        let version_tag = g.pick(&version_tags).clone();
        if classify(&version_tag, None) != Tag::Version {
            continue; // `word` happened to be a development marker next to a version
        }
        for (tag, fires) in [(moving_tag, true), (version_tag, false)] {
            for obj in holders(&format!("quay.io/example/tool:{tag}")) {
                let kind = obj["kind"].as_str().unwrap().to_string();
                let found = run("image-pinned", &serde_json::to_string(&obj).unwrap());
                assert_eq!(!found.is_empty(), fires, "tag `{tag}` in a {kind}: {found:#?}");
            }
        }
    }
}

/// One spelling of a dial address to `host` (an IPv4 address or name).
fn spellings(g: &mut Gen, host: &str, ipv4: bool) -> Vec<String> {
    let port = 1024 + g.below(60000);
    let mut out = vec![
        format!("http://{host}:{port}"),
        format!("http://{host}:{port}/v1/{}", g.word()),
        format!("http://{}:{}@{host}:{port}/", g.word(), g.word()),
        format!("HTTP://{host}/"),
    ];
    if ipv4 {
        out.push(format!("http://[::ffff:{host}]:{port}"));
    }
    out
}

#[test]
fn generated_loopback_addresses_are_loopback_and_lookalikes_are_not_in_every_place() {
    use crate::meaning::host::{is_loopback, url_host};
    let mut g = Gen(0x1007_b4c4);
    // Places where a client dials: (what, YAML with `{addr}`).
    let places = [
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c, namespace: nvcf}\nspec:\n  selector: {matchLabels: {a: c}}\n  template:\n    metadata: {labels: {a: c}}\n    spec:\n      containers:\n        - {name: c, image: 'quay.io/example/tool:1.2.3', command: [tool], env: [{name: BAO_ADDR, value: '{addr}'}]}\n",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: c, namespace: nvcf}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - {name: c, image: 'quay.io/example/tool:1.2.3', command: [tool, '--upstream={addr}']}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nvcf}\ndata:\n  client.yaml: |\n    upstream:\n      url: '{addr}'\n",
    ];
    for _ in 0..CASES / 3 {
        let ip = format!("127.{}.{}.{}", g.below(256), g.below(256), 1 + g.below(254));
        let lookalike = format!("{ip}.{}.example.net", g.word());
        let dns = format!("127.{}.corp.example.net", g.word());
        let mut loop_forms = spellings(&mut g, &ip, true);
        loop_forms.extend(spellings(&mut g, "[::1]", false));
        loop_forms.extend(spellings(&mut g, "localhost", false));
        let mut far_forms = spellings(&mut g, &lookalike, false);
        far_forms.extend(spellings(&mut g, &dns, false));
        for (addr, loopback) in loop_forms
            .iter()
            .map(|a| (a, true))
            .chain(far_forms.iter().map(|a| (a, false)))
        {
            assert_eq!(is_loopback(url_host(addr)), loopback, "{addr}");
            let place = g.pick(&places).replace("{addr}", addr);
            let found = run("plaintext-endpoint", &place);
            assert_eq!(found.is_empty(), loopback, "{addr} in\n{place}\n{found:#?}");
        }
    }
}

#[test]
fn generated_reasons_without_words_are_refused_in_every_encoding() {
    // Blanks, punctuation, invisible and format characters: none is a letter or digit.
    const EMPTY: &[char] = &[
        ' ', '\t', '.', '-', '_', '!', '\u{00a0}', '\u{00ad}', '\u{180e}', '\u{200b}', '\u{200c}', '\u{200d}',
        '\u{200e}', '\u{200f}', '\u{2028}', '\u{202a}', '\u{202e}', '\u{2060}', '\u{2063}', '\u{3000}', '\u{feff}',
    ];
    // A letter or digit of several scripts.
    const WORD: &[char] = &['a', 'Z', '7', 'é', 'ж', 'ק', 'ع', '上', '٣', 'ß'];
    let mut g = Gen(0x0000_2e45_0400);
    let policy = |reason_yaml: &str| {
        format!(
            "version: 1\nwaivers:\n  - rule: image-pinned\n    target: {{environment: e}}\n    reason: {reason_yaml}\n    expires: 2099-01-01\n"
        )
    };
    // The encodings a YAML writer may use for the same text.
    let encodings = |s: &str| -> Vec<String> {
        let escaped: String = s
            .chars()
            .map(|c| match c {
                c if c.is_ascii_alphanumeric() => c.to_string(),
                c if (c as u32) < 0x10000 => format!("\\u{:04X}", c as u32),
                c => format!("\\U{:08X}", c as u32),
            })
            .collect();
        // Raw, a byte order mark or a line separator inside the text is refused by the YAML
        // reader itself (Go and libyaml disagree on it): those go escaped only.
        let raw: String = s.chars().filter(|c| !matches!(c, '\u{feff}' | '\u{2028}')).collect();
        let mut out = vec![format!("\"{escaped}\""), format!("'{}'", raw.replace('\'', "''"))];
        // A block scalar's first line may not start with blanks (they are its indentation).
        let block = raw.trim_start_matches([' ', '\t']);
        if !block.is_empty() {
            out.push(format!("|-\n      {block}"));
        }
        out
    };
    for _ in 0..CASES {
        let len = 1 + g.below(10);
        let empty: String = (0..len).map(|_| *g.pick(EMPTY)).collect();
        let at = g.below(len + 1);
        let mut worded: Vec<char> = empty.chars().collect();
        worded.insert(at, *g.pick(WORD));
        let worded: String = worded.into_iter().collect();
        for enc in encodings(&empty) {
            let text = policy(&enc);
            let parsed = crate::policy::Policy::parse(&text, "validator-policy.yaml", crate::rules::family_of);
            // Refused: as saying nothing, or (a reason YAML reads as blank) as missing.
            let err = parsed.err().map(|e| format!("{e:#}")).unwrap_or_default();
            assert!(
                err.contains("has no words") || err.contains("has no `reason`"),
                "{empty:?} written as {enc:?}: {err:?}"
            );
        }
        for enc in encodings(&worded) {
            let text = policy(&enc);
            let parsed = crate::policy::Policy::parse(&text, "validator-policy.yaml", crate::rules::family_of);
            assert!(
                parsed.is_ok(),
                "{worded:?} written as {enc:?}: {:#}",
                parsed.err().unwrap()
            );
        }
    }
}
