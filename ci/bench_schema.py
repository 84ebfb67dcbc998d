"""Schema-validation cost table for ci/bench-schema (see there). Standard library only.

The synthetic file holds ConfigMaps, Services, Deployments, cert-manager Certificates and Gateway
API HTTPRoutes over 50 namespaces; every 100th Service port has a misspelt `protocl:` so the
rule also produces findings with file:line.
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path

BIN, COST = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SIZES = [int(s) for s in (sys.argv[3:] or ["50000"])]
ROOT = Path(__file__).resolve().parent.parent
CRDS = ROOT / "validator/tests/fixtures/schema/crds"


def objects(n: int):
    for i in range(n):
        ns = f"team-{i % 50:02d}"
        k = i % 5
        if k == 0:
            yield (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{i}\n  namespace: {ns}\n"
                   f"data:\n  key: value-{i}\n")
        elif k == 1:
            proto = "protocl" if i % 100 == 1 else "protocol"
            yield (f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n  namespace: {ns}\nspec:\n"
                   f"  selector:\n    app: app-{i + 1}\n  ports:\n    - name: http\n      port: 80\n"
                   f"      targetPort: 8080\n      {proto}: TCP\n")
        elif k == 2:
            yield (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: {ns}\n"
                   f"spec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: app-{i}\n  template:\n"
                   f"    metadata:\n      labels:\n        app: app-{i}\n    spec:\n      containers:\n"
                   f"        - name: app\n          image: registry.example.com/app:1.{i % 7}.0\n"
                   f"          ports:\n            - containerPort: 8080\n")
        elif k == 3:
            yield (f"apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: cert-{i}\n"
                   f"  namespace: {ns}\nspec:\n  secretName: cert-{i}-tls\n  dnsNames:\n    - svc-{i}.{ns}.svc\n"
                   f"  usages: [server auth, digital signature, key encipherment]\n"
                   f"  issuerRef:\n    kind: ClusterIssuer\n    name: ca\n")
        else:
            yield (f"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: route-{i}\n"
                   f"  namespace: {ns}\nspec:\n  hostnames: [\"r{i}.example.com\"]\n  rules:\n"
                   f"    - backendRefs:\n        - name: svc-{i - 3}\n          port: 80\n")


def measure(args, cwd: Path):
    start = time.perf_counter()
    with open(cwd / "out.json", "w") as out, open(cwd / "err.txt", "w") as err:
        p = subprocess.Popen([BIN, "check", *args, "--format", "json"], cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - start
    try:
        report = json.loads((cwd / "out.json").read_text())
        schema = [f for f in report["findings"] if f["rule"] == "schema-valid"]
        located = sum(1 for f in schema if (f.get("source") or {}).get("line"))
        cov = report["environments"][0].get("schemaCoverage") or {}
        validated = cov.get("validated", 0)
    except (ValueError, KeyError, IndexError):
        schema, located, validated = [], 0, -1
    return secs, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), validated, len(schema), located


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    policy = tmp / "policy.yaml"
    policy.write_text("version: 1\nsettings:\n  crdFiles:\n"
                      f"    - {CRDS / 'cert-manager-subset.yaml'}\n    - {CRDS / 'gateway-api-subset.yaml'}\n")
    empty = tmp / "empty.yaml"
    empty.write_text("version: 1\n")
    print(f"{'objects':>8} {'mode':<28} {'time s':>8} {'peak MB':>8} {'exit':>4} {'validated':>9} "
          f"{'schema findings':>15} {'with line':>9} {'added':>7}")
    for n in SIZES:
        f = tmp / f"objects-{n}.yaml"
        with f.open("w") as out:
            for doc in objects(n):
                out.write("---\n" + doc)
        base = None
        for mode, args in [("schema-valid off (-A)", ["--policy", str(empty), "-A", "schema-valid"]),
                           ("Kubernetes schemas", ["--policy", str(empty)]),
                           ("Kubernetes + CRD files", ["--policy", str(policy)])]:
            secs, mb, code, validated, found, located = measure(["--manifests", str(f), *args], tmp)
            added = "-" if base is None else f"{(secs - base) / base * 100:+5.0f}%"
            base = base or secs
            print(f"{n:8} {mode:<28} {secs:8.2f} {mb:8.1f} {code:4} {validated:9} {found:15} {located:9} {added:>7}")
    print("(one run each; `added` = time over the run with schema-valid off)")
    print()
    print("schema-valid alone (examples/schema-cost), with and without the misspelt ports:")
    for n in SIZES:
        f = tmp / f"objects-{n}.yaml"
        clean = tmp / f"objects-{n}-clean.yaml"
        clean.write_text(f.read_text().replace("protocl:", "protocol:"))
        for label, path in [("with findings", f), ("clean", clean)]:
            for pol in (empty, policy):
                out = subprocess.run([COST, str(path), str(pol)], capture_output=True, text=True, cwd=tmp)
                print(f"{n:8} {label:<14} {'CRD files' if pol == policy else 'Kubernetes only':<16} "
                      f"{(out.stdout or out.stderr).strip()}")
