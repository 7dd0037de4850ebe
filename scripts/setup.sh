#!/usr/bin/env bash
# Set up Schedule Workbench on a fresh Debian machine: system packages (as root), a virtualenv in
# .venv, and the package in editable mode.  `scripts/setup.sh dev` adds the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

apt_updated=0  # apt's package lists are refreshed once per run, and nothing is left behind
apt_install() {
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    if [ "$apt_updated" = 0 ]; then apt-get update -qq && apt_updated=1; fi
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    echo "setup: please install: $*" >&2
  fi
}

command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
command -v dot >/dev/null 2>&1 || apt_install graphviz
if [ "$extra" = dev ] && [ ! -x /usr/bin/chromium ]; then
  apt_install chromium fonts-liberation  # headless browser tests of the HTML report
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv 2>/dev/null || { apt_install python3-venv; rm -rf .venv; python3 -m venv .venv; }
fi
# Packages go in with uv where it installs (it resolves the same releases as pip from the same
# registry, downloads in parallel and byte-compiles on every core: 45 s for what pip took 97 s
# on a 2-core machine); pip stays the fallback, and installs torch from the registry (pip honours
# a machine's pip configuration and WORKBENCH_TORCH_INDEX; uv would fetch a CUDA build).
export UV_LINK_MODE=copy  # the cache and the venv may lie on different file systems
installer=pip
if .venv/bin/python -m pip install -q uv && .venv/bin/python -m uv --version >/dev/null 2>&1; then
  installer=uv
else
  .venv/bin/python -m pip install -q --upgrade pip
fi
install() {  # install "$@" into .venv with uv, or with pip where uv is absent or fails
  if [ "$installer" = uv ] && .venv/bin/python -m uv pip install -q --python .venv/bin/python \
       --compile-bytecode "$@"; then
    return 0
  fi
  .venv/bin/python -m pip install -q "$@"
}
if [ "$extra" = dev ]; then
  install -e ".[dev]"
  # torch for the torch executor, the torch.fx importer and the profiler tests: a local CPU wheel
  # when one matches (no download), else torch from the registry (pip's default index, or
  # WORKBENCH_TORCH_INDEX, e.g. https://download.pytorch.org/whl/cpu for a CPU-only build).
  if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    wheel="$(ls ${PIP_FIND_LINKS:-/opt/wheels}/torch-*+cpu-*.whl 2>/dev/null | head -n 1 || true)"
    if [ -n "$wheel" ] && install "$wheel"; then
      echo "setup: torch installed from $wheel"
    else
      echo "setup: no local torch wheel fits; installing torch from the registry" >&2
      .venv/bin/python -m pip install -q ${WORKBENCH_TORCH_INDEX:+--index-url "$WORKBENCH_TORCH_INDEX"} torch
    fi
  fi
  .venv/bin/python -c "import torch; print('setup: torch', torch.__version__)"
else
  install -e .
fi
echo "setup: packages installed with $installer"
# byte-compiled once here, as pip does for what it installs: the editable package (and, for the
# tests, their helpers) would otherwise be compiled again in every process that imports it
# wherever PYTHONDONTWRITEBYTECODE is set (about 0.25 s of CPU per process importing the CLI)
.venv/bin/python -m compileall -q -j 0 workbench $( [ "$extra" = dev ] && echo tests benchmarks scripts ) >/dev/null
# the compiled memory placement is compiled here once (8-15 s) and cached beside its source,
# so that the first large memory plan does not pay for it (nothing happens where Numba is absent)
.venv/bin/python -c "from workbench.memory.compiled import warm_kernel; warm_kernel()"
echo "setup: done (.venv ready$( [ "$extra" = dev ] && echo ', with test tools'))"
