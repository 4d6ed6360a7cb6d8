"""The same sweep on a Dask LocalCluster (through --scheduler) and on the local process pool."""

from __future__ import annotations

import numpy as np
import pytest
from toy_experiments import config_text

from gaugedyn.cli import main
from gaugedyn.experiments import ExecutorSpec, execute, load_arrays, load_config

distributed = pytest.importorskip("distributed")


def test_dask_local_cluster_matches_process_pool(tmp_path, capsys):
    path = tmp_path / "toy.toml"
    path.write_text(config_text(seed=5, n_tasks=8, size=100, fail_on=[], scale=3.0))
    pool = execute(
        load_config(path), tmp_path / "pool", executor=ExecutorSpec("process", 2), progress=None
    )
    assert pool.exit_code == 0
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0"
    ) as cluster:
        code = main(
            [
                "run",
                str(path),
                "--out",
                str(tmp_path / "dask"),
                "--scheduler",
                cluster.scheduler_address,
                "-q",
            ]
        )
        _, err = capsys.readouterr()
        assert code == 0, err
    arrays = load_arrays(tmp_path / "dask")
    assert sorted(arrays) == sorted(pool.arrays)
    for name, array in pool.arrays.items():
        assert arrays[name].dtype == array.dtype and arrays[name].tobytes() == array.tobytes()
    assert not np.array_equal(arrays["x"][0], arrays["x"][1])  # tasks got distinct streams


def test_unreachable_scheduler_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "toy.toml"
    path.write_text(config_text(n_tasks=1))
    code = main(
        [
            "run",
            str(path),
            "--out",
            str(tmp_path / "out"),
            "--executor",
            "dask",
            "--scheduler",
            "not-a-scheme://nowhere",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and "cannot connect to Dask" in err
    assert not (tmp_path / "out").exists()
