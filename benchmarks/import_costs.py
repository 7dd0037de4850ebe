"""Real architectures through both import paths: shapes, costs and simulated makespans.

    .venv/bin/python benchmarks/import_costs.py [--models NAMES] [--paths fx,legacy,dynamo]
    .venv/bin/python benchmarks/import_costs.py --zoo       # the test suite's architectures

(From a git worktree, put ``PYTHONPATH=.`` in front, as for the other benchmarks.)

For each network, batch 1, built from its definition with the library's initial weights (nothing
downloaded): torchvision's ResNet-50, Inception V3, MobileNetV3-Large, EfficientNet-B0,
ShuffleNetV2, Swin-T, ViT-B/16, ConvNeXt-T, DenseNet-121, RegNetY-400MF, MNASNet and MaxViT-T;
timm's LeViT-128S, GhostNet and EfficientViT-B0; ``transformers``' BERT-base, GPT-2 and T5-small
(encoder) on 128 tokens (whichever of the libraries are installed; ``--zoo`` takes the
architectures of ``tests/model_zoo.py`` instead), imported through

* ``fx``: ``wb.io.from_torch`` (torch.export);
* ``legacy``: ``torch.onnx.export(..., dynamo=False, opset_version=17)`` then ``wb.load``;
* ``dynamo``: ``torch.onnx.export(..., dynamo=True, opset_version=18)`` then ``wb.load``,

each row gives the op count, the ops with a default cost (``attrs["cost"] == "default"``) and
their kinds, the GEMM FLOPs (convolutions of every rank, matrix products, attention, the
recurrent cells' products: :func:`workbench.ops.gemm_flops`) against
``FlopCounterMode`` run with the math SDPA backend (``gemm_err``), the simulated serial
makespan on h100 in graph mode and the import time (export excluded).  A failed export or import
is a row with its one-line error.  Prints the table; ``--out`` writes it as CSV too.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

import workbench as wb
from workbench.ops import gemm_flops

PATHS = ("fx", "legacy", "dynamo")
REAL = ("resnet50 inception_v3 mobilenet_v3_large efficientnet_b0 shufflenet_v2_x1_0 swin_t "
        "vit_b_16 convnext_tiny densenet121 regnet_y_400mf mnasnet1_0 maxvit_t levit_128s "
        "ghostnet_100 efficientvit_b0 bert gpt2 t5").split()


def build(name: str, zoo: bool) -> tuple[Any, tuple[Any, ...]]:
    """(model in eval mode, example inputs) of ``name``."""
    import torch

    if zoo:
        from tests.model_zoo import ZOO

        return ZOO[name]()
    image = (torch.randn(1, 3, 224, 224),)
    tokens = (torch.randint(0, 1000, (1, 128)),)
    if name in ("bert", "gpt2", "t5"):
        import transformers as tf

        make = {"bert": lambda: tf.BertModel(tf.BertConfig()),
                "gpt2": lambda: tf.GPT2Model(tf.GPT2Config(use_cache=False)),
                "t5": lambda: tf.T5EncoderModel(tf.T5Config())}[name]
        return make().eval(), tokens
    if name in ("levit_128s", "ghostnet_100", "efficientvit_b0"):
        import timm

        return timm.create_model(name, pretrained=False).eval(), image
    import torchvision

    if name == "inception_v3":
        model = torchvision.models.inception_v3(aux_logits=False, init_weights=False)
        return model.eval(), (torch.randn(1, 3, 299, 299),)
    return getattr(torchvision.models, name)().eval(), image


def reference_gemm_flops(model: Any, example: tuple[Any, ...]) -> float:
    """FlopCounterMode's FLOPs of a forward, attention on the math path and oneDNN off (its
    fused CPU LSTM is one kernel the counter does not see; off, the LSTM runs the addmm/mm
    it counts)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.backends.mkldnn.flags(enabled=False), sdpa_kernel(SDPBackend.MATH), \
            FlopCounterMode(display=False) as counter:
        model(*example)
    return float(counter.get_total_flops())


def imported(path: str, model: Any, example: tuple[Any, ...], folder: Path,
             name: str) -> tuple[wb.Graph, float]:
    """The graph through ``path`` and the import's seconds (the export not counted)."""
    import torch

    if path == "fx":
        start = time.perf_counter()
        return wb.io.from_torch(model, example), time.perf_counter() - start
    file = folder / f"{name}_{path}.onnx"
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        torch.onnx.export(model, example, str(file), dynamo=path == "dynamo",
                          opset_version=18 if path == "dynamo" else 17)
    start = time.perf_counter()
    return wb.load(file), time.perf_counter() - start


def row(name: str, path: str, graph: wb.Graph, seconds: float, reference: float
        ) -> dict[str, Any]:
    defaulted = Counter(op.kind for op in graph.ops if op.attrs.get("cost") == "default")
    gemm = sum(gemm_flops(op, graph.tensor(op.inputs[0]).shape if op.inputs else None)
               for op in graph.ops)
    run = wb.simulate(wb.schedule(graph, "serial"), "h100", mode="graph")
    return {"model": name, "path": path, "ops": len(graph), "kernels": int(run.df["kernels"].sum()),
            "default_cost": sum(defaulted.values()),
            "default_kinds": ", ".join(f"{k}×{n}" for k, n in defaulted.most_common(4)),
            "gemm_gflop": gemm / 1e9, "gemm_err": gemm / reference - 1 if reference else None,
            "serial_us": run.makespan, "import_s": seconds, "error": ""}


def main(argv: list[str] | None = None) -> int:
    # this folder holds accelerate.py, which transformers would take for the `accelerate` package
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: all of the set)")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--zoo", action="store_true", help="the test suite's architectures")
    parser.add_argument("--out", help="also write the table as CSV here")
    args = parser.parse_args(argv)
    if args.zoo:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.model_zoo import ZOO

        names = list(ZOO)
    else:
        names = list(REAL)
    if args.models:
        names = args.models.split(",")
    paths = [p for p in args.paths.split(",") if p]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                model, example = build(name, args.zoo)
            except Exception as err:  # noqa: BLE001 - a library missing or failing to import
                print(f"{name}: skipped ({type(err).__name__}: {err})", file=sys.stderr)
                continue
            reference = reference_gemm_flops(model, example)
            for path in paths:
                try:
                    graph, seconds = imported(path, model, example, Path(tmp), name)
                    rows.append(row(name, path, graph, seconds, reference))
                except Exception as err:  # noqa: BLE001 - a row, not a crash
                    first = str(err).strip().splitlines()[0][:120] if str(err).strip() else ""
                    rows.append({"model": name, "path": path,
                                 "error": f"{type(err).__name__}: {first}"})
                print(f"{name} {path}: done", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 40):
        print(table.round({"gemm_gflop": 3, "gemm_err": 4, "serial_us": 1, "import_s": 2})
              .to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
