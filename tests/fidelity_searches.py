"""Write ``tests/data/fidelity_searches.json``: the IOS search of every searched fidelity row as
``tests/test_fidelity.py`` runs them (the capped NASNet-A search included; the README's table
quotes the same searches), keyed as :func:`workbench.simulator.fidelity.searches.search_key` says.

    .venv/bin/python tests/fidelity_searches.py      # about 3 CPU minutes

Run it when ``test_stored_searches_are_what_ios_finds`` says IOS finds another schedule, or
after a change to a fidelity graph, a device or the model (their searches are not stored yet:
the tests search them, slowly, until this runs).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import FIDELITY_SEARCHES
    from tests.test_fidelity import CAPPED
    from workbench.simulator import fidelity as F

    store = F.use_store(FIDELITY_SEARCHES)
    assert store is not None
    store.entries.clear()  # every search anew: none left from older code
    for row in F.load_rows():
        if row.schedule in F.SEARCHED_SCHEDULES:
            F.evaluate([row], ios_options=CAPPED.get((row.network, row.schedule)))
            print(f"{row.id}: searched", flush=True)
    print(f"wrote {store.save()} ({len(store.entries)} searches)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
