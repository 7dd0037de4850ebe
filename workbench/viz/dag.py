"""Draw a graph as a DAG: Graphviz when ``dot`` is installed, a built-in layered drawing otherwise.

* :func:`dag` builds a ``graphviz.Digraph`` (nodes labelled by op id and kind, filled with the
  stream colour of a schedule, control edges dashed, sync edges bold red).
* :func:`dag_svg` renders it to inline SVG for HTML pages (the XML prolog stripped).
* Without ``dot`` (neither Debian's ``dot`` nor the ``graphviz-pure`` wheel), :func:`dag_svg`
  draws the layered layout of :func:`dag_layout` as hand-written SVG and :func:`dag_view` returns
  the plotly drawing of :func:`dag_figure`; both say so once with ``warnings.warn``.
* At scale: Graphviz's layout is superlinear (a random DAG of 1k ops takes ~8 s, 2k ops ~35 s), so
  :func:`dag_svg` runs ``dot`` with a timeout (``timeout_s``, falling back to the built-in
  drawing, which says why in its caption) and draws nothing above ``max_ops`` ops: a small SVG
  summary says why and how to get the drawing anyway.  :func:`dag_view` hands graphs above
  ``max_ops`` to the plotly drawing, and above :data:`FIGURE_MAX_OPS` returns a summary figure.

Names go through :func:`~workbench.viz.style.escape` before reaching DOT, SVG or hover text.  In
DOT, Graphviz keeps HTML entities as they are in SVG output (so ``&lt;`` shows as ``<``), and the
node *names* are internal (``n0``, ``n1``...), so no op id is ever parsed as DOT syntax.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import graphviz
import plotly.graph_objects as go

from workbench.values.graph import Graph, OpId
from workbench.values.schedule import Schedule
from workbench.viz.figure import notebook_figure
from workbench.viz.style import LAYOUT_DEFAULTS, SYNC_COLOR, escape, stream_color, tint

NO_DOT_MESSAGE = ("Graphviz 'dot' not found: drawing the DAG with plotly "
                  "(apt-get install graphviz for the Graphviz view)")
PLAIN_FILL = "#e8eef7"
MAX_DRAWN_OPS = 1_000    # above this many ops, dag_svg draws a summary instead of the graph
DOT_TIMEOUT_S = 5.0      # Graphviz gets this long before the built-in drawing replaces it
FIGURE_MAX_OPS = 20_000  # above this many ops, dag_view returns a summary figure
_FILL_TINT = 0.45
_MAX_BEND = 1.2  # horizontal offset (in node spacings) of an edge that skips 4+ levels


# ------------------------------------------------------------------------------------ helpers
def _dot_text(text: object, limit: int = 80) -> str:
    """Escape a name for a DOT label: HTML entities (kept by Graphviz), literal backslashes.
    Names longer than ``limit`` characters are cut with an ellipsis: a 1 MB op name would make
    ``dot`` fail (and no one reads a label that long)."""
    text = str(text).encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return escape(text).replace("\\", "\\\\").replace("\r", "").replace("\n", "\\n")


def _have_dot() -> bool:
    """True when a Graphviz renderer is on PATH: ``dot``, else the ``graphviz-pure`` wheel (then the
    graphviz package is pointed at it; ecosystem notes §4)."""
    if shutil.which("dot"):
        return True
    if shutil.which("graphviz-pure"):
        try:
            import pathlib

            import graphviz.backend.dot_command as dot_command

            dot_command.DOT_BINARY = pathlib.Path("graphviz-pure")
            return True
        except (ImportError, AttributeError):
            return False
    return False


def _fill(schedule: Schedule | None, op: OpId) -> tuple[str, str]:
    """(fill, border) colours of a node."""
    if schedule is None:
        return PLAIN_FILL, "#7f8c9d"
    s = schedule.stream_of(op)
    return tint(stream_color(s), _FILL_TINT), stream_color(s)


def _title(graph: Graph, schedule: Schedule | None, max_nodes: int) -> str:
    """The drawing's caption (escaped): graph name, size, colouring, and a large-graph notice."""
    text = f"{_dot_text(graph.name)}: {len(graph)} ops, {len(graph.edges)} edges"
    if schedule is not None:
        text += f"; colour = stream of {escape(schedule.policy)}, red = sync"
    if len(graph) > max_nodes:
        text += f" (large graph: {len(graph)} ops > {max_nodes}; the drawing is dense)"
    return text


