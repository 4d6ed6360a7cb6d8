"""Commands ``run``, ``reproduce`` and ``plot``: declared experiments from the command line.

Every input is validated before a folder is created: a bad value gives one line naming it and
what is allowed, exit status 2, and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._errors import InputError, oneline
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
        help="result store of finished tasks (default: OUT/.tasks); share it to reuse tasks",
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
    _executor_options(rep)
    rep.set_defaults(func=_reproduce)

    plot = subparsers.add_parser(
        "plot",
        help="redraw figures from stored arrays",
        description="Redraw every figure of a run or reproduce folder from arrays.npz alone.",
    )
    plot.add_argument("folder", metavar="DIR", help="a run folder or a reproduce folder")
    plot.set_defaults(func=_plot)


def _check_store(store: str | None) -> None:
    if store is None:
        return
    path = Path(store)
    if not store.strip() or "\0" in store:
        raise InputError(f"--store {store!r}: give a folder path")
    if path.exists() and not path.is_dir():
        raise InputError(f"--store {store!r}: exists and is not a folder")


def _spec(args) -> ExecutorSpec:
    return ExecutorSpec(args.executor, args.workers, args.scheduler).validate()


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
    )


def _run(args) -> int:
    from ._config import load_config
    from ._report import claim_row, table
    from ._runner import check_output_dir

    cfg = load_config(args.config, quick=args.quick, overrides=args.overrides)
    spec = _spec(args)
    stem = Path(args.config).stem + ("-quick" if args.quick else "")
    out = check_output_dir(args.out if args.out is not None else Path("results") / stem, "run")
    _check_store(args.store)
    try:
        with open_executor(spec) as executor:
            outcome = _execute(args, cfg, out, executor)
    except OSError as err:  # a full disk, a vanished folder: finished tasks stay stored
        print(f"gaugedyn run: error: {oneline(err)}; finished tasks are kept, rerun to resume",
              file=sys.stderr)
        return 1
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
    if outcome.failed_claims:
        print(f"gaugedyn run: failing claims: {', '.join(outcome.failed_claims)}", file=sys.stderr)
    return outcome.exit_code


def _reproduce(args) -> int:
    import traceback

    from ._config import load_config
    from ._report import failing, table, write_index, write_report
    from ._runner import check_output_dir, claim_output_dir

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
    root = check_output_dir(args.out if args.out is not None else default, "reproduce")
    for f in files:
        if root.exists():
            check_output_dir(root / f.stem, "run")
    _check_store(args.store)
    errors: dict[str, str] = {}
    with open_executor(spec) as executor, claim_output_dir(root, "reproduce"):
        command = "gaugedyn reproduce" + (" --quick" if args.quick else "")
        index = {"runs": [f.stem for f in files], "errors": errors, "quick": args.quick,
                 "command": command, "arguments": _arguments(args)}
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
    print(table(rows))
    print(f"report: {report}")
    failed = failing(rows)
    if failed:
        print(f"gaugedyn reproduce: failing: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _plot(args) -> int:
    from ._runner import redraw, run_folders

    runs = redraw(args.folder, backend="Agg")
    for run in run_folders(args.folder):
        print(f"redrew {run / 'figures'}" if run in runs else f"skipped {run} (no stored arrays)")
    return 0
