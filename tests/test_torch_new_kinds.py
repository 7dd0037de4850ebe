"""torch's indexing, shifting and scanning calls as full op kinds: ``x[:, idx]`` (``index``),
``torch.gather`` (``gather_elements``), ``torch.roll``, ``masked_fill``, ``!=`` / ``torch.ne``
(``not_equal``), ``torch.diff`` and ``torch.cumsum``.

* ``from_torch`` writes each call's arguments in the op vocabulary (``axes`` of the indices
  list, ``shifts``, ``value``, ``n``/``axis``/``prepend``, ``scalar`` ...);
* the graph, its program dropped (saved as JSON and read back), runs with the torch executor
  from its kinds' torch forms and computes what the module computes, fed the module's buffers
  and inputs by tensor id;
* a missing attribute, or index inputs that do not fit their positions, is a one-line error.

Each test runs in well under a second.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench.errors import OptionError
from workbench.io.text.json_format import graph_from_dict, graph_to_dict
from workbench.ops import OPS, TORCH_FORM_KINDS
from workbench.values.graph import Graph, Op

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from tests.test_op_vocabulary import _one_op  # noqa: E402 - one single-op graph builder

KINDS = ("index", "gather_elements", "roll", "masked_fill", "not_equal", "diff", "cumsum")


class Calls(nn.Module):
    """Every one of the seven calls, with the argument forms torch code uses."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("idx", torch.tensor([2, 0, 1, 2]))

    def forward(self, x: Any, gi: Any, head: Any) -> Any:
        picked = x[:, self.idx]                               # aten.index(x, [None, idx])
        gathered = torch.gather(x, 1, gi)
        rolled = torch.roll(x, shifts=(1, -2), dims=(1, 2))
        flat = torch.roll(x, 4)                               # no dims: the flattened input
        filled = x.masked_fill(x > 0.5, -2.0)
        changed = torch.ne(x, rolled)
        nonzero = x != 0.25
        steps = torch.diff(x, dim=1, prepend=head)
        second = torch.diff(x, n=2)
        running = torch.cumsum(x, 1)
        return (picked, gathered, rolled, flat, filled, changed, nonzero, steps, second,
                running, torch.cumsum(changed, -1))


def _example(seed: int) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 5, generator=g), torch.randint(0, 3, (2, 2, 5), generator=g),
            torch.randn(2, 1, 5, generator=g))


def _graph() -> Graph:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return wb.io.from_torch(Calls().eval(), _example(0))


def test_the_seven_calls_are_full_kinds() -> None:
    for kind in KINDS:
        info = OPS[kind]
        assert kind in TORCH_FORM_KINDS and info.reference is not None, kind
    assert OPS["not_equal"].torch == ("ne",) and OPS["gather_elements"].torch == ("gather",)


def test_from_torch_writes_their_arguments_in_the_vocabulary() -> None:
    g = _graph()
    attrs = {op.id: {k: v for k, v in op.attrs.items() if k in OPS[op.kind].attrs}
             for op in g.ops if op.kind in KINDS}
    assert {op.kind for op in g.ops} >= set(KINDS)
    assert attrs["index"] == {"axes": [1]}
    assert attrs["gather"] == {"axis": 1}
    assert attrs["roll"] == {"shifts": [1, -2], "axes": [1, 2]}
    assert attrs["roll_1"] == {"shifts": [4]}
    assert attrs["masked_fill"] == {"value": -2.0}
    assert attrs["ne"] == {} and attrs["ne_1"] == {"scalar": 0.25}
    assert attrs["diff"] == {"n": 1, "axis": 1, "prepend": True, "append": False}
    assert attrs["diff_1"] == {"n": 2, "axis": -1, "prepend": False, "append": False}
    assert attrs["cumsum"] == {"axis": 1} and attrs["cumsum_1"] == {"axis": -1}
    assert g.op("index").inputs == ("x", "idx") and g.op("diff").inputs == ("x", "head")


def test_the_graph_without_its_program_computes_the_module() -> None:
    """Saved as JSON and read back (no program), fed the buffer and new inputs by tensor id,
    the torch forms compute what the module computes."""
    model = Calls().eval()
    g = graph_from_dict(graph_to_dict(_graph()))
    assert g.program is None
    inputs = _example(1)
    feed = {"idx": model.idx, **dict(zip(("x", "gi", "head"), inputs, strict=True))}
    trace = wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                       warmup=0, inputs=feed, return_outputs=True)
    with torch.no_grad():
        want = model(*inputs)
    got = [np.asarray(trace.meta["outputs"][t]) for t in g.outputs]
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, [w.numpy() for w in want], strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (k, a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=str(k))


@pytest.mark.parametrize(("kind", "attrs", "shapes", "match"), [
    ("roll", {}, [(2, 3)], r"op 'x' \(roll\): attribute 'shifts' is missing"),
    ("roll", {"shifts": [1, 2], "axes": [0]}, [(2, 3)], r"shifts=\[1, 2\] do not match"),
    ("cumsum", {}, [(2, 3)], r"op 'x' \(cumsum\): attribute 'axis' is missing"),
    ("cumsum", {"axis": 0, "exclusive": 1}, [(2, 3)], r"exclusive or reverse sums are not "
                                                      r"supported"),
    ("masked_fill", {}, [(2, 3), (2, 3)], r"attribute 'value' is missing"),
    ("index", {"axes": [0, 1, 2]}, [(3, 3, 3), (2,), (2,)], r"2 index input\(s\) for the "
                                                          r"positions axes=\[0, 1, 2\]"),
    ("diff", {"prepend": True, "append": True}, [(2, 3), (2, 1)],
     r"prepend/append need 2 input\(s\) after x, got 1"),
])
def test_bad_attributes_are_one_line_errors(kind: str, attrs: dict[str, Any],
                                            shapes: list[tuple[int, ...]], match: str) -> None:
    g = _one_op(kind, attrs, shapes, shapes[0])
    with pytest.raises(OptionError, match=match) as err:
        wb.execute(wb.schedule(g, "serial"), executor="torch", device="cpu", repeats=1,
                   warmup=0)
    assert "\n" not in str(err.value)
    op = g.op("x")
    with pytest.raises(OptionError, match=match):  # the NumPy reference says the same
        OPS[kind].reference(op, [np.zeros(s, np.float32) for s in shapes], lambda t: None)


def test_one_index_tensor_at_several_positions_is_used_at_each() -> None:
    """``x[i, i]`` (a diagonal): the importer keeps the repeated tensor once."""
    x, i = torch.randn(4, 4, 3), torch.tensor([0, 2, 3])
    op = Op("x", kind="index", inputs=("x", "i"), outputs=("y",), attrs={"axes": [0, 1]})
    form, reference = OPS["index"].torch_form, OPS["index"].reference
    assert form is not None and reference is not None
    torch.testing.assert_close(form(op, [x, i], lambda t: None)[0], x[i, i])
    np.testing.assert_array_equal(reference(op, [x.numpy(), i.numpy()], lambda t: None)[0],
                                  x[i, i].numpy())