# ------------------------------------------------------------------------------------ graphviz
def dag(graph: Graph, schedule: Schedule | None = None, *, rankdir: str = "TB",
        max_nodes: int = 400) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of ``graph``; nodes filled with their stream's colour in ``schedule``.

    Data edges are solid, control edges dashed, syncs of ``schedule`` bold red (a sync that is not a
    graph edge is added as an extra red edge that does not affect the layout).  Graphs larger than
    ``max_nodes`` are drawn in full with a note in the caption.  Nothing is rendered until the
    caller asks (``.pipe()``, ``.source``, notebook display).
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"unknown rankdir {rankdir!r} (known: TB, LR, BT, RL)")
    g = graphviz.Digraph(name="dag", graph_attr={
        "rankdir": rankdir, "label": graphviz.nohtml(_title(graph, schedule, max_nodes)),
        "labelloc": "t", "fontname": "Helvetica", "fontsize": "12", "nodesep": "0.2",
        "ranksep": "0.3",
    }, node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica",
                  "fontsize": "10", "margin": "0.08,0.03", "height": "0.3"},
        edge_attr={"arrowsize": "0.6", "color": "#6b7785"})
    name = {op.id: f"n{i}" for i, op in enumerate(graph.ops)}
    for op in graph.ops:
        fill, border = _fill(schedule, op.id)
        g.node(name[op.id], label=graphviz.nohtml(f"{_dot_text(op.id)}\\n{_dot_text(op.kind)}"),
               tooltip=graphviz.nohtml(f"{_dot_text(op.id, 400)} ({_dot_text(op.kind)})"),
               fillcolor=fill, color=border)
    syncs = set(schedule.syncs) if schedule is not None else set()
    for a, b in graph.edges:
        attrs: dict[str, str] = {}
        style = ["dashed"] if graph.is_control_edge(a, b) else []
        if (a, b) in syncs:
            style.append("bold")
            attrs.update(color=SYNC_COLOR, penwidth="2")
        if style:
            attrs["style"] = ",".join(style)
        g.edge(name[a], name[b], **attrs)
    edges = set(graph.edges)
    for a, b in sorted(syncs - edges):
        if a in name and b in name:
            g.edge(name[a], name[b], style="bold", color=SYNC_COLOR, penwidth="2",
                   constraint="false")
    return g


def dag_svg(graph: Graph, schedule: Schedule | None = None, *, max_ops: int = MAX_DRAWN_OPS,
            timeout_s: float | None = DOT_TIMEOUT_S, **kw: Any) -> str:
    """Inline SVG text of :func:`dag` (starts at ``<svg``, ready to embed in HTML).

    Graphs of more than ``max_ops`` ops are not drawn: a small SVG says so (and how to draw them
    anyway).  Graphviz gets ``timeout_s`` seconds (``None``: no limit); when it times out or
    fails, or is not installed, the built-in layered drawing is returned, with a warning and a
    caption that says why.
    """
    if len(graph) > max_ops:
        return summary_svg(graph, f"{len(graph)} ops is more than max_ops={max_ops}: the DAG is "
                                  f"not drawn (a layout would take minutes and the drawing "
                                  f"would be unreadable)")
    max_nodes = int(kw.get("max_nodes", 400))
    if _have_dot():
        why = NO_DOT_MESSAGE
        try:
            svg = _run_dot(dag(graph, schedule, **kw).source, timeout_s)
            return svg[svg.index("<svg"):]
        except graphviz.ExecutableNotFound:
            pass
        except subprocess.TimeoutExpired:
            why = (f"Graphviz 'dot' took more than {timeout_s:g} s for {len(graph)} ops: "
                   f"built-in drawing instead")
            warnings.warn(why, RuntimeWarning, stacklevel=2)
            return layout_svg(graph, schedule, max_nodes=max_nodes, note=why)
        except graphviz.CalledProcessError as exc:
            warnings.warn(f"Graphviz 'dot' failed ({str(exc).splitlines()[0]}): drawing the DAG "
                          f"without it", RuntimeWarning, stacklevel=2)
            return layout_svg(graph, schedule, max_nodes=max_nodes)
    warnings.warn(NO_DOT_MESSAGE, RuntimeWarning, stacklevel=2)
    return layout_svg(graph, schedule, max_nodes=max_nodes)


