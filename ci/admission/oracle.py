#!/usr/bin/env python3
"""The second CEL engine of the admission differential test.

Reads the cases validator/src/rules/admission_tests.rs exports (the rendered policies' variables
and validations, each object of the gate's fixture corpus, and the Rust `cel` crate's verdict),
evaluates them with cel-python (celpy, whose `matches` is google-re2, the API server's engine), and
exits 1 naming every case where the two engines disagree.

As the API server evaluates a ValidatingAdmissionPolicy (failurePolicy: Fail): variables in order,
each seeing `object` and the earlier `variables`; the object is admitted only when every validation
is `true`; false, an error or a non-boolean denies.

usage: PYTHONPATH=.tools/python python3 ci/admission/oracle.py CASES.json
"""
import json
import sys

import celpy
from celpy import celtypes


def is_error(v):
    return isinstance(v, (celpy.CELEvalError, Exception))


def verdict(env, programs, case):
    obj = celpy.json_to_cel(case["object"])
    variables = {}
    for name, prog in programs["variables"]:
        act = {"object": obj, "variables": celtypes.MapType(variables)}
        try:
            v = prog.evaluate(act)
        except Exception as e:  # noqa: BLE001 - any evaluation failure denies (failurePolicy Fail)
            return "deny", f"variable {name}: {e}"
        if is_error(v):
            return "deny", f"variable {name}: {v}"
        variables[celtypes.StringType(name)] = v
    act = {"object": obj, "variables": celtypes.MapType(variables)}
    for i, prog in enumerate(programs["validations"]):
        try:
            v = prog.evaluate(act)
        except Exception as e:  # noqa: BLE001
            return "deny", f"validation {i}: {e}"
        if is_error(v) or not isinstance(v, celtypes.BoolType):
            return "deny", f"validation {i}: {v!r}"
        if not bool(v):
            return "deny", f"validation {i} is false"
    return "admit", ""


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    env = celpy.Environment()
    compiled = {}
    for name, policy in doc["policies"].items():
        compiled[name] = {
            "variables": [(v["name"], env.program(env.compile(v["expression"]))) for v in policy["variables"]],
            "validations": [env.program(env.compile(e)) for e in policy["validations"]],
        }
    counts = {"admit": 0, "deny": 0}
    disagreements = []
    for case in doc["cases"]:
        got, why = verdict(env, compiled[case["policy"]], case)
        counts[got] += 1
        if got != case["rust"]:
            disagreements.append(f"{case['id']} ({case['policy']}): celpy {got} ({why}), Rust cel {case['rust']}")
    print(f"celpy: {len(doc['cases'])} cases, denied {counts['deny']}, admitted {counts['admit']}, "
          f"disagreeing with the Rust cel crate: {len(disagreements)}")
    for d in disagreements:
        print("  " + d)
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
