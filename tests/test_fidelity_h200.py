"""The simulator against the schedules measured on an NVIDIA H200 (issue 23).

Every shared H200 case (network x batch x precision) must keep its measured serial and best
makespans within 15%, the speedup within 10%, regret at most 2% and the policies' rank
correlation at least 0.8; the per-op stand-alone times a median |error| of at most 15% and a 90th
percentile of at most 35%.  What the shipped ``h200`` fit misses is listed in
:data:`KNOWN_MISSES` with the miss measured when it was fitted and the reason, and marked
``xfail(strict=True)``: the test fails when a miss grows into a pass as well as when a passing
criterion breaks, so every change to the model shows up here.  Simulated results are computed
once per module (about 1 s)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from workbench.errors import OptionError
from workbench.simulator.cost_model.devices import get_device
from workbench.simulator.fidelity import judge as J
from workbench.simulator.fidelity import measured as M
from workbench.simulator.fidelity.fit_device import fit_device, table_from_profile

ROWS = M.load_measured_rows()
TOL = J.CASE_TOLERANCE
WHY = {
    "order": "the policies lie within a few % of each other on the GPU; the model's costs of "
             "concurrency (interference, event waits, hardware queues, op gaps) do not order "
             "them as the GPU does",
    "per_op": "per-op errors of this batch and precision do not cancel over the network "
              "(tensor-core tiles on small grids, elementwise kernels; see the per-op table)",
    "large_maps": "SqueezeNet's convolutions on 55x55 and 27x27 maps at batch 16 run slower on "
                  "the GPU than the tile model says (fire2/shortcut: 83 us measured, 57 "
                  "simulated), even with the tiles' fixed K-steps",
    "tf32_b1": "TF32 kernels at batch 1 are a few us each: the model's serial run pays every "
               "kernel's latency, op gap and layout conversion in a row (Inception V3 +13%, "
               "SqueezeNet +15%) while its multi-stream runs hide them (-7%, -3%); the GPU "
               "gains less from streams (1.54x and 1.16x measured, 1.87x and 1.37x simulated)",
}
#: (case, criterion) -> (measured miss: % or rho, reason key) of the shipped h200 fit.
KNOWN_MISSES: dict[tuple[str, str], tuple[float, str]] = {
    ("inception_v3 b1 fp32", "spearman"): (0.74, "order"),
    ("squeezenet b1 fp32", "spearman"): (0.28, "order"),
    ("inception_v3 b16 fp32", "spearman"): (0.78, "order"),
    ("squeezenet b16 fp32", "serial"): (-15.4, "large_maps"),
    ("inception_v3 b64 fp32", "best"): (+16.7, "per_op"),
    ("inception_v3 b64 fp32", "spearman"): (0.77, "order"),
    ("inception_v3 b1 tf32", "speedup"): (+21.3, "tf32_b1"),
    ("squeezenet b1 tf32", "speedup"): (+18.2, "tf32_b1"),
}
#: Per-op stand-alone criteria missed by the shipped fit: (measured, reason).
#: Per-op stand-alone |error| of the shipped fit (median, 90th percentile, %), and the reasons
#: of those beyond their tolerance.
ALONE_NOW = {"median": 13.3, "p90": 35.1}
ALONE_MISSES = {
    "p90": "RandWire's separable convolutions (batch 1 too slow, batch 16 too fast: cuDNN's "
           "heuristic tile choice; class p90 65%)",
}
CRITERIA = ("serial", "best", "speedup", "regret", "spearman")


def _reason(case: str, criterion: str) -> str:
    value, key = KNOWN_MISSES[(case, criterion)]
    miss = f"rho {value:.2f}" if criterion == "spearman" else f"{value:+.1f}%"
    return f"{case} {criterion}: measured miss {miss} when fitted; {WHY[key]}"


def _cases() -> list[Any]:
    out = []
    for network, batch, precision in J.cases(ROWS):
        case = f"{network} b{batch} {precision}"
        for criterion in CRITERIA:
            marks = [pytest.mark.xfail(strict=True, reason=_reason(case, criterion))] \
                if (case, criterion) in KNOWN_MISSES else []
            out.append(pytest.param(case, criterion, marks=marks, id=f"{case}-{criterion}"))
    return out


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    sim = J.simulate_rows(ROWS, "h200")
    return {J.case_label(r): r for r in J.case_table(ROWS, sim).to_dict("records")}


@pytest.fixture(scope="module")
def alone() -> dict[str, Any]:
    t = M.alone_table()
    return J.alone_summary(J.alone_errors(t, J.alone_graphs(t), "h200"))


@pytest.mark.parametrize("case,criterion", _cases())
def test_h200_case_within_tolerance(case: str, criterion: str,
                                    table: dict[str, dict[str, Any]]) -> None:
    r = table[case]
    if criterion == "regret":
        assert r["regret"] <= TOL["regret"], (
            f"{case}: the simulator's first policy {r['best_policy_simulated']} is "
            f"{100 * r['regret']:.1f}% slower on the GPU than {r['best_policy_measured']}")
    elif criterion == "spearman":
        assert J.rank_correlation_ok(r["spearman"], TOL["spearman"]), (
            f"{case}: rank correlation {r['spearman']:.2f}")
    else:
        err = r[f"{criterion}_error"]
        assert abs(err) <= TOL[criterion], f"{case}: {criterion} {100 * err:+.1f}%"


@pytest.mark.parametrize("stat", [
    pytest.param(s, marks=[pytest.mark.xfail(
        strict=True, reason=f"measured {ALONE_NOW[s]}% when fitted: {ALONE_MISSES[s]}")]
        if s in ALONE_MISSES else []) for s in ("median", "p90")])
def test_h200_stand_alone_op_times(stat: str, alone: dict[str, Any]) -> None:
    assert alone[stat] <= TOL[f"alone_{stat}"], f"per-op {stat} |error| {100 * alone[stat]:.1f}%"


def test_known_misses_are_near_what_was_measured(table: dict[str, dict[str, Any]],
                                                 alone: dict[str, Any]) -> None:
    # the recorded misses are today's, within a point: a change that moves them must update
    # the list (and its reasons)
    for (case, criterion), (value, _) in KNOWN_MISSES.items():
        r = table[case]
        now = r["spearman"] if criterion == "spearman" else 100 * (
            r["regret"] if criterion == "regret" else r[f"{criterion}_error"])
        assert math.isclose(now, value, abs_tol=0.02 if criterion == "spearman" else 1.0), (
            case, criterion, now)
    for stat, value in ALONE_NOW.items():
        assert math.isclose(100 * alone[stat], value, abs_tol=1.0), (stat, alone[stat])


SIX = ("nnc", "wavefront", "asap", "min_streams", "gpto", "critical_path")


def _inception_b1() -> dict[str, tuple[float, float]]:
    rows = [r for r in ROWS if r.case == ("inception_v3", 1, "fp32") and r.policy in SIX]
    return {r.policy: (r.graph_us, s) for r, s in zip(rows, J.simulate_rows(rows, "h200"),
                                                      strict=True)}


def test_six_policies_are_bound_by_the_critical_path_on_inception_b1() -> None:
    # Issue 23's tie, diagnosed: in graph mode every op is issued at once and at batch 1 the
    # kernels leave most SMs idle, so no stream ever delays an op of the critical path and every
    # schedule runs at the graph's critical path (stand-alone times + op gaps + graph launch,
    # 2,057 us) plus the concurrency costs.  The shared parts are now right (each within 5% of
    # nnc's 2,120 us measured) but the six still simulate within 0.5% of each other.
    from workbench.simulator.cost_model.costs import graph_costs
    from workbench.simulator.cost_model.devices import get_device
    from workbench.simulator.cost_model.kernel_model import model_for

    spec = get_device("h200")
    gap = model_for(spec).op_gap_us
    g = M.load_graph("inception_v3", 1)
    costs = graph_costs(g, spec, precision="fp32")
    finish = [0.0] * len(g)
    for i in g.topo_index:
        finish[i] = costs[i].alone_us + gap + max((finish[p] for p in g.pred_index[i]),
                                                  default=0.0)
    bound = max(finish) + spec.graph_launch_us
    runs = _inception_b1()
    sims = [s for _, s in runs.values()]
    assert all(bound <= s <= 1.06 * bound for s in sims), (bound, sims)
    assert max(sims) <= 1.005 * min(sims)
    assert abs(runs["nnc"][1] / runs["nnc"][0] - 1) <= 0.05


@pytest.mark.xfail(strict=True, reason=(
    "the GPU measured gpto and critical_path 17% slower than nnc (2,487 and 2,483 against 2,120 "
    "us: 4 streams, 68 syncs against 6 streams, 70 syncs); the simulator puts all six within "
    "0.5%: nothing in the model (queues, event waits, interference, op gaps) makes those "
    "schedules' concurrency cost more"))
def test_six_policies_are_separated_as_the_gpu_separates_them() -> None:
    runs = _inception_b1()
    assert runs["gpto"][1] >= 1.10 * runs["nnc"][1]
    assert runs["critical_path"][1] >= 1.10 * runs["nnc"][1]


def test_fit_device_recovers_a_kernel_latency_from_a_stand_alone_table() -> None:
    # a table the model itself made with kernel_latency_us = 3.0: fitting that parameter alone
    # from 1.0 brings it back; the table goes in as a calibration profile's rows
    from workbench.simulator.cost_model.costs import graph_costs
    from workbench.simulator.cost_model.devices import with_overrides

    truth = with_overrides("h200", kernel_latency_us=3.0)
    g = M.load_graph("squeezenet", 1)
    costs = graph_costs(g, truth, precision="fp32")
    profile = {"ops": [{"graph": "squeezenet", "batch": 1, "op": op.id, "kind": op.kind,
                        "alone_us": c.alone_us} for op, c in zip(g.ops, costs, strict=True)]}
    table = table_from_profile(profile)
    fitted = fit_device(with_overrides("h200", kernel_latency_us=1.0), table=table,
                        graphs={"squeezenet_b1": g}, kernel_parameters=["kernel_latency_us"],
                        max_evaluations=30)
    assert fitted.kernel_latency_us == pytest.approx(3.0, rel=0.02)


def test_bad_tables_are_one_line_errors() -> None:
    g = M.load_graph("squeezenet", 1)
    with pytest.raises(OptionError, match="has no op 'nope'"):
        fit_device("h200", table={("squeezenet_b1", "nope"): 1.0}, graphs={"squeezenet_b1": g},
                   max_evaluations=2)
    with pytest.raises(OptionError, match="lacks graph/batch/op/alone_us"):
        table_from_profile({"ops": [{"graph": "squeezenet", "op": "conv1"}]})
    with pytest.raises(OptionError, match="unknown fit parameter 'bogus'"):
        fit_device("h200", table={("squeezenet_b1", "conv1"): 1.0},
                   graphs={"squeezenet_b1": g}, kernel_parameters=["bogus"])


@pytest.fixture(scope="module")
def loo() -> dict[str, tuple[Any, dict[str, Any]]]:
    """Leave one network out: fit on the other network's ops and makespans, predict this one's
    (case table, per-op summary).  About 40 s for both folds."""
    from workbench.simulator.fidelity.refit import NEUTRAL_START, fit_measured_gpu

    out = {}
    for held, train in (("squeezenet", "inception_v3"), ("inception_v3", "squeezenet")):
        spec = fit_measured_gpu("h200", networks=(train,), max_evaluations=20,
                                start=NEUTRAL_START, run_starts=({},))
        rows = [r for r in ROWS if r.network == held]
        table = J.case_table(rows, J.simulate_rows(rows, spec))
        alone_t = {k: v for k, v in M.alone_table().items() if k[0].startswith(held)}
        summary = J.alone_summary(J.alone_errors(alone_t, J.alone_graphs(alone_t), spec))
        out[held] = ({J.case_label(r): r for r in table.to_dict("records")}, summary)
    return out


def test_leave_one_network_out(loo: dict[str, tuple[Any, dict[str, Any]]]) -> None:
    # From a neutral start (refit.NEUTRAL_START, not the shipped fit, which saw both networks),
    # 20 evaluations a stage, stage 2 from that start only (CI time).  benchmarks/fidelity.py
    # --loo (120 evaluations, both starts): fitted on Inception V3 alone, SqueezeNet's batch-16
    # fp32 makespans -11.2% and -5.2%, its batch-1 best +12.7% (serial +19.5%), its ops at a
    # 15.0% median |error|; fitted on SqueezeNet alone, Inception V3's batch-16 fp32 serial
    # +6.8% and its ops at 18.3%.
    squeeze, s_alone = loo["squeezenet"]
    for criterion in ("serial", "best"):
        assert abs(squeeze["squeezenet b16 fp32"][f"{criterion}_error"]) <= TOL[criterion]
    assert abs(squeeze["squeezenet b1 fp32"]["best_error"]) <= TOL["best"]
    assert s_alone["median"] <= 0.20
    incep, i_alone = loo["inception_v3"]
    assert abs(incep["inception_v3 b16 fp32"]["serial_error"]) <= TOL["serial"]
    assert i_alone["median"] <= 0.20


@pytest.mark.xfail(strict=True, reason=(
    "fitted on SqueezeNet alone (50 ops: no batch norms, pools or 1xk convolutions, so the "
    "batchnorm grid's block setup and the pooling costs are not identified), Inception V3 at "
    "batch 1 fp32 comes out 25% (serial) and 23% (best) fast"))
def test_leave_squeezenet_in_predicts_inception_at_batch_1(
        loo: dict[str, tuple[Any, dict[str, Any]]]) -> None:
    incep, _ = loo["inception_v3"]
    for criterion in ("serial", "best"):
        assert abs(incep["inception_v3 b1 fp32"][f"{criterion}_error"]) <= TOL[criterion]


def test_the_report_states_todays_h200_accuracy() -> None:
    # the sentence every report shows under "How to read this" quotes the misses recorded above
    from workbench.simulator.fidelity.accuracy import accuracy_note

    h200 = accuracy_note("h200")
    worst = max(abs(v) for (case, crit), (v, _) in KNOWN_MISSES.items()
                if case.endswith("fp32") and crit in ("serial", "best"))
    tf32 = [abs(v) for (case, crit), (v, _) in KNOWN_MISSES.items()
            if case.endswith("tf32") and crit in ("serial", "best")]
    assert f"(worst {worst:.1f}%)" in h200
    assert (f"TF32 ones in {12 - len(tf32)} of 12 (worst {max(tf32):.1f}%)" if tf32
            else "TF32 ones all 12") in h200
    assert f"per-op median error {ALONE_NOW['median']}%" in h200
    assert "derived from the h200 fit" in accuracy_note("h100")
    assert "fitted on the V100" in accuracy_note("t4")


def test_stage_two_weighs_each_policys_speedup_over_serial() -> None:
    # one residual per makespan, then one per non-serial run of a case with a measured serial:
    # its log speedup error (so a fit cannot move a case's policies together and mis-order them)
    from workbench.simulator.cost_model.devices import get_device
    from workbench.simulator.cost_model.kernel_model import model_for
    from workbench.simulator.fidelity.fit_device import run_loss

    rows = [r for r in ROWS if r.case == ("squeezenet", 1, "fp32")][:4]
    runs = [(M.load_schedule(r.network, r.batch, r.policy), "graph", r.precision, r.graph_us)
            for r in rows]
    assert rows[0].policy == "serial"
    spec = get_device("h200")
    res = run_loss(runs)(model_for(spec), spec)
    assert len(res) == 4 + 3
    for k in range(1, 4):
        assert res[3 + k] == pytest.approx(res[k] - res[0])


def test_rank_correlation_of_exactly_the_minimum_passes() -> None:
    # rho of nine policies is 1 - 6 * sum(d^2) / 720: 0.8 exactly may compute a hair below
    assert J.rank_correlation_ok(0.8 - 1e-12, 0.8)
    assert not J.rank_correlation_ok(0.79, 0.8)
    assert not J.rank_correlation_ok(math.nan, 0.8)


def test_fit_device_fits_tensor_parameters_on_a_tf32_table() -> None:
    """A TF32 stand-alone table the model made with tensor_efficiency = 0.45 (as the calibration
    tool writes it, graph names ending in _b<batch>): stage 1 brings the parameter back from
    0.7, and stage 2 no longer fits it."""
    from workbench.simulator.cost_model.costs import graph_costs
    from workbench.simulator.fidelity.fit_device import TENSOR_PARAMETERS

    def with_tensor(value: float) -> Any:
        spec = get_device("h200")
        return replace(spec, model_overrides=tuple(sorted(
            {**dict(spec.model_overrides), "tensor_efficiency": value}.items())))

    g = M.load_graph("squeezenet", 1)
    costs = graph_costs(g, with_tensor(0.45), precision="tf32")
    profile = {"precision": "tf32", "ops": [
        {"graph": "squeezenet_b1", "batch": 1, "op": op.id, "alone_us": c.alone_us}
        for op, c in zip(g.ops, costs, strict=True)]}
    table = table_from_profile(profile)
    assert next(iter(table))[0] == "squeezenet_b1"          # not squeezenet_b1_b1
    fitted = fit_device(with_tensor(0.7), tensor_table=table, graphs={"squeezenet_b1": g},
                        kernel_parameters=["tensor_efficiency"], max_evaluations=30)
    assert dict(fitted.model_overrides)["tensor_efficiency"] == pytest.approx(0.45, rel=0.02)
    assert "tensor_efficiency" in TENSOR_PARAMETERS
    with pytest.raises(OptionError, match="unknown fit parameter 'tensor_efficiency'"):
        fit_device("h200", tensor_table=table, graphs={"squeezenet_b1": g},
                   runs=[(M.load_schedule("squeezenet", 1, "serial"), "graph", "tf32", 426.4)],
                   kernel_parameters=[], run_parameters=["tensor_efficiency"])
    with pytest.raises(OptionError, match="not a tensor-core precision"):
        fit_device("h200", tensor_table=table, graphs={"squeezenet_b1": g},
                   tensor_precision="fp32")


def test_refit_takes_a_tf32_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """fit_measured_gpu hands a TF32 calibration profile to fit_device as its tensor table (its
    graph keys resolved with the fp32 table's), in the profile's precision."""
    from workbench.simulator.fidelity import refit

    seen: dict[str, Any] = {}

    def fake_fit(spec: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return spec

    monkeypatch.setattr(refit, "fit_device", fake_fit)
    g = M.load_graph("squeezenet", 16)
    profile = {"precision": "tf32", "ops": [
        {"graph": "squeezenet_b16", "batch": 16, "op": op.id, "alone_us": 5.0}
        for op in g.ops[:3]]}
    refit.fit_measured_gpu("h200", networks=("squeezenet",), tensor_profile=profile)
    assert seen["tensor_table"] == {("squeezenet_b16", op.id): 5.0 for op in g.ops[:3]}
    assert seen["tensor_precision"] == "tf32"
    assert {"squeezenet_b1", "squeezenet_b16"} <= set(seen["graphs"])
    refit.fit_measured_gpu("h200", networks=("inception_v3",), tensor_profile=profile)
    assert seen["tensor_table"] == {}          # another network's ops are left out
