"""Commands ``run``, ``reproduce``, ``multiverse`` and ``plot``: declared experiments from the
command line.

Every input is validated before a folder is created: a bad value gives one line naming it and
what is allowed, exit status 2, and nothing written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .._errors import InputError, oneline
from .._options import check_writable_folder
from ._executor import KINDS, MAX_WORKERS, ExecutorSpec, open_executor


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; allowed: 1 to {MAX_WORKERS}")
    return value


def _executor_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where tasks run")
    group.add_argument(
        "--executor",
        choices=KINDS,
        default=None,
        help="process (default: a local pool, one worker per core), thread, serial, or dask",
    )
    group.add_argument("--workers", type=_positive_int, metavar="N", help="number of workers")
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running Dask scheduler (implies --executor dask), e.g. tcp://host:8786",
    )
    group.add_argument(
        "--store",
        metavar="DIR",
        help="result store of finished tasks (default: OUT/.tasks); share it to reuse tasks. "
        "A task is reused only when this code stored it (a hash of the source files it can "
        "reach); a non-empty folder that is not a gaugedyn store is refused unless --force",
    )
    group.add_argument(
        "--require-cache",
        action="store_true",
        help="compute nothing: every task must be in the store, stored by this code; else "
        "exit 2 before any work (what a re-analysis of stored results wants)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def register(subparsers) -> None:
    run = subparsers.add_parser(
        "run",
        help="run one declared experiment (simulations/NAME.toml)",
        description="Run one declared experiment; rerunning the same command resumes it.",
    )
    run.add_argument("config", metavar="CONFIG.toml", help="the experiment's configuration")
    run.add_argument(
        "--out", metavar="DIR", help="output folder (default: results/NAME, or results/NAME-quick)"
    )
    run.add_argument("--quick", action="store_true", help="the reduced configuration")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a parameter (VALUE is a TOML literal, e.g. dims=[10,100]) or the seed",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="replace the results of another run found in the output folder, and use a --store "
        "folder that is not a gaugedyn store",
    )
    _executor_options(run)
    run.set_defaults(func=_run)

    rep = subparsers.add_parser(
        "reproduce",
        help="run every declared experiment and write report.md",
        description="Run every simulations/*.toml, write DIR/<name>/ and DIR/report.md; exit "
        "non-zero naming the failing claims.",
    )
    rep.add_argument("--quick", action="store_true", help="the reduced configurations")
    rep.add_argument(
        "--out", metavar="DIR", help="output folder (default: results/reproduce[-quick])"
    )
    rep.add_argument(
        "--simulations", metavar="DIR", default="simulations", help="folder of .toml files"
    )
    rep.add_argument("--only", metavar="NAME,...", help="run only these experiments")
    rep.add_argument(
        "--force",
        action="store_true",
        help="replace the results of other runs found in the output folders, and use a --store "
        "folder that is not a gaugedyn store",
    )
    _executor_options(rep)
    rep.set_defaults(func=_reproduce)

    _register_multiverse(subparsers)

    plot = subparsers.add_parser(
        "plot",
        help="redraw figures from stored arrays",
        description="Redraw every figure of a run or reproduce folder from arrays.npz alone.",
    )
    plot.add_argument("folder", metavar="DIR", help="a run folder or a reproduce folder")
    plot.set_defaults(func=_plot)


def _samples(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; allowed: 0 to 1000")
    return value


def _register_multiverse(subparsers) -> None:
    from ._multiverse import QUICK_SAMPLES, SAMPLES

    mv = subparsers.add_parser(
        "multiverse",
        help="judge an experiment's findings over its declared set-up space",
        description="Rerun the findings of one declared experiment at every specification of "
        "its set-up space (each constant at each end of its range, the others at default, and "
        "a seeded random sample of joint specifications); write the primary run with each "
        "finding's robustness, the specification curves and report.md. Rerunning resumes.",
    )
    mv.add_argument("config", metavar="CONFIG.toml", help="the experiment's configuration")
    mv.add_argument(
        "--out",
        metavar="DIR",
        help="output folder (default: results/NAME-multiverse, or results/NAME-quick-multiverse)",
    )
    mv.add_argument("--quick", action="store_true", help="the reduced configuration")
    mv.add_argument(
        "--samples",
        type=_samples,
        metavar="N",
        help=f"random joint specifications: 0 to 1000 (default: {SAMPLES}, quick {QUICK_SAMPLES})",
    )
    mv.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a parameter of every specification (VALUE a TOML literal) or the seed",
    )
    mv.add_argument(
        "--force", action="store_true", help="replace the results of another run in the folder"
    )
    _executor_options(mv)
    mv.set_defaults(func=_multiverse)


def _multiverse(args) -> int:
    from ._config import load_config
    from ._multiverse import run_multiverse
    from ._report import claim_row, robustness_text, table
    from ._runner import check_same_run

    cfg = load_config(args.config, quick=args.quick, overrides=args.overrides)
    if not cfg.space:
        raise InputError(
            f"{args.config}: experiment {cfg.name} declares no set-up space; allowed: an "
            "experiment with a space, or a [space.NAME] table in the configuration"
        )
    spec = _spec(args)
    stem = Path(args.config).stem + ("-quick" if args.quick else "") + "-multiverse"
    out = _check_out(args.out if args.out is not None else Path("results") / stem, "run")
    check_same_run(out, cfg, args.force)
    _check_store(args.store)
    try:
        outcome = run_multiverse(
            cfg,
            out,
            samples=args.samples,
            executor=spec,
            store=args.store,
            progress=None if args.quiet else sys.stderr,
            backend="Agg",
            command=_arguments(args),
            force=args.force,
            require_cache=args.require_cache,
        )
    except KeyboardInterrupt:
        print("gaugedyn multiverse: interrupted; rerun to resume", file=sys.stderr)
        return 130
    rows = [
        claim_row(cfg.name, c) | {"tolerance": robustness_text(c.get("robustness"))}
        for c in outcome.summary.get("claims", [])
        if c.get("kind") == "finding"
    ]
    if rows:
        print(table(rows))
    specs = outcome.summary.get("multiverse", {}).get("specifications", [])
    print(f"{cfg.name}: {outcome.summary['status']}; {len(specs)} specifications; results in {out}")
    for s in specs:
        if s["status"] in ("controls failed", "tasks failed"):
            print(
                f"gaugedyn multiverse: specification {s['id']}: {s['status']}"
                + (f" ({', '.join(s['failed_controls'])})" if s["failed_controls"] else ""),
                file=sys.stderr,
            )
    return outcome.exit_code


def _check_store(store: str | None, force: bool = False) -> None:
    """The store folder exists and is writable, or can be created (checked by a probe), and is
    a gaugedyn store, an empty folder or a new one (or ``force``)."""
    if store is None:
        return
    if not store.strip() or "\0" in store:
        raise InputError(f"--store {store!r}: give a folder path")
    path = Path(store)
    if path.exists() and not path.is_dir():
        raise InputError(f"--store {store!r}: exists and is not a folder")
    from ._runner import check_store

    check_store(path, force)
    check_writable_folder("--store", store)


def _check_out(raw: str | Path, kind: str) -> Path:
    """``check_output_dir`` and a probe that the folder can really be written (``/proc``, a
    read-only file system, a folder under a regular file are refused before any work)."""
    from ._folders import check_output_dir

    out = check_output_dir(raw, kind)
    check_writable_folder("--out", str(raw))
    return out


def kept_message(cfg, store: str | Path) -> str:
    """The truth about what a stopped run left: how many of its tasks are in the store."""
    from ._store import ResultStore
    from ._sweep import stored_keys

    keys = set(stored_keys(cfg))
    try:
        kept = sum(key in ResultStore(Path(store)) for key in keys)
    except OSError:
        kept = 0
    if kept == 0:
        return f"no finished task was stored in {store}"
    return f"{kept} of {len(keys)} tasks are stored in {store}; rerun to resume"


_ADDRESS = re.compile(
    r"(?:(?P<scheme>tcp|tls|ws|wss|ucx)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|"
    r"[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?)(?::(?P<port>\d{1,5}))?"
)


def check_scheduler(address: str, timeout: float | None = 3.0) -> None:
    """A Dask scheduler address ``[tcp://]host[:port]`` (also tls, ws, wss, ucx; or an in-process
    ``inproc://...``) that answers a TCP connection within ``timeout`` seconds (``None``: check
    the form only); else `InputError` at once, before Dask would wait and time out."""
    import socket

    if re.fullmatch(r"inproc://\S+", address):
        return
    match = _ADDRESS.fullmatch(address)
    port = int(match["port"]) if match and match["port"] else 8786
    if match is None or not 1 <= port <= 65535 or "://" not in address and ":" not in address:
        raise InputError(
            f"--scheduler {address!r} is not allowed (cannot connect to Dask at it); "
            "allowed: a scheduler address such as tcp://host:8786 (schemes tcp, "
            "tls, ws, wss, ucx, inproc)"
        )
    host = match["host"].strip("[]")
    if timeout is None or match["scheme"] == "ucx":
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise InputError(
            f"--scheduler {address!r}: cannot connect to Dask: nothing answers at "
            f"{host}:{port} ({reason}); start the scheduler or check the "
            "address"
        ) from None


def _spec(args) -> ExecutorSpec:
    if args.scheduler is not None:
        check_scheduler(args.scheduler, timeout=None)  # the form, before importing Dask
    spec = ExecutorSpec(args.executor, args.workers, args.scheduler).validate()
    if spec.scheduler is not None:
        check_scheduler(spec.scheduler)
    return spec


def _reproduce_command(args, root: Path) -> str:
    """The ``gaugedyn reproduce`` command line the arguments stand for, output folder included."""
    import shlex

    words = ["gaugedyn", "reproduce"] + (["--quick"] if args.quick else [])
    words += ["--out", str(root)]
    for flag in ("simulations", "only", "store", "executor", "workers", "scheduler"):
        value = getattr(args, flag, None)
        if value is not None and not (flag == "simulations" and value == "simulations"):
            words += [f"--{flag}", str(value)]
    for flag in ("force", "require_cache"):
        if getattr(args, flag, False):
            words.append("--" + flag.replace("_", "-"))
    return shlex.join(words)


def _arguments(args) -> dict:
    return {k: v for k, v in vars(args).items() if k != "func"}


def _execute(args, cfg, out: Path, executor):
    """Run ``cfg`` into ``out`` as the command line does (Agg backend, the arguments recorded)."""
    from ._runner import execute

    return execute(
        cfg,
        out,
        executor=executor,
        store=args.store,
        progress=None if args.quiet else sys.stderr,
        backend="Agg",
        command=_arguments(args),
        force=getattr(args, "force", False),
        require_cache=args.require_cache,
    )


def _run(args) -> int:
    from ._config import load_config
    from ._folders import TASKS
    from ._report import claim_row, table

    cfg = load_config(args.config, quick=args.quick, overrides=args.overrides)
    spec = _spec(args)
    stem = Path(args.config).stem + ("-quick" if args.quick else "")
    out = _check_out(args.out if args.out is not None else Path("results") / stem, "run")
    from ._runner import check_same_run

    check_same_run(out, cfg, args.force)
    _check_store(args.store, args.force)
    if args.require_cache:
        from ._runner import check_cached

        check_cached(cfg, Path(args.store) if args.store is not None else out / TASKS)
    try:
        with open_executor(spec) as executor:
            outcome = _execute(args, cfg, out, executor)
    except OSError as err:  # a full disk, a vanished folder: say what was kept
        store = args.store if args.store is not None else out / TASKS
        print(f"gaugedyn run: error: {oneline(err)}; {kept_message(cfg, store)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        store = args.store if args.store is not None else out / TASKS
        print(f"gaugedyn run: interrupted; {kept_message(cfg, store)}", file=sys.stderr)
        return 130
    rows = [claim_row(cfg.name, c) for c in outcome.summary["claims"]]
    if rows:
        print(table(rows))
    print(f"{cfg.name}: {outcome.summary['status']}; results in {out}")
    if outcome.failed_tasks:
        print(
            f"gaugedyn run: {len(outcome.failed_tasks)} task(s) failed, e.g. "
            f"{outcome.failed_tasks[0]['type']}: {outcome.failed_tasks[0]['message']}",
            file=sys.stderr,
        )
    if outcome.failed_controls:
        from ._controls import failure_text

        print(
            "gaugedyn run: failed known-answer controls (no task was run): "
            + failure_text(outcome.failed_controls),
            file=sys.stderr,
        )
    if outcome.failed_claims:
        print(f"gaugedyn run: failing claims: {', '.join(outcome.failed_claims)}", file=sys.stderr)
    return outcome.exit_code


def _reproduce(args) -> int:
    import traceback

    from ._config import load_config
    from ._folders import claim_output_dir
    from ._report import failing, summary_text, write_index, write_report

    folder = Path(args.simulations)
    if not folder.is_dir():
        raise InputError(f"--simulations {args.simulations!r}: no such folder")
    files = sorted(folder.glob("*.toml"))
    names = [f.stem for f in files]
    if args.only is not None:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if not wanted or unknown:
            raise InputError(
                f"--only {args.only!r}: unknown experiment {', '.join(unknown) or '(none given)'}; "
                f"allowed: {', '.join(names) or '(no .toml files)'}"
            )
        files = [f for f in files if f.stem in wanted]
    if not files:
        raise InputError(f"--simulations {args.simulations!r}: no .toml files")
    configs = [load_config(f, quick=args.quick) for f in files]
    spec = _spec(args)
    default = "results/reproduce" + ("-quick" if args.quick else "")
    root = _check_out(args.out if args.out is not None else default, "reproduce")
    from ._runner import check_same_run

    for f, cfg in zip(files, configs):
        if root.exists():
            check_same_run(_check_out(root / f.stem, "run"), cfg, args.force)
    _check_store(args.store, args.force)
    if args.require_cache:
        from ._folders import TASKS
        from ._runner import check_cached

        for f, cfg in zip(files, configs):
            store = Path(args.store) if args.store is not None else root / f.stem / TASKS
            check_cached(cfg, store)
    errors: dict[str, str] = {}
    with open_executor(spec) as executor, claim_output_dir(root, "reproduce"):
        command = _reproduce_command(args, root)
        index = {
            "runs": [f.stem for f in files],
            "errors": errors,
            "quick": args.quick,
            "command": command,
            "arguments": _arguments(args),
        }
        for f, cfg in zip(files, configs):
            try:
                _execute(args, cfg, root / f.stem, executor)
            except InputError as err:
                errors[f.stem] = str(err)
            except OSError as err:
                errors[f.stem] = f"{type(err).__name__}: {oneline(err)}"
                print(f"gaugedyn reproduce: {f.stem}: {errors[f.stem]}", file=sys.stderr)
            except Exception as err:
                traceback.print_exc()
                errors[f.stem] = f"{type(err).__name__}: {oneline(err)}"
        write_index(root, index)
        report, rows = write_report(root)
    print(summary_text(root))
    print(f"report: {report}")
    failed = failing(rows)
    if failed:
        print(f"gaugedyn reproduce: failing: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _plot(args) -> int:
    from ._drawing import redraw
    from ._folders import run_folders

    try:
        runs = redraw(args.folder, backend="Agg")
    except OSError as err:  # a full disk while drawing: the staged figures are dropped
        print(f"gaugedyn plot: error: {oneline(err)}; no figure was replaced", file=sys.stderr)
        return 1
    for run in run_folders(args.folder):
        print(
            f"redrew {run / 'figures'}"
            if run in runs
            else f"skipped {run} (its tasks failed: it stored no arrays)"
        )
    return 0
