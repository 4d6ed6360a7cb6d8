"""A finding on a deterministic value, and a check on per-seed values, judged by the
verdict-rule catalogue.

`deterministic()`: a finding whose measured value has no sampling error (one deterministic
integration), judged by the catalogue's rule ``deterministic`` (`gaugedyn.stats.RULES`):
its interval the point itself, the one value in ``per_seed``; with no noise its verdict at the
paper's value is certain, so its power is 1 when the paper's value lies on the claimed side and
0 otherwise.

`checked()`: a check (a property the package guarantees; failing it fails the run) whose
values are random (per seed, per trial or rows of a fit), judged by a rule of the catalogue as a
finding is, so its error rates are the audited rule's; it passes when the rule says the word
the check expects.
"""

from __future__ import annotations

from typing import Any

from ..stats import judge
from ._protocol import Claim, judged

DETERMINISTIC = "deterministic"
"""The catalogue's rule for a finding on a deterministic value (``RULES["deterministic"]``:
listed by the audit, not simulated, as there is no noise)."""


def deterministic(
    id: str,
    statement: str,
    value: float,
    threshold: float,
    direction: str = ">",
    *,
    measure: Any,
    expected: Any = None,
    extra: dict | None = None,
) -> Claim:
    """A finding on a deterministic value (see the module docstring): rule
    ``deterministic`` of the catalogue on the one value, judged by `judged()` with its
    declared ``measure`` (kind ``exact``).

    Parameters
    ----------
    id : str
        The finding's id, unique within the experiment.
    statement : str
        The paper's statement the finding judges, in words.
    value : float
        The deterministic measured value.
    threshold : float
        The threshold of the claim, fixed before the run.
    direction : str
        ``">"`` (the claim is ``value > threshold``) or ``"<"``.
    measure : Any
        The finding's declared `gaugedyn.stats.Measure`, of kind ``exact``.
    expected : Any, optional
        What the report shows as expected; ``None`` gives ``"<direction> <threshold>"``.
    extra : dict, optional
        Further entries merged into ``tolerance``.

    Returns
    -------
    Claim
        A finding (`judged()`) whose interval is the point ``[value, value]``, judged as
        `gaugedyn.stats.verdict()` judges an interval: ``HELD`` when ``value`` lies strictly
        on the claimed side of ``threshold``, ``NOT HELD`` when it lies on or beyond it.

    Raises
    ------
    InputError
        When ``direction``, ``threshold`` or ``value`` is not allowed by the rule, or ``measure``'s
        kind does not choose rule ``deterministic``.
    """
    j = judge(DETERMINISTIC, [float(value)], threshold=threshold, direction=direction)
    return judged(
        id,
        statement,
        j,
        measure=measure,
        expected=expected if expected is not None else f"{direction} {threshold:g}",
        extra=extra,
    )


CHECK_WORDS = ("HELD", "not HELD")
"""What a `checked()` check may expect: ``HELD`` (the property shown), or ``not HELD`` (a
negative control: the rule must not say HELD; NOT HELD and UNRESOLVED both pass)."""


def checked(
    id: str,
    statement: str,
    judgement: Any,
    *,
    expect: str = "HELD",
    expected: Any = None,
    extra: dict | None = None,
) -> Claim:
    """A check on random values judged by a rule of the catalogue
    (`gaugedyn.stats.judge()`): it passes when ``judgement``'s verdict is ``expect``
    (`CHECK_WORDS`). Its rule, words, interval and per-seed values are recorded as a
    finding's are, and ``tolerance`` holds the claim (threshold, direction, count, the
    verdict, the uniform draw of a randomised rule and the reason of an UNRESOLVED one), so the
    check recomputes from ``summary.json``. ``extra`` goes into ``tolerance``.

    Parameters
    ----------
    id : str
        The check's id, unique within the experiment.
    statement : str
        The property the check shows, in words.
    judgement : Any
        The `gaugedyn.stats.Judgement` of the check's values.
    expect : str
        ``"HELD"`` (the property shown: passes on HELD) or ``"not HELD"`` (a negative control:
        passes on NOT HELD or UNRESOLVED).
    expected : Any, optional
        What the report shows as expected; ``None`` gives ``"<expect>: <the rule's claim>"``.
    extra : dict, optional
        Further entries merged into ``tolerance``.

    Returns
    -------
    Claim
        A claim of kind ``"check"``; ``passed`` says whether the verdict is what ``expect``
        asks (a failed check fails the run).

    Raises
    ------
    ValueError
        When ``expect`` is not one of `CHECK_WORDS`.
    """
    if expect not in CHECK_WORDS:
        raise ValueError(f"expect={expect!r} is not allowed; allowed: {', '.join(CHECK_WORDS)}")
    j = judgement
    passed = j.verdict == "HELD" if expect == "HELD" else j.verdict != "HELD"
    tolerance: dict[str, Any] = {
        "threshold": j.threshold,
        "direction": j.direction,
        "n": j.n,
        "verdict": j.verdict,
        "expect": expect,
    }
    for key, value in (("uniform_draw", j.draw), ("reason", j.reason), ("cells", j.cells)):
        if value is not None:
            tolerance[key] = value
    if extra:
        tolerance |= extra
    return Claim(
        id=id,
        statement=statement,
        measured=j.estimate,
        expected=expected if expected is not None else f"{expect}: {j.words}",
        tolerance=tolerance,
        passed=bool(passed),
        kind="check",
        interval=[j.low, j.high],
        rule=j.rule,
        rule_text=j.words,
        per_seed=j.values,
    )
