#!/usr/bin/env bash
# The GPU checks, as one command for a lent GPU machine (the device tool runs it in the
# repository root; its image has torch, torchvision, timm, pandas, networkx, hypothesis, pytest):
#   bash scripts/device_check.sh            # results and logs under $OUT (or results/device)
# Steps, each bounded so the whole stays under the device tool's 10 minutes per command:
#   1. pytest -m "gpu or torch_gpu"                      (~2 min)
#   2. benchmarks/accelerate.py --no-compile             (real models: eager, CUDA graph, every
#                                                         policy, auto; <= ACCEL_BUDGET_S)
#   3. benchmarks/gpu.py --executor torch                (the IOS networks; <= GPU_BUDGET_S)
#   4. benchmarks/fidelity_probes.py                     (the simulator's open H200 misses)
# Set STEPS="1 2" to run some of them.  The workbench runs from the checkout (PYTHONPATH=.);
# nothing is installed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
out="${OUT:-results/device}"
mkdir -p "$out"
steps="${STEPS:-1 2 3 4}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$out/gpu.txt"
for step in $steps; do
  case "$step" in
    1) timeout 180 python3 -m pytest -q -p no:cacheprovider -m "gpu or torch_gpu" \
         2>&1 | tail -n 40 | tee "$out/pytest_gpu.log" ;;
    2) timeout "${ACCEL_TIMEOUT_S:-300}" python3 benchmarks/accelerate.py --no-compile \
         --budget-s "${ACCEL_BUDGET_S:-240}" --out "$out" 2>&1 | tee "$out/accelerate.log" ;;
    3) timeout "${GPU_TIMEOUT_S:-240}" python3 benchmarks/gpu.py --executor torch \
         --budget-s "${GPU_BUDGET_S:-150}" --out "$out" 2>&1 | tail -n 60 | tee "$out/gpu.log" ;;
    4) timeout 120 python3 benchmarks/fidelity_probes.py --out "$out" \
         2>&1 | tail -n 60 | tee "$out/probes.log" ;;
    *) echo "device_check: unknown step $step (steps: 1 2 3 4)" >&2 ;;
  esac
done
