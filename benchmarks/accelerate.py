"""Real models, accelerated: eager, the model's own CUDA graph, torch.compile, and wb.accelerate.

    .venv/bin/python benchmarks/accelerate.py [--device cuda] [--out results/accelerate]
    .venv/bin/python benchmarks/accelerate.py --smoke        # the CPU smoke run (tiny networks)

(The checkout's ``workbench`` is imported: the repository root is put first on ``sys.path``.)

For each network (torchvision's Inception V3 and GoogLeNet, a transformer encoder:
``nn.TransformerEncoder``, BERT-base sized, 6 layers, sequence 128, and timm's NASNet-A large,
last: the slowest to trace; weights as the libraries initialise them, nothing downloaded), batch
(1, 16) and precision (fp32: TF32 off; tf32), in eval mode under ``torch.no_grad()``:

* ``eager_us``: the model's ``forward``, issued eagerly;
* ``graph_us``: the model's ``forward`` captured as one CUDA graph on one stream, a bare
  ``replay()`` (the baseline Opara measures against);
* ``graph_wrapped_us``: that graph called as the accelerated module is called (the inputs copied
  into its static inputs, the replay on its own stream ordered after the caller's work and before
  its next, the outputs cloned: :class:`OwnGraph`), the like-for-like baseline of ``auto_us``;
* ``compile_us`` / ``compile_ro_us`` (and ``compile_<mode>_s``, the first call): ``torch.compile``
  in Inductor's ``default`` and ``reduce-overhead`` (CUDA graphs) modes (``--compile-modes``;
  ``workbench``: the workbench's own backend, registered from the checkout; ``--no-compile``
  leaves them out, ``--only-compile`` measures only them);
* every policy of ``--policies`` measured by ``wb.accelerate(policy="auto")`` itself (the model's
  own calls on the schedule's streams, one CUDA graph per schedule, ``--repeats`` replays) and
  ``auto_us``: the module it returns, timed as the model is (its ``forward``: input copy, replay,
  output clone), with the policy it chose (``model`` when no schedule beat the model's own CUDA
  graph beyond noise).

Fair measurements: each network is traced once (``from_torch``) for all its cases; cuDNN's
benchmark mode is off in every column (``precision_flags``: its heuristics pick the same
convolution algorithms for the baseline and every schedule, whatever runs beside them); before a
case's first column the model runs eagerly for ``--warm-s`` seconds, so no column starts on a GPU
idling at low clocks.  Each output is checked against the model's (``max |diff| / max |y|``:
``graph_err``, ``auto_err``, ``compile_err``...).  Every time is a median over ``--repeats`` runs
after ``--warmup`` (CUDA events).  ``vs_graph`` is ``graph_wrapped_us / auto_us`` (like for
like), ``vs_graph_bare`` ``graph_us / auto_us``; Opara reports up to 1.68x over PyTorch's
sequential CUDA graph on GoogLeNet, Inception and NASNet (arXiv 2312.10351).

Each case is written as soon as it is measured (``--cases``, JSON lines, default
``<out>/accelerate_cases.jsonl``); a case that would start after ``--budget-s`` is skipped and
listed.  At the end ``<out>/accelerate_results.json`` holds every row, the per-policy times and
the device's provenance, and the table is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._cases import append_case  # noqa: E402

#: In the order they run: NASNet-A last (its trace takes the longest).
NETWORKS = ("inception_v3", "googlenet", "transformer_encoder", "nasnet_a_large")
SMOKE_NETWORKS = ("tiny_inception", "tiny_encoder")
POLICIES = ("serial", "nnc", "wavefront", "asap", "ios_greedy", "min_streams", "gpto",
            "critical_path")
#: --compile-modes: Inductor's modes, or a backend (``workbench``: the workbench's own).
COMPILE_KEYS = {"default": "compile_us", "reduce-overhead": "compile_ro_us",
                "max-autotune-no-cudagraphs": "compile_ma_us", "workbench": "compile_wb_us",
                "eager": "compile_eager_us", "aot_eager": "compile_aot_us"}
BACKENDS = ("workbench", "eager", "aot_eager")
COLUMNS = ("network", "batch", "precision", "status", "eager_us", "graph_us", "graph_wrapped_us",
           "compile_us", "compile_ro_us", "auto_policy", "auto_us", "best_policy", "best_us",
           "vs_graph", "vs_graph_bare", "auto_err", "compile_err")
OPARA_BEST_VS_GRAPH = 1.68


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda "
                                                       "when present)")
    parser.add_argument("--networks", default=None, help=f"default: {','.join(NETWORKS)}")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--precisions", default="fp32,tf32")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--warm-s", type=float, default=2.0,
                        help="seconds of eager runs before a case's first column")
    parser.add_argument("--compile-modes", default="default,reduce-overhead",
                        help=f"of {', '.join(COMPILE_KEYS)}")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--only-compile", action="store_true",
                        help="only the torch.compile columns (and eager, for reference)")
    parser.add_argument("--budget-s", type=float, default=270.0,
                        help="start no case after this many seconds (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny networks, batch 1, fp32, 2 repeats (a CPU smoke run)")
    parser.add_argument("--out", default="results/accelerate")
    parser.add_argument("--cases", default=None,
                        help="JSON-lines file each case is appended to as soon as it is "
                             "measured (default: <out>/accelerate_cases.jsonl)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.networks = args.networks or ",".join(SMOKE_NETWORKS)
        args.batches, args.precisions, args.repeats, args.warmup = "1", "fp32", 2, 1
        args.warm_s = min(args.warm_s, 0.05)
    args.networks = args.networks or ",".join(NETWORKS)
    modes = _csv(args.compile_modes)
    unknown = [m for m in modes if m not in COMPILE_KEYS]
    if unknown:
        parser.error(f"unknown compile mode {unknown[0]!r} (known: {', '.join(COMPILE_KEYS)})")
    if args.no_compile and args.only_compile:
        parser.error("--no-compile and --only-compile leave nothing to measure")
    args.compile_modes = [] if args.no_compile else modes
    args.cases = args.cases or str(Path(args.out) / "accelerate_cases.jsonl")
    return args


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


# ------------------------------------------------------------------------------ networks
def build(name: str, batch: int, device: Any) -> tuple[Any, tuple[Any, ...]]:
    """(model in eval mode on ``device``, example inputs) of a benchmark network."""
    import torch

    torch.manual_seed(0)
    if name == "inception_v3":
        import torchvision

        model = torchvision.models.inception_v3(weights=None, aux_logits=False,
                                                init_weights=True)
        x: Any = torch.randn(batch, 3, 299, 299)
    elif name == "googlenet":
        import torchvision

        model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True)
        x = torch.randn(batch, 3, 224, 224)
    elif name == "nasnet_a_large":
        import timm

        model = timm.create_model("nasnetalarge", pretrained=False)
        x = torch.randn(batch, 3, 331, 331)
    elif name == "transformer_encoder":
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True,
                                                 activation="gelu")
        model = torch.nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
        x = torch.randn(batch, 128, 768)
    elif name in ("tiny_inception", "tiny_encoder"):
        model, x = _tiny(name, batch)
    else:
        raise SystemExit(f"accelerate.py: unknown network {name!r} (known: "
                         f"{', '.join((*NETWORKS, *SMOKE_NETWORKS))})")
    return model.eval().to(device), (x.to(device),)


def _tiny(name: str, batch: int) -> tuple[Any, Any]:
    """Small stand-ins for the smoke run: four inception branches; two encoder layers."""
    import torch
    from torch import nn

    if name == "tiny_encoder":
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), torch.randn(
            batch, 8, 32)

    class Branches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.b = nn.ModuleList([nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(),
                                                  nn.Conv2d(4, 4, k, padding=k // 2))
                                    for k in (1, 3, 5)])
            self.pool = nn.Sequential(nn.AvgPool2d(3, 1, 1), nn.Conv2d(8, 4, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.stem(x))
            return torch.cat([*(b(x) for b in self.b), self.pool(x)], 1).mean((2, 3))

    return Branches(), torch.randn(batch, 3, 16, 16)


# ------------------------------------------------------------------------------ baselines
class OwnGraph:
    """The model's forward as one CUDA graph on one stream, called the way the accelerated module
    (:class:`~workbench.executors.torch_exec.module.ScheduledModule`) is: each call copies the
    inputs into the captured static inputs on the caller's stream, replays on the graph's own
    stream after the caller's work (and the caller waits for it), and returns clones of the
    outputs.  ``cuda``: the ``torch.cuda`` to use (the tests pass a fake).  On the CPU: the
    forward itself with the same copy in and clone out."""

    def __init__(self, model: Any, example: tuple[Any, ...], *, cuda: Any = None,
                 warmup: int = 3) -> None:
        import torch

        self.model = model
        self.static = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a
                            for a in example)
        self.cuda = cuda
        self.graph: Any = None
        if cuda is None:
            return
        self.stream = cuda.Stream()
        self.stream.wait_stream(cuda.current_stream())
        with cuda.stream(self.stream):  # lazy handles and workspaces before the capture
            for _ in range(max(1, warmup)):
                model(*self.static)
        cuda.current_stream().wait_stream(self.stream)
        cuda.synchronize()
        self.graph = cuda.CUDAGraph()
        with cuda.graph(self.graph, stream=self.stream):
            self.out = model(*self.static)

    def __call__(self, *args: Any) -> Any:
        import torch
        from torch.utils._pytree import tree_map

        for static, value in zip(self.static, args, strict=True):
            if isinstance(static, torch.Tensor) and static.data_ptr() != value.data_ptr():
                static.copy_(value)
        if self.graph is None:
            out = self.model(*self.static)
        else:
            caller = self.cuda.current_stream()
            self.stream.wait_stream(caller)
            with self.cuda.stream(self.stream):
                self.graph.replay()
            caller.wait_stream(self.stream)
            out = self.out
        return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, out)


def warm(model: Any, example: tuple[Any, ...], seconds: float, device: Any) -> int:
    """Run the model eagerly for about ``seconds`` (GPU clocks up, kernels loaded, cuDNN's
    heuristics cached); returns how many runs."""
    import torch

    on_cuda = torch.device(device).type == "cuda"
    t0, n = time.perf_counter(), 0
    while True:
        model(*example)
        n += 1
        if on_cuda and n % 4 == 0:
            torch.cuda.synchronize()
        if time.perf_counter() - t0 >= seconds:
            break
    if on_cuda:
        torch.cuda.synchronize()
    return n


# ------------------------------------------------------------------------------ one case
def _rel_err(got: Any, want: Any) -> float:
    """``max |diff| / max |y|`` over the outputs, as a verified run measures it
    (:func:`workbench.executors.torch_exec.check.compare_results`); NaN when they do not even
    match in structure or shape (or hold a NaN)."""
    from workbench.errors import ScheduleError
    from workbench.executors.torch_exec.check import compare_results

    try:
        return float(compare_results(got, want, tolerance=math.inf,
                                     what="benchmark")["max_rel_diff"])
    except ScheduleError:
        return math.nan


def trace_model(model: Any, example: tuple[Any, ...]) -> Any:
    """The model's graph (its own calls), traced once for every case of a network and batch."""
    from workbench.io.torch.fx import from_torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes: costs are not used here
        return from_torch(model, example)


