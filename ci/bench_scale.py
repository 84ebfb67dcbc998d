"""Scaling table for ci/bench-scale (see there). Standard library only.

Generates one rendered manifest file of N objects (ConfigMaps, Services, Deployments, Certificates
and HTTPRoutes spread over 50 namespaces, every 25th Deployment with a `:latest` image so the run
also produces findings with file:line), runs `nvcf-validate check --manifests FILE --format json`
on it and reports wall time and peak resident memory (from the kernel's rusage of that one child).
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path

BIN = sys.argv[1]
# A path (not a bare command name) is made absolute: the check runs in another directory.
if os.sep in BIN:
    BIN = os.path.abspath(BIN)
SIZES = [int(s) for s in (sys.argv[2:] or ["5000", "20000", "50000"])]
# Extra `check` arguments, e.g. NVCF_BENCH_ARGS="-A schema-valid" to time the run without one rule.
EXTRA = os.environ.get("NVCF_BENCH_ARGS", "").split()


def objects(n: int):
    for i in range(n):
        ns = f"team-{i % 50:02d}"
        kind = i % 5
        if kind == 0:
            yield (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{i}\n  namespace: {ns}\n"
                   f"data:\n  key: value-{i}\n  other: |\n    line one\n    line two\n")
        elif kind == 1:
            yield (f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n  namespace: {ns}\nspec:\n"
                   f"  selector:\n    app: app-{i - 1}\n  ports:\n    - name: http\n      port: 80\n"
                   f"      targetPort: 8080\n")
        elif kind == 2:
            tag = "latest" if i % 125 == 2 else f"1.{i % 7}.0"
            yield (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: {ns}\n"
                   f"spec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: app-{i}\n  template:\n"
                   f"    metadata:\n      labels:\n        app: app-{i}\n    spec:\n      containers:\n"
                   f"        - name: app\n          image: registry.example.com/app:{tag}\n"
                   f"          args: [\"--listen=:8080\"]\n          ports:\n            - containerPort: 8080\n")
        elif kind == 3:
            yield (f"apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: cert-{i}\n"
                   f"  namespace: {ns}\nspec:\n  secretName: cert-{i}-tls\n  dnsNames:\n"
                   f"    - svc-{i}.{ns}.svc\n  usages: [server auth, digital signature, key encipherment]\n"
                   f"  issuerRef:\n    kind: ClusterIssuer\n    name: ca\n")
        else:
            yield (f"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: route-{i}\n"
                   f"  namespace: {ns}\nspec:\n  hostnames: [\"r{i}.example.com\"]\n  rules:\n"
                   f"    - backendRefs:\n        - name: svc-{i - 3}\n          port: 80\n")


def write(path: Path, n: int):
    with path.open("w") as f:
        for doc in objects(n):
            f.write("---\n")
            f.write(doc)


def measure(path: Path, cwd: Path):
    start = time.perf_counter()
    with open(cwd / "out.json", "w") as out, open(cwd / "err.txt", "w") as err:
        p = subprocess.Popen([BIN, "check", "--manifests", str(path), "--format", "json", *EXTRA], cwd=cwd,
                             stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    try:
        report = json.loads((cwd / "out.json").read_text())
        findings = len(report["findings"])
        located = sum(1 for f in report["findings"] if (f.get("source") or {}).get("line"))
        objs = report["summary"]["objects"]
    except (ValueError, KeyError):
        findings = located = objs = -1
    return secs, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, objs, findings, located


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time grows with other load; CPU time less so)")
    print(f"{'objects':>8} {'MB in':>6} {'time s':>8} {'cpu s':>6} {'peak MB':>8} {'exit':>4} {'findings':>8} "
          f"{'with line':>9} {'time x':>7} {'mem x':>6} {'per-object':>10}")
    prev = None
    for n in SIZES:
        f = tmp / f"objects-{n}.yaml"
        write(f, n)
        secs, cpu, mb, code, objs, findings, located = measure(f, tmp)
        growth = f"{secs / prev[1]:6.2f}x {mb / prev[2]:5.2f}x" if prev else f"{'-':>7} {'-':>6}"
        per = f"{secs / n * 1e6:7.1f} us"
        print(f"{n:8} {f.stat().st_size / 1e6:6.1f} {secs:8.2f} {cpu:6.2f} {mb:8.1f} {code:4} {findings:8} {located:9} "
              f"{growth} {per:>10}" + ("" if objs == n else f"  (report counted {objs} objects!)"))
        prev = (n, secs, mb)
    print("(one run each; `time x`/`mem x` = growth over the previous row; linear work grows like the object count)")
