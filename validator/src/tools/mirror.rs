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

/// What makes a chart "ask" for the upgrade render: a file holding one of these may render
/// differently as an upgrade. `IsUpgrade`/`IsInstall` name the two fields `--is-upgrade` flips
/// (also as `index .Release "IsUpgrade"`); the others are the release object taken whole, by
/// structure: `.Release` (`$.Release`, `$r.Release`) not followed by a field (`.Release | toJson`,
/// `$r := .Release`, `with .Release`, `template "x" .Release`, `index .Release (printf …)`), or
/// `"Release"`/`` `Release` `` as a key (`index . "Release"`), which reads every field it holds,
/// these two included. `.Release.Name`, `.Release.Namespace`, `.Release.Service` alone do not ask.
/// The release's values count as the chart's files (a chart renders them with `tpl`): its values
/// files and `--set` strings in the front, `Release::values` and `set` in the gate.
/// The front's `may_ask` greps [`ASKS_PATTERN`], which matches the same texts; the two are
/// checked against each other on one table of templates (`pipeline::tests`).
pub const ASKS_NEEDLES: &[&[u8]] = &[
    b"IsUpgrade",
    b"IsInstall",
    b".Release ",
    b".Release\t",
    b".Release\n",
    b".Release\r",
    b".Release\x0b",
    b".Release\x0c",
    b".Release)",
    b".Release}",
    b".Release|",
    b"\"Release\"",
    b"`Release`",
];

/// [`ASKS_NEEDLES`] as one `grep -E` pattern (in the C locale): `$` is the end of a line, where
/// the needle holds `\n` (a file ending in `.Release` without a newline matches here only: no
/// template ends inside an action).
pub const ASKS_PATTERN: &str = r#"IsUpgrade|IsInstall|\.Release([[:space:]|)}]|$)|"Release"|`Release`"#;

