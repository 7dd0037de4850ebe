#!/usr/bin/env bash
# The GPU checks, run 2 of 2: what does not fit in scripts/device_check.sh, in the same shape (at
# most 8 minutes on one H100/H200, nothing installed, the plan and budgets printed first, at most
# 8 files back):
#   bash scripts/device_check_2.sh                   # results under $OUT (else results/device)
# Steps (python3 scripts/device_check.py --run 2 --plan):
#   1. warmup            GPU clocks up, provenance
#   2. pytest_cupy       pytest -m gpu (the CuPy executor)
#   3. compile_b1        torch.compile default and reduce-overhead, batch 1, fp32 and TF32
#   4. accelerate_b16    benchmarks/accelerate.py at batch 16
#   5. gpu_torch         benchmarks/gpu_torch.py: the IOS networks' built-in graphs, graph mode
#   6. probes            benchmarks/fidelity_probes.py: per-op timelines of the measured schedules
set -uo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/device_check.py --run 2 --out "${OUT:-results/device}" "$@"
