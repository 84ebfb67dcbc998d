"""Bounded work on hostile numbers and shapes (ci/bounded-work). Standard library only.

Each case is a --manifests input that used to crash, run for minutes or be read whole (a 9 MiB
document, an endless standard input); each must end quickly with
a finding (exit 1) or exit 2. Prints time, peak memory and the outcome; asserts nothing.
"""
import os, subprocess, sys, tempfile, time
from pathlib import Path

BIN = sys.argv[1]
ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "validator/tests/fixtures/pki/fires-san-covers-advertised-name-exact-pod-names.yaml"


def cases():
    sts = FIX.read_text()
    yield "replicas 50,000", sts.replace("replicas: 3", "replicas: 50000")
    yield "replicas 5,000,000", sts.replace("replicas: 3", "replicas: 5000000")
    yield "replicas 2^31-1", sts.replace("replicas: 3", "replicas: 2147483647")
    yield "replicas 2^63-1", sts.replace("replicas: 3", "replicas: 9223372036854775807")
    yield "200,000-deep flow", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: " + "[" * 200_000 + "\n"
    yield "200,000-deep block", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  " + "- " * 200_000 + "x\n"
    yield "billion laughs", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]\n" for i in range(1, 12))
    yield "1 MB string aliased 100x", "a: &a \"" + "x" * (1 << 20) + "\"\nb: [" + "*a, " * 100 + "]\n"
    yield "9 MiB document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  k: \"" + "x" * (9 << 20) + "\"\n"


def endless_stdin(tmp):
    """`--manifests -` fed without end (as a 10 GB stream would be): it must stop at 512 MiB."""
    start = time.perf_counter()
    with open(tmp / "err.txt", "w") as err:
        p = subprocess.Popen([BIN, "check", "--manifests", "-", "--format", "json"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
        chunk = b"# padding\n" * 6554
        sent = 0
        try:
            while sent < (10 << 30):
                p.stdin.write(chunk)
                sent += len(chunk)
        except BrokenPipeError:
            pass
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        _, status, ru = os.wait4(p.pid, 0)
    secs = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    outcome = (tmp / "err.txt").read_text().strip().splitlines()
    outcome = (outcome[-1][:80] if outcome else "") + f" ({sent >> 20} MiB written)"
    return secs, ru, code, outcome


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    print(f"{'case':24} {'KB':>7} {'time s':>7} {'cpu s':>6} {'peak MB':>8} {'exit':>4}  outcome")
    for name, text in cases():
        f = tmp / "m.yaml"
        f.write_text(text)
        start = time.perf_counter()
        with open(tmp / "out.json", "w") as out, open(tmp / "err.txt", "w") as err:
            p = subprocess.Popen([BIN, "check", "--manifests", str(f), "--format", "json"], stdout=out, stderr=err)
            _, status, ru = os.wait4(p.pid, 0)
        secs = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        outcome = (tmp / "err.txt").read_text().strip().splitlines()
        outcome = outcome[-1][:110] if outcome else ""
        print(f"{name:24} {len(text) / 1024:7.0f} {secs:7.3f} {ru.ru_utime + ru.ru_stime:6.3f} {ru.ru_maxrss / 1024:8.1f} {code:4}  {outcome}")
    secs, ru, code, outcome = endless_stdin(tmp)
    print(f"{'endless stdin':24} {'-':>7} {secs:7.3f} {ru.ru_utime + ru.ru_stime:6.3f} {ru.ru_maxrss / 1024:8.1f} {code:4}  {outcome}")
    print("(each must end in exit 1 with a finding or exit 2, never 101/134; wall time includes other load)")
