"""Helpers of ci/corpus (standard library only): the counting loopback proxy, file snapshots,
strace digests and the per-state verdict. ci/corpus runs the tools; this only observes and judges.

  corpus.py proxy LOG PORTFILE        listen on 127.0.0.1 (a free port, written to PORTFILE), log the
                                      first line of every connection to LOG, answer 502, close
  corpus.py snap OUT PATH...          write a snapshot (path -> size, mtime, kind) of each PATH
  corpus.py diff BEFORE AFTER         print the paths added, changed or removed between two snapshots
  corpus.py envs STATE                environment names a state declares (a text scan; -e fallback only)
  corpus.py row RUNDIR                judge one run (files ci/corpus left in RUNDIR), print its row and
                                      append it as JSON to RUNDIR/../../results.jsonl
  corpus.py table RESULTS             print the result table and the count per class
  corpus.py rejudge OUT               judge every run of an --out directory again
  corpus.py failed-envs RUNDIR        environments the gate's exit-2 message names
"""
import ipaddress
import json
import os
import re
import socket
import sys
import threading
from collections import Counter
from pathlib import Path

CAP = 110  # characters of a message echoed into the table


def proxy(log, portfile):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    lock = threading.Lock()

    def serve(conn):
        conn.settimeout(2)
        first = b""
        try:
            while b"\n" not in first and len(first) < 2048:
                chunk = conn.recv(512)
                if not chunk:
                    break
                first += chunk
        except OSError:
            pass
        line = first.split(b"\n", 1)[0].strip().decode("latin-1")[:200] or "(no request line)"
        with lock, open(log, "a") as f:
            f.write(line + "\n")
        try:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        conn.close()

    Path(log).touch()
    tmp = portfile + ".tmp"
    Path(tmp).write_text(str(srv.getsockname()[1]))
    os.rename(tmp, portfile)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def snap(out, paths):
    entries = {}
    for top in paths:
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                kind = "d" if name in dirnames and not os.path.islink(p) else "f"
                # a directory's mtime changes when an entry comes or goes, which the entries show
                entries[p] = [kind, 0 if kind == "d" else st.st_size, 0 if kind == "d" else st.st_mtime_ns]
    Path(out).write_text(json.dumps(entries))


def diff(before, after):
    a = json.loads(Path(before).read_text())
    b = json.loads(Path(after).read_text())
    for p in sorted(set(a) | set(b)):
        if p not in a:
            print("added " + p)
        elif p not in b:
            print("removed " + p)
        elif a[p] != b[p]:
            print("changed " + p)


def entry_files(state):
    s = Path(state)
    if s.is_file():
        return [s]
    for name in ("helmfile.yaml", "helmfile.yaml.gotmpl"):
        if (s / name).is_file():
            return [s / name]
    d = s / "helmfile.d" if (s / "helmfile.d").is_dir() else s
    return sorted(p for p in d.iterdir() if p.is_file() and re.search(r"\.(ya?ml|gotmpl)$", p.name))


def envs(state):
    names = []
    for f in entry_files(state):
        inside = False
        for line in f.read_text(errors="replace").splitlines():
            if re.match(r"^environments:\s*$", line):
                inside = True
                continue
            if inside and re.match(r"^\S", line) and not line.startswith("{{"):
                inside = False
            m = re.match(r"^  ([A-Za-z0-9_.-]+):\s*(#.*)?$", line) if inside else None
            if m and m.group(1) not in names:
                names.append(m.group(1))
    print("\n".join(names))


LOOPBACK = ("127.", "::1", "::ffff:127.")
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")


