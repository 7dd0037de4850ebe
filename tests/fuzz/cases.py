"""Generated hostile inputs, one family per input kind, all from one ``random.Random(seed)``.

Each generator builds a valid input from a small random graph and applies one mutation drawn
from its table: ``(name, refuse, function)``.  ``refuse`` marks mutations that no reader may
accept (a duplicate JSON key, a cycle, a negative size, an impossible timestamp): accepting one
is a *silent acceptance*.  Mutations whose right answer depends on where they land (truncation,
garbage bytes) have ``refuse=False``: any clean outcome is fine, only a traceback, a hang or
an out-of-memory is a failure.  ``scale`` multiplies the sizes of the big inputs (fan-ins,
crosses, chains): 1 in CI, larger in the script.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from typing import Any

from tests.fuzz.runner import Case

FAMILIES = ("dot", "json_edges", "json_full", "onnx", "pytorch_trace", "exec_trace", "cli",
            "api")
#: Share of each family in a run (the CLI runs whole comparisons, so it gets fewer).
WEIGHTS = (20, 15, 15, 8, 12, 10, 5, 15)


def _graph(rng: random.Random) -> Any:
    from workbench.models import random_dags

    return random_dags.random_dag(rng.randint(2, 30), seed=rng.randrange(10**6))


def _cut(rng: random.Random, text: str) -> str:
    return text[:rng.randrange(max(1, len(text) - 1))]


def _garbage(rng: random.Random, text: str) -> str:
    at = rng.randrange(len(text) + 1)
    chars = '{}[]"\\;,=:->#/* \n\x00é\u202eab01'
    junk = "".join(rng.choice(chars) for _ in range(rng.randint(1, 8)))
    return text[:at] + junk + text[at:]


# ---------------------------------------------------------------------------------------- DOT
def _dot(rng: random.Random, scale: int) -> Case:
    from workbench.io import to_dot

    g = _graph(rng)
    text = to_dot(g)
    ids = [json.dumps(x) for x in g.op_ids]
    a, b = rng.choice(ids), rng.choice(ids)
    k = rng.randint(20, 200) * scale
    cross = ("digraph x { {" + " ".join(f"a{i}" for i in range(k)) + "} -> {"
             + " ".join(f"b{i}" for i in range(k)) + "} [style=dashed] }")
    depth = rng.choice([50, 150, 5000])
    nested = "digraph n { " + "subgraph s { " * depth + "a -> b" + " }" * depth + " }"
    table: list[tuple[str, bool, Callable[[], str | bytes]]] = [
        ("valid", False, lambda: text),
        ("truncated", False, lambda: _cut(rng, text)),
        ("garbage", False, lambda: _garbage(rng, text)),
        ("cycle", True, lambda: text.rstrip().rstrip("}") + f"{ids[0]} -> {ids[-1]}; "
                                f"{ids[-1]} -> {ids[0]}; }}\n" if len(ids) > 1 else "x"),
        ("self loop", True, lambda: text.rstrip().rstrip("}") + f"{a} -> {a}; }}\n"),
        ("alias clash", True, lambda: text.rstrip().rstrip("}") + f"{a} [size=4, bytes=8]; }}"),
        ("negative", True, lambda: text.rstrip().rstrip("}") + f"{a} [flops=-5]; }}"),
        ("huge number", True, lambda: text.rstrip().rstrip("}") + f"{b} [flops=1e400]; }}"),
        ("huge blocks", True, lambda: text.rstrip().rstrip("}") + f"{b} [thread_blocks="
                                      f"{2**rng.randint(63, 300)}]; }}"),
        ("unknown attr", True, lambda: text.rstrip().rstrip("}") + f"{a} [flopz=3]; }}"),
        ("undirected", True, lambda: text.rstrip().rstrip("}") + f"{a} -- {b}; }}"),
        ("not utf-8", True, lambda: text.encode() + b"\xff\xfe\x80"),
        ("empty", True, lambda: ""),
        ("group cross", False, lambda: cross),
        ("deep nesting", depth > 100, lambda: nested),
        ("dashed fan-in", False, lambda: "digraph f {" + "".join(
            f"s{i} -> z [style=dashed]\n" for i in range(500 * scale)) + "}"),
    ]
    name, refuse, make = rng.choice(table)
    data = make()
    return Case("dot", name, "load_graph", (".dot", data), refuse,
                {"policies": [rng.choice(["serial", "nnc", "asap", "gpto"])]})


# ------------------------------------------------------------------------------ JSON edge list
def _json_edges(rng: random.Random, scale: int) -> Case:
    g = _graph(rng)
    edges = [list(e) for e in g.edges] or [[g.op_ids[0], g.op_ids[-1]]]
    ops = {o: rng.choice(["relu", "conv2d", "matmul", "add"]) for o in g.op_ids}
    base = {"edges": edges, "ops": ops, "sizes": {o: rng.randint(1, 1 << 20) for o in ops}}
    text = json.dumps(base)
    op = rng.choice(list(ops))
    n = rng.choice([2000, 5000]) * scale

    def with_(**extra: Any) -> str:
        return json.dumps({**base, **extra})

    table: list[tuple[str, bool, Callable[[], str | bytes]]] = [
        ("valid", False, lambda: text),
        ("truncated", True, lambda: _cut(rng, text)),
        ("garbage", False, lambda: _garbage(rng, text)),
        ("duplicate key", True, lambda: text.replace('"ops": {', f'"ops": {{"{op}": "relu", ', 1)),
        ("duplicate top key", True, lambda: text[:-1] + ', "edges": []}'),
        ("format", True, lambda: with_(format="something-else")),
        ("version", True, lambda: with_(version=rng.choice([0, 2, "1", True, None]))),
        ("huge blocks", True, lambda: with_(thread_blocks={op: 2**rng.randint(63, 300)})),
        ("negative size", True, lambda: with_(sizes={op: -rng.randint(1, 10**9)})),
        ("nan size", True, lambda: text[:-1] + f', "durations": {{"{op}": NaN}}}}'),
        ("huge size", True, lambda: with_(sizes={op: 1e300})),
        ("unknown key", True, lambda: with_(edgez=[])),
        ("undeclared op", True, lambda: with_(edges=edges + [[op, "nobody"]])),
        ("not a pair", True, lambda: with_(edges=edges + [[op]])),
        ("self loop", True, lambda: with_(edges=edges + [[op, op]])),
        ("deep nesting", True, lambda: '{"edges": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("surrogate name", False, lambda: json.dumps({"edges": [["a\ud800", "b"]]})),
        ("fan-in", False, lambda: json.dumps({"edges": [[f"s{i}", "z"] for i in range(n)]})),
    ]
    name, refuse, make = rng.choice(table)
    extra: dict[str, Any] = {"policies": [rng.choice(["serial", "nnc", "wavefront"])]}
    if name == "surrogate name":
        extra["save"] = ".dot"
    return Case("json_edges", name, "load_graph", (".json", make()), refuse, extra)


# ------------------------------------------------------------------------------ JSON full form
def _json_full(rng: random.Random, scale: int) -> Case:
    from workbench.io import graph_to_dict

    g = _graph(rng)
    d = graph_to_dict(g)
    ops, tensors = d["ops"], d["tensors"]
    i = rng.randrange(len(ops))
    n = rng.choice([1000, 5000]) * scale

    def edit(fn: Callable[[dict[str, Any]], None]) -> str:
        copy = json.loads(json.dumps(d))
        fn(copy)
        return json.dumps(copy)

    def fan(c: dict[str, Any]) -> None:
        c["ops"] += [{"id": f"x{k}", "kind": "relu", "duration_us": 1} for k in range(n)]
        c["control_edges"] = [[f"x{k}", ops[i]["id"]] for k in range(n)]

    table: list[tuple[str, bool, Callable[[], str | bytes]]] = [
        ("valid", False, lambda: json.dumps(d)),
        ("garbage", False, lambda: _garbage(rng, json.dumps(d))),
        ("role typo", True, lambda: edit(lambda c: c["tensors"][0].update(role="activaton"))),
        ("dtype typo", True, lambda: edit(lambda c: c["tensors"][0].update(dtype="float33"))),
        ("duplicate op", True, lambda: edit(lambda c: c["ops"].append(dict(c["ops"][i])))),
        ("dangling", True, lambda: edit(lambda c: c["ops"][i].update(
            inputs=[*c["ops"][i]["inputs"], "nowhere"]))),
        ("control unknown", True, lambda: edit(lambda c: c.update(
            control_edges=[[ops[i]["id"], "ghost"]]))),
        ("control cycle", True, lambda: edit(lambda c: c.update(
            control_edges=[[ops[i]["id"], ops[i]["id"]]]))),
        ("flops text", True, lambda: edit(lambda c: c["ops"][i].update(flops="abc"))),
        ("flops inf", True, lambda: edit(lambda c: c["ops"][i].update(flops=1e999))),
        ("huge tensor", True, lambda: edit(lambda c: c["tensors"][0].update(size_bytes=2**70))),
        ("duplicate field", True, lambda: json.dumps(d).replace(
            '"kind": ', '"kind": "a", "kind": ', 1)),
        ("no ops", True, lambda: edit(lambda c: c.pop("ops"))),
        ("version", True, lambda: edit(lambda c: c.update(version=2))),
        ("control fan-in", False, lambda: edit(fan)),
    ]
    del tensors
    name, refuse, make = rng.choice(table)
    return Case("json_full", name, "load_graph", (".json", make()), refuse,
                {"policies": [rng.choice(["serial", "nnc", "critical_path"])]})


# ---------------------------------------------------------------------------------------- ONNX
def _onnx(rng: random.Random, scale: int) -> Case:
    import onnx
    from onnx import TensorProto, helper

    dim: Any = rng.choice([4, 8, "batch"])
    kind = rng.choice(["valid", "negative dim", "truncated", "random bytes", "unknown op",
                       "loop M=-1"])
    first = -rng.randint(1, 9) if kind == "negative dim" else dim
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [first, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 16], [0.5] * 256)
    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("FooBar" if kind == "unknown op" else "MatMul", ["h", "w"], ["m"]),
             helper.make_node("Add", ["m", "h"], ["y"])]
    inits = [w]
    if kind == "loop M=-1":
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Relu", ["v"], ["v2"])],
            "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                     helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                     helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
            [helper.make_tensor_value_info("c2", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v2", TensorProto.FLOAT, None)])
        inits += [helper.make_tensor("M", TensorProto.INT64, [], [-1]),
                  helper.make_tensor("c0", TensorProto.BOOL, [], [True])]
        nodes = [helper.make_node("Loop", ["M", "c0", "x"], ["y"], body=body)]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits))
    data = model.SerializeToString()
    if kind == "truncated":
        data = data[:rng.randrange(1, len(data))]
    elif kind == "random bytes":
        data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
    refuse = kind in ("negative dim", "loop M=-1")
    del onnx, scale
    return Case("onnx", kind, "load_graph", (".onnx", data), refuse, {"policies": ["serial"]})


# ---------------------------------------------------------------------------- PyTorch traces
def _pytorch(rng: random.Random, scale: int) -> Case:
    import workbench as wb
    from workbench.io import to_chrome_trace

    g = _graph(rng)
    data = to_chrome_trace(wb.simulate(wb.schedule(g, rng.choice(["nnc", "serial", "asap"]))))
    kernels = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ev = rng.choice(kernels)

    def overlap() -> None:
        """Two kernels of one stream (``args.stream``) start together."""
        stream = ev["args"]["stream"]
        same = [e for e in kernels if e["args"]["stream"] == stream and e is not ev]
        if same:
            same[0]["ts"] = ev["ts"]
        else:
            data["traceEvents"].append({**ev, "name": "copy", "dur": ev["dur"] + 1})

    table: list[tuple[str, bool, Callable[[], None]]] = [
        ("valid", False, lambda: None),
        ("origin", True, lambda: data["otherData"].update(
            time_origin_us=rng.choice([1e300, -1e300, 1e20, float("nan")]))),
        ("negative ts", True, lambda: ev.update(ts=-rng.uniform(1, 5e9))),
        ("huge ts", True, lambda: ev.update(ts=rng.choice([5e12, 1e18, 1e300]))),
        ("overlap", True, overlap),
        ("stream offset", True, lambda: data["otherData"].update(stream_offset=10**6)),
        ("negative dur", True, lambda: ev.update(dur=-rng.uniform(0.1, 100))),
        ("dur text", True, lambda: ev.update(dur="abc")),
        ("no events", True, lambda: data.pop("traceEvents")),
        ("name bomb", False, lambda: ev.update(name="k" * 100_000)),
    ]
    name, refuse, fn = rng.choice(table)
    fn()
    text = json.dumps(data)
    extra_kind = rng.random()
    if name == "valid" and extra_kind < 0.2:
        name, refuse, text = "duplicate key", True, text.replace('"ts":', '"ts": 0, "ts":', 1)
    elif name == "valid" and extra_kind < 0.35:
        name, refuse, text = "truncated", True, _cut(rng, text)
    payload: bytes | str = text
    if rng.random() < 0.15:
        payload = gzip.compress(text.encode())
        if rng.random() < 0.5:
            name, refuse, payload = name + " + broken gzip", True, payload[:len(payload) // 2]
    del scale
    return Case("pytorch_trace", name, "load_trace", payload, refuse)


# ------------------------------------------------------------------------- execution traces
def _et(rng: random.Random, scale: int) -> Case:
    n = rng.choice([5, 50, 300, 1500 * scale])
    nodes: list[dict[str, Any]] = [{"id": 1, "name": "[pytorch|profiler|thread]", "ctrl_deps": 1}]
    for i in range(n):
        nodes.append({"id": 2 + 2 * i, "name": f"## block{i} ##", "ctrl_deps": 2 * i if i else 1})
        nodes.append({"id": 3 + 2 * i, "name": rng.choice(["aten::relu", "aten::add"]),
                      "ctrl_deps": 2 + 2 * i,
                      "inputs": {"values": [[4 + i, 5, 0, 8, 4, "cpu"]], "shapes": [[2, 4]],
                                 "types": ["Tensor"]},
                      "outputs": {"values": [[5 + i, 7, 0, 8, 4, "cpu"]], "shapes": [[2, 4]],
                                  "types": ["Tensor"]}})
    kind = rng.choice(["valid", "cycle", "missing parent", "duplicate key", "no nodes",
                       "truncated", "bad shapes"])
    refuse = kind in ("duplicate key", "no nodes", "truncated")
    if kind == "cycle":
        nodes[2]["ctrl_deps"] = 2 * n  # the first block's parent is the last block
    elif kind == "missing parent":
        nodes[rng.randrange(1, len(nodes))]["ctrl_deps"] = 10**9
    elif kind == "bad shapes":
        nodes[-1]["inputs"]["shapes"] = [[-3, 2**70]]
    text = json.dumps({"schema": "1.1.1", "nodes": [] if kind == "no nodes" else nodes})
    if kind == "duplicate key":
        text = text.replace('"ctrl_deps":', '"ctrl_deps": 1, "ctrl_deps":', 1)
    elif kind == "truncated":
        text = _cut(rng, text)
    return Case("exec_trace", kind, "load_et", text, refuse)


# ----------------------------------------------------------------------------------- CLI
_OK_RUN = ["compare", "{wd}/g.json", "--policies", "serial,nnc", "--no-progress", "--budget",
           "30", "-o", "{wd}/r.html"]


def _cli(rng: random.Random, scale: int) -> Case:
    def run(*changes: str, drop: str | None = None) -> list[str]:
        argv = list(_OK_RUN)
        if drop:
            k = argv.index(drop)
            del argv[k:k + 2]
        return argv + list(changes)

    table: list[tuple[str, bool, list[str], tuple[str, ...]]] = [
        ("valid", False, run(), ("graph",)),
        ("max-streams", True, run("--max-streams", rng.choice(
            ["0", "-1", "abc", "99999999999999999999999999", "1.5", "nan"])), ("graph",)),
        ("max-streams huge ok", False, run("--max-streams", "10000000"), ("graph",)),
        ("budget bad", True, run("--budget", rng.choice(["inf", "-1", "nan", "abc"]),
                                 drop="--budget"), ("graph",)),
        ("budget huge", False, run("--budget", rng.choice(["1e20", "1e308"]), drop="--budget"),
         ("graph",)),
        ("out device", True, run("-o", "/dev/null", drop="-o"), ("graph",)),
        ("out dir", True, run("-o", "{wd}", drop="-o"), ("graph",)),
        ("out missing dir", True, run("-o", "{wd}/no/r.html", drop="-o"), ("graph",)),
        ("out link", False, run("-o", "{wd}/link.html", drop="-o"), ("graph", "link")),
        ("in fifo", True, ["compare", "{wd}/fifo.json", "-o", "{wd}/r.html"], ("fifo",)),
        ("in /dev/zero", True, ["compare", "{wd}/zero.json", "-o", "{wd}/r.html"], ("zero",)),
        ("in missing", True, ["compare", "{wd}/none.json", "-o", "{wd}/r.html"], ()),
        ("in type", True, ["compare", "{wd}/g.xyz", "-o", "{wd}/r.html"], ()),
        ("policy", True, run("--policies", "nncc", drop="--policies"), ("graph",)),
        ("columns", True, run("--columns", "speed"), ("graph",)),
        ("dim on json", True, run("--dim", "batch=2"), ("graph",)),
        ("model", True, ["compare", "--model", "inceptionv3", "-o", "{wd}/r.html"], ()),
        ("param on file", True, run("--param", "n=3"), ("graph",)),
    ]
    name, refuse, argv, setup = rng.choice(table)
    del scale
    return Case("cli", name, "cli", argv, refuse, {"setup": setup})


# ------------------------------------------------------------------------------- Python API
_BAD_INTS = [0, -1, float("nan"), float("inf"), "3", True, 1.5, 2**64, None]


def _api(rng: random.Random, scale: int) -> Case:
    seed = rng.randrange(1000)
    policy = rng.choice(["serial", "nnc", "gpto", "critical_path", "asap", "wavefront",
                         "min_streams", "ios", "bfs"])
    kind = rng.choice(["max_streams", "copy_streams", "ios", "planner", "calibration",
                       "optimum", "empty", "loops"])
    ok_value = rng.choice([1, 2, 4, 10**7])
    bad = rng.choice([v for v in _BAD_INTS if v is not None])
    good = rng.random() < 0.4
    data: tuple[str, dict[str, Any]]
    if kind == "max_streams":
        data = ("schedule", {"policy": policy, "max_streams": ok_value if good else bad})
    elif kind == "copy_streams":
        data = ("schedule", {"policy": "gpto", "copy_streams": 1 if good else
                             rng.choice([-1, float("nan"), float("inf"), "3", True, 2**64])})
    elif kind == "ios":
        data = ("schedule", {"policy": "ios", rng.choice(["r", "s"]): 2 if good else
                             rng.choice([2**64, 0, -1, "3"])})
    elif kind == "planner":
        key, value = rng.choice([("alignment", 2**64), ("alignment", 0), ("orderings", 5),
                                 ("lifelong", 5), ("orderings", ["nope"]),
                                 ("time_limit_s", float("inf"))])
        planner = "exact" if key == "time_limit_s" else "somas"
        data = ("plan_memory", {"planner": planner} if good else
                {"planner": planner, key: value})
    elif kind == "calibration":
        data = ("simulate", {"calibration": "ops" if good else rng.choice([
            {"n0": -1000}, {"N0": 5}, {"zz": 1}, {"n0": float("nan")}, {"n0": "5"},
            {"n0": 1e308}, 1.5, [1, 2]])})
    elif kind == "optimum":
        data = ("compare", {"optimum_max_ops": rng.choice(["3", None, float("nan"),
                                                            float("inf"), -1, 10**9])})
        good = False
    elif kind == "empty":
        data = ("schedule_empty", {"policy": policy})
        good = True
    else:
        data = ("simulate", {"loop": True, "max_iterations": 100 if good else
                             rng.choice([-1, "x", 1.5])})
    del scale
    return Case("api", f"{data[0]}:{kind}", "api", data, not good,
                {"seed": seed, "ops": rng.randint(1, 14)})


GENERATORS: dict[str, Callable[[random.Random, int], Case]] = {
    "dot": _dot, "json_edges": _json_edges, "json_full": _json_full, "onnx": _onnx,
    "pytorch_trace": _pytorch, "exec_trace": _et, "cli": _cli, "api": _api,
}


def generate(n: int, seed: int = 27, *, scale: int = 1,
             families: tuple[str, ...] = FAMILIES) -> list[Case]:
    """``n`` cases drawn with ``random.Random(seed)`` (the families by :data:`WEIGHTS`)."""
    rng = random.Random(seed)
    weights = [w for f, w in zip(FAMILIES, WEIGHTS, strict=True) if f in families]
    names = [f for f in FAMILIES if f in families]
    return [GENERATORS[rng.choices(names, weights)[0]](rng, scale) for _ in range(n)]