def _run_dot(source: str, timeout_s: float | None) -> str:
    """``dot -Tsvg`` of ``source`` (the binary :func:`_have_dot` found), killed after
    ``timeout_s`` (``subprocess.TimeoutExpired``); Graphviz's own exceptions otherwise.  The
    child is killed whatever ends the wait, also a SIGTERM or Ctrl-C that lands while it is being
    started (:func:`_signals_held`): ``subprocess.run`` kills its child only once ``Popen`` has
    returned, so the CLI's SIGTERM could leave ``dot`` running."""
    import graphviz.backend.dot_command as dot_command

    cmd = [str(dot_command.DOT_BINARY), "-Tsvg"]
    try:
        with _signals_held() as held:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise graphviz.ExecutableNotFound(cmd) from None
    except OSError as exc:  # e.g. PermissionError: a dot that cannot be executed
        raise graphviz.CalledProcessError(1, cmd, stderr=str(exc).encode()) from None
    with proc:
        try:
            for handler, signum in held:  # now that the child is ours, as if they came now
                handler(signum, None)
            out, err = proc.communicate(source.encode("utf-8"), timeout=timeout_s)
        except OSError as exc:  # e.g. BrokenPipeError: dot gave up before reading all its input
            proc.kill()
            raise graphviz.CalledProcessError(1, cmd, stderr=str(exc).encode()) from None
        except BaseException:
            proc.kill()
            raise
    if proc.returncode != 0:
        raise graphviz.CalledProcessError(proc.returncode, cmd, output=out, stderr=err)
    return out.decode("utf-8")


_HELD_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def _signals_held() -> Iterator[list[tuple[Callable[..., Any], int]]]:
    """SIGTERM and SIGINT that arrive inside the block do not run their Python handlers there
    (whose exceptions would unwind through ``Popen`` and orphan the child it just forked): each
    is recorded as ``(handler, signal)`` in the list yielded, for the caller to run once it owns
    the child.  Only in the main thread, and only for signals with a Python handler (elsewhere
    nothing is held)."""
    held: list[tuple[Callable[..., Any], int]] = []
    previous: dict[signal.Signals, Callable[..., Any]] = {}

    def holder(handler: Callable[..., Any]) -> Callable[[int, Any], None]:
        def hold(signum: int, _frame: Any) -> None:
            held.append((handler, signum))
        return hold

    if threading.current_thread() is threading.main_thread():
        for signum in _HELD_SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = handler
                signal.signal(signum, holder(handler))
    try:
        yield held
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def summary_svg(graph: Graph, why: str) -> str:
    """A small SVG box in place of a drawing: the graph's size and why it is not drawn."""
    lines = [f"{graph.name}: {len(graph)} ops, {len(graph.edges)} edges", why,
             "Draw it anyway: wb.viz.dag_svg(graph, max_ops=len(graph), timeout_s=None), or "
             "save it with wb.save(graph, 'g.dot') and run dot -Tsvg (slow)."]
    width = 7 * max(len(line) for line in lines) + 32
    height = 20 * len(lines) + 24
    text = "".join(f'<text x="12" y="{24 + 20 * i}">{escape(line)}</text>'
                   for i, line in enumerate(lines))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="Helvetica, sans-serif" font-size="12" class="wb-dag-summary">'
            f'<rect x="1" y="1" width="{width - 2}" height="{height - 2}" rx="6" '
            f'fill="{PLAIN_FILL}" stroke="#7f8c9d"/>{text}</svg>')


def dag_view(graph: Graph, schedule: Schedule | None = None, *, max_ops: int = MAX_DRAWN_OPS,
             **kw: Any) -> graphviz.Digraph | go.Figure:
    """What a notebook should display: the Graphviz :func:`dag` when ``dot`` is available and the
    graph has at most ``max_ops`` ops; else :func:`dag_figure` (with a one-line warning when
    ``dot`` is missing; a bare Digraph would raise at display time); above
    :data:`FIGURE_MAX_OPS` ops a figure that only says how big the graph is."""
    max_nodes = int(kw.get("max_nodes", 400))
    if len(graph) > FIGURE_MAX_OPS:
        return summary_figure(graph, f"{len(graph)} ops is more than {FIGURE_MAX_OPS}: "
                                     f"the DAG is not drawn")
    if len(graph) > max_ops:
        return dag_figure(graph, schedule, max_nodes=max_nodes)
    if _have_dot():
        return dag(graph, schedule, **kw)
    warnings.warn(NO_DOT_MESSAGE, RuntimeWarning, stacklevel=2)
    return dag_figure(graph, schedule, max_nodes=max_nodes)


