"""``workbench calibrate``: time every op of some built-in graphs alone on this device, and small
probes, and write a device profile (:mod:`workbench.simulator.cost_model.device_profile`) that
``--device PATH`` reads.  The command says which base device the profile refines and why
(``--base`` chooses it; ``--base-device`` is the same option's older name).  The heavy imports
happen when the command runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from workbench._terminal import clean
from workbench.cli.checks import add_follow_symlinks
from workbench.errors import OptionError

DESCRIPTION = (
    "Time every op of the chosen built-in graphs alone and write a device profile; "
    "`workbench compare --device PROFILE` (or device=PROFILE in Python) then simulates the "
    "profile's base device with these measured op times for the graphs timed (other graphs and "
    "ops keep the cost model). With CUDA each op is a replayed CUDA graph and small probes "
    "(launch, event wait, 1/2/4 kernels at once) are recorded. Without CUDA the ops run on the "
    "CPU, on --threads intra-op threads (default 1: with more, another busy process makes the "
    "times jump by 4 ms scheduler ticks), and no probes run; such a profile is a what-if: the "
    "base GPU's model (launches, streams, SM sharing) with this CPU's op times, not a model of "
    "the CPU.")


def calibrate_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    cal = sub.add_parser("calibrate", help="time every op of some graphs alone on this device, "
                                           "write a device profile (--device PATH reads it)",
                         description=DESCRIPTION)
    cal.add_argument("--model", action="append", required=True,
                     help="a built-in graph to time (repeatable; see `workbench models`)")
    cal.add_argument("--batch", type=positive_int, action="append",
                     help="batch size(s) for built-in networks (repeatable; default: the "
                          "model's own)")
    cal.add_argument("--precision", default="fp32", choices=("fp32", "tf32", "fp16", "bf16"),
                     help="precision the ops run in (default: %(default)s)")
    cal.add_argument("--repeats", type=positive_int, default=20,
                     help="timed runs per op and probe; the median is kept "
                          "(default: %(default)s)")
    cal.add_argument("--warmup", type=int, default=3,
                     help="untimed runs per op and probe first (default: %(default)s)")
    cal.add_argument("--base", "--base-device", dest="base", metavar="DEVICE",
                     help="the cost-model device the profile refines (see `workbench "
                          "devices`; default: the one the GPU's name matches, else h100, "
                          "and always h100 on the CPU); the command prints which and why")
    cal.add_argument("--threads", type=positive_int,
                     help="CPU only: torch intra-op threads while ops are timed (default: 1)")
    cal.add_argument("--executor", default="torch",
                     help="executor that times the ops (default: %(default)s, the one "
                          "built-in executor that can)")
    add_follow_symlinks(cal)
    cal.add_argument("-o", "--output", default="profile.json",
                     help="profile path; its folder must exist (default: %(default)s)")


def run_calibrate(args: argparse.Namespace) -> int:
    from workbench._atomic import check_output
    from workbench.executors.device_calibration import calibrate_device
    from workbench.executors.device_probes import choose_base_device
    from workbench.models import MODELS, build
    from workbench.simulator.cost_model.device_profile import save_profile

    output = check_output(args.output, what="-o")
    for name in args.model:
        MODELS.get(name)
    if args.base is not None:
        choose_base_device("", args.base)   # an unknown name fails now, listing the known ones
    if args.warmup < 0:
        raise OptionError(f"--warmup must be >= 0, got {args.warmup}")
    graphs = [build(name) for name in args.model] if not args.batch else \
        [build(name, batch=b) for name in args.model for b in args.batch]
    profile = calibrate_device(graphs, executor=args.executor, precision=args.precision,
                               warmup=args.warmup, repeats=args.repeats,
                               base_device=args.base, threads=args.threads)
    path = save_profile(profile, output)
    prov = profile.provenance
    print(clean(f"{len(profile.ops)} ops of {len(graphs)} graph(s) timed on "
                f"{prov.get('gpu', '?')} ({prov.get('timing', '')})"))
    if "cpu_threads" in prov:
        print(clean(_threads_line(int(prov["cpu_threads"]), float(prov.get("cpu_share", 1)))))
    for key, value in profile.probes.items():
        print(clean(f"probe {key}: {value:.3f}" if isinstance(value, float)
                    else f"probe {key}: {value}"))
    skipped = prov.get("skipped_ops", [])
    if skipped:
        print(clean(f"skipped {len(skipped)} op(s) the executor cannot run, e.g. {skipped[0]} "
                    f"(all listed in the profile's provenance)"))
    print(clean(f"base device {profile.base_device} ({prov.get('base_device_reason', '')})"))
    print(clean(f"profile: {path}; use --device {path}"))
    return 0


def _threads_line(threads: int, share: float) -> str:
    """What the CPU timing ran on, beside torch's own default thread count."""
    import torch

    return (f"cpu: {threads} intra-op thread(s) (torch's default here: "
            f"{torch.get_num_threads()}; --threads to change); the timing thread ran "
            f"{min(share, 1.0):.0%} of the wall time")