fn shq(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Write the `helm` front into `dir` and return tools that use it. Every call that would reach
/// a registry is answered here: `pull`/`fetch` from the mirror's tarball when it holds the chart;
/// offline (`offline`), otherwise with a placeholder chart (so helmfile can load the state; the
/// release is then reported "not rendered: --offline", see `render::helmfile::plan`), and
///
/// - `repo add` records the repository without fetching its index, `repo list` answers from
///   what was recorded, `repo remove|update|index` succeed without doing anything, `search`
///   finds nothing (no index was fetched);
/// - `dependency build|update|up` and `registry` succeed without doing anything (a local chart
///   whose dependencies are not vendored then fails in `helm template`, naming them);
/// - `show` of a chart that is not a local one answers from a placeholder's `Chart.yaml`;
/// - `template`, `install` and `upgrade` of a chart that is not a local one are refused.
///
/// A local chart is an argument naming a directory with a `Chart.yaml` or a `.tgz` file.
/// `version --client --short`, which helmfile 0.x asks before every command, is answered with
/// the line in the file `answer` once the run's check of the tools wrote there what the real helm
/// answered to it (`versions::start`), instead of starting helm again each time; while that check
/// is still asking (the file `answer` + `.pending` exists) the front waits for it (about 4 s at
/// most); without an answer it is passed on.
/// The upgrade render: a `helm template` into the layout `render::helmfile` gives helmfile
/// (`ROOT/SHA/NS__NAME`) whose `ROOT.upgrade` directory exists, of a chart that may ask
/// `.Release.IsUpgrade`/`.Release.IsInstall`, is run again after the first with the same arguments
/// and `--is-upgrade`, into `ROOT.upgrade` (status in `ROOT.upgrade-status`): the upgrade render
/// of exactly what helmfile rendered, with the values files helmfile wrote for that call, without a
/// second `helmfile template` (see `render::helmfile::upgrade_twins`).
/// Everything else goes to the real helm (sealed offline, see `seal`). The front writes only
/// into `dir/work` (placeholders, the recorded repositories) and, for the upgrade render, into the
/// directories the render that asked for it made writable.
pub fn front(tools: &Tools, mirror: Option<&Path>, offline: bool, answer: Option<&Path>, dir: &Path) -> Result<Tools> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("helm");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let script = format!(
        r#"#!/bin/sh
# Written by nvcf-validate for one run: answers registry calls from the chart mirror, or offline
# with placeholders, so that helmfile loads the state without reaching any network.
REAL_HELM={real}
MIRROR={mirror}
OFFLINE={offline}
WORK={work}
MARKER={marker}
# helmfile 0.x asks this before every command: the real helm's answer earlier in this run.
ANSWER={answer}
# While the check is still asking (ANSWER.pending), wait for its answer (at most about 4 s)
# rather than start helm a second time for the same question.
case "$*" in
  "version --client --short"|"version --short --client")
    n=0
    while [ -n "$ANSWER" ] && [ ! -s "$ANSWER" ] && [ -e "$ANSWER.pending" ] && [ "$n" -lt 200 ]; do
      sleep 0.02; n=$((n + 1))
    done
    if [ -n "$ANSWER" ] && [ -s "$ANSWER" ] && read -r line < "$ANSWER" && [ -n "$line" ]; then
      echo "$line"; exit 0
    fi ;;
esac
say() {{ echo "nvcf-validate --offline: $*" >&2; }}
# Is any argument a local chart (a directory with Chart.yaml, or a chart archive)?
local_chart() {{
  for a in "$@"; do
    case "$a" in -*) continue ;; esac
    [ -f "$a/Chart.yaml" ] && return 0
    case "$a" in *.tgz|*.tar.gz) [ -f "$a" ] && return 0 ;; esac
  done
  return 1
}}
# May a chart among the arguments ask `.Release.IsUpgrade` or `.Release.IsInstall`? A chart directory
# or archive whose files mention either, or that holds an archive (a vendored subchart, not read
# here), or that cannot be read, may.
# (Its pattern is nvcf-validate's ASKS_PATTERN: the fields --is-upgrade flips, or the release object
# taken whole.)
may_ask() {{
  # One grep over what the call reads: its own strings (--set and every other argument, on stdin),
  # the values files it names (a chart may render values as a template, `tpl`) and the chart
  # directories. A chart that vendors a subchart archive where helm loads one (charts/*.tgz, and
  # one level of subchart directories down; deeper ones the gate finds itself and renders by name),
  # or a chart archive holding one, may ask; so does what grep cannot read (its status 2).
  n=$#; file=0
  for a in "$@"; do
    if [ "$file" = 1 ]; then
      file=0
      # (One that does not exist fails helm's own call.)
      [ -e "$a" ] && set -- "$@" "$a"
      continue
    fi
    case "$a" in
      --values|-f) file=1 ;;
      --values=*) [ -e "${{a#--values=}}" ] && set -- "$@" "${{a#--values=}}" ;;
      -*) ;;
      *)
        if [ -f "$a/Chart.yaml" ]; then
          for t in "$a"/charts/*.tgz "$a"/charts/*/charts/*.tgz; do
            [ -e "$t" ] && return 0
          done
          set -- "$@" "$a"
        else
          case "$a" in *.tgz|*.tar.gz) ;; *) continue ;; esac
          [ -f "$a" ] || continue
          list=$(tar -tzf "$a" 2>/dev/null) || return 0
          case "$list" in *.tgz*|*.tar.gz*|*.tar*) return 0 ;; esac
          tar -xzOf "$a" 2>/dev/null | LC_ALL=C grep -qaE {asks} && return 0
        fi ;;
    esac
  done
  printf '%s\n' "$@" | {{ shift "$n"; LC_ALL=C grep -RqaE {asks} - "$@" 2>/dev/null; }}
  [ "$?" != 1 ]
}}
# The positional arguments after the subcommand, for messages.
refs() {{
  shift
  r=""
  for a in "$@"; do case "$a" in -*) ;; *) r="$r $a" ;; esac; done
  echo "${{r# }}"
}}
placeholder_yaml() {{
  printf 'apiVersion: v2\nname: %s\nversion: %s\ndescription: nvcf-validate offline placeholder for %s (not fetched)\n' "$1" "$2" "$3"
}}
# helm's global flags may come before the subcommand (helmfile puts `--kube-context X` there when
# a state sets helmDefaults.kubeContext): move them behind the subcommand's own arguments, where
# helm takes them as well, so that "$1" is always the subcommand.
lead=0; value=0
for a in "$@"; do
  if [ "$value" = 1 ]; then lead=$((lead + 1)); value=0; continue; fi
  case "$a" in
    --kube-context|--kubeconfig|--namespace|-n|--registry-config|--repository-config|--repository-cache|--content-cache|--kube-apiserver|--kube-as-user|--kube-as-group|--kube-ca-file|--kube-token|--kube-tls-server-name|--burst-limit|--qps)
      lead=$((lead + 1)); value=1 ;;
    -*) lead=$((lead + 1)) ;;
    *) break ;;
  esac
done
while [ "$lead" -gt 0 ]; do set -- "$@" "$1"; shift; lead=$((lead - 1)); done
if [ "$OFFLINE" = 1 ]; then
  case "$1 $2" in
    "repo add"*)
      name="$3"; url="$4"
      [ -n "$name" ] || {{ say "helm repo add without a name"; exit 1; }}
      touch "$WORK/repos" && awk -v n="$name" '$1 != n' "$WORK/repos" > "$WORK/repos.new" && mv "$WORK/repos.new" "$WORK/repos"
      printf '%s\t%s\n' "$name" "$url" >> "$WORK/repos"
      echo "\"$name\" has been added to your repositories (nvcf-validate --offline: recorded, its index not fetched)"
      exit 0 ;;
    "repo list"*|"repo ls"*)
      if [ -s "$WORK/repos" ]; then printf 'NAME\tURL\n'; cat "$WORK/repos"; exit 0; fi
      echo "Error: no repositories to show" >&2; exit 1 ;;
    "repo remove"*|"repo rm"*)
      shift 2
      for n in "$@"; do
        [ -f "$WORK/repos" ] && awk -v n="$n" '$1 != n' "$WORK/repos" > "$WORK/repos.new" && mv "$WORK/repos.new" "$WORK/repos"
      done
      exit 0 ;;
    "repo update"*|"repo up"*|"repo index"*|"dependency build"*|"dependency update"*|"dependency up"*|"dep build"*|"dep update"*|"dep up"*|"registry "*)
      exit 0 ;;
    "search "*)
      echo "No results found (nvcf-validate --offline: repository indexes are not fetched)"; exit 0 ;;
  esac
  case "$1" in
    show|inspect)
      if ! local_chart "$@"; then
        what="$2"; set -- $(refs "$@"); ref="$2"; leaf="${{ref##*/}}"; leaf="${{leaf%%:*}}"
        case "$leaf" in ""|*[!A-Za-z0-9_.-]*) leaf=placeholder ;; esac
        case "$what" in chart|all) placeholder_yaml "$leaf" 0.0.0 "$ref" ;; esac
        exit 0
      fi ;;
    template|install|upgrade)
      if ! local_chart "$@"; then
        say "\`helm $1 $(refs "$@")\` refused: the chart is not local and is not fetched (offline runs are sealed)"
        exit 1
      fi ;;
  esac
