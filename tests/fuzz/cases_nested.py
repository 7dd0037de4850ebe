"""Nested control flow and round trips (issue 34 #1, #5).

``nested``: ``while`` and ``case_of`` ops nested 1 to 1,000 deep (the format says "nested to any
depth") through load, schedule, simulate, ``wb.compare`` (with a budget, so each policy's worker
pickles its result back: the RecursionError of issue 34 #5), a JSON save and load, and the CLI
``compare`` with ``--budget 0`` and ``--budget 20``.  Loading may refuse a depth in one line;
nothing may end in a RecursionError.

``roundtrip``: a graph saved through every writable format and loaded again (``.json``,
``.dot``, ``.gv``; its simulated trace through the Chrome/Kineto writer and reader; a device
file; a calibration table; ``workbench import`` to ``.json`` and ``.dot``) must come back with
every op field and tensor and the same serial/nnc makespans (outcome ``roundtrip`` otherwise),
unless the save warns what the format drops.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tests.fuzz.runner import Case

DEPTHS = (1, 2, 10, 50, 89, 90, 91, 100, 200, 500, 1000)
KINDS = (("while",), ("case_of",), ("while", "case_of"))
STAGES = ("load", "schedule", "simulate", "compare", "save")


def nested(rng: random.Random, scale: int) -> Case:
    """One nesting depth through one stage (module docstring)."""
    del scale
    depth = rng.choice(DEPTHS)
    kinds = rng.choice(KINDS)
    if rng.random() < 0.15:
        budget = rng.choice(["0", "20"])
        plant = {90: "nested90", 300: "nested300", 1000: "nested1000"}
        size = rng.choice(list(plant))
        argv = ["compare", "{wd}/n.json", "--policies", "serial,nnc", "--no-progress",
                "--budget", budget, "-o", "{wd}/r.html"]
        return Case("nested", f"cli compare depth {size} --budget {budget}",
                    "actions_cli.cli_files", argv, False,
                    {"plant": [("n.json", plant[size])], "time_limit_s": 90})
    if rng.random() < 0.2:
        return _bad_loop_attr(rng)
    stage = rng.choice(STAGES)
    policies = rng.sample(["serial", "nnc", "asap", "wavefront", "gpto", "critical_path"], 2)
    return Case("nested", f"{'+'.join(kinds)} x{depth}: {stage}", "actions_io.nested",
                (depth, kinds, stage), False,
                {"policies": policies, "budget_s": 30.0, "time_limit_s": 90})


#: (attr text in :func:`tests.fuzz.actions_io.nested_text`, bad replacements): a loop's flag,
#: trip count, carried states; a branch's default and selector.
LOOP_ATTRS = [('"flag": null', ['"flag": [1]', '"flag": {}', '"flag": 5', '"flag": true',
                                '"flag": "nowhere"']),
              ('"iterations": 1', ['"iterations": -1', '"iterations": 1.5', '"iterations": "3"',
                                   '"iterations": true', '"iterations": 1e400',
                                   '"iterations": [1]', '"iterations": ' + "9" * 5000]),
              ('"carried": [["h", "x", "h_next"]]', ['"carried": [["h"]]', '"carried": [[]]',
                                                     '"carried": "h"', '"carried": [[1, 2, 3]]',
                                                     '"carried": [["h", "x", "nope"]]']),
              ('"default": 0', ['"default": 5', '"default": -1', '"default": 1.5',
                                '"default": [0]', '"default": "zz"', '"default": true']),
              ('"selector": null', ['"selector": [1]', '"selector": 5', '"selector": "nope"'])]


def _bad_loop_attr(rng: random.Random) -> Case:
    """A small nested graph with one control-flow attribute of the wrong type or range."""
    which, bad = rng.choice(LOOP_ATTRS)
    kinds = ("case_of",) if which.startswith(('"default"', '"selector"')) else ("while",)
    return Case("nested", f"{kinds[0]} attr {rng.choice(bad)[:40]}", "actions_io.nested",
                (rng.choice([1, 3]), kinds, "simulate"), True,
                {"replace": (which, rng.choice(bad)), "policies": ["serial"]})


#: Small built-in graphs for round trips (with their builder parameters).
MODELS: list[tuple[str, dict[str, Any]]] = [
    ("squeezenet", {}), ("nnc_diamond", {}), ("nnc_while_loop", {}), ("nnc_case_of", {}),
    ("rnn_loop", {}), ("transformer_block", {}), ("raf_three_branches", {}),
    ("raf_occupancy_conv", {}), ("mindspore_six_kernels", {}), ("textbook_heterogeneous", {}),
    ("textbook_side_effects", {}), ("textbook_mul_sub_add", {}), ("inception_v3", {})]
RANDOM = ("random_dag", "layered_dag", "series_parallel_dag", "gnp_dag")
#: Op names a writer must quote or escape.
NAMES = ["a b", 'q"uote', "back\\slash", "semi;colon", "arrow->x", "brace{}", "é ü", "dash-dash",
         "node", "graph", "edge", "subgraph", "strict", "123", "-5", "tab\tx", "x:out", ""]


def _edges_text(rng: random.Random) -> str:
    """An edge-list graph with random figures on every op, odd names, devices and control
    edges: what a format must keep."""
    n = rng.randint(2, 12)
    names = []
    for i in range(n):
        odd = rng.choice(NAMES) if rng.random() < 0.3 else ""
        names.append(f"{odd}{i}")
    edges = [[names[i], names[j]] for j in range(1, n) for i in rng.sample(range(j), 1)]
    kinds = ["relu", "conv2d", "matmul", "add", "softmax", "MyCustomOp", "copy"]
    d: dict[str, Any] = {"name": rng.choice(["g", "odd name", 'q"g']), "edges": edges,
                         "ops": {x: rng.choice(kinds) for x in names}}
    pick = rng.sample(names, rng.randint(1, n))
    d["durations"] = {x: rng.choice([0.0, 1e-3, 1.0, 17.25, 1234.5678, 3e5]) for x in pick}
    d["sizes"] = {x: rng.choice([0, 1, 4, 1000, 1 << 20, 3 << 30]) for x in rng.sample(names, 2)}
    d["thread_blocks"] = {x: rng.choice([1, 7, 132, 100_000]) for x in rng.sample(names, 2)}
    d["devices"] = {x: rng.choice(["gpu", "cpu", "copy"]) for x in rng.sample(names, 1)}
    return json.dumps(d)


def roundtrip(rng: random.Random, scale: int) -> Case:
    """One graph through one format and back (module docstring)."""
    del scale
    fmt = rng.choice([".json", ".dot", ".dot", ".gv", "chrome", "device", "calibration",
                      "import"])
    if fmt == "import":
        data: Any = (rng.randrange(10**6), rng.randint(2, 20), rng.choice(["nnc", "serial"]))
        return Case("roundtrip", f"import -o .json vs .dot (seed {data[0]})",
                    "actions_cli.import_roundtrip", data, False, {"time_limit_s": 60})
    if fmt == "device":
        changes = {}
        if rng.random() < 0.6:
            changes = {rng.choice(["sm_count", "launch_overhead_us", "memory_bandwidth_gbps"]):
                       rng.choice([1, 7, 200, 0.123456789, 12345.678])}
        name = rng.choice(["h100", "a100", "v100"])
        return Case("roundtrip", f"device {name} {changes}", "actions_io.roundtrip",
                    ((name, changes), "device"), False)
    r = rng.random()
    source: Any
    if r < 0.3:
        name, params = rng.choice(MODELS)
        source, label = ("model", name, params), name
    elif r < 0.6:
        family = rng.choice(RANDOM)
        source = ("random", family, rng.randint(2, 60), rng.randrange(10**6))
        label = f"{family}({source[2]}, seed={source[3]})"
    else:
        source, label = ("edges", _edges_text(rng)), "edge list with figures"
    return Case("roundtrip", f"{label} via {fmt}", "actions_io.roundtrip", (source, fmt), False,
                {"time_limit_s": 60})
