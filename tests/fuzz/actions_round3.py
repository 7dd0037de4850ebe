"""Actions of the issue-43 fuzz families (:mod:`tests.fuzz.cases_round3`): each returns
``("silent", why)`` for a wrong answer the project let through, raises a one-line
``WorkbenchError`` for a refusal, returns ``None`` when the input ran through as it should."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np


def side_effects(case: Any, workdir: str) -> Any:
    import workbench as wb
    from workbench.errors import ScheduleError
    from workbench.executors.gpu.emulator import emulate
    from workbench.executors.gpu.launch_plan import build_launch_plan
    from workbench.executors.gpu.reference import run_graph_reference
    from workbench.schedulers import TEST_OPTIONS
    from workbench.values.schedule import build_schedule

    data, seed = case.data
    path = Path(workdir) / "g.json"
    path.write_text(json.dumps(data))
    graph = wb.load(path)
    want = run_graph_reference(graph)
    names = [*graph.outputs, *(t.id for t in graph.tensors.values() if t.role == "parameter")]

    def differs(sched: Any, seeds: int) -> str:
        plan = build_launch_plan(sched)
        for s in range(seeds):
            got = emulate(plan, order="random", interleave_seed=s, tensors=names)
            for t in names:
                if not np.allclose(got[t], want[t], rtol=1e-5, equal_nan=True):
                    return f"{t} differs in interleaving {s}"
        return ""

    for policy in wb.policies():
        sched = wb.schedule(graph, policy, **TEST_OPTIONS.get(policy, {}))
        try:
            sched.validate()
        except ScheduleError as exc:
            return "silent", f"policy {policy}'s own schedule is refused: {exc}"
        why = differs(sched, 2)
        if why:
            return "silent", f"policy {policy}: {why}"
    rng = random.Random(seed)
    preds = {op.id: set(graph.predecessors(op.id)) for op in graph.ops}
    order: list[str] = []
    while len(order) < len(graph):
        ready = [o for o in graph.op_ids if o not in order and preds[o] <= set(order)]
        order.append(rng.choice(ready))
    width = rng.randint(1, 3)  # one stream: always ordered; three: mostly races
    hand = build_schedule(graph, "hand", {op: rng.randrange(width) for op in order}, order)
    try:
        hand.validate()
    except ScheduleError:
        try:
            build_launch_plan(hand)
        except ScheduleError:
            raise
        return "silent", "validate() refuses a hand schedule the launch-plan validator accepts"
    why = differs(hand, 4)
    return ("silent", f"a validated hand schedule: {why}") if why else None


def _onnx_model(kind: str, folder: Path) -> Path:
    """``y = x * w`` (w = 2.0), broken as ``kind`` says (:data:`cases_round3.ONNX_BREAKS`)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.array([2.0], dtype=np.float32), "w")
    inits = [w]
    if kind == "duplicate":
        inits.append(numpy_helper.from_array(np.array([7.0], dtype=np.float32), "w"))
    elif kind == "negative dims":
        inits = [TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-1], float_data=[2])]
    elif kind == "no data":
        inits = [TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 1 << 40])]
    elif kind == "payload size":
        inits = [TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3],
                             raw_data=b"\x00" * 4)]
    elif kind == "string":
        inits = [TensorProto(name="w", data_type=TensorProto.STRING, dims=[1],
                             string_data=[b"2"])]
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"], name="mul")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              initializer=inits)
    opsets = {"opset 0": [helper.make_opsetid("", 0)], "no opset": []}.get(
        kind, [helper.make_opsetid("", 17)])
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    path = folder / "m.onnx"
    external = kind in ("valid", "missing file", "short file", "fifo", "directory", "link out",
                        "parent folder", "absolute", "empty location", "bad offset",
                        "offset past end", "wrong length")
    if not external:
        path.write_bytes(model.SerializeToString())
        return path
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    model = onnx.load(str(path), load_external_data=False)
    tensor = model.graph.initializer[0]
    info = {e.key: e.value for e in tensor.external_data}
    data = folder / "w.bin"
    if kind == "missing file":
        data.unlink()
    elif kind == "short file":
        data.write_bytes(b"\x00")
    elif kind == "fifo":
        os.mkfifo(folder / "pipe")
        info["location"] = "pipe"
    elif kind == "directory":
        (folder / "d").mkdir()
        info["location"] = "d"
    elif kind == "link out":
        outside = folder.parent / "outside.bin"
        outside.write_bytes(np.array([9.0], dtype=np.float32).tobytes())
        (folder / "l.bin").symlink_to(outside)
        info["location"] = "l.bin"
    elif kind == "parent folder":
        info["location"] = "../w.bin"
    elif kind == "absolute":
        info["location"] = str(data)
    elif kind == "empty location":
        info["location"] = ""
    elif kind == "bad offset":
        info["offset"] = "-8"
    elif kind == "offset past end":
        info["offset"] = "4"
    elif kind == "wrong length":
        info["length"] = "16"
    del tensor.external_data[:]
    for k, v in info.items():
        tensor.external_data.add(key=k, value=v)
    path.write_bytes(model.SerializeToString())
    return path


