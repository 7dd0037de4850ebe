"""Benchmark cases written one per line as soon as each is measured (``--cases PATH``, JSON lines).

A benchmark run the device tool stops at its time limit keeps every case it finished: each line
is one whole JSON object, written, flushed and synced before the next case starts.  Every
benchmark of a device check appends to the same file (``"benchmark"`` says whose line it is).

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "cases.jsonl"
>>> append_case(path, "demo", {"network": "tiny", "us": 1.5})
>>> json.loads(path.read_text())["us"]
1.5
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def append_case(path: str | os.PathLike[str] | None, benchmark: str,
                row: dict[str, Any]) -> None:
    """Append ``row`` (tagged ``"benchmark": benchmark``) to ``path`` as one JSON line, on disk
    before this returns; ``None``: write nothing."""
    if path is None:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"benchmark": benchmark, **row}, default=str)
    with target.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_cases(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every whole line of a cases file (a line cut short by a kill is left out)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


__all__ = ["append_case", "read_cases"]
