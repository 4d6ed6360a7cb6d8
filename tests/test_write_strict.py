"""`gaugedyn.harness.write_strict_json`: the stored pilots' one writer (strict JSON, atomic)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gaugedyn.harness import write_strict_json


def test_it_writes_strict_indented_json_with_a_final_newline(tmp_path):
    path = tmp_path / "pilot.json"
    write_strict_json(path, {"a": np.float64(math.nan), "b": [np.int64(2), math.inf]})
    text = path.read_text()
    assert json.loads(text) == {"a": "nan", "b": [2, "inf"]}
    assert text == json.dumps({"a": "nan", "b": [2, "inf"]}, indent=1) + "\n"


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    """The replacement fails after the new text is written to its temporary file: the stored
    file keeps its old contents and no temporary file is left beside it (a plain
    ``write_text`` would have written the new contents and raised nothing)."""
    import gaugedyn.harness._store as store

    path = tmp_path / "pilot.json"
    write_strict_json(path, {"old": 1})

    def fail(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(store.os, "replace", fail)
    with pytest.raises(OSError, match="disk gone"):
        write_strict_json(path, {"new": 2})
    assert json.loads(path.read_text()) == {"old": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["pilot.json"]
