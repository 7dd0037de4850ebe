"""Tests that kill the one-line mutations of the core issue 43 #10 found surviving the whole suite
(docs/mutation-testing.md lists each mutation and the test that now fails on it)."""

from __future__ import annotations

import pytest

from workbench.memory import check_no_overlap, plan_usage

#: a and b never share a step, but the explicit conflict (two streams: both may be live at once)
#: keeps them apart; c is the tensor the class goes through.
RECORDS = [(256, 0, 0, "a"), (256, 1, 1, "b"), (128, 2, 2, "c")]


@pytest.mark.parametrize("classes", [{"contiguous": [["c"]]}, {"lifelong": ["c"]},
                                     {"contiguous": [["a", "c"]]}])
def test_somas_with_lifelong_or_contiguous_tensors_keeps_the_explicit_conflicts(
        classes: dict) -> None:
    """SOMAS solving the blocks of a plan with lifelong or contiguous tensors without the
    conflicts it was given (``conflicts=pairs`` made ``None``, interval overlap instead) put
    ``a`` and ``b`` on the same bytes although the schedule may run them at once."""
    plan = plan_usage(RECORDS, "somas", conflicts=[(0, 1)], **classes)
    check_no_overlap(plan)
    a, b = plan.offsets[0], plan.offsets[1]
    assert a + 256 <= b or b + 256 <= a, plan.offsets


# ------------------------------------------------------------------ memory/somas.py survivors
def test_somas_refuses_a_bare_string_of_tensors_and_a_non_list_of_names() -> None:
    """``lifelong="ab"`` would be read letter by letter, ``orderings=5`` raised TypeError
    (mutants of ``_refs`` and ``_pick``'s checks survived)."""
    from workbench.errors import OptionError
    from workbench.memory.plan import parse_records
    from workbench.memory.somas import plan_somas

    records = parse_records(RECORDS)
    with pytest.raises(OptionError, match="lifelong must be a list of tensors"):
        plan_somas(records, lifelong="ab")
    with pytest.raises(OptionError, match="orderings must be a name or a list of names"):
        plan_somas(records, orderings=5)
    with pytest.raises(OptionError, match="fits must be a name or a list of names"):
        plan_somas(records, fits=[1, 2])


def test_the_area_ordering_past_int64_areas_is_the_exact_one() -> None:
    """Areas of 2**40-byte tensors over 2**23 steps pass 2**62: the ordering is computed on
    Python ints (size x lifetime descending, then size, then index); that path had no test."""
    from workbench.memory.plan import parse_records, prepare
    from workbench.memory.somas import ORDERINGS, plan_somas

    big = 1 << 40
    raw = [(big, 0, (1 << 23) - 1, "long"), (2 * big, 0, (1 << 22) - 1, "wide"),
           (big, 5, 5, "short"), (2 * big, 1, 1, "tiny"), (big, 0, (1 << 23) - 1, "twin")]
    problem = prepare(parse_records(raw), 512, None)
    area = [r[0] * (r[2] - r[1] + 1) for r in raw]
    want = sorted(range(len(raw)), key=lambda i: (-area[i], -raw[i][0], i))
    assert ORDERINGS["area"](problem) == want == [1, 0, 4, 3, 2]  # equal areas: larger first
    plan = plan_somas(parse_records(raw), orderings=["area"])
    check_no_overlap(plan)


# ---------------------------------------------------------- io/text/json_format.py survivors
def _load_text(tmp_path: object, text: str) -> object:
    import workbench as wb

    path = tmp_path / "g.json"  # type: ignore[operator]
    path.write_text(text)
    return wb.load(path)


def _graph_json(op: dict, tensors: list[dict] | None = None) -> str:
    import json

    return json.dumps({"format": "schedule-workbench-graph", "version": 1,
                       "ops": [op], "tensors": tensors or [], "outputs": []})


@pytest.mark.parametrize("key", ["bytes_read", "bytes_written", "workspace_bytes"])
def test_an_op_s_fractional_byte_count_is_refused(tmp_path: object, key: str) -> None:
    import workbench as wb

    with pytest.raises(wb.FormatError, match=f"{key} must be a whole number of bytes"):
        _load_text(tmp_path, _graph_json({"id": "a", "kind": "relu", key: 1.5}))


def test_byte_counts_left_out_are_zero_and_a_fractional_size_is_refused(tmp_path: object
                                                                         ) -> None:
    import workbench as wb

    g = _load_text(tmp_path, _graph_json({"id": "a", "kind": "relu", "outputs": ["t"]},
                                         [{"id": "t", "producer": "a"}]))
    op, t = g.op("a"), g.tensor("t")  # type: ignore[attr-defined]
    assert (op.bytes_read, op.bytes_written, op.workspace_bytes, t.size_bytes) == (0, 0, 0, 0)
    with pytest.raises(wb.FormatError, match="size_bytes must be a whole number of bytes"):
        _load_text(tmp_path, _graph_json({"id": "a", "kind": "relu", "outputs": ["t"]},
                                         [{"id": "t", "producer": "a", "size_bytes": 1.5}]))


@pytest.mark.parametrize("attrs,message", [
    ({"branches": [["name", "graph"]]}, "branches must be a list of"),
    ({"carried": 5}, "carried must be a list of"),
    ({"carried": [["s", "i"]]}, "carried must be a list of")])
def test_malformed_control_flow_attributes_are_one_line(tmp_path: object, attrs: dict,
                                                        message: str) -> None:
    import workbench as wb

    with pytest.raises(wb.FormatError, match=message) as info:
        _load_text(tmp_path, _graph_json({"id": "a", "kind": "case_of", "attrs": attrs}))
    assert "\n" not in str(info.value)


def test_an_error_s_line_hint_is_empty_when_the_id_is_written_escaped(tmp_path: object) -> None:
    """``"id": "\\u0061"`` is the id ``a``, but its text is not ``"a"``: no line is found, and
    the message says nothing rather than ``None``."""
    import workbench as wb

    text = ('{"format": "schedule-workbench-graph", "version": 1, '
            '"ops": [{"id": "\\u0061", "kind": 5}], "tensors": [], "outputs": []}')
    with pytest.raises(wb.FormatError) as info:
        _load_text(tmp_path, text)
    assert "kind must be a string" in str(info.value) and "None" not in str(info.value)
