"""``gaugedyn audit-rules``: simulate the verdict rules and print their error rates, coverage and
power (the audit of `gaugedyn.stats._audit`).

Without size options it audits what the experiments use (`._audit_plan.plan()`: every rule
at the seed, trial and cell counts of the published findings and the configurations, on every
named noise shape, and every published finding's own values resampled); ``--write FILE`` keeps
that as data (``results-data/audit-rules/audit.json``, from which ``docs/verdict-rules.md`` is
generated). With ``--seeds``, ``--cells``, ``--trials``, ``--shapes``, ``--rules``, ``--quick``
or ``--candidates`` it is an ad-hoc audit at those sizes. Exit status 0 when every barred row
meets its bars, 1 when one misses, 2 on bad input (one line, before any simulation)."""

from __future__ import annotations

import shlex
import sys
from typing import Any

_RULES_HELP = (
    "rule names (default: every rule; with --candidates, candidate names such as "
    "'proportion[Wilson]', default every candidate)"
)


def register(subparsers) -> None:
    from ..stats import AUDIT_QUICK as QUICK
    from ..stats import AUDIT_SHAPES as SHAPES
    from ..stats import EFFECT, MARGIN

    quick: dict[str, Any] = QUICK  # the quick form's counts (tuples of int) and reps (int)

    p = subparsers.add_parser(
        "audit-rules",
        help="simulate every verdict rule: false-HELD, false-NOT-HELD, coverage, power",
        description="For every verdict rule of gaugedyn.stats.RULES, at the seed, trial and cell "
        "counts the experiments use (read from results-data/ and simulations/) and for every "
        "noise shape, and on resamples of every published finding's own values, simulate claims "
        "true by a margin, on the threshold and false by a margin, and print the false-HELD and "
        "false-NOT-HELD rates, the rates at the threshold, the 95%% interval's coverage and the "
        "power, each with its Monte Carlo standard error; --write keeps it as data. Size options "
        "make an ad-hoc audit instead. Exit status 1 when a rule misses a bar where it is used "
        "(at the threshold <= 2.5%% + 2 s.e., margins <= 5%% + 2 s.e., coverage 93-97%%), 2 on "
        "bad input.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"the test-suite form: {quick['reps']} experiments per scenario, "
        f"cells {list(quick['cells'])} (every_cell_proportion: "
        f"{list(quick['proportion_cells'])}), shapes normal and t3",
    )
    _count_options(p, quick)
    p.add_argument(
        "--shapes",
        nargs="+",
        default=None,
        help=f"noise shapes among {', '.join(SHAPES)} (default all; quick: normal t3)",
    )
    p.add_argument("--rules", nargs="+", default=None, help=_RULES_HELP)
    p.add_argument("--seed", type=int, default=0, help="root of the SeedSequence (default 0)")
    p.add_argument(
        "--margin",
        type=float,
        default=MARGIN,
        help=f"distance of the true and false claims from the threshold, in sd "
        f"(default {MARGIN:g})",
    )
    p.add_argument(
        "--effect",
        type=float,
        default=EFFECT,
        help=f"effect size at which the power is simulated, in sd (default {EFFECT:g})",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print a markdown table headed by the command and the date",
    )
    p.add_argument(
        "--candidates",
        action="store_true",
        help="audit the rejected candidates instead (percentile and BCa bootstrap "
        "of the mean, exact order statistics of the median, Wilson and Clopper-Pearson "
        "intervals of a proportion)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--write",
        metavar="FILE",
        help="the full audit only: also write its rows as data (results-data/audit-rules/"
        "audit.json, from which docs/verdict-rules.md is generated)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="the full audit only: processes that simulate its rows (each row has its own "
        "seed, so the data do not depend on N); default 1",
    )
    p.set_defaults(func=_handle)


def _count_options(p, quick: dict[str, Any]) -> None:
    """``--seeds``, ``--trials``, ``--cells`` and ``--reps``: the sizes the audit simulates."""
    from ..stats import AUDIT_CELLS as CELLS
    from ..stats import AUDIT_REPS as REPS
    from ..stats import AUDIT_SEEDS as SEEDS
    from ..stats import AUDIT_TRIALS as TRIALS

    p.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help=f"seed counts (default {' '.join(map(str, SEEDS))}; each >= 3)",
    )
    p.add_argument(
        "--trials",
        type=int,
        nargs="+",
        default=None,
        help=f"trial counts of the proportion rules (default "
        f"{' '.join(map(str, TRIALS))}; each >= 2)",
    )
    p.add_argument(
        "--cells",
        type=int,
        nargs="+",
        default=None,
        help=f"cell counts of the cell rules (default {' '.join(map(str, CELLS))})",
    )
    p.add_argument(
        "--reps",
        type=int,
        default=None,
        help=f"simulated experiments per scenario (default {REPS}; quick {quick['reps']})",
    )


