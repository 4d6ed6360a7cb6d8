"""Where tasks run: a ``concurrent.futures.Executor`` chosen by name.

- ``process`` (default): a local process pool, one worker per available core, each worker
  limited to one BLAS / OpenMP / torch thread so tasks do not oversubscribe the cores; it
  survives a worker's hard death (`ProcessPool`);
- ``thread``: a thread pool in this process (useful when tasks release the GIL);
- ``serial``: tasks run one after another in this process (debugging, profiling);
- ``dask``: the executor interface of a ``dask.distributed.Client`` connected to ``--scheduler
  ADDRESS``, or to a local cluster started for the run when no address is given (optional extra
  ``gaugedyn[dask]``).

Task seeds never depend on the executor: the same sweep gives the same results on all of them.
Workers import the experiment by name, so it must be importable there (an installed gaugedyn, or
``package.module:ATTR`` on the workers' path); Dask's nannies already start workers with one BLAS /
OpenMP thread. Results travel back to this process, which alone writes the result store, so
remote workers need no shared file system.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .._errors import InputError, oneline

KINDS = ("process", "thread", "serial", "dask")
MAX_WORKERS = 4096
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ExecutorSpec:
    """The executor to open: its kind, number of workers and (Dask) scheduler address."""

    kind: str | None = None
    workers: int | None = None
    scheduler: str | None = None

    def validate(self) -> ExecutorSpec:
        """Check the choice before anything runs or is written; return it resolved."""
        kind = self.kind or ("dask" if self.scheduler is not None else "process")
        if kind not in KINDS:
            raise InputError(f"--executor {kind!r} is not allowed; allowed: {', '.join(KINDS)}")
        workers = self.workers
        if workers is not None and (type(workers) is not int or not 1 <= workers <= MAX_WORKERS):
            raise InputError(
                f"--workers {workers!r} is not allowed; allowed: an integer in [1, {MAX_WORKERS}]"
            )
        if workers is not None and kind == "serial":
            raise InputError(
                f"--workers {workers} is not allowed with --executor serial (one task at a time "
                "in this process); allowed: --executor process or dask for several workers"
            )
        scheduler = self.scheduler
        if scheduler is not None:
            if kind != "dask":
                raise InputError(
                    f"--scheduler {scheduler!r} needs --executor dask (got --executor {kind})"
                )
            if not scheduler or any(c.isspace() for c in scheduler):
                raise InputError(
                    f"--scheduler {scheduler!r} is not allowed; allowed: a Dask scheduler "
                    "address such as tcp://host:8786"
                )
        if kind == "dask":
            try:
                import distributed  # noqa: F401
            except ImportError:
                raise InputError(
                    "--executor dask needs the optional extra: pip install 'gaugedyn[dask]'"
                ) from None
        return ExecutorSpec(kind, workers, scheduler)


class SerialExecutor(Executor):
    """Runs each task at submission, in this process (so the sweep stores each task as soon as
    it is submitted: an interrupted serial run keeps every task it finished)."""

    runs_at_submission = True

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            future.set_exception(err)
        return future


def init_worker(
    parent: int | None = None, path: list[str] | None = None, environ: dict | None = None
) -> None:
    """Process-pool initializer: the parent's current ``sys.path`` and environment, one BLAS /
    OpenMP / torch thread, SIGINT ignored, and exit with the parent.

    Ctrl-C on a terminal signals the whole process group: the parent alone answers it (it
    cancels the pool, ends the workers and says how many tasks are stored); a worker that took
    it too would print its own ``KeyboardInterrupt`` traceback.

    Workers start from a fork server that may predate changes the parent made since; and a
    worker whose parent is killed (SIGKILL leaves no chance to shut the pool down) would
    otherwise wait for work forever, so a daemon thread watches the parent and ends the worker.
    """
    if environ is not None:
        os.environ.update(environ)
    if path is not None:
        sys.path[:] = list(dict.fromkeys([*path, *sys.path]))
    limit_threads()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


MANAGER_JOIN_S = 10.0
"""How long an interrupted pool's shutdown waits for the pool's manager thread after ending
the workers. Python 3.11's exit hook wakes every manager thread through a pipe the thread may be
closing at that moment (no lock; fixed in 3.12), which printed ``OSError: [Errno 9] Bad file
descriptor`` after an interrupted run's one line; a manager thread already ended is skipped."""


