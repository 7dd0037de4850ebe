"""Hostile paths: every path argument of every CLI verb, and every writer's target (issue 34).

``paths``: a FIFO, a directory, ``/dev/zero``, a sparse file over the input cap, a symlink loop
or a missing file as each *input* path (``compare GRAPH``, ``--device PATH``, ``--measured``,
``--et``, ``import PROFILE``, ``import --et``): all must be refused in one line, at once (a
FIFO read is a hang).  And the same things as each *output* path (``-o``, ``--table``,
``--export-trace``, ``import -o``, ``calibrate -o``, ``--plotlyjs directory`` with a planted
``plotly.min.js``).

``writer``: output targets of the API writers and the CLI: a symlink (refused; written through
when the user follows links), a FIFO, a directory, ``/dev/null``, a symlink loop, a
300-character name, a missing folder, a read-only folder (root may write there), and the CLI
with stdout closed or on ``/dev/full``.
"""

from __future__ import annotations

import random
from typing import Any

from tests.fuzz.runner import Case

#: Hostile things an input path may be, each of which must be refused.
BAD_INPUTS = ("fifo", "dir", "zero", "sparse", "loop", "missing")
#: Output targets that must be refused (a planted symbolic link too, issue 43 #6), and those
#: that may be written (``followed link``: a link written through when the user asks for it).
BAD_OUTPUTS = ("fifo", "dir", "zero", "loop", "devnull", "long", "no folder", "link",
               "dangling")
OK_OUTPUTS = ("followed link", "readonly", "real")
_G = "{wd}/g.json"
_QUICK = ["--policies", "serial,nnc", "--no-progress", "--budget", "20"]


def _target(kind: str, suffix: str) -> tuple[str, list[tuple[str, str]]]:
    """An argv path of ``kind`` ending in ``suffix`` and what to plant for it."""
    name = f"target{suffix}"
    if kind == "missing":
        return "{wd}/" + name, []
    if kind == "devnull":
        return "/dev/null", []
    if kind == "long":
        return "{wd}/" + "r" * 300 + suffix, []
    if kind == "no folder":
        return "{wd}/no/such/" + name, []
    if kind == "readonly":
        return "{wd}/ro/" + name, [("ro", "readonly")]
    if kind == "followed link":
        return "{wd}/" + name, [(name, "link")]
    if kind in ("missing", "dangling", "link", "real"):
        return "{wd}/" + name, [(name, kind)]
    return "{wd}/" + name, [(name, kind)]


def _input_case(rng: random.Random) -> Case:
    kind = rng.choice(BAD_INPUTS)
    slot = rng.choice(["compare graph", "compare --device", "compare --measured",
                       "compare --et", "import profile", "import --et", "compare graph dot"])
    suffix = ".dot" if slot.endswith("dot") else ".json"
    path, plant = _target(kind, suffix)
    if slot.startswith("compare graph"):
        argv = ["compare", path, *_QUICK, "-o", "{wd}/r.html"]
    elif slot == "compare --device":
        argv = ["compare", _G, "--device", path, *_QUICK, "-o", "{wd}/r.html"]
        plant.append(("g.json", "graph"))
    elif slot == "compare --measured":
        argv = ["compare", "--measured", path, *_QUICK, "-o", "{wd}/r.html"]
    elif slot == "compare --et":
        argv = ["compare", "--measured", "{wd}/t.json", "--et", path, *_QUICK,
                "-o", "{wd}/r.html"]
        plant.append(("t.json", "trace"))
    elif slot == "import profile":
        argv = ["import", path, "-o", "{wd}/g.json"]
    else:
        argv = ["import", "{wd}/t.json", "--et", path, "-o", "{wd}/g.json"]
        plant.append(("t.json", "trace"))
    return Case("paths", f"in {slot}: {kind}", "actions_cli.cli_files", argv, True,
                {"plant": plant, "time_limit_s": 20})


def _output_argv(rng: random.Random, path: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    slot = rng.choice(["compare -o", "compare --table", "compare --export-trace",
                       "import -o", "calibrate -o"])
    plant: list[tuple[str, str]] = []
    if slot == "compare -o":
        argv = ["compare", _G, *_QUICK, "-o", path]
    elif slot == "compare --table":
        argv = ["compare", _G, *_QUICK, "-o", "{wd}/r.html", "--table", path]
    elif slot == "compare --export-trace":
        argv = ["compare", _G, *_QUICK, "-o", "{wd}/r.html", "--export-trace", path]
    elif slot == "import -o":
        argv = ["import", "{wd}/t.json", "-o", path]
        plant.append(("t.json", "trace"))
    else:
        argv = ["calibrate", "--model", "nnc_diamond", "--repeats", "1", "--warmup", "0",
                "-o", path]
    if slot.startswith("compare"):
        plant.append(("g.json", "graph"))
    return slot, argv, plant


_SUFFIX = {"compare -o": ".html", "compare --table": ".csv", "compare --export-trace": ".json",
           "import -o": ".json", "calibrate -o": ".json"}


def _output_case(rng: random.Random, family: str) -> Case:
    kind = rng.choice(BAD_OUTPUTS + OK_OUTPUTS)
    slot, argv, plant = _output_argv(rng, "")
    path, more = _target(kind, _SUFFIX[slot])
    argv[-1] = path
    extra: dict[str, Any] = {"plant": plant + more, "time_limit_s": 40}
    if kind in ("link", "followed link"):
        extra["link"] = [path.rsplit("/", 1)[1]]
    if kind == "followed link":
        argv.append("--follow-symlinks")
    return Case(family, f"out {slot}: {kind}", "actions_cli.cli_files", argv,
                kind in BAD_OUTPUTS, extra)


def _plotly_case(rng: random.Random) -> Case:
    """``--plotlyjs directory`` with ``plotly.min.js`` planted beside the report."""
    kind = rng.choice(["fifo", "link", "dir", "loop", "zero"])
    argv = ["compare", _G, *_QUICK, "--plotlyjs", "directory", "-o", "{wd}/r.html"]
    return Case("paths", f"--plotlyjs directory: plotly.min.js {kind}",
                "actions_cli.cli_files", argv, False,
                {"plant": [("g.json", "graph"), ("plotly.min.js", kind)], "time_limit_s": 40})


def paths(rng: random.Random, scale: int) -> Case:
    """One hostile path (module docstring)."""
    del scale
    r = rng.random()
    if r < 0.5:
        return _input_case(rng)
    if r < 0.85:
        return _output_case(rng, "paths")
    return _plotly_case(rng)


def writer(rng: random.Random, scale: int) -> Case:
    """One writer and one target (module docstring)."""
    del scale
    r = rng.random()
    if r < 0.15:
        verb = rng.choice([["policies"], ["models"], ["devices"],
                           ["compare", _G, *_QUICK, "-o", "{wd}/r.html"]])
        mode = rng.choice(["closed", "full"])
        return Case("writer", f"{verb[0]} with stdout {mode}", "actions_cli.cli_files", verb,
                    False, {"plant": [("g.json", "graph")], "stdout": mode,
                            "time_limit_s": 40})
    if r < 0.35:
        return _output_case(rng, "writer")
    which = rng.choice(["json", "dot", "chrome", "device", "calibration"])
    kind = rng.choice(BAD_OUTPUTS + OK_OUTPUTS)
    suffix = ".dot" if which == "dot" else ".json"
    path, plant = _target(kind, suffix)
    return Case("writer", f"{which} to {kind}", "actions_cli.writer", (which, path),
                kind in BAD_OUTPUTS, {"plant": plant, "time_limit_s": 20,
                                      "follow": kind == "followed link"})
