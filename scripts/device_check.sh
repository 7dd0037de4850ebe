#!/usr/bin/env bash
# The GPU checks, run 1 of 2, as one command for a lent GPU machine: at most 8 minutes on one
# H100/H200 with nothing installed or carried (its image has torch, torchvision, timm, pandas,
# networkx, hypothesis, pytest and CuPy, no plotly or graphviz):
#   bash scripts/device_check.sh                     # results under $OUT (else results/device)
#   WORKBENCH_COMMIT=<sha> bash scripts/device_check.sh   # the commit, where the copy has no .git
# Steps (their budgets are printed first; python3 scripts/device_check.py --run 1 --plan):
#   1. warmup            GPU clocks up (~10 s of matrix products), provenance
#   2. pytest_torch_gpu  pytest -m torch_gpu (modules needing plotly/graphviz skip at collection)
#   3. accelerate_b1     benchmarks/accelerate.py, batch 1, fp32 and TF32, NASNet-A last
# Everything comes back in at most 8 files: summary.txt (read first), summary.json, pytest.log,
# cases.jsonl (each benchmark case as soon as it is measured), results.tar.gz.
# bash scripts/device_check_2.sh covers the rest (CuPy tests, torch.compile, batch 16, ...).
# STEPS="warmup accelerate_b1" runs some steps; PYTHON picks the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/device_check.py --run 1 --out "${OUT:-results/device}" "$@"
