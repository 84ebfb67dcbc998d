"""Feed every report ci/consumers/check wrote to its real consumers, and fail on any complaint.

Layout of OUT: one directory per case, holding `report.<format>` for each of the six formats
and `code` (the exit code of the run). Consumers (installed by ci/consumers/setup, pinned):
  SARIF    @microsoft/sarif-multitool validate, with the SARIF 2.1.0 schema it ships and the
           GitHub rule set (--rule-kind "Sarif;Gh"); plus GitHub's own URI and size limits
  JUnit    lxml (libxml2) against the Jenkins xunit-plugin junit-10.xsd; junitparser
  Markdown cmarkgfm (GitHub's cmark-gfm) with raw HTML let through, then lxml's HTML parser
  JSON     the report's own contract fields (the schema itself is checked by the Rust tests)
  GitHub   the workflow-command shape of every line
"""

import json
import os
import re
import subprocess
import sys

import cmarkgfm
import junitparser
import lxml.etree
import lxml.html
from cmarkgfm.cmark import Options

SARIF_MAX_RESULTS = 25_000
COMMENT_LIMIT = 65_536
BAD_ELEMENTS = {"script", "img", "iframe", "style", "object", "embed", "svg", "form", "input", "a"}

failures = []


def fail(case, fmt, msg):
    failures.append(f"{case}/{fmt}: {msg}")