def onnx_data(case: Any, workdir: str) -> Any:
    import workbench as wb

    kind, _ = case.data
    folder = Path(workdir) / "model"
    folder.mkdir()
    graph = wb.load(_onnx_model(kind, folder))
    trace = wb.execute(wb.schedule(graph, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs={"x": np.array([2.0], dtype=np.float32)},
                       return_outputs=True)
    out = trace.meta["outputs"]
    y = float(np.asarray(out[0] if isinstance(out, (list, tuple)) else out).reshape(-1)[0])
    if y != 4.0:
        return "silent", f"loaded and computed y = {y} (the model's weights give 4.0)"
    return None


def data_dependent(case: Any, workdir: str) -> Any:
    import torch

    import workbench as wb

    kind, before, after, seed = case.data

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(seed)
            self.pre = torch.nn.Sequential(*[torch.nn.Linear(6, 6) for _ in range(before)])
            self.post = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(after)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.pre(x)
            if kind == "mask index":
                y = x[x > 0]
            elif kind == "nonzero":
                y = x.nonzero().float()
            elif kind == "masked_select":
                y = torch.masked_select(x, x > 0.1)
            elif kind == "unique":
                y = torch.unique(x.round()).float()
            else:
                y = torch.repeat_interleave(x.flatten(), (x.flatten() > 0).long())
            return self.post(y) * 2

    wb.io.from_torch(Model().eval(), (torch.randn(3, 6),))
    return None  # accepted: silent (the case must be refused)


def text(case: Any, workdir: str) -> Any:
    import workbench as wb

    name, ids = case.data
    ops = [f"{i}:{v}" for i, v in enumerate(ids)]
    g = wb.Graph.from_edges([(ops[0], ops[1]), (ops[1], ops[2])],
                            ops={o: "relu" for o in ops}).replace(name=name)
    path = Path(workdir) / "g.json"
    wb.save(g, path)
    report = Path(workdir) / "r.html"
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LC_ALL": "C", "PYTHONUTF8": "0",
           "PYTHONPATH": str(Path(wb.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", str(path),
                           "--policies", "serial,nnc", "--no-progress", "-o", str(report)],
                          capture_output=True, env=env, timeout=80)
    err = done.stderr.decode("ascii", "replace")
    if done.returncode != 0 or "Traceback" in err:
        return "traceback", f"exit {done.returncode}: {err[-300:]}"
    shown = done.stdout.decode("ascii")
    html = report.read_text(encoding="utf-8")
    for ch in ("\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\x1b", "\x07"):
        if ch in shown or ch in html:
            return "silent", f"{ch!r} reached the {'terminal' if ch in shown else 'report'} raw"
    return None
