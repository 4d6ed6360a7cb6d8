"""The content-addressed result store: keys, atomic records, corruption detected and recomputed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from toy_experiments import config_text

from gaugedyn.experiments import ResultStore, execute, load_config, task_key
from gaugedyn.harness._store import StoreError


def test_key_depends_on_everything_and_nothing_else():
    task = {"i": 1, "size": 3, "gauges": [1.0, 2.0]}
    key = task_key("toy", task, 0, "1.0")
    assert key == task_key("toy", dict(reversed(list(task.items()))), 0, "1.0")  # key order
    assert key == task_key("toy", {**task, "i": np.int64(1)}, 0, "1.0")  # numpy scalars
    others = [
        task_key("toy2", task, 0, "1.0"),
        task_key("toy", {**task, "i": 2}, 0, "1.0"),
        task_key("toy", task, 1, "1.0"),
        task_key("toy", task, 0, "1.1"),
    ]
    assert len({key, *others}) == 5 and all(len(k) == 64 for k in others)


def test_round_trip_types(tmp_path):
    store = ResultStore(tmp_path)
    result = {
        "x": np.arange(6.0).reshape(2, 3),
        "n": 3,
        "flag": True,
        "label": "w-heavy",
        "none": None,
        "ragged": [[1, 2], [3]],
        "nested": {"a": [1.5, float("nan")]},
        "f32": np.float32(0.25),
    }
    store.save("ab" * 32, result, {"task": {"i": 0}})
    back = store.load("ab" * 32)
    assert np.array_equal(back["x"], result["x"]) and back["x"].dtype == np.float64
    assert back["n"] == 3 and back["flag"] is np.True_ and back["label"] == "w-heavy"
    assert back["none"] is None and back["ragged"] == [[1, 2], [3]]
    assert np.isnan(back["nested"]["a"][1]) and back["f32"].dtype == np.float32
    assert list(store.keys()) == ["ab" * 32] and not list(tmp_path.rglob("*.tmp-*"))
    with pytest.raises(StoreError, match="neither an array nor JSON"):
        store.save("cd" * 32, {"obj": object()}, {})
    assert "cd" * 32 not in store


def _corrupt_flip(npz, meta):
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))


def _corrupt_valid_npz_other_values(npz, meta):
    with np.load(npz) as f:
        arrays = {k: f[k] + 1 for k in f.files}
    np.savez(npz, **arrays)  # still a readable npz: only the checksum tells


def _corrupt_truncate_json(npz, meta):
    meta.write_text(meta.read_text()[:20])


def _corrupt_delete_npz(npz, meta):
    npz.unlink()


def _corrupt_wrong_key(npz, meta):
    record = json.loads(meta.read_text())
    record["key"] = "0" * 64
    meta.write_text(json.dumps(record))


def _corrupt_swap_names(npz, meta):
    record = json.loads(meta.read_text())
    names = record["layout"]["arrays"]
    (k0, v0), (k1, v1) = list(names.items())[:2]
    names[k0], names[k1] = v1, v0  # "x" now reads the array stored for "s", and back
    meta.write_text(json.dumps(record))


def _corrupt_drop_name(npz, meta):
    record = json.loads(meta.read_text())
    record["layout"]["arrays"].popitem()
    meta.write_text(json.dumps(record))


def _corrupt_extras(npz, meta):
    record = json.loads(meta.read_text())
    record["layout"]["extras"]["note"] = "edited"
    meta.write_text(json.dumps(record))


def _corrupt_folder_is_a_file(npz, meta):
    import shutil

    shutil.rmtree(npz.parent)
    npz.parent.write_text("not a folder")


def _corrupt_json_is_a_folder(npz, meta):
    meta.unlink()
    meta.mkdir()
    (meta / "x").write_text("")


def _corrupt_npz_is_a_folder(npz, meta):
    npz.unlink()
    npz.mkdir()


NOT_COUNTED = ("_corrupt_delete_npz", "_corrupt_folder_is_a_file")


@pytest.mark.parametrize(
    "corrupt",
    [
        _corrupt_flip,
        _corrupt_valid_npz_other_values,
        _corrupt_truncate_json,
        _corrupt_delete_npz,
        _corrupt_wrong_key,
        _corrupt_swap_names,
        _corrupt_drop_name,
        _corrupt_extras,
        _corrupt_folder_is_a_file,
        _corrupt_json_is_a_folder,
        _corrupt_npz_is_a_folder,
    ],
    ids=lambda f: f.__name__.removeprefix("_corrupt_"),
)
def test_corrupt_record_is_detected_and_recomputed(tmp_path, monkeypatch, corrupt):
    log = tmp_path / "log"
    monkeypatch.setenv("TOY_LOG", str(log))
    cfg_path = tmp_path / "cfg.toml"
    cfg_path.write_text(config_text(seed=2, n_tasks=4, size=64))
    cfg = load_config(cfg_path)
    first = execute(cfg, tmp_path / "out", executor="serial", progress=None)
    assert first.exit_code == 0 and sorted(log.read_text().split()) == ["0", "1", "2", "3"]
    store = ResultStore(tmp_path / "out" / ".tasks")
    code = cfg.code_identity()["sha256"]
    victim = task_key("toy", cfg.tasks[2], cfg.seed, code)
    assert set(store.keys()) == {task_key("toy", t, cfg.seed, code) for t in cfg.tasks}
    corrupt(store.root / victim[:2] / f"{victim}.npz", store.root / victim[:2] / f"{victim}.json")
    log.write_text("")
    second = execute(cfg, tmp_path / "out", executor="serial", progress=None)
    assert log.read_text().split() == ["2"]  # only the corrupt task ran again
    stats = second.summary["diagnostics"]["tasks"]
    assert stats["computed"] == 1 and stats["reused"] == 3
    if corrupt.__name__ not in NOT_COUNTED:
        assert stats["discarded_corrupt"] == 1
    for name, array in first.arrays.items():
        assert second.arrays[name].tobytes() == array.tobytes()
    assert store.load(victim) is not None


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    store = ResultStore(tmp_path)
    store.save("ef" * 32, {"x": 1}, {})
    dead = tmp_path / "ef" / f".{'ef' * 32}.npz.tmp-999999999-abcd"
    mine = tmp_path / "ef" / f".{'ef' * 32}.npz.tmp-{__import__('os').getpid()}-abcd"
    dead.write_bytes(b"partial")
    mine.write_bytes(b"partial")
    assert store.clean_temporaries() == 1
    assert not dead.exists() and mine.exists()


def test_full_disk_stops_cleanly_and_keeps_finished_tasks(tmp_path, monkeypatch, capsys):
    from gaugedyn.cli import main

    path = tmp_path / "cfg.toml"
    path.write_text(config_text(seed=3, n_tasks=5))
    real_save = ResultStore.save
    calls = []

    def save(self, key, result, meta):
        calls.append(key)
        if len(calls) > 2:
            raise OSError(28, "No space left on device")
        real_save(self, key, result, meta)

    monkeypatch.setattr(ResultStore, "save", save)
    argv = ["run", str(path), "--out", str(tmp_path / "out"), "--executor", "serial", "-q"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "rerun to resume" in err
    assert len(list((tmp_path / "out" / ".tasks").glob("*/*.json"))) == 2
    assert not (tmp_path / "out" / "summary.json").exists()
    monkeypatch.setattr(ResultStore, "save", real_save)
    assert main(argv) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["diagnostics"]["tasks"]["reused"] == 2


def test_serial_runs_store_each_task_as_it_finishes(tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("TOY_LOG", str(log))
    cfg_path = tmp_path / "cfg.toml"
    cfg_path.write_text(config_text(seed=4, n_tasks=4))
    started_when_saved = []
    real_save = ResultStore.save

    def save(self, key, result, meta):
        started_when_saved.append(len(log.read_text().split()))
        real_save(self, key, result, meta)

    monkeypatch.setattr(ResultStore, "save", save)
    out = execute(load_config(cfg_path), tmp_path / "out", executor="serial", progress=None)
    assert out.exit_code == 0
    assert started_when_saved == [1, 2, 3, 4]  # task k is stored before task k + 1 starts


def test_a_store_root_replaced_by_a_file_does_not_block_a_rerun(tmp_path):
    store = ResultStore(tmp_path / "tasks")
    (tmp_path / "tasks").write_text("not a folder")
    assert store.load("ab" * 32) is None
    store.save("ab" * 32, {"x": np.arange(3.0)}, {})
    assert np.array_equal(store.load("ab" * 32)["x"], np.arange(3.0))


def test_a_store_another_command_is_creating_is_not_foreign(tmp_path):
    """Two runs started together on one folder: while the first writes the mark (a temporary,
    then a rename), the second sees the temporary; that is a store being made, not a foreign
    folder (the clean-clone CI once refused it here)."""
    from gaugedyn.harness._store import MARK, foreign

    (tmp_path / f".{MARK}.tmp-12345-abcdef01").write_text("{}")
    assert foreign(tmp_path) is None
    (tmp_path / "notes.txt").write_text("mine")
    assert foreign(tmp_path) is not None


def test_a_mark_renamed_into_place_during_the_check_is_a_store(tmp_path, monkeypatch):
    """The other race of two runs started together: the mark is renamed into place after the
    check for it and before the folder is listed; the listing then holds the mark itself, a
    store's (the clean-clone CI refused it as foreign once, session 16)."""
    import pathlib

    from gaugedyn.harness._store import MARK, foreign

    (tmp_path / MARK).write_text("{}")
    real, calls = pathlib.Path.is_file, []

    def late(self):
        calls.append(self)
        if self == tmp_path / MARK and len(calls) == 1:
            return False  # the first look: not yet renamed
        return real(self)

    monkeypatch.setattr(pathlib.Path, "is_file", late)
    assert foreign(tmp_path) is None
    assert calls[0] == tmp_path / MARK  # the race was played: the first look missed the mark
