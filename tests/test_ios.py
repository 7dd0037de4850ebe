"""IOS: blocks, endings, the DP with a hand-made oracle, and the paper's search-space size."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.schedulers.ios import ios_units, partition_blocks, schedule_ios


def test_units_collapse_conv_bn_relu() -> None:
    g = wb.models.inception_v3(batch=1)
    units = ios_units(g)
    assert len(units) == 119  # the IOS paper's operator count for Inception V3
    assert ["Conv2d_1a_3x3/conv", "Conv2d_1a_3x3/bn", "Conv2d_1a_3x3/relu"] in units


def test_blocks_cut_at_nodes_every_path_passes_through() -> None:
    # a -> (b, c) -> d -> e -> (f, g) -> h : cuts after a, d, e, h.
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"),
                             ("e", "f"), ("e", "g"), ("f", "h"), ("g", "h")])
    units = ios_units(g)
    blocks = [[units[u][0] for u in b] for b in partition_blocks(g, units, 40)]
    assert blocks == [["a"], ["b", "c", "d"], ["e"], ["f", "g", "h"]]
    chopped = partition_blocks(g, units, 2)
    assert max(len(b) for b in chopped) <= 2


def test_dp_picks_the_parallel_stage_when_it_is_cheaper() -> None:
    # Hand-made oracle: a stage costs its longest group (10 µs per op) + 1 µs per extra group.
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])

    def oracle(groups: list[list[str]]) -> float:
        return 10.0 * max(len(gr) for gr in groups) + 1.0 * (len(groups) - 1)

    s = schedule_ios(g, cost_oracle=oracle).validate()
    # Best: [a] | [b] || [c] | [d] = 10 + 11 + 10 = 31 µs (sequential would be 40).
    assert s.notes["stages"] == [[["a"]], [["b"], ["c"]], [["d"]]]
    assert s.notes["estimated_us"] == pytest.approx(31.0)
    assert s.n_barriers == 2 and s.stream_of("b") != s.stream_of("c")


def test_dp_stays_sequential_when_parallel_groups_are_expensive() -> None:
    g = wb.Graph.from_edges([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])

    def oracle(groups: list[list[str]]) -> float:
        return 10.0 * sum(len(gr) for gr in groups) + 50.0 * (len(groups) - 1)

    s = schedule_ios(g, cost_oracle=oracle).validate()
    assert all(len(stage) == 1 for stage in s.notes["stages"])
    assert s.n_streams == 1 and s.n_barriers == 0  # single-group stages are fused, no barriers


def test_r_and_s_limit_groups() -> None:
    g = wb.Graph.from_edges([("x", f"b{i}") for i in range(6)])
    s = schedule_ios(g, r=1, s=2, cost_oracle=lambda groups: 10.0).validate()
    assert all(len(stage) <= 2 for stage in s.notes["stages"])
    assert all(len(grp) <= 1 for stage in s.notes["stages"] for grp in stage)


def test_inception_search_space_matches_the_paper() -> None:
    s = wb.schedule(wb.models.inception_v3(batch=1), "ios").validate()
    assert s.notes["units"] == 119
    assert s.notes["states"] == 1206  # IOS's own DP visits 1,206 states on Inception V3
    assert s.notes["stages_evaluated"] + s.notes["cache_hits"] == s.notes["transitions"]
    assert s.notes["search_s"] < 60


def test_events_variant_and_options() -> None:
    g = wb.models.nnc_diamond()
    assert wb.schedule(g, "ios", sync="events").validate().n_barriers == 0
    for bad in ({"r": 0}, {"s": -1}, {"sync": "fence"}, {"max_block_units": 65}):
        with pytest.raises(wb.OptionError):
            wb.schedule(g, "ios", **bad)


def test_operator_merge_reproduces_the_papers_mixed_5b_merge() -> None:
    # notes ios.md §2: in Inception V3 the three 1x1 convs reading the block input (64 + 48 + 64
    # channels) become one 176-channel 1x1 conv.
    g = wb.models.inception_v3(batch=1)
    s = wb.schedule(g, "ios", merge=True).validate()
    first = ["Mixed_5b/branch1x1/conv", "Mixed_5b/branch5x5_1/conv", "Mixed_5b/branch3x3dbl_1/conv"]
    assert first in s.notes["merges"]
    merged = s.graph.op("merge(" + "+".join(first) + ")")
    assert merged.attrs["cout"] == 176 and merged.attrs["kernel"] == (1, 1)
    assert len(s.graph) < len(g)  # the schedule is of the merged graph, as IOS returns one
    assert wb.simulate(s, "h100").respects()


def test_merge_is_never_chosen_when_it_is_slower() -> None:
    # Merging a fire module's expand1x1 into its expand3x3 pads the 1x1 to 3x3 (9x its FLOPs).
    # At batch 64 the kernels fill the device, so that merge is slower and never chosen (merging
    # two 1x1 convs on one input costs nothing extra and may be); at batch 1 the merged kernel
    # fills the device better and IOS merges the expands, as in the paper's SqueezeNet schedule.
    expands = lambda s: [m for m in s.notes["merges"]  # noqa: E731
                         if any(op.endswith("expand3x3") for op in m)]
    big = wb.schedule(wb.models.squeezenet(batch=64), "ios", merge=True, device="v100")
    assert big.validate() and not expands(big)
    small = wb.schedule(wb.models.squeezenet(batch=1), "ios", merge=True, device="v100")
    assert small.validate() and expands(small)
