//! Air-gapped renders of states with remote charts: the generated helm front.
//!
//! helmfile pulls OCI charts (`helm pull oci://… --version V --destination D --untar`) while it
//! merely loads a state, so without registry access it cannot even tell us the values of such a
//! release. With `--chart-mirror DIR`, helmfile is given a small `helm` front that serves those
//! pulls from the mirror's `<chart>-<version>.tgz` and hands every other command to the real
//! helm. It only lets helmfile load the state; what is rendered is still the mirror tarball after
//! its sha256 matched the lock (see `helmfile::plan`).

use super::Tools;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The tarball of `chart` at `version` in the mirror (`<chart>-<version>.tgz`, with or without a
/// leading `v` on the version).
pub fn tarball(dir: &Path, chart: &str, version: &str) -> Option<PathBuf> {
    let bare = version.trim_start_matches('v');
    [
        format!("{chart}-{version}.tgz"),
        format!("{chart}-{bare}.tgz"),
        format!("{chart}-v{bare}.tgz"),
    ]
    .into_iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

fn shq(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Write the `helm` front into `work` and return tools that use it. Every call that would reach
/// a registry is answered here: `pull`/`fetch` from the mirror's tarball when it holds the chart;
/// offline (`offline`), otherwise with a placeholder chart (so helmfile can load the state; the
/// release is then reported "not rendered: --offline", see `render::helmfile::plan`), and
/// `repo add|update|index`, `dependency build|update` and `registry` succeed without doing
/// anything. Everything else goes to the real helm (sealed offline, see `seal`).
pub fn front(tools: &Tools, mirror: Option<&Path>, offline: bool, work: &Path) -> Result<Tools> {
    use std::os::unix::fs::PermissionsExt;
    let path = work.join("helm");
    let placeholders = work.join("placeholders");
    let script = format!(
        r#"#!/bin/sh
# Written by nvcf-validate for one run: answers registry calls from the chart mirror, or offline
# with placeholders, so that helmfile loads the state without reaching any network.
REAL_HELM={real}
MIRROR={mirror}
OFFLINE={offline}
PLACEHOLDERS={placeholders}
if [ "$OFFLINE" = 1 ]; then
  case "$1 $2" in
    "repo add"*|"repo update"*|"repo index"*|"dependency build"*|"dependency update"*|"dep build"*|"dep update"*|"registry "*)
      exit 0 ;;
  esac
fi
case "$1" in pull|fetch) ;; *) exec "$REAL_HELM" "$@" ;; esac
ref=""; version=""; dest="."; untar=0; untardir="."
parse() {{
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift ;;
    --version=*) version="${{1#*=}}" ;;
    -d|--destination) dest="$2"; shift ;;
    --destination=*) dest="${{1#*=}}" ;;
    --untar) untar=1 ;;
    --untardir) untardir="$2"; shift ;;
    --untardir=*) untardir="${{1#*=}}" ;;
    --repo|--username|--password|--ca-file|--cert-file|--key-file|--keyring|--kube-context|--namespace|-n|--registry-config|--repository-config|--repository-cache)
      shift ;;
    -*) ;;
    *) [ -n "$ref" ] || ref="$1" ;;
  esac
  shift
done
}}
parse "$@"
chart="${{ref##*/}}"; chart="${{chart%%:*}}"; chart="${{chart%.tgz}}"
bare="${{version#v}}"
serve() {{
  if [ "$untar" = 1 ]; then
    mkdir -p "$dest/$untardir" && tar -xzf "$1" -C "$dest/$untardir"
  else
    mkdir -p "$dest" && cp "$1" "$dest/"
  fi
}}
if [ -n "$MIRROR" ]; then
  for f in "$MIRROR/$chart-$version.tgz" "$MIRROR/$chart-$bare.tgz" "$MIRROR/$chart-v$bare.tgz"; do
    if [ -f "$f" ]; then serve "$f"; exit $?; fi
  done
fi
if [ "$OFFLINE" != 1 ]; then
  exec "$REAL_HELM" "$@"
fi
# Offline and not in the mirror: a placeholder chart that renders nothing.
case "$bare" in [0-9]*.[0-9]*.[0-9]*) pv="$bare" ;; *) pv="0.0.0" ;; esac
case "$chart" in ""|*[!A-Za-z0-9_.-]*) chart=placeholder ;; esac
tmp="$PLACEHOLDERS/$$"
mkdir -p "$tmp/$chart" || exit 1
printf 'apiVersion: v2\nname: %s\nversion: %s\ndescription: nvcf-validate offline placeholder for %s (not fetched)\n' "$chart" "$pv" "$ref" > "$tmp/$chart/Chart.yaml"
tar -czf "$tmp/$chart-$pv.tgz" -C "$tmp" "$chart" || exit 1
serve "$tmp/$chart-$pv.tgz"
"#,
        real = shq(&tools.helm),
        mirror = mirror.map(shq).unwrap_or_else(|| "''".into()),
        offline = u8::from(offline),
        placeholders = shq(&placeholders),
    );
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(Tools {
        helmfile: tools.helmfile.clone(),
        helm: path,
        env: tools.env.clone(),
    })
}