def read(case_dir, fmt):
    path = os.path.join(case_dir, f"report.{fmt}")
    if not os.path.exists(path):
        fail(os.path.basename(case_dir), fmt, "no report written")
        return None
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def check_sarif_uris(case, sarif, code):
    run = sarif["runs"][0]
    results = run.get("results", [])
    if len(results) > SARIF_MAX_RESULTS:
        fail(case, "sarif", f"{len(results)} results, above GitHub's {SARIF_MAX_RESULTS}")
    inv = run["invocations"][0]
    if inv["executionSuccessful"] != (code != 2) and not any(
        n["level"] == "error" for n in inv.get("toolExecutionNotifications", [])
    ):
        fail(case, "sarif", f"executionSuccessful={inv['executionSuccessful']} for exit {code}")
    if code == 2 and inv["executionSuccessful"]:
        fail(case, "sarif", "exit 2 but executionSuccessful is true")
    for r in results:
        for loc in r.get("locations", []):
            art = loc.get("physicalLocation", {}).get("artifactLocation")
            if not art:
                continue
            uri = art["uri"]
            # GitHub runs decodeURIComponent on URIs: every % must start a valid UTF-8 escape.
            if re.search(r"%(?![0-9A-Fa-f]{2})", uri):
                fail(case, "sarif", f"bare % in uri {uri!r}")
            try:
                bytes.fromhex("".join(re.findall(r"%([0-9A-Fa-f]{2})", uri)))
                re.sub(r"(%[0-9A-Fa-f]{2})+", lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8"), uri)
            except UnicodeDecodeError:
                fail(case, "sarif", f"uri {uri!r} does not decode as UTF-8")
            if re.search(r"[\s<>\"`{}|\\^]", uri) or any(ord(c) > 0x7E for c in uri):
                fail(case, "sarif", f"unencoded character in uri {uri!r}")
            if "uriBaseId" in art:
                if uri.startswith("/") or ":" in uri.split("/")[0]:
                    fail(case, "sarif", f"uri {uri!r} with a uriBaseId is not relative")
            elif not uri.startswith("file:///"):
                fail(case, "sarif", f"uri {uri!r} is neither relative to a base nor a file:// URI")
        if "partialFingerprints" not in r:
            fail(case, "sarif", "a result has no partialFingerprints")


def check_junit(case, text, code, summary, schema):
    try:
        doc = lxml.etree.fromstring(text.encode("utf-8"))
    except lxml.etree.XMLSyntaxError as e:
        fail(case, "junit", f"not well-formed XML: {e}")
        return
    if not schema.validate(doc):
        for err in list(schema.error_log)[:5]:
            fail(case, "junit", f"junit-10.xsd: line {err.line}: {err.message}")
    # junit-4.xsd (Jenkins) has no `skipped` attribute on <testsuites>, no attributes on <skipped>.
    if doc.get("skipped") is not None:
        fail(case, "junit", "<testsuites skipped=…> (junit-4.xsd rejects it)")
    if doc.xpath("//skipped[@*]"):
        fail(case, "junit", "<skipped> with attributes (junit-4.xsd rejects them)")
    path = os.path.join(OUT, case, "report.junit")
    xml = junitparser.JUnitXml.fromfile(path)
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    failed = sum(s.failures for s in suites)
    errors = sum(s.errors for s in suites)
    cases_failed = sum(1 for s in suites for c in s if any(isinstance(r, junitparser.Failure) for r in c.result))
    if cases_failed != failed:
        fail(case, "junit", f"suites count {failed} failures, the cases hold {cases_failed}")
    if code == 1 and failed < 1:
        fail(case, "junit", "exit 1 but no failure: a JUnit consumer would report success")
    if code == 0 and failed:
        fail(case, "junit", f"exit 0 but {failed} failures")
    if code == 2 and errors < 1:
        fail(case, "junit", "exit 2 but no <error>")
    if summary is not None and code != 2 and failed != summary["errors"]:
        fail(case, "junit", f"{failed} failures for {summary['errors']} error findings")


def check_markdown(case, text, code, report):
    if len(text.encode("utf-16-le")) // 2 > COMMENT_LIMIT:
        fail(case, "markdown", f"{len(text)} characters, above GitHub's {COMMENT_LIMIT}")
    html = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    tree = lxml.html.fromstring(f"<div>{html}</div>")
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag in BAD_ELEMENTS:
            fail(case, "markdown", f"live <{el.tag}> element: {lxml.html.tostring(el)[:120]!r}")
        for attr in el.attrib:
            if attr.lower().startswith("on"):
                fail(case, "markdown", f"event handler attribute {attr} on <{el.tag}>")
    rows = tree.xpath("(//table)[1]/tbody/tr")
    findings = report["findings"] if report else []
    more = re.search(r"\*\*(\d+) more\*\* — see the SARIF/JSON artifact", text)
    shown = len(findings) - (int(more.group(1)) if more else 0)
    if findings and len(rows) != shown:
        fail(case, "markdown", f"{len(rows)} table rows for {shown} findings shown (of {len(findings)})")
    for tr in rows:
        if len(tr.findall("td")) != 6:
            fail(case, "markdown", f"a row with {len(tr.findall('td'))} cells: {lxml.html.tostring(tr)[:200]!r}")
            break
    # Every finding shown keeps its rule in a code span.
    for tr, f in zip(rows, sorted(findings, key=lambda f: (f["waived"] is not None, {"error": 0, "warning": 1, "note": 2}[f["severity"]]))):
        code_el = tr.find("td[2]/code")
        if code_el is None or code_el.text != f["rule"]:
            fail(case, "markdown", f"rule cell {lxml.html.tostring(tr.find('td[2]'))!r} is not `{f['rule']}`")
            break
    if code == 2 and "could not validate" not in text:
        fail(case, "markdown", "exit 2 without a failure banner")


def check_github(case, text, code):
    lines = text.splitlines()
    if code == 2 and not (lines and lines[0].startswith("::error ")):
        fail(case, "github", "exit 2 without an ::error:: line first")
    for line in lines:
        if line.startswith("::"):
            m = re.match(r"^::(error|warning|notice)( [^:]*)?::", line)
            if not m:
                fail(case, "github", f"malformed workflow command {line[:120]!r}")
        elif not line.startswith("nvcf-validate: "):
            fail(case, "github", f"a line that is neither a command nor the summary: {line[:120]!r}")


def main():
    global OUT
    OUT, schema_path, multitool, sarif_schema = sys.argv[1:5]
    schema = lxml.etree.XMLSchema(lxml.etree.parse(schema_path))
    cases = sorted(d for d in os.listdir(OUT) if os.path.isfile(os.path.join(OUT, d, "code")))
    sarifs = []
    for case in cases:
        d = os.path.join(OUT, case)
        code = int(open(os.path.join(d, "code")).read().split()[0])
        texts = {f: read(d, f) for f in ("json", "sarif", "junit", "markdown", "github", "human")}
        report = None
        if texts["json"] is not None:
            report = json.loads(texts["json"])
            if (code == 2) != bool(report.get("errors")):
                fail(case, "json", f"exit {code} but errors={report.get('errors')!r}")
        if texts["sarif"] is not None:
            check_sarif_uris(case, json.loads(texts["sarif"]), code)
            sarifs.append(os.path.join(d, "report.sarif"))
        if texts["junit"] is not None:
            check_junit(case, texts["junit"], code, report.get("summary") if report else None, schema)
        if texts["markdown"] is not None:
            check_markdown(case, texts["markdown"], code, report)
        if texts["github"] is not None:
            check_github(case, texts["github"], code)
        if texts["human"] is not None and code == 2 and "could not validate" not in texts["human"]:
            fail(case, "human", "exit 2 without a failure banner")
        print(f"checked {case}: exit {code}, {len(report['findings']) if report else '?'} findings")
    # One multitool run over every SARIF file, with the schema from the package and GitHub's rules.
    log = os.path.join(OUT, "multitool.sarif")
    if os.path.exists(log):
        os.remove(log)
    p = subprocess.run(
        [multitool, "validate", "--json-schema", sarif_schema, "--rule-kind", "Sarif;Gh",
         "--max-file-size-in-kb", "100000", "--output", log, *sarifs],
        capture_output=True, text=True,
    )
    if p.returncode != 0 or not os.path.exists(log):
        fail("*", "sarif", f"sarif-multitool exited {p.returncode}:\n{p.stdout}{p.stderr}")
    else:
        for run in json.load(open(log))["runs"]:
            for r in run.get("results", []):
                if r.get("level", "warning") in ("error", "warning"):
                    where = r.get("locations", [{}])[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri", "?")
                    msg = r["message"].get("text") or " ".join(r["message"].get("arguments", []))
                    fail(where.rsplit("/", 2)[-2] if "/" in where else where, "sarif", f"{r['ruleId']} ({r.get('level', 'warning')}): {msg}")
            for n in run.get("invocations", [{}])[0].get("toolExecutionNotifications", []):
                if n.get("level") == "error":
                    fail("*", "sarif", f"sarif-multitool: {n['message'].get('text')}")
    print(f"sarif-multitool validate: {len(sarifs)} files")
    if failures:
        print(f"\n{len(failures)} consumer complaint(s):", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        sys.exit(1)
    print(f"every report of {len(cases)} cases accepted by its consumers")


if __name__ == "__main__":
    main()
