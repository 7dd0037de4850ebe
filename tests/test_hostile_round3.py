"""Issue 43's reproducers that are not about side effects or ONNX: each is refused in one line
(or handled) where it used to get through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workbench as wb
from tests._complexity import machine_slowdown


def _et(tmp_path: Path, nodes: list[dict]) -> Path:
    path = tmp_path / "et.json"
    path.write_text(json.dumps({"schema": "1.0.1", "nodes": nodes}))
    return path


def _call(nid: int, parent: int, name: str = "aten::relu") -> dict:
    return {"id": nid, "name": name, "ctrl_deps": parent,
            "inputs": {"values": [], "types": []}, "outputs": {"values": [], "types": []},
            "attrs": [{"name": "rf_id", "value": nid}]}


ROOT = {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1}


def test_an_execution_trace_node_that_is_its_own_parent_is_refused(tmp_path: Path) -> None:
    """Only the root may name itself as its ``ctrl_deps`` parent: another such node hides
    whether it runs under an operator (it was accepted, issue 43 #5)."""
    from workbench.io.traces.execution_trace import execution_graph

    ok = _et(tmp_path, [ROOT, _call(2, 1), _call(3, 1, "aten::add")])
    assert len(execution_graph(ok)) == 2
    bad = _et(tmp_path, [ROOT, _call(2, 1), _call(3, 3, "aten::add")])
    with pytest.raises(wb.FormatError) as info:
        execution_graph(bad)
    text = str(info.value)
    assert "node 3 ('aten::add') is its own ctrl_deps parent" in text and "\n" not in text


def _named_graph(tmp_path: Path, name: str, op_id: str) -> Path:
    g = wb.Graph.from_edges([(op_id, "b"), ("b", "c")], ops={op_id: "relu", "b": "relu",
                                                              "c": "relu"})
    g = g.replace(name=name)
    path = tmp_path / "g.json"
    wb.save(g, path)
    return path


def test_an_ascii_terminal_gets_every_line_and_names_escaped(tmp_path: Path) -> None:
    """``LC_ALL=C``: a graph named ``gräph`` ended the CLI's summary line with a
    ``UnicodeEncodeError`` traceback (issue 43 #7)."""
    import os
    import subprocess
    import sys

    path = _named_graph(tmp_path, "gräph", "a")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii",
           "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "compare", str(path),
                           "--policies", "serial,nnc", "-o", str(tmp_path / "r.html"),
                           "--no-progress"], capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")[-600:]
    out = done.stdout.decode("ascii")
    assert "gr\\xe4ph" in out and "Traceback" not in done.stderr.decode("ascii", "replace")


def test_bidi_and_control_characters_show_as_code_points_in_the_report(tmp_path: Path) -> None:
    """A name with U+202E displayed reversed (``invoice\u202efdp.exe`` reads
    ``invoiceexe.pdf``) and ESC reached the HTML raw (issue 43 #7)."""
    pytest.importorskip("plotly")
    from workbench._terminal import clean

    evil = "invoice\u202efdp.exe\u2066\x1b[31m"
    path = _named_graph(tmp_path, evil, "op\u202eid")
    g = wb.load(path)
    cmp = wb.compare(g, policies=["serial", "nnc"], show_progress=False)
    out = tmp_path / "r.html"
    cmp.to_html(out)
    html = out.read_text(encoding="utf-8")
    for ch in ("\u202e", "\u2066", "\x1b"):
        assert ch not in html, repr(ch)
    assert "invoice\\u202efdp.exe" in html and "op\\u202eid" in html
    assert "\u202e" not in clean(evil) and "\x1b" not in clean(evil)