def run_case(name: str, batch: int, precision: str, args: argparse.Namespace, device: Any,
             built: tuple[Any, tuple[Any, ...], Any]) -> dict[str, Any]:
    """One row: the model several ways and every policy, outputs checked.  ``built``: the model,
    its example and its traced graph (``None`` when only torch.compile is measured)."""
    import torch

    from workbench.executors.torch_exec.baseline import time_call, time_model
    from workbench.executors.torch_exec.runner import precision_flags

    model, example, graph = built
    on_cuda = torch.device(device).type == "cuda"
    row: dict[str, Any] = {"network": name, "batch": batch, "precision": precision,
                           "status": "ok", "cudnn_benchmark": False}
    timing = {"device": device, "warmup": args.warmup, "repeats": args.repeats}
    with torch.no_grad(), precision_flags(precision):
        want = model(*example)
        row["warm_runs"] = warm(model, example, args.warm_s, device)
        timed = time_model(model, example, mode="eager", precision=precision, **timing)
        row["eager_us"], row["eager_how"] = timed["makespan_median_us"], timed["how"]
        if not args.only_compile:
            timed = time_model(model, example, mode="graph", precision=precision, **timing)
            row["graph_us"], row["graph_how"] = timed["makespan_median_us"], timed["how"]
            own = OwnGraph(model, example, cuda=torch.cuda if on_cuda else None,
                           warmup=args.warmup)
            row["graph_err"] = _rel_err(own(*example), want)
            row["graph_wrapped_us"] = time_call(lambda: own(*example),
                                                **timing)["makespan_median_us"]
            del own
        for mode in args.compile_modes:
            row.update(_compiled(model, example, want, mode, precision, args, timing))
    if not args.only_compile:
        row.update(_accelerated(model, example, graph, want, precision, args, timing))
    for key in ("graph_wrapped_us", "graph_us"):
        ratio = "vs_graph" if key == "graph_wrapped_us" else "vs_graph_bare"
        row[ratio] = row[key] / row["auto_us"] if row.get(key) and row.get("auto_us") else None
    return row


