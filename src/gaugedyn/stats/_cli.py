"""``gaugedyn audit-rules``: simulate every verdict rule and print its error rates, coverage and
power (the audit of :mod:`gaugedyn.stats._audit`). Exit status 0 when every rule meets the bars
on the barred shapes, 1 when one misses, 2 on bad input (one line, before any simulation)."""

from __future__ import annotations

import shlex
import sys
from typing import Any


def register(subparsers) -> None:
    from ._audit import EFFECT, MARGIN, QUICK, SHAPES

    quick: dict[str, Any] = QUICK  # the quick form's counts (tuples of int) and reps (int)

    p = subparsers.add_parser(
        "audit-rules",
        help="simulate every verdict rule: false-HELD, false-NOT-HELD, coverage, power",
        description="For every verdict rule of gaugedyn.stats.RULES, at the seed and cell counts "
        "the experiments use and for several noise shapes, simulate claims true by a margin, on "
        "the threshold and false by a margin, and print the false-HELD and false-NOT-HELD rates, "
        "the 95% interval's coverage and the power, each with its Monte Carlo standard error. "
        "Proportion rules run at the trial counts of --trials, with their coverage also at "
        "several true success probabilities. Exit status 1 when a rule misses the bars (<= 5% "
        "+ 2 s.e. errors, 93-97% coverage, on normal, t3 and Bernoulli outcomes), 2 on bad "
        "input.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"the test-suite form: {quick['reps']} experiments per scenario, "
        f"cells {list(quick['cells'])}, shapes normal and t3",
    )
    _count_options(p, quick)
    p.add_argument(
        "--shapes",
        nargs="+",
        default=None,
        help=f"noise shapes among {', '.join(SHAPES)} (default all; quick: normal t3)",
    )
    p.add_argument(
        "--rules",
        nargs="+",
        default=None,
        help="rule names (default: every rule; with --candidates, candidate names such as "
        "'proportion[Wilson]', default every candidate)",
    )
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
    p.set_defaults(func=_handle)


def _count_options(p, quick: dict[str, Any]) -> None:
    """``--seeds``, ``--trials``, ``--cells`` and ``--reps``: the sizes the audit simulates."""
    from ._audit import CELLS, REPS, SEEDS, TRIALS

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


def _handle(args) -> int:
    from . import _audit

    quick: dict[str, Any] = _audit.QUICK if args.quick else {}
    rows = _audit.audit(
        args.rules,
        seeds=args.seeds or quick.get("seeds", _audit.SEEDS),
        trials=args.trials or quick.get("trials", _audit.TRIALS),
        cells=args.cells or quick.get("cells", _audit.CELLS),
        shapes=args.shapes or (("normal", "t3") if args.quick else _audit.SHAPES),
        reps=args.reps if args.reps is not None else quick.get("reps", _audit.REPS),
        seed=args.seed,
        margin=args.margin,
        effect=args.effect,
        progress=not args.no_progress,
        candidates=args.candidates,
    )
    command = _command(args)
    sys.stdout.write(
        _audit.format_table(
            rows, markdown=args.markdown, margin=args.margin, effect=args.effect, command=command
        )
    )
    passed = ("ok", "not barred", "not simulated")
    return 0 if all(r["bar"].startswith(passed) for r in rows) else 1


def _command(args) -> str:
    """The command line that reproduces this audit (the options given, in a fixed order)."""
    from ._audit import EFFECT, MARGIN

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
    return " ".join(shlex.quote(w) for w in words)
