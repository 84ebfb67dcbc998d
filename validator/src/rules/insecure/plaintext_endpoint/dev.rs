//! `plaintext-endpoint`: an OpenBao/Vault dev server (`server -dev` without `-dev-tls`) on a
//! command line, judged by behaviour whatever the binary is called.

use super::*;

/// `server -dev` without `-dev-tls`, judged by behaviour whatever the binary is called: the
/// `server` subcommand as the first argument of a container that runs its image's entrypoint
/// (`args: [server, -dev]`), as the first argument after any binary (`docker-entrypoint.sh server
/// -dev`), or after a `bao`/`vault`/`openbao` binary anywhere on the command line (`sh -c "exec
/// vault server -dev"`). The dev server's listener is plaintext.
pub(super) fn dev_server(c: &Value) -> Option<String> {
    let (_, cmds) = commands(None, "", c).into_iter().next()?;
    let args_only = args_only(c);
    for (i, cmd) in cmds.iter().enumerate() {
        let a = &cmd.argv;
        let at = if i == 0 && args_only && a.first().is_some_and(|w| w == "server") {
            Some(0)
        } else if a.get(1).is_some_and(|w| w == "server") {
            Some(1)
        } else {
            a.iter().enumerate().skip(1).find_map(|(p, w)| {
                (w == "server" && matches!(shell::basename(&a[p - 1]), "bao" | "vault" | "openbao")).then_some(p)
            })
        };
        let Some(at) = at else { continue };
        if let Some(dev) = dev_flag(&a[at + 1..]) {
            let bin = match at {
                0 => "(image entrypoint)".to_string(),
                p => shell::basename(&a[p - 1]).to_string(),
            };
            return Some(format!("{bin} server {dev}"));
        }
    }
    None
}

/// `-dev`/`--dev`/`-dev=true` among a server's flags, unless `-dev-tls` is on too.
pub(super) fn dev_flag(after: &[String]) -> Option<&String> {
    let on = |w: &&String, name: &str| {
        let f = w.trim_start_matches('-');
        w.starts_with('-')
            && (f == name
                || f.strip_prefix(name)
                    .and_then(|r| r.strip_prefix('='))
                    .is_some_and(truthy_str))
    };
    let dev = after.iter().find(|w| on(w, "dev"))?;
    (!after.iter().any(|w| on(&w, "dev-tls"))).then_some(dev)
}

pub(super) fn place_word(place: &str) -> String {
    if place.is_empty() {
        String::new()
    } else {
        format!("its {place} exec command's ")
    }
}
