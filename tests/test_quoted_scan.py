"""Every number quoted in README.md and the notebooks is checked by a test (issue 25's acceptance).

The scan finds every figure of the prose (the rule is in ``tests/_quoted_text.py``: a number
with a unit or multiplier, a decimal, or a number with thousands separators, outside code) and
requires each to be covered by an entry of a checked list, whose test recomputes it to the digits
quoted (``QUOTED`` of ``test_quoted_figures.py`` and ``test_quoted_notebooks.py``, ``COMPUTED`` of
``test_readme_figures.py``), or by a quoted text that says why it is not computed: GIVEN below (an
input the text sets and the cell uses, a figure cited from a seed or a paper, an exercise's
input), the README's GIVEN and MEASURED_ELSEWHERE.  A newly written figure that is in none of
them fails here with its file, cell and context.  The scan computes nothing (about 1 s)."""

from __future__ import annotations

import pytest

from tests import test_quoted_figures, test_quoted_notebooks, test_readme_figures
from tests._quoted_text import (
    NOTEBOOKS,
    README,
    checked_spans,
    find_figures,
    given_spans,
    normalise,
    uncovered,
)

NB02, NB04, NB05 = ("02_raf_wavefront_asap_ios.ipynb", "04_mindspore_levels_memory.ipynb",
                    "05_gpu_execution.ipynb")

GIVEN = {  # (notebook, text quoted as it stands) -> why the figure is not computed
    (NB02, "The seed reports 1.2-1.3x for Inception V3 at batch 1"): "cited from seed 001 (RAF)",
    (NB02, "the IOS paper measures 1.41x for a greedy multi-stream schedule and 1.62x for IOS"):
        "cited from the IOS paper (Ding et al., MLSys 2021), measured on a V100",
    (NB02, "the gain printed below is far from 2x"):
        "the ideal of two kernels on two streams, the bound the printed gain is compared with",
    (NB04, "(12 µs of host work per op"):
        "an input: the cell's with_overrides('h100', launch_overhead_us=12.0)",
    (NB04, "the one-stream fallback at 22 MiB"): "an input: the cell's limit_mib = 22",
    (NB04, "which order does the fallback pick at 4 GiB?"): "an exercise's input",
    (NB05, "found every convolution 30 % slower than the model says"):
        "an input: the cell's hypothetical calibration, 1.3 × the modelled time",
    (NB05, "so only the 30 % differs"): "the same input",
    (NB05, "so 30 % more on them is"): "the same input",
    (NB05, "only the 1x1 convolutions are 2x slower"): "an exercise's input",
}

WHERE = [README, *sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))]


def _checked() -> list[tuple[str, str]]:
    """(file, template) of every checked entry."""
    notebooks = [(nb, text) for nb, text, _, _ in
                 [*test_quoted_figures.QUOTED, *test_quoted_notebooks.QUOTED]]
    return notebooks + [(README, text) for text, _, _ in test_readme_figures.COMPUTED]


def _given() -> list[tuple[str, str]]:
    """(file, text) of every figure quoted with a reason instead of a computation."""
    readme = [*test_readme_figures.MEASURED_ELSEWHERE, *test_readme_figures.GIVEN]
    return list(GIVEN) + [(README, text) for text in readme]


@pytest.mark.parametrize("where", WHERE)
def test_every_quoted_figure_is_checked_or_given(where: str) -> None:
    spans = [s for w, text in _checked() if w == where for s in checked_spans(where, text)]
    spans += [s for w, text in _given() if w == where for s in given_spans(where, text)]
    missing = uncovered(where, spans)
    assert not missing, (
        f"{len(missing)} figure(s) quoted but neither recomputed by a test (QUOTED, COMPUTED) "
        "nor listed as GIVEN with a reason:\n" + "\n".join(map(str, missing)))


@pytest.mark.parametrize("where,text", list(GIVEN), ids=[f"{w[:2]}:{t}" for w, t in GIVEN])
def test_given_figure_is_still_quoted(where: str, text: str) -> None:
    assert given_spans(where, text), f"{where} no longer says {text!r}: update GIVEN"


@pytest.mark.parametrize("where,text", _checked(), ids=[f"{w[:2]}:{t}" for w, t in _checked()])
def test_checked_entry_is_found_in_the_text(where: str, text: str) -> None:
    """Each template occurs (cheap; the value itself is checked by its own test)."""
    assert checked_spans(where, text), f"{where} no longer says {text!r}"


FOUND = ["took 12 µs", "about 1.8x", "3,922 µs", "**60 %**", "5G", "0.51", "25–34%",
         "1.2-1.3x", "96 blocks", "1k", "**48 thread blocks**", "from 1.62× to", "11 MiB",
         "307 ops", "48 streams"]
SKIPPED = ["N1 -> N2", "Kernel_3", "Inception V3", "h100", "batch 16", "b16 and fp32",
           "Seed 003", "seed 000", "Fig. 7.5.2", "§7.5.1–7.5.2", "## 3. Title", "1. First",
           "3x3 conv", "cupy-cuda12x", "a 2-core machine", "48 of 80", "`max_states=10,000`",
           "chapter 7.5", "Exercise 2.3", "two waves", "O1 and O2"]


@pytest.mark.parametrize("text", FOUND)
def test_rule_finds_a_figure(text: str) -> None:
    assert len(find_figures(normalise(text))) == 1, text


@pytest.mark.parametrize("text", SKIPPED)
def test_rule_skips_names_references_and_code(text: str) -> None:
    assert find_figures(normalise(text)) == [], text


def test_fenced_code_is_not_prose() -> None:
    found = find_figures(normalise("a\n```python\nx = 1.5\n```\nb 2 ms `3 ms`"))
    assert [token for _, _, token in found] == ["2 ms"]
