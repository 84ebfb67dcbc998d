//! `insecure-flag` in configuration files carried by ConfigMaps and Secrets
//! (`crate::config_files`): every leaf of a parsed YAML/JSON/TOML/INI/HCL file (a kubeconfig's
//! `insecure-skip-tls-verify`, a Vault agent's `tls_skip_verify`, a Traefik `insecureSkipVerify`,
//! a client's `ssl_verify = 0`) judged by the one switch table (`switches::SWITCHES`), and the
//! commands of a shell script file by the same flag reader as a container's command line.

use super::*;
use crate::config_files::{self, Content};

/// The insecure switches of `obj`'s files, one finding per switch and file.
pub(super) fn config_file_switches(obj: &Object) -> Vec<Finding> {
    let mut out = Vec::new();
    for file in config_files::files(obj) {
        let what = if file.secret { "Secret file" } else { "file" };
        match config_files::read(file.key, &file.text) {
            Content::Config(format, doc) => {
                for (path, leaf) in config_files::leaves(&doc) {
                    let key = config_files::leaf_key(&path);
                    // An OpenBao/Vault listener's `tls_disable` serves plaintext: plaintext-endpoint
                    // judges the listener (it is the server the clients reach).
                    if path.iter().any(|p| p == "listener") && norm(key).ends_with("tlsdisable") {
                        continue;
                    }
                    // A key with spaces is a phrase, not a switch's name.
                    if key.contains(char::is_whitespace) {
                        continue;
                    }
                    let Some(effect) = insecure_setting_in(&path, leaf) else {
                        continue;
                    };
                    // A Secret's value is judged, never shown.
                    let from = format!(
                        "Secret {}/{} key `{}`",
                        obj.namespace.as_deref().unwrap_or(""),
                        obj.name,
                        file.key
                    );
                    let shown = if file.secret {
                        format!("<value of {from}>")
                    } else {
                        short(leaf)
                    };
                    out.push(
                        Finding::object_at(
                            INSECURE_FLAG,
                            obj,
                            // A Secret's base64 data hides the key: point at the file instead.
                            if file.secret { file.key } else { key },
                            format!(
                                "{}: {what} `{}` ({}) sets `{} = {}`, which {effect}",
                                obj.display(),
                                file.key,
                                format.name(),
                                show_path(&path),
                                shown
                            ),
                        )
                        .with_help(format!(
                            "remove `{key}` from `{}` (or set it to its safe value) and give the client the CA bundle that signed the server's certificate",
                            file.key
                        )),
                    );
                }
            }
            Content::Script => {
                for cmd in shell::script_commands(&file.text) {
                    for sw in command_switches(&cmd) {
                        out.push(
                            Finding::object_at(
                                INSECURE_FLAG,
                                obj,
                                if file.secret { file.key } else { &sw.shown },
                                format!(
                                    "{}: script {what} `{}` runs `{}` with `{}`, which {}",
                                    obj.display(),
                                    file.key,
                                    cmd.name(),
                                    sw.shown,
                                    sw.effect
                                ),
                            )
                            .with_help("remove the switch and give the command the CA bundle that signed the server's certificate"),
                        );
                    }
                }
            }
            // Too deep to parse: if it names a switch of the table anywhere, what it sets is
            // unknown, and that is a finding, never silence.
            Content::TooDeep => {
                let text = norm(&file.text);
                if let Some(n) = SWITCHES.iter().map(|d| d.name_str()).find(|n| text.contains(n)) {
                    out.push(
                        Finding::object_at(
                            INSECURE_FLAG,
                            obj,
                            file.key,
                            format!(
                                "{}: {what} `{}` nests deeper than {} levels, so the gate cannot read it, and it names the switch `{n}`, which may turn TLS or verification off",
                                obj.display(),
                                file.key,
                                config_files::MAX_NESTING
                            ),
                        )
                        .with_help("flatten the file so it can be read (or remove the switch)"),
                    );
                }
            }
            Content::Markup | Content::Other => {}
        }
    }
    out
}
