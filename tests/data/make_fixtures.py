"""Make the small fixtures under tests/data/ from real torch runs (CPU).

    python tests/data/make_fixtures.py            # writes next to this file

Two torchvision-free models: ``Branchy`` (a stem, three branches of different depth with
functional pooling, a concat, a residual add, a classifier) and ``TinyInception`` (one
Inception-like block: 1x1 | 1x1->3x3 | 1x1->5x5 | maxpool->1x1, concatenated).  For each:

* ``<model>.onnx``: ``torch.onnx.export`` with the legacy TorchScript exporter, a symbolic
  ``batch`` dimension and no constant folding (so the file carries weight-only nodes, as exports
  of real models do);
* ``<model>_fx.json``: the torch.fx import (the reference graph: ops, edges, shapes, MACs).

For ``Branchy`` only:

* ``branchy_cpu.pt.trace.json``: a PyTorch profiler (Kineto) trace of a CPU-only run;
* ``branchy_et.json`` + ``branchy_et_kineto.json``: an Execution Trace
  (``ExecutionTraceObserver``) and the Kineto trace of the same run;
* ``branchy_gpu_kineto.json``: a GPU-style Kineto trace synthesised from that run in Kineto's
  format (no GPU here): every op that computes launches one kernel (``cudaLaunchKernel`` inside
  the op, correlation and External ids as Kineto writes them) on stream 7, except the ops of
  the second branch, which run on stream 13; kernel times are the op's CPU time / 20.

Needs torch and onnx; takes a few seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def models() -> dict[str, tuple[Any, Any]]:
    """name -> (module in eval mode, example input)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.a1 = nn.Conv2d(16, 16, 3, padding=1)
            self.a2 = nn.Conv2d(16, 8, 3, padding=1)
            self.b1 = nn.Conv2d(16, 8, 1)
            self.c1 = nn.Conv2d(16, 8, 1)
            self.mix = nn.Conv2d(24, 16, 1)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):  # type: ignore[no-untyped-def]
            s = F.relu(self.bn(self.stem(x)))
            a = self.a2(F.relu(self.a1(s)))
            b = F.relu(self.b1(s))
            c = self.c1(F.avg_pool2d(s, kernel_size=3, stride=1, padding=1))
            y = F.relu(self.mix(torch.cat([a, b, c], 1))) + s
            y = F.adaptive_avg_pool2d(y, 1)
            return self.fc(torch.flatten(y, 1))

    class TinyInception(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b1 = nn.Conv2d(32, 16, 1)
            self.b2a, self.b2b = nn.Conv2d(32, 16, 1), nn.Conv2d(16, 24, 3, padding=1)
            self.b3a, self.b3b = nn.Conv2d(32, 4, 1), nn.Conv2d(4, 8, 5, padding=2)
            self.b4 = nn.Conv2d(32, 8, 1)

        def forward(self, x):  # type: ignore[no-untyped-def]
            b1 = F.relu(self.b1(x))
            b2 = F.relu(self.b2b(F.relu(self.b2a(x))))
            b3 = F.relu(self.b3b(F.relu(self.b3a(x))))
            b4 = F.relu(self.b4(F.max_pool2d(x, 3, stride=1, padding=1)))
            return torch.cat([b1, b2, b3, b4], 1)

    torch.manual_seed(0)
    return {"branchy": (Branchy().eval(), torch.randn(1, 3, 16, 16)),
            "tiny_inception": (TinyInception().eval(), torch.randn(1, 32, 14, 14))}


def export_onnx(module: Any, x: Any, path: Path) -> None:
    import torch

    torch.onnx.export(module, (x,), str(path), dynamo=False, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      do_constant_folding=False, opset_version=17)


def profile(module: Any, x: Any, out: Path, *, execution_trace: Path | None = None) -> None:
    """A CPU profile of one forward (after a warm-up), with an execution trace if asked."""
    import torch
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity

    et = None
    if execution_trace is not None:
        et = ExecutionTraceObserver()
        et.register_callback(str(execution_trace))
    with torch.no_grad():
        module(x)
        with torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                                    execution_trace_observer=et) as prof:
            module(x)
    prof.export_chrome_trace(str(out))


def _outermost_ops(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
                 key=lambda e: (e["ts"], -e["dur"]))
    out, end = [], float("-inf")
    for e in ops:
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e["dur"]
    return out


NO_KERNEL = ("aten::flatten", "aten::view", "aten::reshape", "aten::empty", "aten::t")


def synthesize_gpu(kineto: Path, out: Path) -> None:
    """A GPU-style Kineto trace of a CPU run (module docstring)."""
    data = json.loads(kineto.read_text())
    events = data["traceEvents"]
    data["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3 (synthesised)",
                                 "numSms": 132}]
    pid, corr = 0, 100000
    gpu_free = {7: 0.0, 13: 0.0}
    second = 0
    for op in _outermost_ops(events):
        if op["name"] in NO_KERNEL:
            continue
        corr += 1
        if op["name"] == "aten::conv2d":
            second += 1
        stream = 13 if op["name"] == "aten::conv2d" and second in (4, 5) else 7
        launch = op["ts"] + op["dur"] * 0.5
        dur = max(1.0, op["dur"] / 20)
        start = max(launch + 5.0, gpu_free[stream])
        gpu_free[stream] = start + dur
        ext = op["args"].get("External id")
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": op["pid"], "tid": op["tid"], "ts": launch, "dur": 3.0,
                       "args": {"External id": ext, "correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": f"{op['name'][6:]}_kernel",
                       "pid": pid, "tid": stream, "ts": start, "dur": dur,
                       "args": {"External id": ext, "correlation": corr, "device": 0,
                                "stream": stream, "grid": [8, 4, 1], "block": [256, 1, 1]}})
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": op["pid"],
                       "tid": op["tid"], "ts": launch})
        events.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": pid,
                       "tid": stream, "ts": start, "bp": "e"})
    for stream in gpu_free:
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": stream,
                       "args": {"name": f"stream {stream}"}})
    out.write_text(json.dumps(data, separators=(",", ":")))


def main(folder: Path = HERE) -> list[Path]:
    import torch

    sys.path.insert(0, str(folder.parents[1]))
    import workbench as wb

    torch.manual_seed(0)
    written = []
    for name, (module, x) in models().items():
        export_onnx(module, x, folder / f"{name}.onnx")
        wb.save(wb.io.from_torch(module, x, name=name, tracer="fx"), folder / f"{name}_fx.json")
        written += [folder / f"{name}.onnx", folder / f"{name}_fx.json"]
    module, x = models()["branchy"]
    profile(module, x, folder / "branchy_cpu.pt.trace.json")
    profile(module, x, folder / "branchy_et_kineto.json",
            execution_trace=folder / "branchy_et.json")
    synthesize_gpu(folder / "branchy_et_kineto.json", folder / "branchy_gpu_kineto.json")
    written += [folder / n for n in ("branchy_cpu.pt.trace.json", "branchy_et.json",
                                     "branchy_et_kineto.json", "branchy_gpu_kineto.json")]
    return written


if __name__ == "__main__":
    for p in main():
        print(f"{p.name}: {p.stat().st_size / 1024:.1f} kB")