def _adhoc(args) -> bool:
    sizes = (args.seeds, args.trials, args.cells, args.shapes, args.rules)
    return bool(args.quick or args.candidates or any(sizes))


def _handle(args) -> int:
    if not _adhoc(args):
        return _full(args)
    if args.write:
        from .._errors import InputError

        raise InputError(
            "--write is not allowed with --seeds, --trials, --cells, --shapes, --rules, "
            "--quick or --candidates: only the full audit is kept as data"
        )
    from .. import stats

    quick: dict[str, Any] = stats.AUDIT_QUICK if args.quick else {}
    rows = stats.audit(
        args.rules,
        seeds=args.seeds or quick.get("seeds", stats.AUDIT_SEEDS),
        trials=args.trials or quick.get("trials", stats.AUDIT_TRIALS),
        cells=args.cells or quick.get("cells", stats.AUDIT_CELLS),
        proportion_cells=args.cells or quick.get("proportion_cells"),
        shapes=args.shapes or (("normal", "t3") if args.quick else stats.AUDIT_SHAPES),
        reps=args.reps if args.reps is not None else quick.get("reps", stats.AUDIT_REPS),
        seed=args.seed,
        margin=args.margin,
        effect=args.effect,
        progress=not args.no_progress,
        candidates=args.candidates,
    )
    command = _command(args)
    sys.stdout.write(
        stats.format_table(
            rows, markdown=args.markdown, margin=args.margin, effect=args.effect, command=command
        )
    )
    passed = ("ok", "not barred", "not simulated")
    return 0 if all(r["bar"].startswith(passed) for r in rows) else 1


def _full(args) -> int:
    """The audit of what the experiments use (`._audit_plan`), printed, and written as
    data with ``--write``."""
    import json
    from pathlib import Path

    from .. import stats
    from . import _audit_plan as ap

    reps = args.reps if args.reps is not None else stats.AUDIT_REPS
    if not 1 <= args.workers <= 64:
        from .._errors import InputError

        raise InputError(f"--workers {args.workers} is not allowed: a whole number from 1 to 64")
    p = ap.plan(Path("."))
    data = ap.run_plan(
        p, seed=args.seed, reps=reps, progress=not args.no_progress, workers=args.workers
    )
    from ..publish import code_version

    data["command"] = _command(args)
    data["commit"] = code_version(Path(".")).get("commit", "unknown")
    rows = [ap.as_rates(r) for g in ("named", "resampled") for r in data[g]]
    sys.stdout.write(stats.format_table(rows, markdown=args.markdown, command=data["command"]))
    if args.write:
        path = Path(args.write)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    passed = ("ok", "not barred", "not simulated")
    return 0 if all(r["bar"].startswith(passed) for r in rows) else 1


def _command(args) -> str:
    """The command line that reproduces this audit (the options given, in a fixed order)."""
    from ..stats import EFFECT, MARGIN

    words = ["gaugedyn", "audit-rules"] + (["--quick"] if args.quick else [])
    for flag, value in (
        ("--seeds", args.seeds),
        ("--trials", args.trials),
        ("--cells", args.cells),
        ("--shapes", args.shapes),
        ("--rules", args.rules),
    ):
        if value:
            words += [flag, *map(str, value)]
    for flag, value, default in (
        ("--reps", args.reps, None),
        ("--seed", args.seed, 0),
        ("--margin", args.margin, MARGIN),
        ("--effect", args.effect, EFFECT),
    ):
        if value is not None and value != default:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    words += [
        flag
        for flag, on in (("--candidates", args.candidates), ("--markdown", args.markdown))
        if on
    ]
    if getattr(args, "write", None):
        words += ["--write", args.write]
    return " ".join(shlex.quote(w) for w in words)
