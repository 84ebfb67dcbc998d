//! `vault-token-static` on scripts, against the mutants of `script_value_source` the rule tests
//! let through (issue 31; ci/mutants names them).

use super::super::tests::*;
use super::*;

/// A Job that runs `script` with `env` (a YAML flow list).
fn job(script: &str, env: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: setup, namespace: nvcf}}\nspec:\n  template:\n    spec:\n\
         \x20     restartPolicy: Never\n      containers:\n      - name: setup\n        image: openbao/openbao:2.6.2\n\
         \x20       command: [sh, -c, \"{script}\"]\n        env: {env}\n"
    )
}

const ENV: &str = "[{name: BAO_ADDR, value: \"https://openbao.openbao.svc:8200\"}, \
                   {name: ROOT_TOKEN, valueFrom: {secretKeyRef: {name: bao-root, key: token}}}, \
                   {name: VAULT_TOKEN, valueFrom: {secretKeyRef: {name: bao-root, key: token}}}]";

/// `bao login $ROOT_TOKEN` passes the Secret variable it names (not the first variable of the
/// list); `bao login $VAULT_TOKEN` is the token variable's own finding, reported once.
#[test]
fn a_script_variable_is_traced_to_its_own_secret_and_a_token_variable_is_reported_once() {
    let f = run(TOKEN, &job("bao login $ROOT_TOKEN", ENV));
    let by_script: Vec<_> = f.iter().filter(|f| f.message.contains("in its command line")).collect();
    assert_eq!(by_script.len(), 1, "{}", messages(&f));
    assert!(by_script[0].message.contains("bao-root"), "{}", messages(&f));
    let f = run(TOKEN, &job("bao login $VAULT_TOKEN", ENV));
    assert!(
        f.iter().all(|f| !f.message.contains("in its command line")),
        "{}",
        messages(&f)
    );
}

/// `bao login -` and `vault login token=-` read the token from standard input: no value is
/// passed on the command line.
#[test]
fn a_token_read_from_standard_input_is_no_literal() {
    let env = "[{name: BAO_ADDR, value: \"https://openbao.openbao.svc:8200\"}]";
    for script in ["bao login -", "vault login token=-"] {
        let f = run(TOKEN, &job(script, env));
        assert!(f.is_empty(), "{script}: {}", messages(&f));
    }
    // The near miss: a literal token on the command line.
    let f = run(TOKEN, &job("bao login s.abcdef", env));
    assert_eq!(f.len(), 1, "{}", messages(&f));
}

/// The tokens `script_tokens` reads from each `login` line: `-method token` (flag and value as two
/// words, or `-method=token`) takes the one positional word after it; any other method takes none;
/// a word with `=` (`key=value` of another method) is no token; only the first positional word is.
#[test]
fn login_takes_one_positional_token_and_only_for_the_token_method() {
    let tokens = |script: &str| -> Vec<String> {
        crate::shell::script_commands(script)
            .iter()
            .flat_map(script_tokens)
            .map(|(_, v)| v)
            .collect()
    };
    // The method given as two words: its value is skipped, the token after it is read.
    assert_eq!(tokens("bao login -method token s.ABC"), ["s.ABC"]);
    assert_eq!(tokens("vault login --method token s.ABC"), ["s.ABC"]);
    assert_eq!(tokens("bao login -method=token s.ABC"), ["s.ABC"]);
    // Another method's positional words and key=value pairs are no tokens.
    assert!(tokens("bao login -method userpass bob").is_empty());
    assert!(tokens("bao login -method=userpass bob password=x").is_empty());
    // One positional token: a second word, or a key=value after it, is not another.
    assert_eq!(tokens("bao login s.ABC extra"), ["s.ABC"]);
    assert_eq!(tokens("bao login s.ABC foo=bar"), ["s.ABC"]);
}

