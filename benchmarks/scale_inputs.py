"""Write the big inputs of issue 34's scale findings into a folder, to measure the readers and
the memory planners on them (``/usr/bin/time -v``).

    .venv/bin/python benchmarks/scale_inputs.py OUT_DIR [--outputs 100000] [--events 1000000]
                                                [--chain 1000000] [--only wide,kineto,chain]

Files (each streamed to disk, so writing them needs little memory):

* ``wide_op.json``: a 4-op graph (full form) whose op ``wide`` lists ``--outputs`` outputs that
  the ``tensors`` table does not declare, so each is a zero-byte tensor
  (``docs/graph-format.md``), all read by one op ``c``: they are live together.
  ``workbench.plan_memory`` on any schedule of it plans ``--outputs`` + 3 tensors.
* ``kineto.json``: a PyTorch profiler (Kineto) trace of a GPU run with ``--events`` events: half
  kernels on 4 CUDA streams, half the ``cudaLaunchKernel`` calls that launched them (joined by
  ``args.correlation``), ~240 bytes an event (10^6 events: ~240 MB).
* ``chain.json``: a chain of ``--chain`` ops in the edge-list form (``op0 -> op1 -> ...``).

Deterministic: the same arguments write the same bytes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO


def write_wide_op(path: Path, outputs: int) -> None:
    """The 4-op graph ``a -> wide -> c -> d`` whose ``wide`` has ``outputs`` zero-byte outputs,
    all read by ``c`` (a concat): every one of them is live at once, from ``wide`` to ``c``."""
    mib = 1 << 20
    with path.open("w") as f:
        f.write('{"format": "schedule-workbench-graph", "version": 1, "name": "wide_op",\n')
        f.write(' "tensors": [\n')
        f.write(',\n'.join(json.dumps({"id": f"{op}:out", "size_bytes": mib, "producer": op,
                                       "role": "activation"}) for op in ("a", "c", "d")))
        f.write('],\n "ops": [\n')
        f.write(json.dumps({"id": "a", "kind": "relu", "inputs": [], "outputs": ["a:out"],
                            "bytes_read": mib, "bytes_written": mib}) + ",\n")
        f.write('  {"id": "wide", "kind": "split", "inputs": ["a:out"], "bytes_read": 1048576, '
                '"outputs": [')
        _join(f, (f'"w{k}"' for k in range(outputs)), per_line=1000)
        f.write(']},\n')
        f.write('  {"id": "c", "kind": "concat", "outputs": ["c:out"], "bytes_written": 1048576, '
                '"inputs": [')
        _join(f, (f'"w{k}"' for k in range(outputs)), per_line=1000)
        f.write(']},\n')
        f.write(json.dumps({"id": "d", "kind": "relu", "inputs": ["c:out"], "outputs": ["d:out"],
                            "bytes_read": mib, "bytes_written": mib}) + "\n")
        f.write(']}\n')


def write_kineto(path: Path, events: int) -> None:
    """A Kineto trace of ``events`` events (kernels and their launches, one profiler step)."""
    kernels = events // 2
    names = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add>",
             "ampere_sgemm_128x64_tn", "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float>",
             "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"]
    with path.open("w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n')
        f.write(' "traceEvents": [\n')
        # the wrapping step first, as the profiler writes it
        span = 5.0 * kernels + 100.0
        f.write(json.dumps({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",
                            "pid": 1, "tid": 1, "ts": 1000.0, "dur": span}))
        for k in range(kernels):
            launch = 1000.0 + 5.0 * k + 1.0
            stream = 7 + k % 4
            start = 1000.0 + 20.0 * (k // 4) + 50.0
            f.write(',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, '
                    f'"tid": 1, "ts": {launch:.3f}, "dur": 2.0, "args": {{"correlation": {k + 1},'
                    ' "cbid": 211}}')
            f.write(f',\n{{"ph": "X", "cat": "kernel", "name": "{names[k % 4]}", "pid": 0, '
                    f'"tid": {stream}, "ts": {start:.3f}, "dur": 15.0, "args": {{"device": 0, '
                    f'"stream": {stream}, "correlation": {k + 1}, "grid": [{1 + k % 64}, 1, 1],'
                    ' "block": [256, 1, 1]}}')
        f.write('\n]}\n')


def write_chain(path: Path, n: int) -> None:
    """A chain of ``n`` ops, edge-list form."""
    with path.open("w") as f:
        f.write('{"name": "chain", "edges": [')
        _join(f, (f'["op{k}", "op{k + 1}"]' for k in range(n - 1)), per_line=500)
        f.write(']}\n')


def _join(f: TextIO, items: object, per_line: int) -> None:
    """Write ``items`` comma-separated, ``per_line`` to a line."""
    for k, item in enumerate(items):  # type: ignore[attr-defined]
        if k:
            f.write(",\n" if k % per_line == 0 else ", ")
        f.write(item)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder to write into (created if missing)")
    ap.add_argument("--outputs", type=int, default=100_000, help="outputs of the wide op")
    ap.add_argument("--events", type=int, default=1_000_000, help="events of the Kineto trace")
    ap.add_argument("--chain", type=int, default=1_000_000, help="ops of the chain")
    ap.add_argument("--only", default="wide,kineto,chain", help="which files to write")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    if "wide" in only:
        write_wide_op(args.out / "wide_op.json", args.outputs)
    if "kineto" in only:
        write_kineto(args.out / "kineto.json", args.events)
    if "chain" in only:
        write_chain(args.out / "chain.json", args.chain)
    for name in ("wide_op.json", "kineto.json", "chain.json"):
        p = args.out / name
        if p.exists():
            print(f"{p}: {p.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
