"""Every direction or comparison the notebooks' prose states holds in their cells' numbers, and
every claimed sentence is still in its notebook (issue 35).  The tables are in
``tests/_notebook_claims.py``; the quantities are recomputed with the cells' own workbench calls
(memoised, a few seconds in all), not by executing the notebooks again."""

from __future__ import annotations

import pytest

from tests._notebook_claims import CLAIMS, Claim, holds
from tests._quoted_text import NOTEBOOKS, texts

ENTRIES = [(nb, c) for nb, claims in CLAIMS.items() for c in claims]


def test_every_notebook_has_a_claim_table() -> None:
    assert sorted(CLAIMS) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize(("notebook", "claim"), ENTRIES,
                         ids=[f"{nb[:2]}:{c.sentence[:48]}" for nb, c in ENTRIES])
def test_claimed_sentence_is_in_the_notebook(notebook: str, claim: Claim) -> None:
    cells = [i for i, text in texts(notebook) if " ".join(claim.sentence.split()) in text]
    assert len(cells) == 1, (f"{notebook}: {claim.sentence!r} is in {len(cells)} markdown cells "
                             f"(the claim table and the prose have drifted apart)")


@pytest.mark.parametrize(("notebook", "claim"), ENTRIES,
                         ids=[f"{nb[:2]}:{c.sentence[:48]}" for nb, c in ENTRIES])
def test_claim_holds(notebook: str, claim: Claim) -> None:
    ok, left, right = holds(claim)
    assert ok, (f"{notebook}: {claim.sentence!r} says {claim.about}: {left:.4g} "
                f"{claim.relation} {right!r} does not hold")