@notebook_figure
def summary_figure(graph: Graph, why: str) -> go.Figure:
    """An empty plotly figure whose only content is the graph's size and why it is not drawn."""
    fig = go.Figure()
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=f"{escape(graph.name)}: {len(graph)} ops, {len(graph.edges)} edges",
                      height=200, annotations=[{"text": escape(why), "showarrow": False,
                                                "xref": "paper", "yref": "paper", "x": 0.5,
                                                "y": 0.5}])
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


# ------------------------------------------------------------------------------------ fallback
def dag_layout(graph: Graph) -> dict[OpId, tuple[float, float]]:
    """Layered layout: ``y`` = topological level (longest path from a source, 0 at the top), ``x`` =
    place within the level, centred on 0, ordered by one barycentre sweep over the predecessors.
    Pure; O(V + E + V log V).

    >>> g = Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    >>> dag_layout(g)
    {'a': (0.0, 0.0), 'b': (-0.5, 1.0), 'c': (0.5, 1.0), 'd': (0.0, 2.0)}
    """
    level: dict[OpId, int] = {}
    for op in graph.topo_order():
        level[op] = max((level[p] + 1 for p in graph.predecessors(op)), default=0)
    layers: dict[int, list[OpId]] = {}
    for op in graph.op_ids:
        layers.setdefault(level[op], []).append(op)
    pos: dict[OpId, tuple[float, float]] = {}
    for k in sorted(layers):
        ops = layers[k]
        if k > 0:
            keys = {op: (_barycentre(graph, pos, op), i) for i, op in enumerate(ops)}
            ops = sorted(ops, key=keys.__getitem__)
        offset = (len(ops) - 1) / 2
        for i, op in enumerate(ops):
            pos[op] = (float(i - offset), float(k))
    return {op: pos[op] for op in graph.op_ids}


def _barycentre(graph: Graph, pos: Mapping[OpId, tuple[float, float]], op: OpId) -> float:
    xs = [pos[p][0] for p in graph.predecessors(op)]
    return sum(xs) / len(xs) if xs else 0.0


def _bend(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float] | None:
    """Control point for an edge that skips levels (so it does not run through the ops between
    its ends on a straight line); ``None`` for an edge between adjacent levels."""
    span = b[1] - a[1]
    if span <= 1:
        return None
    return (a[0] + b[0]) / 2 + _MAX_BEND * min(span, 4.0) / 4, (a[1] + b[1]) / 2


def _edge_groups(graph: Graph, schedule: Schedule | None) -> dict[str, list[tuple[OpId, OpId]]]:
    syncs = set(schedule.syncs) if schedule is not None else set()
    groups: dict[str, list[tuple[OpId, OpId]]] = {"data": [], "control": [], "sync": []}
    for a, b in graph.edges:
        kind = "sync" if (a, b) in syncs else "control" if graph.is_control_edge(a, b) else "data"
        groups[kind].append((a, b))
    groups["sync"] += sorted(syncs - set(graph.edges))
    return groups