def strace_digest(path, cwd, allowed):
    """(outbound destinations, paths written outside `allowed`) from `strace -ff -y -o DIR/t`."""
    out, writes = [], []
    files = sorted(path.glob("t.*")) if path.is_dir() else []
    lines = (l for f in files for l in f.read_text(errors="replace").splitlines())
    for line in lines:
        m = re.search(r"connect\(\d+(<[^>]*>)?, \{sa_family=(AF_INET6?), (.*?)\}, \d+\) = (.*)", line)
        if m:
            port = re.search(r"sin6?_port=htons\((\d+)\)", m.group(3))
            addr = re.search(r'inet_(?:addr|pton)\((?:AF_INET6, )?"([^"]+)"', m.group(3))
            host = addr.group(1) if addr else "?"
            if not host.startswith(LOOPBACK):
                out.append(f"{host}:{port.group(1) if port else '?'}")
            continue
        if re.search(r"\) += -1 ", line):
            continue
        target = None
        m = re.search(r'\b(openat|open|creat)\((?:[^,]*, )?"([^"]*)", ([A-Z_|]+)?.*\) = \d+(?:<([^>]*)>)?', line)
        if m:
            flags = m.group(3) or ""
            if m.group(1) == "creat" or any(f in flags for f in WRITE_FLAGS):
                target = m.group(4) or m.group(2)
        else:
            m = re.search(r'\b(mkdirat|mkdir|unlinkat|unlink|rmdir|symlinkat|symlink|linkat|link|renameat2|renameat|rename)\((.*)\) = 0', line)
            if m:
                args = m.group(2)
                dirs = re.findall(r"AT_FDCWD<([^>]*)>|\d+<([^>]*)>", args)
                strs = re.findall(r'"([^"]*)"', args)
                if strs:
                    base = next((a or b for a, b in dirs[-1:]), None) if dirs else None
                    target = os.path.join(base or cwd, strs[-1])
        if target is None:
            continue
        target = os.path.normpath(target if os.path.isabs(target) else os.path.join(cwd, target))
        if not any(target == a or target.startswith(a.rstrip("/") + "/") for a in allowed):
            writes.append(target)
    return out, writes


NOISE = re.compile(r"^(WARNING|hook\[|Pulling |Adding repo|Building dependency|Comparing |Templating |"
                   r"Affected releases|ERROR:$|\(|skipping missing)")


def first_error(text):
    """helmfile's own top-level error line (`in FILE: ...`, `err: ...`), else the first line that
    reads like an error."""
    lines = [l.strip() for l in text.splitlines() if l.strip() and not NOISE.match(l.strip())]
    for l in lines:
        if re.match(r"(in \S+: |err: |Error: )", l):
            return redact(l)
    for l in lines:
        if re.search(r"err|fail|panic|cannot|not found|no such|conflict", l, re.I):
            return redact(l)
    return redact(lines[0]) if lines else ""


def validator_cause(text):
    """The first line of an exit-2 message below the validator's own headers."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    rest = [l for l in lines if not NOISE.match(l) and not re.match(
        r"(nvcf-validate: could not validate|environment \S+: \S+: helmfile could not load or render|"
        r"helmfile build of .* failed|Decrypting secret)", l)]
    return redact((rest or lines or [""])[0])


def redact(s, cap=CAP):
    s = re.sub(r"(://)[^/@\s]+@", r"\1***@", s)
    s = s.replace("|", "\\|")
    return s if len(s) <= cap else s[: cap - 1] + "…"


def raw_dump(text):
    """helmfile's argument dump of a failed command, or the tail of a Go panic's stack trace."""
    return bool(re.search(r"\(\d+ bytes\)|^\s*ARGS:\s*$|exited with non-zero status|\.go:\d+ \+0x[0-9a-f]+$|"
                          r"^\s*goroutine \d+ \[", text, re.M))


def cause_tokens(err):
    """Words in helmfile's error a message naming the same cause would repeat."""
    toks = set(re.findall(r'"([^"]{3,})"', err))
    toks |= set(re.findall(r"\b[A-Z][A-Z0-9_]{3,}\b", err))
    toks |= {t.rstrip(":,.") for t in re.findall(r"[\w./-]+\.(?:ya?ml|gotmpl|tgz)\b", err)}
    return {t for t in toks if t not in {"ERROR", "STDERR", "PATH", "ARGS", "EXIT", "STATUS", "WARNING"}}


def read(p):
    return p.read_text(errors="replace") if p.exists() else ""


def failed_envs(d):
    """Environments an exit-2 message says could not be judged (`environment NAME: ...` lines)."""
    names = []
    for m in re.finditer(r"^environment (\S+): ", read(Path(d) / "v.err"), re.M):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def release_key(r):
    return (r.get("namespace") or "", r.get("name") or "")