def _workers(pool: ProcessPoolExecutor) -> list:
    """``pool``'s worker processes now (``shutdown`` forgets them: read them before it)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _end_workers(pool: ProcessPoolExecutor, workers: list | None = None) -> None:
    """Terminate ``pool``'s worker processes: ``workers`` as read before its ``shutdown`` (which
    sets the pool's own record of them to ``None``), else those it still records
    (``terminate_workers`` from Python 3.14 on)."""
    end = getattr(pool, "terminate_workers", None)
    if end is not None:
        with contextlib.suppress(Exception):
            end()
    for process in workers if workers is not None else _workers(pool):
        with contextlib.suppress(Exception):
            process.terminate()


def _exit_with(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])  # readable once the process has ended
    else:
        while True:
            time.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            except OSError:
                pass
    os._exit(1)


def limit_threads() -> None:
    """One BLAS / OpenMP / torch thread in this process."""
    for name in _THREAD_VARIABLES:
        os.environ[name] = "1"
    with contextlib.suppress(Exception):
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.set_num_threads(1)


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class ProcessPool(Executor):
    """A local process pool that survives a worker's hard death.

    A worker that dies (segfault, out-of-memory kill) breaks a ``ProcessPoolExecutor``: every
    unfinished task fails with ``BrokenProcessPool``, not only the one that killed it. The sweep
    then calls `restart()` and resubmits those tasks, and when a round makes no progress it
    runs the remaining suspects `isolated()`, each in a pool of its own, so only a task that
    kills its worker every time is recorded as failed.
    """

    def __init__(self, workers: int):
        self._max_workers = workers
        self._pool = self._new(workers)

    @staticmethod
    def _new(workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_mp_context(),
            initializer=init_worker,
            initargs=(os.getpid(), list(sys.path), dict(os.environ)),
        )

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As ``ProcessPoolExecutor.shutdown``; ``wait=False`` with ``cancel_futures`` (an
        interrupted sweep) also ends the workers, whose running tasks nobody will store, so the
        interpreter does not wait for them at exit."""
        workers = _workers(self._pool)
        manager = getattr(self._pool, "_executor_manager_thread", None)
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
        if cancel_futures and not wait:
            _end_workers(self._pool, workers)
            if manager is not None:  # it sees the ended workers and closes its wakeup pipe
                manager.join(timeout=MANAGER_JOIN_S)

    def restart(self) -> None:
        """Replace a broken pool by a fresh one with the same workers."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new(self._max_workers)

    @contextlib.contextmanager
    def isolated(self) -> Iterator[Executor]:
        """An executor that runs each task in a one-worker pool of its own, as many at a time
        as this pool has workers: a worker's death fails only its own task."""

        def alone(fn: Callable, args: tuple, kwargs: dict) -> Any:
            with self._new(1) as pool:
                return pool.submit(fn, *args, **kwargs).result()

        class Isolated(Executor):
            def __init__(self, threads: ThreadPoolExecutor):
                self.threads = threads

            def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
                return self.threads.submit(alone, fn, args, kwargs)

        threads = ThreadPoolExecutor(max_workers=self._max_workers)
        try:
            yield Isolated(threads)
        except BaseException:  # interrupted: start no further suspect
            threads.shutdown(wait=False, cancel_futures=True)
            raise
        threads.shutdown(wait=True)


@contextlib.contextmanager
def open_executor(spec: ExecutorSpec | str | None = None) -> Iterator[Executor]:
    """Open the executor ``spec`` names; on exit wait for it, or cancel on interruption.

    A context manager: inside the ``with`` block the executor runs tasks; leaving it normally
    waits for every submitted task, leaving it on an error or interruption cancels the pending
    ones and shuts down without waiting; a Dask cluster it started is closed either way.

    Parameters
    ----------
    spec : ExecutorSpec or str, optional
        An `ExecutorSpec` (kind, workers, Dask scheduler address) or a kind alone:
        ``"process"`` (a local process pool), ``"thread"``, ``"serial"`` (each task at
        submission, in this process) or ``"dask"`` (a local cluster, or the ``scheduler``
        given); ``None``: a process pool. Workers default to the available cores.

    Returns
    -------
    contextlib.AbstractContextManager
        The context; it yields the open `concurrent.futures.Executor`.

    Raises
    ------
    InputError
        When the kind is not one of those above, ``workers`` is not an integer in
        $[1, 4096]$ or is given with ``"serial"``, a scheduler is given without ``"dask"`` or is
        malformed, or ``"dask"`` is asked for without the optional ``distributed`` package.
    """
    if spec is None:
        spec = ExecutorSpec()
    elif isinstance(spec, str):
        spec = ExecutorSpec(spec)
    spec = spec.validate()
    workers = spec.workers or default_workers()
    closers = []
    if spec.kind == "process":
        executor: Executor = ProcessPool(workers)
    elif spec.kind == "thread":
        executor = ThreadPoolExecutor(max_workers=workers)
    elif spec.kind == "serial":
        executor = SerialExecutor()
    else:
        executor, closers = _dask_executor(spec.scheduler, workers)
    try:
        yield executor
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        executor.shutdown(wait=True)
    finally:
        for close in closers:
            with contextlib.suppress(Exception):
                close()


def _dask_executor(scheduler: str | None, workers: int):
    from distributed import Client, LocalCluster

    closers = []
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        )
        closers.append(cluster.close)
        address = cluster.scheduler_address
    else:
        address = scheduler
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except Exception as err:
        for close in closers:
            close()
        raise InputError(
            f"--scheduler {address!r}: cannot connect to Dask ({oneline(err)})"
        ) from None
    closers.insert(0, client.close)
    return client.get_executor(pure=False), closers
