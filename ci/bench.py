"""Benchmark driver for ci/bench (see there). Standard library only."""
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

BIN, RUNS = sys.argv[1], int(sys.argv[2])
# A path (not a bare command name) is made absolute: the rows run in other directories.
if os.sep in BIN:
    BIN = os.path.abspath(BIN)
ROOT = Path(__file__).resolve().parent.parent


def timed(cmd, cwd, env):
    """Wall seconds of one command."""
    return run_timed(cmd, cwd, env)[0]


def run_timed(cmd, cwd, env):
    """(wall seconds, CPU seconds) of one command: CPU is user+sys of its whole process tree
    (getrusage of the reaped children), which a busy machine inflates far less than wall time."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def median_of(runs, f):
    """Medians of wall and CPU over `runs` calls of f() -> (wall, cpu)."""
    got = [f() for _ in range(runs)]
    return statistics.median(w for w, _ in got), statistics.median(c for _, c in got)


def synthetic(dest: Path) -> Path:
    """40 local releases over 4 charts, 2 environments."""
    for c in range(1, 5):
        t = dest / f"charts/svc{c}/templates"
        t.mkdir(parents=True)
        (dest / f"charts/svc{c}/Chart.yaml").write_text(f"apiVersion: v2\nname: svc{c}\nversion: 0.1.0\n")
        (dest / f"charts/svc{c}/values.yaml").write_text(f"replicas: 1\nimage: registry.example.com/svc:1.0.{c}\n")
        (t / "deployment.yaml").write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n"
            "  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n"
            "  template:\n    metadata: {labels: {app: {{ .Release.Name }}}}\n    spec:\n      containers:\n"
            "        - name: app\n          image: {{ .Values.image }}\n")
        (t / "service.yaml").write_text(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n"
            "  selector: {app: {{ .Release.Name }}}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n")
    rel = "".join(f"  - name: svc-{i:02d}\n    namespace: ns{i % 5}\n    chart: ./charts/svc{i % 4 + 1}\n" for i in range(1, 41))
    (dest / "helmfile.yaml").write_text("environments:\n  default: {}\n  prod: {}\n---\nreleases:\n" + rel)
    return dest / "helmfile.yaml"


def bench(name, state: Path, exclude, env, only=None):
    cwd = state.parent
    sel_env = ["--environment", only] if only else []
    out = subprocess.run([BIN, "check", "--file", str(state), *sel_env, "--offline", "--no-cache", "--format", "json"],
                         cwd=cwd, env=env, capture_output=True, text=True)
    try:
        envs = [e["name"] for e in json.loads(out.stdout)["environments"]]
    except ValueError:
        print(f"{name:24} could not be validated: {out.stderr.strip()[:300]}")
        return
    sel = ["--selector", ",".join(f"name!={n}" for n in exclude)] if exclude else []
    plain_cmds = [["helmfile", "--file", str(state), "--environment", e, *sel, "template", "--skip-deps"] for e in envs]
    def plain_once():
        t = [run_timed(c, cwd, env) for c in plain_cmds]
        return sum(w for w, _ in t), sum(c for _, c in t)

    plain, plain_cpu = median_of(RUNS, plain_once)
    check = [BIN, "check", "--file", str(state), *sel_env, "--offline"]
    cold, cold_cpu = median_of(RUNS, lambda: run_timed(check + ["--no-cache"], cwd, env))
    timed(check, cwd, env)
    warm = statistics.median(timed(check, cwd, env) for _ in range(RUNS))
    print(f"{name:24} {len(envs):4} {plain:10.3f} {cold:10.3f} {warm:10.3f} {cold / plain:8.2f}x {warm / plain:8.2f}x"
          f" {plain_cpu:8.2f} {cold_cpu:8.2f} {cold_cpu / plain_cpu:8.2f}x")


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, XDG_CACHE_HOME=str(Path(tmp) / "cache"))
    print(f"{'stack':24} {'envs':4} {'template s':>10} {'cold s':>10} {'warm s':>10} {'cold/tpl':>9} {'warm/tpl':>9}"
          f" {'tpl cpu':>8} {'cold cpu':>8} {'cpu ratio':>9}")
    # Remote releases cannot be fetched here: the plain render leaves them out as `--offline` does.
    remote = [r["name"] for e in json.loads(subprocess.run(
        [BIN, "check", "--file", str(ROOT / "helmfile.yaml"), "--offline", "--format", "json"],
        capture_output=True, text=True, env=env).stdout or '{"environments": []}')["environments"]
        for r in e["releases"] if not r["rendered"]]
    bench("this repository", ROOT / "helmfile.yaml", sorted(set(remote)), env)
    bench("  split-cluster only", ROOT / "helmfile.yaml", sorted(set(remote)), env, only="split-cluster")
    # The upgrade render's cost: a copy of this stack where one release's chart (request-router)
    # mentions .Release.IsUpgrade, so every environment renders that release again with --is-upgrade.
    up = Path(tmp) / "upgrade"
    up.mkdir()
    for f in ["helmfile.yaml", "charts.lock.yaml", "validator-policy.yaml", "upstreams.yaml"]:
        shutil.copy(ROOT / f, up / f)
    for d in ["charts", "values", "ci", "examples"]:
        shutil.copytree(ROOT / d, up / d)
    os.symlink(ROOT / ".tools", up / ".tools")
    svc = up / "charts/request-router/templates/service.yaml"
    svc.write_text("{{/* .Release.IsUpgrade */}}\n" + svc.read_text())
    bench("  + upgrade render", up / "helmfile.yaml", sorted(set(remote)), env)
    syn = Path(tmp) / "synthetic"
    syn.mkdir()
    bench("synthetic 40 releases", synthetic(syn), [], env)
    print(f"(median of {RUNS} runs; template = plain `helmfile template` of every environment, one after another;"
          " `s` columns are wall seconds, `cpu` columns user+sys seconds of the whole process tree)")