def row(rundir):
    d = Path(rundir)
    meta = json.loads((d / "meta.json").read_text())
    v_rc, h_rc = int(read(d / "v.rc") or 255), int(read(d / "h.rc") or 255)
    v_err, h_err = read(d / "v.err"), read(d / "h.err")
    embed_rc = int(read(d / "h-embed.rc") or 0)
    embed_err = read(d / "h-embed.err")
    allowed = [str(d), "/dev", "/proc"]
    v_net, v_writes = strace_digest(d / "v.strace", meta["cwd"], allowed)
    h_net, h_writes = strace_digest(d / "h.strace", meta["cwd"], allowed)
    v_net += [f"proxy: {l}" for l in read(d / "v.proxy").splitlines()]
    h_net += [f"proxy: {l}" for l in read(d / "h.proxy").splitlines()]
    v_writes = sorted(set(v_writes) | {l.split(" ", 1)[1] for l in read(d / "v.writes").splitlines()})
    h_writes = sorted(set(h_writes) | {l.split(" ", 1)[1] for l in read(d / "h.writes").splitlines()})
    report = None
    try:
        report = json.loads(read(d / "v.json"))
    except ValueError:
        pass
    envs_judged, rendered, not_rendered, findings = [], 0, 0, Counter()
    reported = {}
    if isinstance(report, dict):
        for e in report.get("environments") or []:
            envs_judged.append(e.get("name"))
            for r in e.get("releases") or []:
                reported.setdefault(e.get("name"), set()).add(release_key(r))
                if r.get("rendered"):
                    rendered += 1
                else:
                    not_rendered += 1
        for f in report.get("findings") or []:
            findings[f.get("rule")] += 1
    # releases helmfile lists (installed ones) that the report lacks, and the reverse
    missing, extra = [], []
    for lf in sorted(d.glob("list-*.json")):
        env = lf.name[len("list-"):-len(".json")]
        try:
            listed = json.loads(lf.read_text() or "[]") or []
        except ValueError:
            continue
        want = {release_key(r) for r in listed if str(r.get("installed", True)).lower() != "false"}
        have = reported.get(env, set())
        for ns, name in sorted(want):
            if (ns, name) in have or (ns == "" and any(n == name for _, n in have)):
                continue
            missing.append(f"{env}:{ns or '?'}/{name}")
        for ns, name in sorted(have):
            if (ns, name) in want or any(n == name and w == "" for w, n in want):
                continue
            extra.append(f"{env}:{ns}/{name}")
    uncompared = sorted(e.name[len("list-"):-len(".err")] for e in d.glob("list-*.err")
                        if not (d / (e.name[:-len(".err")] + ".json")).exists())
    main_ok = h_rc == 0 and embed_rc == 0
    # the baseline of each environment the gate failed on: the build above for the environment it
    # ran (`-e` or default), `build --embed-values` for the others
    main_env = meta["env"] or "default"
    baselines = {main_env: main_ok}
    for rc in d.glob("h-env-*.rc"):
        e = rc.name[len("h-env-"):-len(".rc")]
        baselines[e] = int(read(rc) or 1) == 0
        h_err += "\n" + read(d / f"h-env-{e}.err")
    failed = failed_envs(d) if v_rc == 2 else []
    if failed:
        judged_by = [e for e in failed if e in baselines]
        helmfile_ok = any(baselines[e] for e in judged_by) if judged_by else main_ok
        builds_ok = [e for e in judged_by if baselines[e]]
    else:
        helmfile_ok, builds_ok = main_ok, []
    others = {e: ok for e, ok in baselines.items() if e != main_env}
    msg = validator_cause(v_err) if v_rc not in (0, 1) else ""
    defects = []
    if v_rc == 124 or v_rc == 137:
        slow = " (plain helmfile build exceeds it too: try a longer --timeout)" if h_rc == 124 else ""
        defects.append(f"hang: killed after {meta['timeout']} s{slow}")
    elif re.search(r"panicked at|RUST_BACKTRACE", v_err) or v_rc == 101 or v_rc > 128:
        defects.append(f"panic/crash (exit {v_rc})")
    elif v_rc not in (0, 1, 2):
        defects.append(f"exit {v_rc}")
    if v_rc in (0, 1) and report is None:
        defects.append("exit 0/1 without a JSON report")
    if v_net:
        defects.append(f"{len(v_net)} outbound attempt(s): {', '.join(sorted(set(v_net))[:3])}")
    if v_writes:
        defects.append(f"{len(v_writes)} write(s) outside the scratch dir: {', '.join(v_writes[:2])}")
    if missing:
        defects.append(f"{len(missing)} listed release(s) missing from the report: {', '.join(missing[:3])}")
    if extra:
        defects.append(f"{len(extra)} reported release(s) helmfile does not list: {', '.join(extra[:3])}")
    if v_rc in (0, 1) and not helmfile_ok and not h_net and "release-one-owner" not in findings:
        # plain helmfile refuses the state for a reason other than the seal (it reached for no
        # network), yet the gate judged something: it loaded a different stack than helmfile would
        defects.append("helmfile refuses the state (not for the network), the gate judges it")
    if v_rc == 2 and re.search(r"assertion failed|\bhelm (fetch|pull)\b|chartify", v_err):
        defects.append("an offline chart fetch is not answered: helmfile's own failure")
    if v_rc == 2:
        if raw_dump(v_err):
            defects.append("exit 2 message is helmfile's argument dump or stack trace")
        if helmfile_ok:
            on = f" environment {', '.join(builds_ok)}" if builds_ok else ""
            defects.append(f"helmfile builds{on}, validator exits 2")
        elif not raw_dump(v_err):
            toks = cause_tokens(h_err + "\n" + embed_err)
            state_names = {Path(meta["state"]).name, meta["state_rel"]}
            named = any(t in v_err for t in toks | state_names if t)
            if not v_err.strip():
                defects.append("exit 2 with no message")
            elif not named:
                defects.append("exit 2 message names neither the state nor helmfile's cause")
    if defects:
        klass = "gate-defect"
    elif v_rc in (0, 1):
        klass = "judged"
    else:
        klass = "fair-fail"
    res = {
        "n": meta["n"],
        "state": meta["state_rel"],
        "env": meta["env"] or "",
        "helmfile": ("ok" if main_ok
                     else "timeout" if 124 in (h_rc, embed_rc)
                     else f"fail: {first_error(read(d / 'h.err'))}" if h_rc
                     else f"ok; --embed-values fail: {first_error(embed_err)}")
                    + "".join(f"; -e {e} --embed-values {'ok' if ok else 'fail'}" for e, ok in sorted(others.items())),
        "helmfile_net": len(h_net),
        "helmfile_writes": len(h_writes),
        "exit": v_rc,
        "envs": envs_judged,
        "rendered": rendered,
        "not_rendered": not_rendered,
        "findings": dict(findings.most_common()),
        "outbound": len(v_net),
        "writes": len(v_writes),
        "class": klass,
        "defects": defects,
        "message": msg or (f"releases not compared: `helmfile list` fails sealed for {', '.join(uncompared)}"
                            if uncompared else ""),
        "seconds": meta.get("seconds"),
    }
    with open(d.parent.parent / "results.jsonl", "a") as f:
        f.write(json.dumps(res) + "\n")
    print(fmt(res), flush=True)


