"""Option combinations and odd values in graph files (issue 34 #8, #12).

CLI: ``--policies nnc,,serial``, ``--table X -o X``, ``--memory-budget 0 / 1K / 100M``,
``import --step 99`` on a trace without steps, and their neighbours.  Kineto kernels with an id
or a time of the wrong type (``tid: []``).  Graph files: ``kind []``,
a graph ``name`` of ``true``, ``5e-324`` or a long list, boolean and fractional shape dims,
fractional byte counts (JSON ``5e-324``, DOT ``size=1.5``), duplicate ids in an edge-list
``ops`` list.  Each is labelled with what it must do (``refuse=True``: a one-line error).
"""

from __future__ import annotations

import json
import random
from typing import Any

from tests.fuzz.runner import Case

_G = "{wd}/g.json"
_BASE = ["compare", _G, "--no-progress", "--budget", "20", "-o", "{wd}/r.html"]
_POL = ["--policies", "serial,nnc"]

#: (label, refuse, argv tail added to a small comparison, forbidden output)
COMPARE: list[tuple[str, bool, list[str], tuple[str, ...]]] = [
    ("--policies nnc,,serial", True, ["--policies", "nnc,,serial"], ()),
    ("--policies ,", True, ["--policies", ","], ()),
    ("--policies ''", True, ["--policies", ""], ()),
    ("--policies nnc,", True, ["--policies", "nnc,"], ()),
    ("--policies serial,serial", False, ["--policies", "serial,serial"], ()),
    ("--table X -o X", True, [*_POL, "--table", "{wd}/r.html"], ()),
    ("--table t.csv", False, [*_POL, "--table", "{wd}/t.csv"], ()),
    ("--export-trace X -o X", False, [*_POL, "--export-trace", "{wd}/r.html"], ()),
    ("--memory-budget 0", True, [*_POL, "--memory-budget", "0"], ()),
    ("--memory-budget 1K", True, [*_POL, "--memory-budget", "1K"], ()),
    ("--memory-budget 1", True, [*_POL, "--memory-budget", "1"], ()),
    ("--memory-budget -5M", True, [*_POL, "--memory-budget", "-5M"], ()),
    ("--memory-budget nan", True, [*_POL, "--memory-budget", "nan"], ()),
    ("--memory-budget 1e400G", True, [*_POL, "--memory-budget", "1e400G"], ()),
    ("--memory-budget 100M", False, [*_POL, "--memory-budget", "100M"], ("budget hit",)),
    ("--memory-budget 2G", False, [*_POL, "--memory-budget", "2G"], ("budget hit",)),
    ("--memory-budget none", False, [*_POL, "--memory-budget", "none"], ()),
    ("--budget 0", False, [*_POL, "--budget", "0"], ()),
    ("--trace-rank -1", True, [*_POL, "--export-trace", "{wd}/x.json", "--trace-rank", "-1"],
     ()),
    ("--trace-unit without export", False, [*_POL, "--trace-unit", "ns"], ()),
    ("--columns policy,,status", True, [*_POL, "--columns", "policy,,status"], ()),
    ("--max-streams 0 with --policies", True, [*_POL, "--max-streams", "0"], ()),
    ("--step without --measured", True, [*_POL, "--step", "3"], ()),
    ("--et without --measured", True, [*_POL, "--et", _G], ()),
]

#: (label, refuse, argv) of verbs on a simulated Kineto trace ``{wd}/t.json`` (no steps).
TRACE: list[tuple[str, bool, list[str]]] = [
    ("import --step 99", True, ["import", "{wd}/t.json", "--step", "99", "-o", "{wd}/g.json"]),
    ("import --step -1", True, ["import", "{wd}/t.json", "--step", "-1", "-o", "{wd}/g.json"]),
    ("import --step abc", True, ["import", "{wd}/t.json", "--step", "abc", "-o", "{wd}/g.json"]),
    ("import --step all", False, ["import", "{wd}/t.json", "--step", "all", "-o", "{wd}/g.json"]),
    ("import -o same as profile", True, ["import", "{wd}/t.json", "-o", "{wd}/t.json"]),
    ("import -o .onnx", True, ["import", "{wd}/t.json", "-o", "{wd}/g.onnx"]),
    ("compare --measured --step 99", True,
     ["compare", "--measured", "{wd}/t.json", "--step", "99", "--no-progress", *_POL,
      "-o", "{wd}/r.html"]),
]


#: What :func:`_graph_file`'s choices change (the case label).
ODD = ["edge-list kind not a string", "edge-list name not a string", "edge-list name a long list",
       "duplicate id in an edge-list ops list", "fractional or odd size", "odd duration",
       "odd thread_blocks", "odd device", "odd shape dims (bool, fraction)",
       "fractional or odd size_bytes", "full-form kind not a string",
       "full-form name not a string", "duplicate tensor id", "DOT fractional or odd figure"]


