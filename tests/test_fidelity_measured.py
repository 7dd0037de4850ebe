"""The H200 measurements shipped in workbench/data/measured/h200: every measured schedule is
rebuilt exactly from its file (never by re-running a policy) and its graph is the built-in
model's graph at that batch, op by op."""

from __future__ import annotations

import pytest

from workbench import models
from workbench.errors import OptionError
from workbench.simulator.fidelity import measured as M

CASES = sorted({(r.network, r.batch) for r in M.load_measured_rows()})


def test_rows_carry_their_provenance() -> None:
    rows = M.load_measured_rows()
    assert len(rows) == 72
    for key in ("gpu", "torch", "cudnn", "date", "how"):
        assert rows[0].provenance[key], key
    assert "H200" in rows[0].provenance["gpu"]
    assert all(r.outputs_equal_serial for r in rows)


@pytest.mark.parametrize("network,batch", CASES)
def test_rebuilt_graph_equals_the_builtin_model(network: str, batch: int) -> None:
    g = M.load_graph(network, batch)
    # the shipped H200 runs were of the built-in graphs of their day: Inception V3 unfused
    options = {"fused": False} if network == "inception_v3" else {}
    ref = getattr(models, network)(batch, **options)
    assert g.op_ids == ref.op_ids
    for op, want in zip(g.ops, ref.ops, strict=True):
        assert (op.kind, op.inputs, op.outputs, dict(op.attrs)) == \
            (want.kind, want.inputs, want.outputs, dict(want.attrs)), op.id
        assert (op.flops, op.bytes_read, op.bytes_written, op.thread_blocks) == \
            (want.flops, want.bytes_read, want.bytes_written, want.thread_blocks), op.id
    for t in ref.tensors.values():
        mine = g.tensors[t.id]
        assert (mine.shape, mine.size_bytes, mine.producer, mine.role) == \
            (t.shape, t.size_bytes, t.producer, t.role), t.id
    assert g.outputs == ref.outputs


@pytest.mark.parametrize("network,batch", CASES)
def test_every_measured_schedule_is_rebuilt_as_recorded(network: str, batch: int) -> None:
    import gzip
    import json
    from importlib import resources

    path = resources.files("workbench").joinpath("data", "measured", "h200", "schedules",
                                                 f"{network}_b{batch}.json.gz")
    raw = json.loads(gzip.decompress(path.read_bytes()))["schedules"]
    for policy in M.policies(network, batch):
        s = M.load_schedule(network, batch, policy)  # validates
        want = raw[policy]
        assert list(s.issue_order) == want["issue_order"]
        assert {str(k): list(v) for k, v in s.streams.items()} == want["streams"]
        assert [list(p) for p in s.syncs] == want["syncs"]
        assert list(s.barriers) == want["barriers"]
        assert s.barrier_kind == want["barrier_kind"]
        assert s.n_streams == int(want["n_streams"])


def test_every_row_has_its_schedule_and_the_alone_table_covers_the_graphs() -> None:
    for r in M.load_measured_rows():
        s = M.load_schedule(r.network, r.batch, r.policy)
        assert (s.n_streams, len(s.syncs), len(s.barriers), s.barrier_kind) == \
            (r.streams, r.syncs, r.barriers, r.barrier_kind), (r.network, r.batch, r.policy)
    table = M.alone_table()
    for network, batch in CASES:
        key = M.graph_key(network, batch)
        have = {op for k, op in table if k == key}
        if have:  # squeezenet b64 and inception b64 tables: whatever was measured
            assert have <= set(M.load_graph(network, batch).op_ids)


def test_unknown_gpu_and_policy_are_one_line_errors() -> None:
    with pytest.raises(OptionError, match="no measurements of GPU 'a100'"):
        M.load_measured_rows("a100")
    with pytest.raises(OptionError, match="no measured schedule of policy 'bogus'"):
        M.load_schedule("squeezenet", 1, "bogus")