fi
# The upgrade render (every apply after the first is an upgrade, `.Release.IsUpgrade`): a
# `helm template` whose --output-dir is nvcf-validate's layout ROOT/SHA/NS__NAME, where ROOT.upgrade
# exists (nvcf-validate asks for it by making that directory), of a chart that may ask, is run a
# second time after the first, with exactly the arguments helmfile gave it followed by --is-upgrade
# and --output-dir ROOT.upgrade/SHA/NS__NAME (helm takes a flag's last value); its exit code
# and stderr go to ROOT.upgrade-status/SHA/NS__NAME.rc and .stderr. The first run's output and
# exit code are helmfile's, unchanged; when the install fails no upgrade status is left. The two
# run at once, but one after the other when a post-renderer runs (it may write fixed paths).
if [ "$1" = template ]; then
  od=""; next=0; post=0
  for a in "$@"; do
    if [ "$next" = 1 ]; then od="$a"; next=0; continue; fi
    case "$a" in
      --output-dir) next=1 ;;
      --output-dir=*) od="${{a#--output-dir=}}" ;;
      --post-renderer|--post-renderer=*) post=1 ;;
    esac
  done
  up_root="${{od%/*/*}}"
  case "$od" in /*/*/*/*) ;; *) up_root="" ;; esac
  if [ -n "$up_root" ] && [ -d "$up_root.upgrade" ] && [ -d "$up_root.upgrade-status" ] && may_ask "$@"; then
    rel="${{od#"$up_root"/}}"
    UP="$up_root.upgrade/$rel"; STATUS="$up_root.upgrade-status/$rel"
    mkdir -p "${{STATUS%/*}}" || exec "$REAL_HELM" "$@"
    # helm takes a flag's last value: the last --is-upgrade and --output-dir are these.
    if [ "$post" = 1 ]; then
      # A post-renderer may write fixed paths: one render after the other.
      "$REAL_HELM" "$@"; rc=$?
      [ "$rc" = 0 ] || exit "$rc"
      "$REAL_HELM" "$@" --is-upgrade --output-dir "$UP" > /dev/null 2> "$STATUS.stderr"
      echo "$?" > "$STATUS.rc"
    else
      # helm alone writes only its output directory: both renders at once.
      {{ "$REAL_HELM" "$@" --is-upgrade --output-dir "$UP" > /dev/null 2> "$STATUS.stderr"; echo "$?" > "$STATUS.rc.part"; }} &
      twin=$!
      "$REAL_HELM" "$@"; rc=$?
      wait "$twin"
      [ "$rc" = 0 ] && mv "$STATUS.rc.part" "$STATUS.rc"
    fi
    exit "$rc"
  fi
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
# Offline and not in the mirror: a placeholder chart. It renders one marker object (chartify,
# which helmfile runs for releases with patches, needs at least one rendered file); it is never
# part of a report: a remote release offline is "not rendered".
case "$bare" in [0-9]*.[0-9]*.[0-9]*) pv="$bare" ;; *) pv="0.0.0" ;; esac
case "$chart" in ""|*[!A-Za-z0-9_.-]*) chart=placeholder ;; esac
# With --untar (helmfile's pulls) it is written where the pull unpacks, never packed and unpacked.
if [ "$untar" = 1 ]; then tmp="$dest/$untardir"; else tmp="$WORK/placeholders/$$"; fi
mkdir -p "$tmp/$chart/templates" || exit 1
placeholder_yaml "$chart" "$pv" "$ref" > "$tmp/$chart/Chart.yaml" || exit 1
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvcf-validate-offline-placeholder\n' > "$tmp/$chart/templates/placeholder.yaml" || exit 1
: > "$tmp/$chart/$MARKER" || exit 1
[ "$untar" = 1 ] && exit 0
tar -czf "$tmp/$chart-$pv.tgz" -C "$tmp" "$chart" || exit 1
serve "$tmp/$chart-$pv.tgz"
"#,
        real = shq(&tools.helm),
        mirror = mirror.map(shq).unwrap_or_else(|| "''".into()),
        offline = u8::from(offline),
        work = shq(&work),
        marker = super::seal::PLACEHOLDER_MARKER,
        answer = answer.map(shq).unwrap_or_else(|| "''".into()),
        asks = format!("'{}'", ASKS_PATTERN.replace('\'', "'\\''")),
    );
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    // The front runs sealed, online too (helmfile starts it; `seal` confines the tools after
    // this): its work directory is writable.
    let writable = Some(tools.writable.iter().flatten().cloned().chain([work]).collect());
    Ok(Tools {
        helmfile: tools.helmfile.clone(),
        helm: path,
        env: tools.env.clone(),
        writable,
        ns: tools.ns.clone(),
        network: tools.network,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Tools whose "real helm" is a stub in `d` that records its arguments, and that record.
    fn recording_helm(d: &Path) -> (Tools, PathBuf) {
        recording_helm_then(d, "")
    }

    /// [`recording_helm`] whose stub runs the shell lines `then` after recording.
    fn recording_helm_then(d: &Path, then: &str) -> (Tools, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let log = d.join("real.log");
        let real = d.join("real-helm");
        std::fs::write(&real, format!("#!/bin/sh\necho \"$*\" >> '{}'\n{then}", log.display())).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tools = Tools {
            helmfile: PathBuf::from("/bin/false"),
            helm: real,
            env: Vec::new(),
            writable: None,
            ns: None,
            network: false,
        };
        (tools, log)
    }

    /// The offline front over a stub "real helm" that records what reaches it.
    fn offline_front(d: &Path) -> (PathBuf, PathBuf) {
        let (tools, log) = recording_helm(d);
        let dir = d.join("front");
        std::fs::create_dir_all(&dir).unwrap();
        let answer = d.join("client-short");
        std::fs::write(&answer, "v3.99.0+helm-4.3.1-gc0d08d0\n").unwrap();
        let t = front(&tools, None, true, Some(&answer), &dir).unwrap();
        assert_eq!(t.writable, Some(vec![dir.join("work")]));
        (t.helm, log)
    }

    fn call(front: &Path, cwd: &Path, args: &[&str]) -> (i32, String, String) {
        let o = Command::new(front).args(args).current_dir(cwd).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    #[test]
    fn offline_front_answers_every_registry_call_itself() {
        let d = tempfile::tempdir().unwrap();
        let (front, log) = offline_front(d.path());
        let cwd = d.path();
        // Repositories: recorded, listed consistently, removed; nothing fetched.
        let (code, _, err) = call(&front, cwd, &["repo", "list"]);
        assert_eq!((code, err.trim()), (1, "Error: no repositories to show"));
        assert_eq!(
            call(
                &front,
                cwd,
                &[
                    "repo",
                    "add",
                    "bitnami",
                    "https://charts.bitnami.com/bitnami",
                    "--force-update"
                ]
            )
            .0,
            0
        );
        assert_eq!(
            call(&front, cwd, &["repo", "add", "jetstack", "https://charts.jetstack.io"]).0,
            0
        );
        let (code, out, _) = call(&front, cwd, &["repo", "list"]);
        assert_eq!(code, 0);
        assert_eq!(
            out,
            "NAME\tURL\nbitnami\thttps://charts.bitnami.com/bitnami\njetstack\thttps://charts.jetstack.io\n"
        );
        assert_eq!(call(&front, cwd, &["repo", "remove", "bitnami"]).0, 0);
        assert_eq!(
            call(&front, cwd, &["repo", "list"]).1,
            "NAME\tURL\njetstack\thttps://charts.jetstack.io\n"
        );
        for args in [
            &["repo", "update"][..],
            &["dependency", "build", "charts/app"],
            &["dependency", "up", "/tmp/x"],
            &["dep", "update", "x"],
            &["registry", "login", "ghcr.io", "--username", "u", "--password-stdin"],
        ] {
            assert_eq!(call(&front, cwd, args).0, 0, "{args:?}");
        }
        let (code, out, _) = call(&front, cwd, &["search", "repo", "jetstack/cert-manager"]);
        assert_eq!(code, 0);
        assert!(out.starts_with("No results found"));
        // show / template of a chart that is not local: answered or refused here.
        let (code, out, _) = call(
            &front,
            cwd,
            &["show", "chart", "oci://ghcr.io/x/charts/app", "--version", "1.2.3"],
        );
        assert_eq!(code, 0);
        assert!(
            out.contains("name: app\n") && out.contains("offline placeholder"),
            "{out}"
        );
        assert_eq!(
            call(&front, cwd, &["show", "values", "ingress/ingress-nginx"]),
            (0, String::new(), String::new())
        );
        let (code, _, err) = call(
            &front,
            cwd,
            &["template", "ingress", "ingress/ingress-nginx", "--version", "4.11.1"],
        );
        assert_eq!(code, 1);
        assert!(
            err.contains("`helm template ingress ingress/ingress-nginx 4.11.1` refused"),
            "{err}"
        );
        // Global flags before the subcommand (helmDefaults.kubeContext) change nothing.
        let (code, _, err) = call(
            &front,
            cwd,
            &[
                "--kube-context",
                "lab",
                "--debug",
                "pull",
                "oci://registry.example.invalid/charts/app",
                "--version",
                "1.0.0",
                "--untar",
                "--untardir",
                "out",
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(cwd.join("out/app/Chart.yaml").is_file());
        let (code, _, _) = call(
            &front,
            cwd,
            &["--kube-context=lab", "repo", "add", "x", "https://x.example"],
        );
        assert_eq!(code, 0);
        let (code, _, _) = call(
            &front,
            cwd,
            &[
                "-n",
                "apps",
                "template",
                "ingress",
                "ingress/ingress-nginx",
                "--version",
                "4.11.1",
            ],
        );
        assert_eq!(code, 1);
        // helmfile 0.x's version question: the answer helm gave when the run's tools were checked.
        for args in [&["version", "--client", "--short"], &["version", "--short", "--client"]] {
            let (code, out, _) = call(&front, cwd, args);
            assert_eq!((code, out.as_str()), (0, "v3.99.0+helm-4.3.1-gc0d08d0\n"), "{args:?}");
        }
        assert!(
            !log.exists(),
            "a registry call reached the real helm: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        // Local charts go to the real helm.
        let chart = d.path().join("charts/app");
        std::fs::create_dir_all(&chart).unwrap();
        std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: app\nversion: 0.1.0\n").unwrap();
        assert_eq!(
            call(&front, cwd, &["template", "app", "charts/app", "--namespace", "apps"]).0,
            0
        );
        assert_eq!(call(&front, cwd, &["show", "chart", "charts/app"]).0, 0);
        assert_eq!(call(&front, cwd, &["version", "--short"]).0, 0);
        assert_eq!(call(&front, cwd, &["version", "--client"]).0, 0);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "template app charts/app --namespace apps\nshow chart charts/app\nversion --short\nversion --client\n"
        );
    }

    #[test]
    fn until_the_check_answered_the_version_question_reaches_helm() {
        let d = tempfile::tempdir().unwrap();
        let (tools, log) = recording_helm(d.path());
        let answer = d.path().join("client-short");
        let t = front(&tools, None, true, Some(&answer), d.path()).unwrap();
        assert_eq!(call(&t.helm, d.path(), &["version", "--client", "--short"]).0, 0);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "version --client --short\n");
        // Once the check wrote helm's answer, the front gives it.
        std::fs::write(&answer, "v3.99.0+helm-4.3.1-gc0d08d0\n").unwrap();
        let (code, out, _) = call(&t.helm, d.path(), &["version", "--client", "--short"]);
        assert_eq!((code, out.as_str()), (0, "v3.99.0+helm-4.3.1-gc0d08d0\n"));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "version --client --short\n");
    }

    /// While the check is still asking, the front waits for its answer instead of asking helm.
    #[test]
    fn while_the_check_asks_the_front_waits_for_its_answer() {
        let d = tempfile::tempdir().unwrap();
        let (tools, log) = recording_helm(d.path());
        let answer = d.path().join("client-short");
        let t = front(&tools, None, true, Some(&answer), d.path()).unwrap();
        let pending = crate::tools::versions::pending_marker(&answer);
        std::fs::write(&pending, "").unwrap();
        let writer = {
            let (answer, pending) = (answer.clone(), pending.clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                std::fs::write(&answer, "v3.99.0+helm-4.3.1-gc0d08d0\n").unwrap();
                std::fs::remove_file(&pending).unwrap();
            })
        };
        let (code, out, _) = call(&t.helm, d.path(), &["version", "--client", "--short"]);
        writer.join().unwrap();
        assert_eq!((code, out.as_str()), (0, "v3.99.0+helm-4.3.1-gc0d08d0\n"));
        assert!(!log.exists(), "helm was asked: {:?}", std::fs::read_to_string(&log));
        // A check that ended without an answer: the question goes to helm at once.
        std::fs::remove_file(&answer).unwrap();
        assert_eq!(call(&t.helm, d.path(), &["version", "--client", "--short"]).0, 0);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "version --client --short\n");
    }

    #[test]
    fn offline_pull_is_a_placeholder_chartify_accepts() {
        let d = tempfile::tempdir().unwrap();
        let (front, log) = offline_front(d.path());
        let dest = d.path().join("dest");
        let (code, _, err) = call(
            &front,
            d.path(),
            &[
                "pull",
                "oci://ghcr.io/x/charts/app",
                "--version",
                "v1.2.3",
                "--destination",
                dest.to_str().unwrap(),
                "--untar",
            ],
        );
        assert_eq!(code, 0, "{err}");
        let chart = dest.join("app");
        let meta = std::fs::read_to_string(chart.join("Chart.yaml")).unwrap();
        assert!(meta.contains("name: app\nversion: 1.2.3\n"), "{meta}");
        // One template (chartify needs a rendered file), and the marker the kustomize front reads.
        assert!(chart.join("templates/placeholder.yaml").is_file());
        assert!(chart.join(super::super::seal::PLACEHOLDER_MARKER).is_file());
        // Without --untar: the same chart as an archive in the destination.
        let packed = d.path().join("packed");
        let dest = packed.to_str().unwrap();
        let (code, _, err) = call(
            &front,
            d.path(),
            &["pull", "oci://ghcr.io/x/charts/app", "--version", "1.2.3", "-d", dest],
        );
        assert_eq!(code, 0, "{err}");
        let list = Command::new("tar")
            .arg("-tzf")
            .arg(packed.join("app-1.2.3.tgz"))
            .output()
            .unwrap();
        let names = String::from_utf8_lossy(&list.stdout);
        assert!(
            names.contains("app/Chart.yaml") && names.contains("app/templates/placeholder.yaml"),
            "{names}"
        );
        assert!(!log.exists());
    }

    /// The upgrade render: a `helm template` into the gate's layout whose `ROOT.upgrade` exists,
    /// of a chart that may ask `.Release.IsUpgrade`, runs again after the first with the same
    /// arguments, `--is-upgrade` last and the output in `ROOT.upgrade`; the first run's exit code
    /// is the answer, the second's is left in `ROOT.upgrade-status`. Online without a mirror too.
    #[test]
    fn the_front_renders_the_upgrade_beside_the_install() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        // Fails the install of charts/broken, the upgrade of charts/no-upgrade.
        let (mut tools, log) = recording_helm_then(
            p,
            "case \"$*\" in *charts/broken*) exit 4 ;; \
             *charts/no-upgrade*--is-upgrade*) echo 'Error: no upgrade path' >&2; exit 3 ;; esac\n",
        );
        tools.network = true;
        let dir = p.join("front");
        std::fs::create_dir_all(&dir).unwrap();
        let front = front(&tools, None, false, None, &dir).unwrap().helm;
        let chart = |name: &str, template: &str| {
            let c = p.join("charts").join(name);
            std::fs::create_dir_all(c.join("templates")).unwrap();
            std::fs::write(c.join("Chart.yaml"), format!("name: {name}\n")).unwrap();
            std::fs::write(c.join("templates/t.yaml"), template).unwrap();
        };
        chart("asks", "{{ if .Release.IsUpgrade }}x{{ end }}");
        chart("broken", "{{ .Release.IsInstall }}");
        chart("no-upgrade", "{{ .Release.IsUpgrade }}");
        chart("plain", "kind: ConfigMap");
        chart("vendors", "kind: ConfigMap");
        std::fs::create_dir_all(p.join("charts/vendors/charts")).unwrap();
        std::fs::write(p.join("charts/vendors/charts/sub-1.0.0.tgz"), b"\x1f\x8b").unwrap();
        let root = p.join("render/out");
        let out = |r: &str| root.join("0123abcd").join(format!("apps__{r}"));
        let lines = || -> Vec<String> {
            let l = std::fs::read_to_string(&log).unwrap_or_default();
            std::fs::remove_file(&log).ok();
            l.lines().map(str::to_string).collect()
        };
        let render = |r: &str, joined: bool| {
            let o = out(r).display().to_string();
            let mut a = vec!["template".to_string(), r.to_string(), format!("charts/{r}")];
            if joined {
                a.push(format!("--output-dir={o}"));
            } else {
                a.extend(["--output-dir".to_string(), o]);
            }
            a.extend(["--values".to_string(), "/tmp/helmfile-values.yaml".to_string()]);
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            call(&front, p, &args).0
        };
        let status = |r: &str, ext: &str| {
            std::fs::read_to_string(p.join(format!("render/out.upgrade-status/0123abcd/apps__{r}.{ext}"))).ok()
        };
        let up = |r: &str| {
            p.join("render/out.upgrade/0123abcd")
                .join(format!("apps__{r}"))
                .display()
                .to_string()
        };

        // Not asked (no ROOT.upgrade): one run.
        assert_eq!(render("asks", false), 0);
        assert_eq!(lines().len(), 1);
        for x in ["render/out.upgrade", "render/out.upgrade-status"] {
            std::fs::create_dir_all(p.join(x)).unwrap();
        }
        // Asked, and the chart asks: the same call again, into ROOT.upgrade, --is-upgrade last.
        assert_eq!(render("asks", false), 0);
        let l = lines();
        assert_eq!(l.len(), 2, "{l:?}");
        let o = out("asks").display().to_string();
        // (Without a post-renderer the two run at once: in either order.)
        let twin = format!(
            "template asks charts/asks --output-dir {o} --values /tmp/helmfile-values.yaml --is-upgrade --output-dir {}",
            up("asks")
        );
        assert!(l.contains(&twin), "{l:?}");
        assert!(l.contains(&format!(
            "template asks charts/asks --output-dir {o} --values /tmp/helmfile-values.yaml"
        )));
        assert_eq!(status("asks", "rc").as_deref(), Some("0\n"));
        assert_eq!(render("asks", true), 0);
        let twin = format!(
            "template asks charts/asks --output-dir={o} --values /tmp/helmfile-values.yaml --is-upgrade --output-dir {}",
            up("asks")
        );
        assert!(lines().contains(&twin));
        // A chart that never asks renders once; one that vendors an archive may ask.
        assert_eq!(render("plain", false), 0);
        assert_eq!(lines().len(), 1);
        assert!(status("plain", "rc").is_none());
        assert_eq!(render("vendors", false), 0);
        assert_eq!(lines().len(), 2);
        // The install fails: its exit code, and no upgrade status (the upgrade ran beside it).
        assert_eq!(render("broken", false), 4);
        assert_eq!(lines().len(), 2);
        assert!(status("broken", "rc").is_none());
        // With a post-renderer, one after the other: a failed install, no upgrade render.
        let o = out("broken").display().to_string();
        let args = [
            "template",
            "broken",
            "charts/broken",
            "--output-dir",
            &o,
            "--post-renderer",
            "p",
        ];
        assert_eq!(call(&front, p, &args).0, 4);
        assert_eq!(lines().len(), 1);
        assert!(status("broken", "rc").is_none());
        // The upgrade fails: the install's exit code; the upgrade's code and stderr left beside.
        assert_eq!(render("no-upgrade", false), 0);
        assert_eq!(lines().len(), 2);
        assert_eq!(status("no-upgrade", "rc").as_deref(), Some("3\n"));
        assert_eq!(
            status("no-upgrade", "stderr").as_deref(),
            Some("Error: no upgrade path\n")
        );
        // Another layout (a hook's own `helm template --output-dir`): once.
        assert_eq!(
            call(&front, p, &["template", "x", "charts/asks", "--output-dir", "out"]).0,
            0
        );
        assert_eq!(lines().len(), 1);
    }
}
