"""Progress of a long command on standard error: a tqdm bar with the rate and the time left.

By default the bar shows only when standard error is a terminal (so logs and pipes stay clean);
``force`` shows it anyway, ``quiet`` never. The bar is driven by a callback
``callback(done, total)`` that the computation calls once per chunk of work.
"""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    """A tqdm bar on ``stream`` (default stderr), or nothing when disabled."""

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str = "step",
        *,
        force: bool = False,
        quiet: bool = False,
        stream: TextIO | None = None,
    ):
        stream = sys.stderr if stream is None else stream
        isatty = getattr(stream, "isatty", lambda: False)
        self.enabled = not quiet and (force or bool(isatty()))
        self._bar = None
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=int(total),
                desc=desc,
                unit=unit,
                file=stream,
                mininterval=0.5 if isatty() else 5.0,
                dynamic_ncols=True,
                unit_scale=True,
                leave=True,
            )

    def callback(self, done: int, total: int | None = None) -> None:
        """Record that ``done`` units of ``total`` are finished."""
        bar = self._bar
        if bar is None:
            return
        if total is not None and total != bar.total:
            bar.total = int(total)
        if done > bar.n:
            bar.update(int(done) - bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress_bar(
    total: int,
    desc: str,
    unit: str = "step",
    *,
    force: bool = False,
    quiet: bool = False,
    stream: TextIO | None = None,
) -> ProgressBar:
    """A `ProgressBar` (see the module docstring)."""
    return ProgressBar(total, desc, unit, force=force, quiet=quiet, stream=stream)