HEADER = ("| # | state | -e | helmfile build (net/writes) | exit | envs | rendered/not | findings | "
          "out | writes | class | note |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def fmt(r):
    find = ", ".join(f"{k}×{v}" for k, v in r["findings"].items()) or "-"
    envs = f"{len(r['envs'])}" + (f" ({','.join(r['envs'][:3])}{'…' if len(r['envs']) > 3 else ''})" if r["envs"] else "")
    note = "; ".join(r["defects"]) or r["message"]
    hf = r["helmfile"] + (f" ({r['helmfile_net']}/{r['helmfile_writes']})" if r["helmfile_net"] or r["helmfile_writes"] else "")
    return (f"| {r['n']} | {r['state']} | {r['env'] or '-'} | {hf} | {r['exit']} | {envs} | "
            f"{r['rendered']}/{r['not_rendered']} | {find} | {r['outbound']} | {r['writes']} | "
            f"{r['class']} | {redact(note, 240) if note else ''} |")


def table(results):
    rows = [json.loads(l) for l in Path(results).read_text().splitlines() if l.strip()]
    print(HEADER)
    for r in rows:
        print(fmt(r))
    c = Counter(r["class"] for r in rows)
    print()
    print(f"{len(rows)} runs: " + ", ".join(f"{k} {c[k]}" for k in ("judged", "fair-fail", "gate-defect")))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "proxy":
        proxy(*args)
    elif cmd == "snap":
        snap(args[0], args[1:])
    elif cmd == "diff":
        diff(*args)
    elif cmd == "envs":
        envs(*args)
    elif cmd == "row":
        row(*args)
    elif cmd == "failed-envs":
        print("\n".join(failed_envs(args[0])))
    elif cmd == "rejudge":  # judge every run of an --out directory again (after a change here)
        out = Path(args[0])
        (out / "results.jsonl").write_text("")
        for r in sorted((out / "runs").iterdir()):
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null
                try:
                    row(r)
                finally:
                    sys.stdout = saved
        table(out / "results.jsonl")
    elif cmd == "header":
        print(HEADER)
    elif cmd == "table":
        table(*args)
    else:
        sys.exit(f"corpus.py: unknown command {cmd}")
