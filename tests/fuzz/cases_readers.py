"""Reader families (issue 34): integers past Python's 4,300-digit ``int()`` limit in every
JSON-ish reader, and Execution Traces with parent cycles and duplicate ids.

``huge_int``: a valid file of one reader (graph JSON in both forms, a Kineto trace, an
Execution Trace, a calibration table, a device file) with one number replaced by an integer of
4,301 to 100,000 digits (or ``-`` one, or a float literal that overflows to infinity).  Where
the number is a figure (a size, a time, a count) the file must be refused; where it is only an
id (a pid, a tid, a node id) any one-line outcome will do, never a raw ``ValueError``.

``corrupt_et``: a flat Execution Trace (a root and ops under it linked by tensor ids) whose
``ctrl_deps`` form a cycle, or whose ids repeat: it must be refused, or loaded with a warning
that names the cycle or the duplicate (silently dropping ops is the bug of issue 34 #3); one whose
op names itself as its parent must be refused (issue 43 #5).  A valid one must keep every op.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tests.fuzz.runner import Case

_MARK = "7777777"


def _huge(rng: random.Random) -> str:
    digits = rng.choice([4301, 5000, 20_000, 100_000])
    kind = rng.random()
    if kind < 0.15:
        return "1" + "0" * digits + ".5"  # a float literal: float() gives inf
    return ("-" if kind < 0.3 else "") + "9" * digits


def _graph_json(rng: random.Random) -> tuple[str, str, bool]:
    """(reader, text with the marker, refuse)."""
    from workbench.io import graph_to_dict
    from workbench.models import random_dags

    g = random_dags.random_dag(rng.randint(2, 12), seed=rng.randrange(10**6))
    if rng.random() < 0.5:
        d: dict[str, Any] = graph_to_dict(g)
        op, tensor = rng.choice(d["ops"]), rng.choice(d["tensors"])
        where = rng.choice(["flops", "bytes_read", "thread_blocks", "duration_us",
                            "workspace_bytes", "size_bytes", "shape", "version", "attrs"])
        if where == "size_bytes":
            tensor["size_bytes"] = int(_MARK)
        elif where == "shape":
            tensor["shape"] = [1, int(_MARK)]
        elif where == "version":
            d["version"] = int(_MARK)
        elif where == "attrs":
            op["attrs"] = {"kernel": [int(_MARK), 1]}
        else:
            op[where] = int(_MARK)
        return f"graph ({where})", json.dumps(d), True
    ops = {o: "relu" for o in g.op_ids}
    op = rng.choice(list(ops))
    edges = [list(e) for e in g.edges] or [[g.op_ids[0], g.op_ids[-1]]]
    key = rng.choice(["sizes", "durations", "thread_blocks", "version", "name"])
    base: dict[str, Any] = {"edges": edges, "ops": ops}
    base[key] = int(_MARK) if key in ("version", "name") else {op: int(_MARK)}
    return f"graph (edge list {key})", json.dumps(base), True


def _kineto(rng: random.Random) -> tuple[str, str, bool]:
    import workbench as wb
    from workbench.io import to_chrome_trace
    from workbench.models import random_dags

    g = random_dags.random_dag(rng.randint(2, 12), seed=rng.randrange(10**6))
    data = to_chrome_trace(wb.simulate(wb.schedule(g, "nnc")))
    kernels = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ev = rng.choice(kernels)
    field = rng.choice(["ts", "dur", "pid", "tid", "stream", "correlation"])
    if field in ("stream", "correlation"):
        ev.setdefault("args", {})[field] = int(_MARK)
    else:
        ev[field] = int(_MARK)
    return f"trace ({field})", json.dumps(data), field in ("ts", "dur")


def et_nodes(n: int) -> list[dict[str, Any]]:
    """A flat Execution Trace: root id 1 and ``n`` ops under it (ids 2..n+1), op ``k`` reading
    the tensor op ``k-1`` wrote (and every third op also the first op's)."""
    nodes: list[dict[str, Any]] = [{"id": 1, "name": "[pytorch|profiler|thread]", "ctrl_deps": 1}]
    for i in range(n):
        reads = [[100 + i, 1, 0, 8, 4, "cpu"]]
        if i % 3 == 2:
            reads.append([101, 1, 0, 8, 4, "cpu"])
        nodes.append({"id": 2 + i, "name": ["aten::relu", "aten::add"][i % 2], "ctrl_deps": 1,
                      "inputs": {"values": reads, "shapes": [[2, 4]] * len(reads),
                                 "types": ["Tensor"] * len(reads)},
                      "outputs": {"values": [[101 + i, 1, 0, 8, 4, "cpu"]],
                                  "shapes": [[2, 4]], "types": ["Tensor"]}})
    return nodes


def _et(rng: random.Random) -> tuple[str, str, bool]:
    nodes = et_nodes(rng.randint(2, 20))
    node = rng.choice(nodes[1:])
    field = rng.choice(["id", "ctrl_deps", "tensor", "shape", "schema"])
    if field in ("id", "ctrl_deps"):
        node[field] = int(_MARK)
    elif field == "tensor":
        node["outputs"]["values"][0][0] = int(_MARK)
    elif field == "shape":
        node["outputs"]["shapes"][0] = [2, int(_MARK)]
    doc: dict[str, Any] = {"schema": "1.1.1", "nodes": nodes}
    if field == "schema":
        doc["schema"] = int(_MARK)
    return f"et ({field})", json.dumps(doc), field in ("shape", "schema")


def _calibration(rng: random.Random) -> tuple[str, str, bool]:
    from workbench.simulator.cost_model.calibration import CalibrationTable

    d = CalibrationTable({"n0": 5.0, "n1": 7.5}, device="h100").to_dict()
    field = rng.choice(["op", "spin_overhead_us", "host_launch_us", "version"])
    if field == "op":
        d["ops"]["n1"] = int(_MARK)
    else:
        d[field] = int(_MARK)
    return f"calibration ({field})", json.dumps(d), True


def _device(rng: random.Random) -> tuple[str, str, bool]:
    from workbench.simulator.cost_model.devices import device_to_dict, get_device

    d = device_to_dict(get_device(rng.choice(["h100", "a100", "v100"])))
    field = rng.choice(["sm_count", "memory_bandwidth_gbps", "launch_overhead_us",
                        "max_threads_per_sm", "peak_tflops", "gpu_model"])
    if field == "peak_tflops":
        d[field]["fp32"] = int(_MARK)
    elif field == "gpu_model":
        d.setdefault(field, {})["op_gap_us"] = int(_MARK)
    else:
        d[field] = int(_MARK)
    return f"device ({field})", json.dumps(d), True


def huge_int(rng: random.Random, scale: int) -> Case:
    """One reader, one number past the int() digit limit (module docstring)."""
    del scale
    make = rng.choice([_graph_json, _graph_json, _kineto, _et, _calibration, _device])
    what, text, refuse = make(rng)
    reader = what.split()[0]
    huge = _huge(rng)
    kind = "float" if huge.endswith(".5") else "negative int" if huge[0] == "-" else "int"
    if kind == "float":
        refuse = refuse or reader in ("graph", "calibration", "device")
    text = text.replace(_MARK, huge, 1)
    return Case("huge_int", f"{what}: {len(huge)}-char {kind}", "actions_io.read_file",
                (reader, f"f{reader}.json", text), refuse, {"time_limit_s": 30})


def corrupt_et(rng: random.Random, scale: int) -> Case:
    """A flat ET with a parent cycle or duplicate ids (module docstring)."""
    n = rng.choice([4, 16, 60, 400 * scale])
    nodes = et_nodes(n)
    kind = rng.choice(["valid", "parent cycle", "self parent", "3-cycle", "duplicate op id",
                       "duplicate root id", "op id = root id", "duplicate whole node"])
    i, j = rng.sample(range(1, len(nodes)), 2)
    k = rng.choice([x for x in range(1, len(nodes)) if x not in (i, j)] or [i])
    if kind == "parent cycle":
        nodes[i]["ctrl_deps"], nodes[j]["ctrl_deps"] = nodes[j]["id"], nodes[i]["id"]
    elif kind == "self parent":
        nodes[i]["ctrl_deps"] = nodes[i]["id"]
    elif kind == "3-cycle":
        nodes[i]["ctrl_deps"], nodes[j]["ctrl_deps"] = nodes[j]["id"], nodes[k]["id"]
        nodes[k]["ctrl_deps"] = nodes[i]["id"]
    elif kind == "duplicate op id":
        nodes[j]["id"] = nodes[i]["id"]
    elif kind == "duplicate root id":
        nodes.insert(rng.randrange(1, len(nodes)), dict(nodes[0]))
    elif kind == "op id = root id":
        nodes[i]["id"] = 1
    elif kind == "duplicate whole node":
        nodes.insert(rng.randrange(1, len(nodes)), json.loads(json.dumps(nodes[i])))
    text = json.dumps({"schema": rng.choice(["1.0.1", "1.1.1"]), "nodes": nodes})
    # an op that names itself as its parent hides whether it runs under an operator: only the
    # root scope may name itself (issue 43 #5), so it is refused like the cycles
    ok = kind == "valid"
    return Case("corrupt_et", f"{kind} ({n} ops)", "actions_io.read_file", ("et", "et.json", text),
                not ok, {"warn_ok": ("cycle", "duplicate", "twice", "repeated"),
                         "expect_ops": n if ok else None, "time_limit_s": 30})