def _graph_file(rng: random.Random, choice: int) -> tuple[str, str, bool]:
    """(suffix, text, refuse): a small graph file with one odd value."""
    from workbench.io import graph_to_dict
    from workbench.models import random_dags

    g = random_dags.random_dag(rng.randint(2, 8), seed=rng.randrange(10**6))
    ids = list(g.op_ids)
    edges = [list(e) for e in g.edges] or [[ids[0], ids[-1]]]
    op = rng.choice(ids)
    edge: dict[str, Any] = {"edges": edges, "ops": {x: "relu" for x in ids}}
    if choice == 0:
        edge["ops"][op] = rng.choice([[], {}, True, 5, ["relu"]])
        return ".json", json.dumps(edge), True
    if choice == 1:
        edge["name"] = rng.choice([True, 5e-324, 0, None, {"a": 1}, [1, 2, 3]])
        return ".json", json.dumps(edge), True
    if choice == 2:
        edge["name"] = list(range(rng.choice([1000, 10**6])))
        return ".json", json.dumps(edge), True
    if choice == 3:
        edge["ops"] = ids + [rng.choice(ids)]  # a duplicate id in the list form
        return ".json", json.dumps(edge), True
    if choice == 4:
        edge["sizes"] = {op: rng.choice([5e-324, 1.5, 0.5, 1e-300, True, "8"])}
        return ".json", json.dumps(edge), True
    if choice == 5:
        edge["durations"] = {op: rng.choice([True, "5", [5], -0.0001])}
        return ".json", json.dumps(edge), True
    if choice == 6:
        edge["thread_blocks"] = {op: rng.choice([0, 1.5, -1, True, "7"])}
        return ".json", json.dumps(edge), True
    if choice == 7:
        edge["devices"] = {op: rng.choice(["", 5, ["gpu"]])}
        return ".json", json.dumps(edge), True
    d = graph_to_dict(g)
    t = rng.choice(d["tensors"])
    if choice == 8:
        t["shape"] = rng.choice([[True, 2], [2, False], [1.5, 2], [-1, 2], [2, "4"], [[2]]])
        return ".json", json.dumps(d), True
    if choice == 9:
        t["size_bytes"] = rng.choice([5e-324, 1.5, 4.5, True, "64"])
        return ".json", json.dumps(d), True
    if choice == 10:
        d["ops"][0]["kind"] = rng.choice([[], {}, True, 5])
        return ".json", json.dumps(d), True
    if choice == 11:
        d["name"] = rng.choice([True, 5e-324, None, [1, 2]])
        return ".json", json.dumps(d), True
    if choice == 12:
        d["tensors"].append(dict(t))  # a duplicate tensor id
        return ".json", json.dumps(d), True
    a = json.dumps(op)
    value = rng.choice(["1.5", "5e-324", "0.5", "true", '"12x"', "-0"])
    key = rng.choice(["size", "bytes_read", "workspace_bytes", "thread_blocks"])
    text = f"digraph g {{ {a} [kind=relu, {key}={value}]; {a} -> z; }}"
    return ".dot", text, value != "-0"


def _odd_trace(rng: random.Random) -> Case:
    """A Kineto trace whose kernel has an id of the wrong type (issue 34 #11: ``tid: []``):
    any one-line outcome will do; a figure of the wrong type must be refused."""
    import workbench as wb
    from workbench.io import to_chrome_trace
    from workbench.models import random_dags

    g = random_dags.random_dag(rng.randint(2, 8), seed=rng.randrange(10**6))
    data = to_chrome_trace(wb.simulate(wb.schedule(g, "nnc")))
    kernels = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ev = rng.choice(kernels)
    field = rng.choice(["tid", "pid", "name", "cat", "ts", "dur", "stream", "correlation"])
    value = rng.choice([[], {}, None, True, "x", 1.5, -1])
    if field in ("stream", "correlation"):
        ev.setdefault("args", {})[field] = value
    else:
        ev[field] = value
    # a time that is not a non-negative number must be refused (negative ts/dur: documented)
    refuse = field in ("ts", "dur") and value != 1.5
    return Case("options", f"trace kernel {field} = {json.dumps(value)}", "actions_io.read_file",
                ("trace", "t.json", json.dumps(data)), refuse)


def options(rng: random.Random, scale: int) -> Case:
    """One option combination or one odd value (module docstring)."""
    del scale
    r = rng.random()
    if r < 0.3:
        label, refuse, tail, forbid = rng.choice(COMPARE)
        argv = _BASE + tail
        return Case("options", label, "actions_cli.cli_files", argv, refuse,
                    {"plant": [("g.json", "graph")], "forbid": forbid, "time_limit_s": 60})
    if r < 0.4:
        label, refuse, argv = rng.choice(TRACE)
        return Case("options", label, "actions_cli.cli_files", argv, refuse,
                    {"plant": [("t.json", "trace")], "time_limit_s": 40})
    if r < 0.5:
        return _odd_trace(rng)
    choice = rng.randrange(len(ODD))
    suffix, text, refuse = _graph_file(rng, choice)
    return Case("options", ODD[choice], "load_graph", (suffix, text), refuse,
                {"policies": [rng.choice(["serial", "nnc"])]})