/// The Secret volume behind a path: a volume mounted at the path itself counts (a file mounted
/// by subPath), and is chosen over a shorter mount that does not contain the path.
#[test]
fn a_path_is_traced_to_the_volume_mounted_at_it_or_above_it() {
    let g = crate::testkit::graph(
        "test",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: setup, namespace: nvcf}\nspec:\n  containers:\n  - name: setup\n\
         \x20   image: openbao/openbao:2.6.2\n    volumeMounts:\n    - {name: tok, mountPath: /var/run/token, subPath: token}\n\
         \x20   - {name: other, mountPath: /etc/other}\n    - {name: dir, mountPath: /var/run/bao/}\n  volumes:\n\
         \x20 - {name: tok, secret: {secretName: bao-token}}\n  - {name: other, secret: {secretName: other, optional: true}}\n\
         \x20 - {name: dir, projected: {sources: [{secret: {name: bao-dir}}]}}\n",
    );
    let obj = &g.objects[0];
    let c = obj.at("/spec/containers/0").unwrap();
    let vol = |p: &str| super::sources::secret_volume(&g, obj, c, p);
    assert_eq!(vol("/var/run/token"), Some(("bao-token".to_string(), false)));
    assert_eq!(vol("/etc/other/x"), Some(("other".to_string(), true)));
    assert_eq!(vol("/var/run/bao/token"), Some(("bao-dir".to_string(), false)));
    assert_eq!(vol("/var/run/tokens"), None);
    assert_eq!(vol("/etc"), None);
}

/// `$NAME`, `${NAME}` and `${NAME:-default}` name a variable; `$` alone, or a name with other
/// characters, names none.
#[test]
fn variable_references_name_whole_variable_names_only() {
    use super::sources::variable;
    assert_eq!(variable("$BAO_TOKEN"), Some("BAO_TOKEN"));
    assert_eq!(variable("${BAO_TOKEN}"), Some("BAO_TOKEN"));
    assert_eq!(variable("${BAO_TOKEN:-x}"), Some("BAO_TOKEN"));
    assert_eq!(variable("$"), None);
    assert_eq!(variable("${}"), None);
    assert_eq!(variable("$a.b"), None);
    assert_eq!(variable("BAO_TOKEN"), None);
}

/// A token file behind `subPath` and `items` is traced to the Secret the kubelet writes there,
/// with that Secret's `optional`: the required root token of a projected volume whose first source
/// is an optional bootstrap Secret is an error; the ServiceAccount token beside them is no Secret.
#[test]
fn a_file_behind_sub_path_and_items_is_traced_to_the_secret_that_writes_it() {
    let f = run(TOKEN, &fixture("fires-vault-token-static-script-subpath-items"));
    let all = messages(&f);
    assert_eq!(f.len(), 2, "{all}");
    assert!(
        f.iter()
            .all(|f| f.unwaivable && f.severity.is_none() && f.message.contains("Secret `openbao-root-token`")),
        "{all}"
    );
    let f = run(TOKEN, &fixture("silent-vault-token-static-script-subpath-items"));
    assert!(f.is_empty(), "{}", messages(&f));
}

/// A rendered Secret without the key writes no such file: the token at the top of a projected
/// volume of two items-less Secrets is the one whose keys are not known, not the last source.
#[test]
fn a_rendered_secret_without_the_key_is_not_the_token_file() {
    let g = crate::testkit::graph(
        "test",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: bao-config, namespace: nvcf}\nstringData: {config.hcl: x}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: setup, namespace: nvcf}\nspec:\n  containers:\n  - name: setup\n\
         \x20   image: openbao/openbao:2.6.2\n    volumeMounts: [{name: v, mountPath: /vault}]\n  volumes:\n\
         \x20 - {name: v, projected: {sources: [{secret: {name: openbao-root-token}}, {secret: {name: bao-config}}]}}\n",
    );
    let obj = g.objects.iter().find(|o| o.kind == "Pod").unwrap();
    let c = obj.at("/spec/containers/0").unwrap();
    let vol = |p: &str| super::sources::secret_volume(&g, obj, c, p);
    assert_eq!(vol("/vault/token"), Some(("openbao-root-token".to_string(), false)));
    assert_eq!(vol("/vault/config.hcl"), Some(("bao-config".to_string(), false)));
}
