"""IOS searches of the fidelity rows kept in a file, keyed by a hash of everything they are
searched from.

A searched row (``ios``, ``ios_parallel``) runs IOS's full dynamic programme under the cost
model: seconds for Inception V3, about a minute for NASNet-A.  :func:`search_key` hashes what
the search is given (the graph's ops, tensors and edges, the device spec, the GPU model, the
schedule kind and the options) into a key; :class:`SearchStore` maps keys to the schedules found
(streams, issue order, syncs, barriers), read from and written to a JSON file.  With a store in
use (:func:`workbench.simulator.fidelity.use_store`), :func:`~workbench.simulator.fidelity.predict`
takes a stored schedule for a key it holds and simulates it as it would the searched one; any
change to a graph, a device, the model or the options is another key, searched as before.  The
search's code is not in the key: ``tests/test_fidelity.py`` searches the cheap rows again and
requires the stored schedules (``tests/fidelity_searches.py`` writes the file anew).
O(ops + syncs) per schedule read or written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._atomic import read_json
from workbench.values.graph import Graph
from workbench.values.schedule import Schedule


def _graph_text(graph: Graph) -> str:
    """The graph as the search sees it (ops, tensors, control edges, outputs), as text."""
    tensors = sorted(graph.tensors.items())
    return repr((graph.ops, tensors, tuple(graph.control_edges), graph.outputs))


def search_key(graph: Graph, spec: Any, model: Any, schedule: str,
               options: Mapping[str, Any]) -> str:
    """A SHA-256 of what a search of ``graph`` runs on: the graph, ``spec`` (a DeviceSpec),
    ``model`` (a GpuModel or ``None``: the spec's own), the row's ``schedule`` and the search
    ``options``.  O(ops + tensors)."""
    text = "\n".join([_graph_text(graph), repr(spec), repr(model), schedule,
                      repr(sorted(options.items()))])
    return hashlib.sha256(text.encode()).hexdigest()


def schedule_to_dict(schedule: Schedule, searched: Graph | None = None) -> dict[str, Any]:
    """What simulating a schedule reads: policy, streams, issue order, syncs, barriers and the
    barrier kind, as JSON values; and the schedule's graph as the JSON format writes it when it
    is not ``searched`` (IOS with merging schedules a graph whose merged convolutions replace
    their members)."""
    graph: dict[str, Any] = {}
    if searched is not None and schedule.graph is not searched:
        from workbench.io.text.json_format import graph_to_dict

        graph = {"graph": graph_to_dict(schedule.graph)}
    return {**graph, "policy": schedule.policy,
            "streams": {str(s): list(ops) for s, ops in schedule.streams.items()},
            "issue_order": list(schedule.issue_order),
            "syncs": [list(p) for p in schedule.syncs], "barriers": list(schedule.barriers),
            "barrier_kind": schedule.barrier_kind}


def schedule_from_dict(graph: Graph, data: Mapping[str, Any]) -> Schedule:
    """The schedule :func:`schedule_to_dict` wrote, of ``graph`` (or of the graph it stored),
    validated."""
    if "graph" in data:
        from workbench.io.text.json_format import graph_from_dict

        graph = graph_from_dict(data["graph"])
    streams = {int(s): tuple(ops) for s, ops in data["streams"].items()}
    return Schedule(graph, str(data["policy"]), streams,
                    tuple((str(a), str(b)) for a, b in data["syncs"]),
                    tuple(data["issue_order"]), tuple(int(p) for p in data["barriers"]),
                    options={"stored": True}, barrier_kind=str(data["barrier_kind"])).validate()


@dataclass
class SearchStore:
    """Stored searches: key (:func:`search_key`) -> ``{"row": id, "schedule": dict}``;
    ``path``: the file read, and written by :meth:`save`."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @staticmethod
    def load(path: str | Path) -> SearchStore:
        """The store in ``path`` (empty when there is no such file)."""
        path = Path(path)
        entries = read_json(path, what="fidelity search store")["searches"] \
            if path.exists() else {}
        return SearchStore(path, dict(entries))

    def get(self, key: str, graph: Graph) -> Schedule | None:
        entry = self.entries.get(key)
        return None if entry is None else schedule_from_dict(graph, entry["schedule"])

    def put(self, key: str, row_id: str, schedule: Schedule, searched: Graph) -> None:
        """Store ``schedule``, the search of ``searched`` under ``key``."""
        self.entries[key] = {"row": row_id, "schedule": schedule_to_dict(schedule, searched)}

    def save(self) -> Path:
        text = json.dumps({"about": "IOS searches of the fidelity rows "
                                    "(workbench/simulator/fidelity/searches.py)",
                           "searches": dict(sorted(self.entries.items()))},
                          indent=1, sort_keys=False)
        from workbench._atomic import write_text

        write_text(self.path, text + "\n")
        return self.path


__all__ = ["SearchStore", "schedule_from_dict", "schedule_to_dict", "search_key"]
