"""Where a monitor's scalars go: memory, CSV, Parquet, TensorBoard, Weights & Biases, the store.

A sink is any object with ``log(step, scalars)`` (a step number and a ``{key: float}`` mapping,
keys from `gaugedyn.monitor.KEYS`) and ``close()``. None of the optional packages is a
dependency of gaugedyn: each sink imports its package when it is built and says which extra
installs it (``pip install gaugedyn[monitor]``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .._errors import InputError


class Sink(Protocol):
    """What a monitor writes to."""

    def log(self, step: int, scalars: Mapping[str, float]) -> None: ...

    def close(self) -> None: ...


def _need(module: str, sink: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise InputError(
            f"{sink} needs the {package!r} package, which is not installed; "
            f"install it with pip install {package} (or gaugedyn[monitor])"
        ) from err


class MemorySink:
    """Keeps every scalar: ``rows`` is a list of ``(step, key, value)``; `series()` gives
    one key's ``(steps, values)``."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, float]] = []

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.rows.extend((int(step), k, float(v)) for k, v in scalars.items())

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        pairs = [(s, v) for s, k, v in self.rows if k == key]
        steps = np.array([s for s, _ in pairs], dtype=np.int64)
        return steps, np.array([v for _, v in pairs], dtype=float)

    def keys(self) -> list[str]:
        return sorted({k for _, k, _ in self.rows})

    def close(self) -> None:
        pass


class CSVSink:
    """Long-format CSV ``step,key,value`` (one row per scalar, so keys may come and go),
    flushed every ``flush_every`` rows and at `close()`. An existing file is refused unless
    ``append=True``: a monitor never overwrites what it did not write."""

    def __init__(self, path: str | os.PathLike, *, append: bool = False, flush_every: int = 256):
        self.path = Path(path)
        if self.path.exists() and not append:
            raise InputError(
                f"path={str(self.path)!r} exists; choose a new file or pass append=True"
            )
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._file = open(self.path, "a", newline="")  # noqa: SIM115 (closed by close())
        self._writer = csv.writer(self._file)
        if new:
            self._writer.writerow(["step", "key", "value"])
        self.flush_every = int(flush_every)
        self._pending = 0

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        for k, v in scalars.items():
            self._writer.writerow([int(step), k, repr(float(v))])
        self._pending += len(scalars)
        if self._pending >= self.flush_every:
            self._file.flush()
            self._pending = 0

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class ParquetSink:
    """Long-format Parquet (``step: int64, key: string, value: float64``) through ``pyarrow``,
    one row group every ``rows_per_group`` scalars and the rest at `close()`. An existing
    file is refused."""

    def __init__(self, path: str | os.PathLike, *, rows_per_group: int = 65536):
        self._pa = _need("pyarrow", "ParquetSink", "pyarrow")
        self._pq = _need("pyarrow.parquet", "ParquetSink", "pyarrow")
        self.path = Path(path)
        if self.path.exists():
            raise InputError(f"path={str(self.path)!r} exists; choose a new file")
        self.schema = self._pa.schema(
            [("step", self._pa.int64()), ("key", self._pa.string()), ("value", self._pa.float64())]
        )
        self._writer = self._pq.ParquetWriter(str(self.path), self.schema)
        self.rows_per_group = int(rows_per_group)
        self._rows: list[tuple[int, str, float]] = []

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self._rows.extend((int(step), k, float(v)) for k, v in scalars.items())
        if len(self._rows) >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            cols = list(zip(*self._rows))
            self._writer.write_table(
                self._pa.table(
                    {"step": list(cols[0]), "key": list(cols[1]), "value": list(cols[2])},
                    schema=self.schema,
                )
            )
            self._rows = []

    def close(self) -> None:
        if self._writer is not None:
            self._flush()
            self._writer.close()
            self._writer = None


class TensorBoardSink:
    """``SummaryWriter.add_scalar(key, value, step)`` for every scalar
    (``torch.utils.tensorboard``, which needs the ``tensorboard`` package). Pass ``log_dir`` (a
    writer is made, and closed by `close()`) or an open ``writer`` (left open)."""

    def __init__(self, log_dir: str | os.PathLike | None = None, *, writer: Any = None):
        if (log_dir is None) == (writer is None):
            raise InputError("TensorBoardSink: pass exactly one of log_dir and writer")
        if writer is None:
            _need("tensorboard", "TensorBoardSink", "tensorboard")
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(log_dir=str(log_dir))
            self._own = True
        else:
            self._own = False
        self.writer = writer

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        for k, v in scalars.items():
            self.writer.add_scalar(k, float(v), int(step))

    def close(self) -> None:
        self.writer.flush()
        if self._own:
            self.writer.close()


class WandbSink:
    """``run.log(scalars, step=step)`` on a Weights & Biases run: an open ``run`` (left open)
    or one started by ``wandb.init(**init)`` here and finished by `close()`. Offline runs
    (``mode="offline"`` or ``WANDB_MODE=offline``) write their run folder locally with no
    account or network. Steps must not decrease (wandb's rule). Closing a run started here
    also stops wandb's service when no other run is open, so the run's file is complete when
    `close()` returns (the service writes it after ``finish``)."""

    def __init__(self, run: Any = None, **init: Any):
        if run is not None and init:
            raise InputError(
                "WandbSink: pass an open run or wandb.init keyword arguments, not both"
            )
        if run is None:
            wandb = _need("wandb", "WandbSink", "wandb")
            run = wandb.init(**init)
            self._own = True
        else:
            self._own = False
        self.run = run

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.run.log({k: float(v) for k, v in scalars.items()}, step=int(step))

    def close(self) -> None:
        if self._own:
            self.run.finish()
            import wandb

            if wandb.run is None:  # wandb's service writes the run file after finish returns
                wandb.teardown()


class StoreSink:
    """The package's own result format: at `close()`, every scalar as arrays (``step``,
    ``key`` index, ``value``; ``keys`` the names) plus the monitor's recorders' ``export()``
    arrays and metadata, saved as one record of ``store`` (a
    `gaugedyn.harness.ResultStore`, or anything with ``save(key, result, meta)``) under
    ``key``; the record is also kept as `record`."""

    def __init__(self, store: Any, key: str):
        if not callable(getattr(store, "save", None)):
            raise InputError(
                f"store={type(store).__name__} is not allowed; use a "
                "gaugedyn.harness.ResultStore (an object with save(key, result, "
                "meta))"
            )
        self.store, self.key = store, str(key)
        self._mem = MemorySink()
        self.monitor: Any = None
        self.record: dict | None = None

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self._mem.log(step, scalars)

    def close(self) -> None:
        if self.record is not None:
            return
        names = self._mem.keys()
        index = {k: i for i, k in enumerate(names)}
        rows = self._mem.rows
        result: dict[str, Any] = {
            "scalar_step": np.array([r[0] for r in rows], dtype=np.int64),
            "scalar_key": np.array([index[r[1]] for r in rows], dtype=np.int64),
            "scalar_value": np.array([r[2] for r in rows], dtype=float),
            "scalar_keys": names,
        }
        meta: dict[str, Any] = {}
        if self.monitor is not None:
            arrays, meta = self.monitor.export()
            result |= arrays
        self.record = result
        self.store.save(self.key, result, meta)