@notebook_figure
def dag_figure(graph: Graph, schedule: Schedule | None = None, *,
               max_nodes: int = 400) -> go.Figure:
    """A plotly drawing of :func:`dag_layout` (used when Graphviz is missing): nodes coloured by
    stream, data edges grey, control edges dashed, syncs red; hover shows op, kind and stream."""
    pos = dag_layout(graph)
    fig = go.Figure()
    styles = {"data": {"color": "#9aa5b1", "width": 1},
              "control": {"color": "#9aa5b1", "width": 1, "dash": "dash"},
              "sync": {"color": SYNC_COLOR, "width": 2}}
    for kind, edges in _edge_groups(graph, schedule).items():
        if not edges:
            continue
        xs: list[float | None] = []
        ys: list[float | None] = []
        for a, b in edges:
            bend = _bend(pos[a], pos[b])
            mid = [bend] if bend is not None else []
            for x, y in [pos[a], *mid, pos[b]]:
                xs.append(x)
                ys.append(y)
            xs.append(None)
            ys.append(None)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=styles[kind], name=kind,
                                 hoverinfo="skip"))
    ops = list(graph.ops)
    fills = [_fill(schedule, op.id) for op in ops]
    hover = [f"<b>{escape(op.id)}</b><br>kind: {escape(op.kind)}"
             + (f"<br>stream {schedule.stream_of(op.id)}" if schedule is not None else "")
             for op in ops]
    fig.add_trace(go.Scatter(
        x=[pos[op.id][0] for op in ops], y=[pos[op.id][1] for op in ops],
        mode="markers+text" if len(ops) <= 60 else "markers",
        text=[escape(op.id) for op in ops], textposition="middle right",
        marker={"size": 14, "color": [f for f, _ in fills],
                "line": {"color": [b for _, b in fills], "width": 1.5}},
        hovertext=hover, hoverinfo="text", name="ops"))
    levels = max((y for _, y in pos.values()), default=0.0)
    xs_all = [x for x, _ in pos.values()] or [0.0]
    fig.update_layout(**LAYOUT_DEFAULTS)
    fig.update_layout(title=_title(graph, schedule, max_nodes), showlegend=False,
                      height=int(min(4000, 200 + 60 * (levels + 1))))
    fig.update_xaxes(visible=False, range=[min(xs_all) - 1.0, max(xs_all) + 2.0])
    fig.update_yaxes(visible=False, autorange="reversed")
    return fig


def layout_svg(graph: Graph, schedule: Schedule | None = None, *, max_nodes: int = 400,
               spacing: tuple[float, float] = (130.0, 56.0), note: str = "") -> str:
    """The :func:`dag_layout` drawing as standalone inline SVG (no Graphviz, no JavaScript);
    ``note`` is added to the caption (e.g. why Graphviz was not used)."""
    pos = dag_layout(graph)
    dx, dy = spacing
    xs = [x for x, _ in pos.values()] or [0.0]
    ys = [y for _, y in pos.values()] or [0.0]
    x0 = min(xs)
    width = (max(xs) - x0) * dx + 160 + _MAX_BEND * dx
    height = max(ys) * dy + 100

    def at(op: OpId) -> tuple[float, float]:
        x, y = pos[op]
        return (x - x0) * dx + 80, y * dy + 50

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, sans-serif" '
             f'font-size="10">',
             '<defs><marker id="wb-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
             'fill="#6b7785"/></marker></defs>',
             f'<text x="8" y="16" font-size="12">{_title(graph, schedule, max_nodes)}'
             f'{" — " + escape(note) if note else ""}</text>']
    styles = {"data": 'stroke="#9aa5b1"', "control": 'stroke="#9aa5b1" stroke-dasharray="4 3"',
              "sync": f'stroke="{SYNC_COLOR}" stroke-width="2"'}
    for kind, edges in _edge_groups(graph, schedule).items():
        for a, b in edges:
            (ax, ay), (bx, by) = at(a), at(b)
            bend = _bend(pos[a], pos[b])
            cx, cy = ((bx + ax) / 2, (by + ay) / 2) if bend is None else (
                (bend[0] - x0) * dx + 80, bend[1] * dy + 50)
            parts.append(f'<path d="M{ax:.1f},{ay + 11:.1f} Q{cx:.1f},{cy:.1f} {bx:.1f},'
                         f'{by - 11:.1f}" fill="none" marker-end="url(#wb-arrow)" '
                         f'{styles[kind]}/>')
    for op in graph.ops:
        x, y = at(op.id)
        fill, border = _fill(schedule, op.id)
        label = op.id if len(op.id) <= 22 else op.id[:9] + "…" + op.id[-12:]
        parts.append(f'<g><title>{escape(op.id)} ({escape(op.kind)})</title>'
                     f'<rect x="{x - 60:.1f}" y="{y - 11:.1f}" width="120" height="22" rx="5" '
                     f'fill="{fill}" stroke="{border}"/>'
                     f'<text x="{x:.1f}" y="{y + 3.5:.1f}" text-anchor="middle">'
                     f'{escape(label)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def stream_legend(schedule: Schedule) -> Mapping[int, str]:
    """Stream → colour for the streams ``schedule`` uses (for captions and legends)."""
    return {s: stream_color(s) for s, ops in schedule.streams.items() if ops}
