"""pytest plugin of ``tools/mutate.py --select coverage``: keep only the tests named (one node
id a line, or a test file's path for all its tests) in the file given by
``GAUGEDYN_MUTATION_TESTS``, in that file's order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = os.environ.get("GAUGEDYN_MUTATION_TESTS")
    if not path:
        return
    wanted = Path(path).read_text(encoding="utf-8").split("\n")
    order = {nodeid: i for i, nodeid in enumerate(w for w in wanted if w)}
    rank = {it.nodeid: order.get(it.nodeid, order.get(it.nodeid.split("::")[0])) for it in items}
    kept = sorted(
        (it for it in items if rank[it.nodeid] is not None), key=lambda it: rank[it.nodeid]
    )
    dropped = [it for it in items if rank[it.nodeid] is None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