@pytest.mark.parametrize("option", ["-o", "--table", "--export-trace"])
def test_cli_outputs_that_are_planted_links_are_refused_unless_followed(
        tmp_path: Path, option: str) -> None:
    """``compare -o r.html`` where ``r.html`` is a link to ``~/.bashrc`` replaced the user's
    file with the report (issue 43 #6); ``--follow-symlinks`` is the user's way to ask for it."""
    import os
    import subprocess
    import sys

    victim = tmp_path / "bashrc"
    victim.write_text("secret\n")
    names = {"-o": "r.html", "--table": "t.csv", "--export-trace": "t.json"}
    link = tmp_path / names[option]
    link.symlink_to(victim)
    args = [sys.executable, "-m", "workbench.cli", "compare", "--model", "nnc_diamond",
            "--policies", "serial,nnc", "--no-progress"]
    if option != "-o":
        args += ["-o", str(tmp_path / "report.html")]
    args += [option, str(link)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(wb.__file__).parents[1])})
    assert done.returncode == 2 and "is a symbolic link" in done.stderr, done.stderr[-500:]
    assert len(done.stderr.strip().splitlines()) == 1 and victim.read_text() == "secret\n"
    if option == "-o":
        again = subprocess.run([*args, "--follow-symlinks"], capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr[-500:]
        assert link.is_symlink() and "<html" in victim.read_text()


def test_the_emulator_allocates_as_it_goes_and_refuses_past_its_bound() -> None:
    """The emulator allocated the whole arena before the first kernel: 5-6 GiB (7.2 GB RSS, 18 s
    here) for the seed's ``mindspore_six_kernels`` (issue 43 #8)."""
    import time

    import numpy as np

    from workbench.executors.gpu.emulator import PAGE_BYTES, Memory, emulate_schedule
    from workbench.executors.gpu.plan import Ptr

    mem = Memory({"arena": 1 << 30}, ())
    assert sum(len(p) for p in mem.pages.values()) == 0
    mem.write(Ptr("arena", PAGE_BYTES - 8), np.arange(4, dtype=np.float32))  # across two pages
    assert sum(len(p) for p in mem.pages.values()) == 2
    assert mem.read(Ptr("arena", PAGE_BYTES - 8), 4).tolist() == [0, 1, 2, 3]
    assert np.isnan(mem.read(Ptr("arena", 0), 2)).all()
    mem.write(Ptr("arena", 0), np.ones(6, dtype=np.float32), row_len=2, row_stride=3)
    assert np.nan_to_num(mem.read(Ptr("arena", 0), 8), nan=-1).tolist() == \
        [1, 1, -1, 1, 1, -1, 1, 1]
    t0 = time.perf_counter()
    with pytest.raises(wb.OptionError, match="5.0 GiB of device memory, more than the CPU "
                                             "emulator takes on") as info:
        emulate_schedule(wb.schedule(wb.models.mindspore_six_kernels(), "bfs"))
    assert "\n" not in str(info.value) and time.perf_counter() - t0 < 10 * machine_slowdown()


def _data_dependent_models() -> dict[str, object]:
    torch = pytest.importorskip("torch")

    class MaskIndex(torch.nn.Module):
        def forward(self, x: object) -> object:
            return x[x > 0].sum() * 2

    class MaskedSelect(torch.nn.Module):
        def forward(self, x: object) -> object:
            return torch.masked_select(x, x > 0) * 2

    class NonZero(torch.nn.Module):
        def forward(self, x: object) -> object:
            return x.nonzero().float() + 1

    return {"index": MaskIndex().eval(), "masked_select": MaskedSelect().eval(),
            "nonzero": NonZero().eval()}


@pytest.mark.parametrize("op", ["index", "masked_select", "nonzero"])
def test_data_dependent_shapes_are_one_line_from_torch_and_the_model_itself_from_accelerate(
        op: str) -> None:
    """``x[x > 0]``, ``masked_select``, ``nonzero``: torch's GuardOnDataDependentSymNode escaped
    from io/torch/fx.py as a raw traceback (issue 43 #4)."""
    import warnings

    torch = pytest.importorskip("torch")
    model = _data_dependent_models()[op]
    x = torch.randn(4, 4)
    with pytest.raises(wb.OptionError) as info:
        wb.io.from_torch(model, (x,))
    text = str(info.value)
    assert f"op '{op}'" in text and "depends on the values" in text and "torch.where" in text
    assert "\n" not in text
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fast = wb.accelerate(model, (x,), policy="nnc", show_progress=False)
    assert type(fast).__name__ == "ModelItself"
    lines = [str(w.message) for w in said if "depends on the values" in str(w.message)]
    assert len(lines) == 1
    assert torch.equal(fast(x), model(x))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="workbench", options={"policy": "nnc"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(compiled(x), model(x))
    torch._dynamo.reset()
