"""The GPU checks, as one command per lent GPU run, each done in at most 8 minutes (issue 42).

    bash scripts/device_check.sh       # run 1: warm-up, the torch GPU tests, the accelerate table
    bash scripts/device_check_2.sh     # run 2: warm-up, the CuPy tests, torch.compile, batch 16,
                                       #        the IOS networks, the fidelity probes
    python3 scripts/device_check.py --run 1 --plan    # the plan and its budgets; runs nothing

Nothing is installed or carried: the workbench runs from the checkout (``PYTHONPATH`` starts
with the repository root).  Each run prints its plan first (every step, its time budget and the
total), then runs the steps one after the other, each in its own process group stopped at its
budget; the budgets add up to at most :data:`TOTAL_S` (the device tool stops a command at 600 s).
The first step warms the GPU's clocks (about 10 s of matrix products) and records the
provenance: GPU, driver, torch, CUDA and cuDNN versions, the git commit (``git rev-parse HEAD``,
else ``$WORKBENCH_COMMIT``: the device machine's copy may have no ``.git``).

Everything comes back in at most :data:`MAX_FILES` files under the output folder (``--out``,
default ``$OUT``): ``summary.txt`` (read it first: the plan with each step's outcome, the
provenance, the tail of every step's log, the benchmarks' tables), ``summary.json``,
``pytest.log``, ``cases.jsonl`` (every benchmark case, one JSON line each, written as soon as
it is measured) and ``results.tar.gz`` (every log, every benchmark's JSON and CSV files).  The
summary and the archive are rewritten after every step, so a run stopped part-way leaves what it
did.  Steps write into a work folder outside the output folder.

``--profile tiny`` (or ``DEVICE_CHECK_PROFILE=tiny``) runs each step at a tiny size, for the CI
test that runs a device check in a simulated device image (``tests/test_device_check.py``):
the GPU tests are only collected, the benchmarks run their smoke sizes.  ``--steps a,b`` (or
``STEPS``) runs some steps only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOTAL_S = 480  # the budgets of one run add up to at most this (8 minutes)
MAX_FILES = 8  # files the device tool brings back from $OUT
PACK_S = 20  # kept aside for stopping a step, writing the summary and packing
OUT_FILES = ("summary.txt", "summary.json", "pytest.log", "cases.jsonl", "results.tar.gz")


@dataclass(frozen=True)
class Step:
    """One step of a run: its command (``{py}``, ``{work}``, ``{cases}`` filled in) at full size
    and at the tiny size of the simulated image, its time budget, what it is for."""

    name: str
    budget_s: int
    what: str
    argv: tuple[str, ...]
    tiny: tuple[str, ...]

    @property
    def log(self) -> str:
        return f"{self.name}.log"


_WARMUP = Step("warmup", 30, "GPU clocks up (~10 s of matrix products); provenance",
               ("{py}", "scripts/device_check.py", "warmup", "--seconds", "10",
                "--json", "{work}/provenance.json"),
               ("{py}", "scripts/device_check.py", "warmup", "--seconds", "0.2",
                "--json", "{work}/provenance.json"))
#: Verbose: each test's outcome is in the log as it ends, so a step stopped at its budget says
#: how far it got; ``{timeout}``: pytest-timeout's per-test limit where it is installed.
_PYTEST = ("{py}", "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfEs", "--durations=20",
           "{timeout}")
#: In the simulated image every GPU test of both runs is collected (collection errors show).
_COLLECT = ("{py}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "-m",
            "gpu or torch_gpu")
_ACCEL = ("{py}", "benchmarks/accelerate.py", "--cases", "{cases}")
_TINY_ACCEL = (*_ACCEL, "--smoke", "--device", "cpu", "--networks", "tiny_inception",
               "--policies", "serial,nnc")

RUNS: dict[int, tuple[Step, ...]] = {
    1: (
        _WARMUP,
        Step("pytest_torch_gpu", 130, "the torch executor's GPU tests (-m torch_gpu)",
             (*_PYTEST, "-m", "torch_gpu", "--junitxml={work}/pytest_torch_gpu.xml"), _COLLECT),
        Step("accelerate_b1", 280,
             "batch 1, fp32 and TF32: eager, own CUDA graph (bare, wrapped), every policy, "
             "auto; Inception V3, GoogLeNet, transformer encoder, NASNet-A last",
             (*_ACCEL, "--batches", "1", "--precisions", "fp32,tf32", "--no-compile",
              "--budget-s", "220", "--out", "{work}/accelerate_b1"),
             (*_TINY_ACCEL, "--no-compile", "--out", "{work}/accelerate_b1")),
    ),
    2: (
        _WARMUP,
        Step("pytest_cupy", 100, "the CuPy executor's GPU tests (-m gpu)",
             (*_PYTEST, "-m", "gpu", "--junitxml={work}/pytest_cupy.xml"), _COLLECT),
        Step("compile_b1", 160,
             "batch 1, fp32 and TF32: torch.compile default and reduce-overhead (CUDA graphs), "
             "NASNet-A last",
             (*_ACCEL, "--batches", "1", "--precisions", "fp32,tf32", "--only-compile",
              "--compile-modes", "default,reduce-overhead", "--budget-s", "130",
              "--out", "{work}/compile_b1"),
             (*_TINY_ACCEL, "--only-compile", "--compile-modes", "eager",
              "--out", "{work}/compile_b1")),
        Step("accelerate_b16", 70, "batch 16, fp32 and TF32: the columns of run 1",
             (*_ACCEL, "--batches", "16", "--precisions", "fp32,tf32", "--no-compile",
              "--budget-s", "40", "--out", "{work}/accelerate_b16"),
             (*_TINY_ACCEL, "--no-compile", "--out", "{work}/accelerate_b16")),
        Step("gpu_torch", 50, "the IOS networks' built-in graphs, graph mode, every policy",
             ("{py}", "benchmarks/gpu_torch.py", "--cases", "{cases}", "--batches", "1",
              "--modes", "graph", "--precisions", "fp32,tf32", "--no-oracle", "--repeats", "10",
              "--budget-s", "30", "--out", "{work}/gpu_torch"),
             ("{py}", "benchmarks/gpu_torch.py", "--cases", "{cases}", "--device", "cuda",
              "--quick", "--networks", "squeezenet", "--policies", "nnc", "--no-oracle",
              "--precisions", "fp32", "--out", "{work}/gpu_torch")),
        Step("probes", 40, "the fidelity probes' per-op timelines (no stand-alone table)",
             ("{py}", "benchmarks/fidelity_probes.py", "--cases", "{cases}", "--skip-alone",
              "--repeats", "10", "--out", "{work}/probes"),
             ("{py}", "benchmarks/fidelity_probes.py", "--cases", "{cases}", "--device", "cuda",
              "--quick", "--skip-alone", "--out", "{work}/probes")),
    ),
}


def plan_text(run: int, steps: tuple[Step, ...], profile: str) -> str:
    """The plan as printed first: one line per step with its budget, then the total."""
    total = sum(s.budget_s for s in steps)
    lines = [f"device check, run {run} of {len(RUNS)} ({profile} profile): {len(steps)} steps, "
             f"budget {total} s + {PACK_S} s to pack (at most {TOTAL_S} s; the device tool "
             f"stops a command at 600 s)"]
    lines += [f"  {k}. {s.name:<18} {s.budget_s:>4} s  {s.what}" for k, s in enumerate(steps, 1)]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ running
@dataclass
class Outcome:
    step: Step
    rc: int | None = None
    wall_s: float = 0.0
    timed_out: bool = False

    @property
    def status(self) -> str:
        if self.rc is None:
            return "not run"
        if self.timed_out:
            return f"stopped at its {self.step.budget_s} s budget"
        return "ok" if self.rc == 0 else f"exit {self.rc}"


_RUNNING: list[subprocess.Popen[Any]] = []  # the step under way (stopped with the check)


def run_step(step: Step, argv: list[str], *, work: Path, env: dict[str, str]) -> Outcome:
    """Run one step in its own process group (in this session, so whatever stops the check's
    session stops it too), its output to its log; stopped at its budget (SIGTERM to the group,
    SIGKILL 5 s later)."""
    outcome = Outcome(step)
    t0 = time.perf_counter()
    with (work / step.log).open("w", encoding="utf-8") as log:
        log.write(f"$ {' '.join(argv)}\n")
        log.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=os.setpgrp)
        _RUNNING.append(proc)
        try:
            outcome.rc = proc.wait(timeout=step.budget_s)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
            _stop(proc)
            outcome.rc = proc.returncode
        finally:
            _RUNNING.remove(proc)
    outcome.wall_s = time.perf_counter() - t0
    return outcome


def _on_term(signum: int, frame: Any) -> None:
    """Stopped from outside: stop the step under way too, then exit."""
    for proc in list(_RUNNING):
        _stop(proc)
    raise SystemExit(128 + signum)


def _stop(proc: subprocess.Popen[Any]) -> None:
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, lines: int) -> str:
    if not path.exists():
        return "(no log)"
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(text[-lines:])


def write_summary(out: Path, work: Path, run: int, profile: str,
                  outcomes: list[Outcome]) -> None:
    """summary.txt (plan with outcomes, provenance, log tails) and summary.json."""
    provenance = {}
    if (work / "provenance.json").exists():
        provenance = json.loads((work / "provenance.json").read_text(encoding="utf-8"))
    rows: dict[str, list[dict[str, Any]]] = {}
    if (out / "cases.jsonl").exists():
        sys.path.insert(0, str(ROOT))
        from benchmarks._cases import read_cases

        for row in read_cases(out / "cases.jsonl"):
            rows.setdefault(str(row.get("benchmark", "?")), []).append(row)
    cases = {name: len(r) for name, r in rows.items()}
    steps = [{"step": o.step.name, "budget_s": o.step.budget_s, "status": o.status,
              "rc": o.rc, "wall_s": round(o.wall_s, 1), "timed_out": o.timed_out}
             for o in outcomes]
    (out / "summary.json").write_text(json.dumps(
        {"run": run, "profile": profile, "provenance": provenance, "steps": steps,
         "cases": cases}, indent=1, default=str), encoding="utf-8")
    lines = [plan_text(run, tuple(o.step for o in outcomes), profile), "", "outcome:"]
    lines += [f"  {o.step.name:<18} {o.status:<30} {o.wall_s:6.1f} s" for o in outcomes]
    lines += ["", "provenance: " + ", ".join(f"{k} {v}" for k, v in provenance.items()
                                             if not isinstance(v, dict)),
              f"cases measured: {cases or 'none'}"]
    for name, table in _tables(rows).items():
        lines += ["", f"----- {name}: every case measured so far (cases.jsonl)", table]
    for o in outcomes:
        if o.rc is not None:
            lines += ["", f"----- {o.step.name} ({o.status}): the end of {o.step.log}",
                      _tail(work / o.step.log, 45)]
    (out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tables(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """The benchmarks' own tables of the cases measured so far (even if a step was stopped
    before printing its own)."""
    import importlib

    out = {}
    for name in ("accelerate", "gpu_torch"):
        if rows.get(name):
            try:
                module = importlib.import_module(f"benchmarks.{name}")
                out[name] = module.table_text(rows[name])
            except Exception as exc:  # noqa: BLE001 - the summary is written whatever happens
                out[name] = f"(no table: {type(exc).__name__}: {exc})"
    return out


def pack(out: Path, work: Path) -> None:
    """results.tar.gz: the work folder and the summary, replaced atomically."""
    partial = out / ".results.tar.gz.part"
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(work, arcname="work")
        for name in ("summary.txt", "summary.json", "cases.jsonl"):
            if (out / name).exists():
                tar.add(out / name, arcname=name)
    partial.replace(out / "results.tar.gz")


def keep_few_files(out: Path, work: Path) -> None:
    """Anything else a step left in the output folder goes into the work folder (and so the
    archive), so at most :data:`MAX_FILES` files come back."""
    for path in sorted(out.iterdir()):
        if path.name not in OUT_FILES:
            shutil.move(str(path), str(work / f"out_{path.name}"))


def run(run_no: int, *, out: Path, profile: str, only: list[str],
        work: Path | None = None) -> int:
    steps = tuple(s for s in RUNS[run_no] if not only or s.name in only)
    print(plan_text(run_no, steps, profile), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _on_term)
    made = work is None
    work = Path(tempfile.mkdtemp(prefix=f"device_check_{run_no}_")) if work is None else work
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    import importlib.util

    fill = {"py": sys.executable, "work": str(work), "cases": str(out / "cases.jsonl"),
            "timeout": "--timeout=90" if importlib.util.find_spec("pytest_timeout") else ""}
    outcomes = [Outcome(s) for s in steps]
    started = time.perf_counter()
    for outcome in outcomes:
        step = outcome.step
        argv = [a.format(**fill) for a in (step.tiny if profile == "tiny" else step.argv)]
        argv = [a for a in argv if a]
        print(f"[{time.perf_counter() - started:5.0f} s] {step.name} (budget {step.budget_s} s)",
              flush=True)
        outcome.__dict__.update(run_step(step, argv, work=work, env=env).__dict__)
        print(f"[{time.perf_counter() - started:5.0f} s] {step.name}: {outcome.status}",
              flush=True)
        if step.name.startswith("pytest"):
            shutil.copyfile(work / step.log, out / "pytest.log")
        keep_few_files(out, work)
        write_summary(out, work, run_no, profile, outcomes)
        pack(out, work)
    print((out / "summary.txt").read_text(encoding="utf-8"))
    print(f"{len(list(out.iterdir()))} files in {out} ({time.perf_counter() - started:.0f} s)")
    if made:
        shutil.rmtree(work, ignore_errors=True)  # all of it is in results.tar.gz
    return 0 if all(o.status == "ok" for o in outcomes) else 1


# ------------------------------------------------------------------------------ the warm-up step
def provenance() -> dict[str, Any]:
    """Where the results come from: GPU, driver, torch, CUDA, cuDNN, the commit, the libraries."""
    import platform
    from importlib import metadata

    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                            "cudnn": torch.backends.cudnn.version()
                            if torch.backends.cudnn.is_available() else None,
                            "python": platform.python_version(), "commit": _commit(),
                            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    sm_count=props.multi_processor_count, memory_gib=props.total_memory / 2**30)
    else:
        info["gpu"] = None
    info["driver"] = _smi("driver_version")
    for name in ("torchvision", "timm", "cupy-cuda13x", "cupy-cuda12x", "triton", "numpy"):
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return info


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   cwd=ROOT, capture_output=True, text=True, timeout=10)
            return head.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.environ.get("WORKBENCH_COMMIT", "unknown (no .git; set WORKBENCH_COMMIT)")


def _smi(query: str) -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def _precision_check(device: str) -> str:
    """A convolution and a matrix product under the executor's TF32 switch, each way (the
    first GPU run says at once whether this torch takes the precision API as it is used)."""
    import torch

    from workbench.executors.torch_exec.runner import precision_flags, tf32_switches

    x, w = torch.randn(1, 8, 16, 16, device=device), torch.randn(8, 8, 3, 3, device=device)
    try:
        for precision in ("fp32", "tf32"):
            with torch.no_grad(), precision_flags(precision):
                torch.nn.functional.conv2d(x, w, padding=1).sum().item()
                (x.flatten(1) @ x.flatten(1).T).sum().item()
    except Exception as exc:  # noqa: BLE001 - reported, the later steps show the rest
        return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    api = "fp32_precision" if tf32_switches(torch) is not None else "legacy allow_tf32"
    return f"ok ({api})"


def warmup(seconds: float, json_path: Path) -> int:
    """Matrix products for ``seconds`` on the GPU (its clocks up), clocks read before and after;
    the provenance written to ``json_path``."""
    import torch

    info = provenance()
    clocks = "clocks.sm,clocks.mem,temperature.gpu,power.draw"
    info["clocks_before"] = _smi(clocks)
    t0, n = time.perf_counter(), 0
    if torch.cuda.is_available():
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        while time.perf_counter() - t0 < seconds:
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
            n += 10
        spent = time.perf_counter() - t0
        info["warmup"] = (f"{n} bf16 8192^3 matrix products in {spent:.1f} s "
                          f"({n * 2 * 8192**3 / spent / 1e12:.0f} TFLOP/s)")
    else:
        info["warmup"] = "no CUDA GPU here: nothing to warm"
        time.sleep(min(seconds, 0.2))
    info["clocks_after"] = _smi(clocks)
    info["precision_flags"] = _precision_check("cuda" if torch.cuda.is_available() else "cpu")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(info, indent=1, default=str), encoding="utf-8")
    for k, v in info.items():
        print(f"{k}: {v}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["warmup"]:
        p = argparse.ArgumentParser(prog="device_check.py warmup")
        p.add_argument("--seconds", type=float, default=10.0)
        p.add_argument("--json", type=Path, required=True)
        a = p.parse_args(argv[1:])
        return warmup(a.seconds, a.json)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--run", type=int, choices=sorted(RUNS), default=1)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT")
                                                          or "results/device"))
    parser.add_argument("--profile", choices=("full", "tiny"),
                        default=os.environ.get("DEVICE_CHECK_PROFILE") or "full")
    parser.add_argument("--steps", default=os.environ.get("STEPS", ""),
                        help="comma-separated step names (default: all)")
    parser.add_argument("--plan", action="store_true", help="print the plan and stop")
    parser.add_argument("--work", type=Path, default=None,
                        help="the steps' work folder (default: a new temporary one, removed "
                             "once packed)")
    args = parser.parse_args(argv)
    only = [s for s in args.steps.replace(" ", ",").split(",") if s]
    known = {s.name for s in RUNS[args.run]}
    unknown = [s for s in only if s not in known]
    if unknown:
        parser.error(f"run {args.run} has no step {unknown[0]!r} (steps: "
                     f"{', '.join(s.name for s in RUNS[args.run])})")
    if args.plan:
        print(plan_text(args.run, tuple(s for s in RUNS[args.run] if not only or s.name in only),
                        args.profile))
        return 0
    return run(args.run, out=args.out, profile=args.profile, only=only, work=args.work)


for _no, _steps in RUNS.items():  # the plan fits, whatever is edited above
    assert sum(s.budget_s for s in _steps) + PACK_S <= TOTAL_S, f"run {_no} is over budget"

if __name__ == "__main__":
    raise SystemExit(main())
