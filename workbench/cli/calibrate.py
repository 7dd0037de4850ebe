"""``workbench calibrate``: time every op of some built-in graphs alone on this device, and small
probes, and write a device profile (:mod:`workbench.simulator.cost_model.device_profile`) that
``--device PATH`` reads.  The heavy imports happen when the command runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from workbench._terminal import clean
from workbench.errors import OptionError


def calibrate_parser(sub: Any, positive_int: Callable[[str], int]) -> None:
    cal = sub.add_parser("calibrate", help="time every op of some graphs alone on this device, "
                                           "write a device profile (--device PATH reads it)")
    cal.add_argument("--model", action="append", required=True,
                     help="a built-in graph to time (repeatable)")
    cal.add_argument("--batch", type=positive_int, action="append",
                     help="batch size(s) for built-in networks (repeatable; default: the "
                          "model's own)")
    cal.add_argument("--precision", default="fp32", choices=("fp32", "tf32", "fp16", "bf16"))
    cal.add_argument("--repeats", type=positive_int, default=20,
                     help="timed runs per op and probe (default: %(default)s)")
    cal.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    cal.add_argument("--base-device", help="the cost-model device the profile refines "
                                           "(default: the one the GPU's name matches)")
    cal.add_argument("--executor", default="torch", help="executor that times (default: torch)")
    cal.add_argument("-o", "--output", default="profile.json",
                     help="profile path (default: %(default)s)")


def run_calibrate(args: argparse.Namespace) -> int:
    from workbench._atomic import check_output
    from workbench.executors.device_calibration import calibrate_device
    from workbench.models import MODELS, build
    from workbench.simulator.cost_model.device_profile import save_profile

    output = check_output(args.output, what="-o")
    for name in args.model:
        MODELS.get(name)
    if args.base_device is not None:
        from workbench.simulator.cost_model.costs import get_device

        get_device(args.base_device)
    if args.warmup < 0:
        raise OptionError(f"--warmup must be >= 0, got {args.warmup}")
    graphs = [build(name) for name in args.model] if not args.batch else \
        [build(name, batch=b) for name in args.model for b in args.batch]
    profile = calibrate_device(graphs, executor=args.executor, precision=args.precision,
                               warmup=args.warmup, repeats=args.repeats,
                               base_device=args.base_device)
    path = save_profile(profile, output)
    print(clean(f"{len(profile.ops)} ops of {len(graphs)} graph(s) timed on "
                f"{profile.provenance.get('gpu', '?')} ({profile.provenance.get('timing', '')})"))
    for key, value in profile.probes.items():
        print(clean(f"probe {key}: {value:.3f}" if isinstance(value, float)
                    else f"probe {key}: {value}"))
    skipped = profile.provenance.get("skipped_ops", [])
    if skipped:
        print(clean(f"skipped {len(skipped)} op(s) the executor cannot run, e.g. {skipped[0]} "
                    f"(all listed in the profile's provenance)"))
    print(clean(f"profile: {path} (base device {profile.base_device}); use --device {path}"))
    return 0
