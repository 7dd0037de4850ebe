"""What the importers give on the zoo models and the ONNX fixtures, to hold the op table's
reorganisation (issue 46) to "same graphs, same makespans".

For each model :func:`fingerprint` records the imported graph (a SHA-1 of its JSON form: every
op's kind, attributes, costs and tensors), the number of ops, and the simulated makespan of the
serial and nnc schedules on h100 in graph mode.  The models are the zoo of
:mod:`tests.model_zoo` (14 architectures), the any-model zoo of :mod:`tests.model_zoo_any`
(LLMs, recurrent, attention, audio, video; batch 2 at its first length) and the ONNX files in
``tests/data``.  ``python tests/golden_imports.py`` writes them to :data:`GOLDEN`
(``tests/data/golden_imports.json``); ``tests/test_golden_imports.py`` recomputes and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden_imports.json"


def sources() -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, make the graph) for every model the golden set holds."""
    import workbench as wb
    from tests.model_zoo import ZOO
    from tests.model_zoo_any import ANY

    for name, build in ZOO.items():
        def zoo(build: Any = build) -> Any:
            model, example = build()
            return wb.io.from_torch(model, example)
        yield f"zoo/{name}", zoo
    for name, entry in ANY.items():
        def any_model(entry: Any = entry) -> Any:
            args, kwargs = entry.inputs(2, entry.lengths[0], 0)
            return wb.io.from_torch(entry.build(), args, kwargs=kwargs)
        yield f"any/{name}", any_model
    for path in sorted((ROOT / "tests" / "data").glob("*.onnx")):
        yield f"onnx/{path.name}", lambda path=path: wb.load(path)


def fingerprint(graph: Any) -> dict[str, Any]:
    import workbench as wb
    from workbench.io.text.json_format import graph_to_dict

    text = json.dumps(graph_to_dict(graph), sort_keys=True, default=str)
    row: dict[str, Any] = {"graph": hashlib.sha1(text.encode()).hexdigest()[:16],
                           "ops": len(graph.ops)}
    for policy in ("serial", "nnc"):
        schedule = wb.schedule(graph, policy)
        row[f"{policy}_us"] = round(wb.simulate(schedule, device="h100", mode="graph").makespan,
                                    6)
    return row


def compute() -> dict[str, dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default-cost notes
        return {name: fingerprint(make()) for name, make in sources()}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    GOLDEN.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
