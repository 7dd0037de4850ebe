"""Fuzz families for issue 43's classes, drawn apart from the reproducers of its tests:

``side_effects``: a random program of elementwise ops, ``assign``/``assign_add`` writes and
reads of 1-3 parameters and ``print`` I/O, saved as graph JSON, with a random hand schedule of its
*data* edges (random streams, a random topological order, syncs for data edges only): the hand
schedule is refused in one line or computes the program's result in random stream interleavings,
and every policy's schedule validates and computes it (:func:`tests.fuzz.actions_round3.
side_effects`).

``onnx_data``: ``y = x * w`` with ``w`` in external data, broken one of many ways (location,
offset, length, the file: missing, short, a FIFO, a directory, a link out, ``../``) or the
initializers broken (duplicate, negative dims, no data, another payload size, ``STRING``) or the
opset: refused in one line, never loaded with other weights; the unbroken model runs to 4.0.

``data_dependent``: a torch module with a value-dependent size (a mask index, ``nonzero``,
``masked_select``, ``unique``) somewhere in a few fixed-shape ops: ``from_torch`` refuses it in
one line naming the op.

``text``: a graph whose name and op ids hold bidi controls, ESC, zero-width and non-ASCII
characters, compared by the CLI under an ASCII terminal (``PYTHONIOENCODING=ascii``): exit 0, no
traceback, and neither the terminal nor the HTML report holds a raw control character.
"""

from __future__ import annotations

import random
from typing import Any

from tests.fuzz.runner import Case

#: Characters a hostile name may hold (each must reach the report and terminal escaped or as
#: itself when printable).
HOSTILE = ["\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\x1b[31m", "\x07", "\r",
           "ä", "µ", "名", "😀", "<b>", "&amp;", "'", '"']


def side_effects(rng: random.Random, scale: int) -> Case:
    del scale
    params = [f"p{i}" for i in range(rng.randint(1, 3))]
    values = ["x", *params]
    ops: list[dict[str, Any]] = []
    tensors: list[dict[str, Any]] = [
        {"id": "x", "size_bytes": 16, "role": "input", "shape": [4]},
        *({"id": p, "size_bytes": 16, "role": "parameter", "shape": [4]} for p in params)]
    for i in range(rng.randint(3, 14)):
        kind = rng.choice(["add", "mul", "neg", "relu", "assign", "assign_add", "print"])
        if kind in ("assign", "assign_add"):
            inputs = [rng.choice(params), rng.choice(values)]
        elif kind in ("add", "mul"):
            inputs = [rng.choice(values), rng.choice(values)]
        else:
            inputs = [rng.choice(values)]
        out = f"o{i}:out"
        ops.append({"id": f"o{i}", "kind": kind, "inputs": inputs, "outputs": [out],
                    "duration_us": float(rng.randint(1, 5))})
        tensors.append({"id": out, "size_bytes": 16, "producer": f"o{i}", "shape": [4]})
        values.append(out)
    graph = {"version": 1, "name": "side_effects", "ops": ops, "tensors": tensors,
             "outputs": [o["outputs"][0] for o in ops]}
    return Case("side_effects", f"{len(ops)} ops, {len(params)} parameters",
                "actions_round3.side_effects", (graph, rng.randrange(10**6)), False,
                {"time_limit_s": 60})


ONNX_BREAKS = ("valid", "missing file", "short file", "fifo", "directory", "link out",
               "parent folder", "absolute", "empty location", "bad offset", "offset past end",
               "wrong length", "duplicate", "negative dims", "no data", "payload size", "string",
               "opset 0", "no opset")


def onnx_data(rng: random.Random, scale: int) -> Case:
    del scale
    kind = rng.choice(ONNX_BREAKS)
    return Case("onnx_data", kind, "actions_round3.onnx_data", (kind, rng.randrange(10**6)),
                kind != "valid", {"time_limit_s": 30})


DATA_DEPENDENT = ("mask index", "nonzero", "masked_select", "unique", "repeat_interleave")


def data_dependent(rng: random.Random, scale: int) -> Case:
    del scale
    kind = rng.choice(DATA_DEPENDENT)
    before, after = rng.randint(0, 3), rng.randint(0, 3)
    return Case("data_dependent", f"{kind} after {before} ops, {after} after",
                "actions_round3.data_dependent", (kind, before, after, rng.randrange(10**6)),
                True, {"time_limit_s": 60})


def text(rng: random.Random, scale: int) -> Case:
    del scale
    def name() -> str:
        return "".join(rng.choice([*HOSTILE, "a", "b", "_"]) for _ in range(rng.randint(2, 8)))

    return Case("text", "hostile names", "actions_round3.text",
                (name(), [name() for _ in range(3)]), False, {"time_limit_s": 90})


GENERATORS = {"side_effects": side_effects, "onnx_data": onnx_data,
              "data_dependent": data_dependent, "text": text}