def _compiled(model: Any, example: tuple[Any, ...], want: Any, mode: str, precision: str,
              args: argparse.Namespace, timing: dict[str, Any]) -> dict[str, Any]:
    """``torch.compile(model)`` in ``mode`` (or with backend ``mode``): its first call (the
    compilation) and its steady-state time, output checked."""
    import torch

    from workbench.executors.torch_exec.baseline import time_call

    key = COMPILE_KEYS[mode]
    stem = key.removesuffix("_us")
    torch._dynamo.reset()
    if mode == "workbench":
        from workbench.orchestration.compile_backend import register

        register()  # from the checkout: no entry point without an install
        options: dict[str, Any] = {"precision": precision, "policies": _csv(args.policies),
                                   "repeats": args.repeats, "warmup": args.warmup}
        compiled = torch.compile(model, backend="workbench", options=options)
    elif mode in BACKENDS:
        compiled = torch.compile(model, backend=mode)
    else:
        compiled = torch.compile(model, mode=mode)
    out: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        out[f"{stem}_err"] = _rel_err(compiled(*example), want)
        out[f"{stem}_s"] = time.perf_counter() - t0
        out[key] = time_call(lambda: compiled(*example), **timing)["makespan_median_us"]
    except Exception as exc:  # noqa: BLE001 - a failing compiler is a cell, not a lost run
        out[f"{stem}_failed"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    torch._dynamo.reset()
    return out


def _accelerated(model: Any, example: tuple[Any, ...], graph: Any, want: Any, precision: str,
                 args: argparse.Namespace, timing: dict[str, Any]) -> dict[str, Any]:
    """``wb.accelerate(policy="auto")`` on the graph traced once: every policy's measurement,
    the choice, and the returned module timed as the model is."""
    import torch

    from workbench.executors.torch_exec.baseline import time_call
    from workbench.executors.torch_exec.runner import precision_flags
    from workbench.orchestration.accelerate import accelerate_graph

    t0 = time.perf_counter()
    fast = accelerate_graph(graph, model, example, policy="auto", mode="graph",
                            precision=precision, policies=_csv(args.policies),
                            repeats=args.repeats, warmup=args.warmup)
    row: dict[str, Any] = {"accelerate_s": time.perf_counter() - t0, "auto_policy": fast.policy}
    with torch.no_grad(), precision_flags(precision):
        row["auto_err"] = _rel_err(fast(*example), want)
        row["auto_us"] = time_call(lambda: fast(*example), **timing)["makespan_median_us"]
    cmp = fast.comparison
    if cmp is not None:
        row["policies"] = {p: {"median_us": t.meta["makespan_median_us"],
                               "q1_us": t.meta["makespan_q1_us"],
                               "q3_us": t.meta["makespan_q3_us"],
                               "streams": t.meta["streams"]} for p, t in cmp.traces.items()}
        row["model_itself"] = cmp.settings.get("model_itself")
        row["decision"] = cmp.settings.get("decision")
        if row["policies"]:
            best = min(row["policies"], key=lambda p: row["policies"][p]["median_us"])
            row["best_policy"], row["best_us"] = best, row["policies"][best]["median_us"]
    return row


# ------------------------------------------------------------------------------ the table
def table_text(rows: list[dict[str, Any]]) -> str:
    """The rows as a fixed-width table (µs with one decimal, ratios as 1.23x)."""
    def cell(key: str, value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        if key.endswith("_us"):
            return f"{value:,.1f}"
        if key.startswith("vs_graph"):
            return f"{value:.2f}x"
        if key.endswith("_err"):
            return f"{value:.1e}"
        return str(value)

    cells = [[cell(k, r.get(k)) for k in COLUMNS] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(COLUMNS)]
    lines = ["  ".join(k.ljust(w) for k, w in zip(COLUMNS, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import torch

    from workbench.executors.torch_exec.frame import device_info

    args = parse(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = device_info(str(device))
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name in _csv(args.networks):
        for batch in (int(b) for b in _csv(args.batches)):
            built = None
            for precision in _csv(args.precisions):
                label = f"{name} b{batch} {precision}"
                if time.perf_counter() - started > args.budget_s:
                    skipped.append(label)
                    print(f"{label}: skipped (past --budget-s {args.budget_s:g} s)",
                          file=sys.stderr, flush=True)
                    continue
                t0 = time.perf_counter()
                try:
                    if built is None:
                        model, example = build(name, batch, device)
                        graph = None if args.only_compile else trace_model(model, example)
                        built = (model, example, graph)
                    row = run_case(name, batch, precision, args, device, built)
                except ImportError as exc:  # torchvision / timm missing here
                    row = {"network": name, "batch": batch, "precision": precision,
                           "status": f"skipped: {exc}"}
                row["case_s"] = time.perf_counter() - t0
                rows.append(row)
                append_case(args.cases, "accelerate", {**row, "device": info["name"]})
                print(f"{label}: {row['status']} in {row['case_s']:.1f} s", file=sys.stderr,
                      flush=True)
    result = {"command": " ".join(["benchmarks/accelerate.py", *(argv or sys.argv[1:])]),
              "device": info, "rows": rows, "skipped": skipped,
              "cudnn_benchmark": False, "opara_best_vs_graph": OPARA_BEST_VS_GRAPH,
              "seconds": time.perf_counter() - started}
    (out / "accelerate_results.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"device: {info['name']} (torch {info['torch']}, cuda {info.get('cuda', '-')}, "
          f"cudnn {info.get('cudnn', '-')}, driver {info.get('driver', '-')}); cuDNN benchmark "
          f"mode off in every column")
    print(table_text(rows))
    if skipped:
        print(f"skipped (budget): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
