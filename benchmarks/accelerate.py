"""Real models, accelerated: eager, the model's own CUDA graph, torch.compile, and wb.accelerate.

    .venv/bin/python benchmarks/accelerate.py [--device cuda] [--out results/accelerate]
    .venv/bin/python benchmarks/accelerate.py --smoke        # the CPU smoke run (tiny networks)

(From a git worktree, put ``PYTHONPATH=.`` in front, as for the other benchmarks.)

For each network (torchvision's Inception V3 and GoogLeNet, timm's NASNet-A large, a
transformer encoder: ``nn.TransformerEncoder``, BERT-base sized, 6 layers, sequence 128; weights
as the libraries initialise them, nothing downloaded), batch (1, 16) and precision (fp32: TF32
off; tf32), in eval mode under ``torch.no_grad()``:

* ``eager_us``: the model's ``forward``, issued eagerly;
* ``graph_us``: the model's ``forward`` captured as one CUDA graph on one stream, replayed (the
  baseline Opara and the issue measure against);
* ``compile_us``: ``torch.compile(model)`` (Inductor, default mode; ``compile_s`` is its first
  call), ``--no-compile`` skips it;
* every policy of ``--policies`` measured by ``wb.accelerate(policy="auto")`` itself (the model's
  own calls on the schedule's streams, one CUDA graph per schedule, ``--repeats`` replays: median
  and quartiles) and ``auto_us``: the module it returns, timed as the model is (its ``forward``:
  input copy, replay, output clone), with the policy it chose (``model`` when no schedule beat
  the model's own CUDA graph beyond noise).

Each output is checked against the model's (``max |diff| / max |y|``: ``auto_err``,
``compile_err``).  Every time is a median over ``--repeats`` runs after ``--warmup`` (CUDA
events).  ``vs_graph`` is ``graph_us / auto_us``; Opara reports up to 1.68x over PyTorch's
sequential CUDA graph on GoogLeNet, Inception and NASNet (arXiv 2312.10351).  Sized for under
5 minutes on one H100/H200 with ``--no-compile`` (Inductor's compilations take minutes more; a
case that would start after ``--budget-s`` is skipped and listed).  Writes
``<out>/accelerate_results.json`` (rows, per-policy times, device provenance) and prints the
table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

NETWORKS = ("inception_v3", "googlenet", "nasnet_a_large", "transformer_encoder")
SMOKE_NETWORKS = ("tiny_inception", "tiny_encoder")
POLICIES = ("serial", "nnc", "wavefront", "asap", "ios_greedy", "min_streams", "gpto",
            "critical_path")
COLUMNS = ("network", "batch", "precision", "status", "eager_us", "graph_us", "compile_us",
           "auto_policy", "auto_us", "best_policy", "best_us", "vs_graph", "auto_err",
           "compile_err")
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
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--budget-s", type=float, default=270.0,
                        help="start no case after this many seconds (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny networks, batch 1, fp32, 2 repeats (a CPU smoke run)")
    parser.add_argument("--out", default="results/accelerate")
    args = parser.parse_args(argv)
    if args.smoke:
        args.networks = args.networks or ",".join(SMOKE_NETWORKS)
        args.batches, args.precisions, args.repeats, args.warmup = "1", "fp32", 2, 1
    args.networks = args.networks or ",".join(NETWORKS)
    return args


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


def run_case(name: str, batch: int, precision: str, args: argparse.Namespace,
             device: Any) -> dict[str, Any]:
    """One row: the model four ways and every policy, outputs checked."""
    import torch

    import workbench as wb
    from workbench.executors.torch_exec.baseline import time_call, time_model
    from workbench.executors.torch_exec.runner import precision_flags

    model, example = build(name, batch, device)
    row: dict[str, Any] = {"network": name, "batch": batch, "precision": precision,
                           "status": "ok"}
    with torch.no_grad(), precision_flags(precision):
        want = model(*example)
        for mode, key in (("eager", "eager_us"), ("graph", "graph_us")):
            timed = time_model(model, example, device=device, mode=mode, precision=precision,
                               warmup=args.warmup, repeats=args.repeats)
            row[key] = timed["makespan_median_us"]
            row[f"{mode}_how"] = timed["how"]
        if not args.no_compile:
            torch._dynamo.reset()
            compiled = torch.compile(model)
            t0 = time.perf_counter()
            row["compile_err"] = _rel_err(compiled(*example), want)
            row["compile_s"] = time.perf_counter() - t0
            row["compile_us"] = time_call(lambda: compiled(*example), device=device,
                                          warmup=args.warmup,
                                          repeats=args.repeats)["makespan_median_us"]
        t0 = time.perf_counter()
        fast = wb.accelerate(model, example, policy="auto", mode="graph", precision=precision,
                             policies=[p for p in args.policies.split(",") if p],
                             repeats=args.repeats, warmup=args.warmup)
        row["accelerate_s"] = time.perf_counter() - t0
        row["auto_policy"] = fast.policy
        row["auto_err"] = _rel_err(fast(*example), want)
        row["auto_us"] = time_call(lambda: fast(*example), device=device, warmup=args.warmup,
                                   repeats=args.repeats)["makespan_median_us"]
    cmp = fast.comparison
    if cmp is not None:
        row["policies"] = {p: {"median_us": t.meta["makespan_median_us"],
                               "q1_us": t.meta["makespan_q1_us"],
                               "q3_us": t.meta["makespan_q3_us"],
                               "streams": t.meta["streams"]} for p, t in cmp.traces.items()}
        row["decision"] = cmp.settings.get("decision")
        if row["policies"]:
            best = min(row["policies"], key=lambda p: row["policies"][p]["median_us"])
            row["best_policy"], row["best_us"] = best, row["policies"][best]["median_us"]
    row["vs_graph"] = row["graph_us"] / row["auto_us"] if row.get("auto_us") else None
    return row


# ------------------------------------------------------------------------------ the table
def table_text(rows: list[dict[str, Any]]) -> str:
    """The rows as a fixed-width table (µs with one decimal, ratios as 1.23x)."""
    def cell(key: str, value: Any) -> str:
        if value is None:
            return "-"
        if key.endswith("_us"):
            return f"{value:,.1f}"
        if key == "vs_graph":
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
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    cases = [(n, int(b), p) for n in args.networks.split(",") for b in args.batches.split(",")
             for p in args.precisions.split(",")]
    for name, batch, precision in cases:
        label = f"{name} b{batch} {precision}"
        if time.perf_counter() - started > args.budget_s:
            skipped.append(label)
            print(f"{label}: skipped (past --budget-s {args.budget_s:g} s)", file=sys.stderr)
            continue
        t0 = time.perf_counter()
        try:
            row = run_case(name, batch, precision, args, device)
        except ImportError as exc:  # torchvision / timm missing here
            row = {"network": name, "batch": batch, "precision": precision,
                   "status": f"skipped: {exc}"}
        rows.append(row)
        print(f"{label}: {row['status']} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = device_info(str(device))
    result = {"command": " ".join(["benchmarks/accelerate.py", *(argv or sys.argv[1:])]),
              "device": info, "rows": rows, "skipped": skipped,
              "opara_best_vs_graph": OPARA_BEST_VS_GRAPH,
              "seconds": time.perf_counter() - started}
    (out / "accelerate_results.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"device: {info['name']} (torch {info['torch']})")
    print(table_text(rows))
    if skipped:
        print(f"skipped (budget): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
