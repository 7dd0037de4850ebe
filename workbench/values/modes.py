"""How a schedule's ops reach the device, and the mode every entry point starts in.

``"eager"``: one host thread issues each kernel in turn (a framework's eager loop, paying the
launch cost per kernel); ``"graph"``: the whole schedule is captured once and launched as one CUDA
graph (what a deployed model runs, and how the H200 measurements in ``data/measured`` ran).

:data:`DEFAULT_MODE` is ``"graph"`` for ``wb.compare``, ``wb.sweep``, ``workbench compare``,
``workbench sweep``, the app and the notebooks (on a CPU device: eager, :func:`mode_for`),
so the same graph gets the same verdict wherever a
user starts.  Eager is the mode to ask about a framework's Python loop; at batch 1 its per-launch
host cost (about 6 µs per kernel on the H100 model) usually exceeds the kernels themselves, so
serial wins there whatever the streams: the comparison's "why" says so in one line whenever the
other mode would change its verdict (:mod:`workbench.orchestration.why`).
"""

from __future__ import annotations

#: The modes, in the order the listings show them.
MODES = ("graph", "eager")
#: The mode of every entry point unless the user says otherwise (module docstring).
DEFAULT_MODE = "graph"


def mode_for(mode: str | None, architecture: str) -> str:
    """``mode`` when given, else the default for a device of ``architecture``: :data:`DEFAULT_MODE`
    for a GPU, ``"eager"`` for a CPU (``architecture == "cpu"``), which has no CUDA graphs: its
    ops run one after another as the host issues them, as the CPU runs a profile recorded.

    >>> mode_for(None, "hopper"), mode_for(None, "cpu"), mode_for("eager", "hopper")
    ('graph', 'eager', 'eager')
    """
    if mode is not None:
        return mode
    return "eager" if architecture == "cpu" else DEFAULT_MODE
