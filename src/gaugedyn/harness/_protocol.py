"""What a declared experiment is.

An experiment is a set of independent tasks plus an analysis:

- ``params``: the configuration schema (name -> `Param`), validated on load;
- ``tasks(config)``: the task list, each a JSON-serialisable dict of coordinates that fully
  determines the task (its key in the result store is a hash of it and the package version);
- ``run_task(task, seed)``: a pure function of the task and its ``numpy.random.SeedSequence``
  (derived from the root seed and the task's coordinates, never from execution order), returning
  a dict of numpy arrays and scalars; it runs in worker processes, so the experiment object must
  be picklable;
- ``analyse(config, tasks, results, seed)``: the arrays behind the figures and the claims, and
  optionally a third item, a dict of diagnostics written into ``summary.json``; ``seed`` is the
  run's ``SeedSequence`` for the analysis (`analysis_seed()`: derived from the root seed and
  the experiment's name), from which every bootstrap draws;
- ``plot(arrays, config, outdir)``: figures drawn from the stored arrays alone, saved with
  `gaugedyn.plotting.save_figure()`; returns figure names or ``(name, caption)`` pairs.

``config`` is the dict of validated parameters (the keys of ``params``). Beside its findings an
experiment declares ``controls(config) -> list[Control]``, known-answer cases of each
instrument it judges with (`._controls`; run first, as checks, in every run), and
``space``, the set-up constants its paper leaves open (name -> `._space.Choice`, each a
setting of ``params`` whose default is the primary specification; ``gaugedyn multiverse``
judges the findings over it). The harness labels the
findings of every run whose configuration is not the declared full one (`labelled()`, over
``label_keys``: every declared setting unless an experiment names fewer), so an experiment never
labels its own. Optional method:
``validate(config)``, called once the parameters are resolved and before ``tasks``, raises
`gaugedyn.InputError` (naming the settings and what is allowed) for a combination of
individually valid values whose analysis cannot be done, e.g. a fit that needs at least two
dimensions above its threshold. Optional attributes:
``captions`` (figure name -> caption) and ``definitions`` (the observables' definitions, recorded
in ``summary.json``). ``results`` reach ``analyse`` as read back from the result store: arrays as
numpy arrays, scalars as numpy scalars, other JSON values (``None``, strings, nested lists) as is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._json import plain
from .._options import Param as Param

CLAIM_KINDS = ("check", "finding", "measurement")


VERDICTS = ("HELD", "NOT HELD", "UNRESOLVED", "depends on the reading")
"""A finding's verdicts: the three of one reading, and the fourth when the documented readings
of its protocol disagree (each reading's verdict is stored beside it)."""


@dataclass(frozen=True)
class Claim:
    """A statement checked on measured numbers.

    ``kind="check"``: a property the package guarantees; a failed check fails the run.
    ``kind="finding"``: a paper's statement, measured and reported as found; it never fails the
    run, so a finding cannot be tuned into a pass. Its ``verdict`` is ``HELD``, ``NOT HELD`` or
    ``UNRESOLVED`` (the interval straddles the threshold); a finding built without one reads
    ``HELD``/``NOT HELD`` from ``passed``. Build findings with `gaugedyn.stats.finding()`, which
    derives the verdict from the interval and records the rule.
    ``kind="measurement"``: a quantity reported with its interval, with no verdict.

    ``interval`` is the ``(low, high)`` confidence interval of ``measured`` where there is one;
    ``rule`` says how the interval became the verdict: the name of a verdict rule of the
    catalogue (`gaugedyn.stats.RULES`) for findings built with `judged()`, whose
    ``rule_text`` gives its words, ``per_seed`` the values it judged (so the verdict can be
    recomputed from ``summary.json`` alone), ``power`` its probability of saying HELD at the
    paper's value for the seeds used (``underpowered`` below `gaugedyn.stats.UNDERPOWERED`)
    and ``readings`` the verdict under each documented reading of the protocol.
    """

    id: str
    statement: str
    measured: Any
    expected: Any
    tolerance: Any
    passed: bool
    kind: str = "check"
    verdict: str | None = None
    interval: Any = None
    rule: str = ""
    rule_text: str = ""
    per_seed: Any = None
    power: float | None = None
    underpowered: bool | None = None
    readings: dict | None = None
    robustness: dict | None = None
    """A finding's verdicts over the declared set-up space (``gaugedyn multiverse``): the share of
    specifications per verdict, whether it is robust (no specification gives the opposite of
    HELD / NOT HELD) and the constants that flip it."""

    def __post_init__(self):
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim kind {self.kind!r} is not one of {CLAIM_KINDS}")
        if self.verdict is not None:
            if self.kind != "finding":
                raise ValueError(f"claim {self.id}: only findings carry a verdict")
            if self.verdict not in VERDICTS:
                raise ValueError(f"claim {self.id}: verdict {self.verdict!r} not in {VERDICTS}")
            if self.readings is not None and self.verdict != combined_verdict(self.readings):
                raise ValueError(
                    f"claim {self.id}: verdict {self.verdict!r} is not the one its "
                    f"readings give ({combined_verdict(self.readings)!r})"
                )
            if bool(self.passed) != (self.verdict == "HELD"):
                raise ValueError(f"claim {self.id}: passed must be verdict == 'HELD'")

    @property
    def fails_run(self) -> bool:
        return self.kind == "check" and not self.passed

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["passed"] = bool(self.passed)
        if d["verdict"] is None:
            d.pop("verdict")
        if d["interval"] is None:
            d.pop("interval")
        for key in (
            "rule",
            "rule_text",
            "per_seed",
            "power",
            "underpowered",
            "readings",
            "robustness",
        ):
            if d[key] is None or (isinstance(d[key], str) and not d[key]):
                d.pop(key)
        return plain(d)


def combined_verdict(readings: dict) -> str:
    """The verdict of a finding judged under several readings: their common verdict when they
    all agree, "depends on the reading" otherwise.

    Parameters
    ----------
    readings : dict
        Each reading's verdict (one of `VERDICTS`), by the reading's label.

    Returns
    -------
    str
        The one verdict every reading gave, or ``"depends on the reading"``.
    """
    words = set(readings.values())
    return words.pop() if len(words) == 1 else VERDICTS[3]


def finding(
    id: str,
    statement: str,
    interval: Any,
    threshold: float,
    direction: str = ">",
    *,
    expected: Any = None,
    cells: Any = None,
    extra: dict | None = None,
) -> Claim:
    """A finding whose verdict comes from an interval computed elsewhere
    (`gaugedyn.stats.verdict()`). Kept for callers outside the package; the experiments
    build every finding with `judged()`, which names an audited rule of the catalogue and
    stores the per-seed values, the power and each reading's verdict.

    ``interval`` is a `gaugedyn.stats.Interval` (or ``(estimate, low, high)``);
    ``threshold`` and ``direction`` state the claim ``value > threshold`` (or ``<``), fixed
    before the run. ``cells`` (what the finding was judged on) and ``extra`` go into
    ``tolerance`` beside the threshold, so the summary carries them.

    Parameters
    ----------
    id : str
        The finding's id, unique within the experiment.
    statement : str
        The paper's statement the finding judges, in words.
    interval : Any
        A `gaugedyn.stats.Interval` or ``(estimate, low, high)``; its endpoints are judged.
    threshold : float
        The threshold of the claim, fixed before the run.
    direction : str
        ``">"`` (the claim is ``value > threshold``) or ``"<"``.
    expected : Any, optional
        What the report shows as expected; ``None`` gives ``"<direction> <threshold>"``.
    cells : Any, optional
        What the finding was judged on (stored in ``tolerance["cells"]``).
    extra : dict, optional
        Further entries merged into ``tolerance``.

    Returns
    -------
    Claim
        A claim of kind ``"finding"``: ``verdict`` ``HELD`` when the whole interval lies on the
        claimed side, ``NOT HELD`` when it lies on the other, ``UNRESOLVED`` when it straddles
        the threshold or has a non-finite end (`gaugedyn.stats.verdict()`); ``passed`` is
        ``verdict == "HELD"``.

    Raises
    ------
    InputError
        When ``direction`` is neither ``">"`` nor ``"<"``, or the threshold or the interval's
        endpoints are not allowed (`gaugedyn.stats.verdict()`).
    """
    from ..stats import Interval, rule_text, verdict

    iv = Interval(*[float(v) for v in interval])
    word = verdict(iv, threshold, direction)
    tolerance = {"threshold": float(threshold), "direction": direction}
    if cells is not None:
        tolerance["cells"] = cells
    if extra:
        tolerance |= extra
    return Claim(
        id=id,
        statement=statement,
        measured=iv.estimate,
        expected=expected if expected is not None else f"{direction} {threshold:g}",
        tolerance=tolerance,
        passed=word == "HELD",
        kind="finding",
        verdict=word,
        interval=iv.as_list(),
        rule=rule_text(threshold, direction),
    )


def reading_record(j: Any) -> dict:
    """What one reading stores so that its verdict recomputes from the summary alone
    (`gaugedyn.harness.rejudge()`): the rule, the per-seed values, the claim, the uniform
    draw of a randomised rule, and what it gave (verdict, estimate, interval, reason).

    Parameters
    ----------
    j : Any
        A `gaugedyn.stats.Judgement`: one reading's judged rule and values.

    Returns
    -------
    dict
        ``rule``, ``per_seed``, ``threshold``, ``direction``, ``n``, ``estimate``, ``interval``
        (``[low, high]``) and ``verdict``, with ``uniform_draw``, ``reason``, ``lack_of_fit``
        ``cells`` and ``edge_interval`` (a band rule's 97.5% interval) where the judgement
        has them.
    """
    d = {
        "rule": j.rule,
        "per_seed": j.values,
        "threshold": j.threshold,
        "direction": j.direction,
        "n": j.n,
        "estimate": j.estimate,
        "interval": [j.low, j.high],
        "verdict": j.verdict,
    }
    for key, value in (
        ("uniform_draw", j.draw),
        ("reason", j.reason),
        ("lack_of_fit", j.lack_of_fit),
        ("cells", j.cells),
        ("edge_interval", None if j.edge_interval is None else list(j.edge_interval)),
    ):
        if value is not None:
            d[key] = value
    return d


def judged(
    id: str,
    statement: str,
    judgement: Any,
    *,
    measure: Any,
    readings: dict | None = None,
    expected: Any = None,
    extra: dict | None = None,
    power_reps: int = 2000,
) -> Claim:
    """A finding judged by a rule of the catalogue (`gaugedyn.stats.judge()`).

    ``judgement`` is the primary reading's `gaugedyn.stats.Judgement`; ``readings`` maps
    every documented reading of the protocol (the primary one included) to its judgement, and
    the verdict is theirs when they agree, ``"depends on the reading"`` otherwise. ``measure``
    is the finding's declared `gaugedyn.stats.Measure`: every reading's rule must be the
    one its kind chooses (`check()`), and the finding's ``power`` is
    the rule's probability of HELD at the paper's value or at the declared smallest effect
    (`power_value()`), simulated on resamples of the judged
    per-seed values themselves (`gaugedyn.stats.power_at()`), per cell, for the seeds
    used. ``tolerance`` stores the measure, the value the power is computed at, and every
    reading's rule, values, claim and draw (``reading_detail``), so every verdict recomputes
    from ``summary.json`` alone. ``extra`` goes into ``tolerance``.

    Parameters
    ----------
    id : str
        The finding's id, unique within the experiment.
    statement : str
        The paper's statement the finding judges, in words.
    judgement : Any
        The primary reading's `gaugedyn.stats.Judgement`.
    measure : Any
        The finding's declared `gaugedyn.stats.Measure` (its kind chooses the rule; its paper
        value or smallest effect is where the power is computed).
    readings : dict, optional
        Reading name to `gaugedyn.stats.Judgement`, for every documented reading of the
        protocol, the primary one included; ``None``: the one reading, stored as
        ``"as judged"``.
    expected : Any, optional
        What the report shows as expected; ``None`` gives the rule's claim in words.
    extra : dict, optional
        Further entries merged into ``tolerance``.
    power_reps : int
        Resamples of the simulated power (`gaugedyn.stats.power_at()`).

    Returns
    -------
    Claim
        A claim of kind ``"finding"`` with its verdict (the readings' common verdict, or
        ``"depends on the reading"``), interval, rule, per-seed values, power, ``underpowered``
        and each reading's verdict; ``tolerance`` holds what recomputes them.

    Raises
    ------
    InputError
        When a reading's rule is not the one ``measure``'s kind chooses for its form
        (`gaugedyn.stats.Measure.check()`).
    """
    from ..stats import finding_record, power_at

    every = readings if readings else {"as judged": judgement}
    for j in every.values():
        measure.check(j.rule)
    value = measure.power_value(judgement.threshold, judgement.direction)
    power = power_at(judgement, value, reps=power_reps).rate
    record = finding_record(judgement, power=power, readings=readings)
    primary = next((k for k, j in every.items() if j is judgement), next(iter(every)))
    tolerance = {
        "threshold": judgement.threshold,
        "direction": judgement.direction,
        "n": judgement.n,
        "measure": measure.as_dict() | {"power_at": value},
        "primary_reading": primary,
        "reading_detail": {k: reading_record(j) for k, j in every.items()},
    }
    if judgement.cells is not None:
        tolerance["cells"] = judgement.cells
    if getattr(judgement, "draw", None) is not None:  # a randomised rule's recorded draw
        tolerance["uniform_draw"] = judgement.draw
    if judgement.reason is not None:
        tolerance["reason"] = judgement.reason
    if extra:
        tolerance |= extra
    word = record["verdict"]
    return Claim(
        id=id,
        statement=statement,
        measured=judgement.estimate,
        expected=expected if expected is not None else judgement.words,
        tolerance=tolerance,
        passed=word == "HELD",
        kind="finding",
        verdict=word,
        interval=[judgement.low, judgement.high],
        rule=judgement.rule,
        rule_text=judgement.words,
        per_seed=record.get("per_seed"),
        power=record.get("power"),
        underpowered=record.get("underpowered"),
        readings=record["readings"],
    )


def configuration_label(config: dict, params: dict, keys: Iterable[str] | None = None) -> str:
    """``""`` when ``config`` holds the declared defaults of ``keys`` (default: every name in
    ``params``), ``"provisional (quick)"`` when it holds their quick values,
    ``"provisional (reduced configuration)"`` otherwise.

    Parameters
    ----------
    config : dict
        The run's resolved parameters.
    params : dict
        The experiment's declared schema (name to `Param`), whose ``default`` and ``quick``
        values are compared.
    keys : Iterable[str], optional
        The settings compared (an experiment's ``label_keys``); ``None``: every name in
        ``params``.

    Returns
    -------
    str
        ``""`` for the full configuration, ``"provisional (quick)"`` for the quick one (a
        setting without a quick value compared at its default), ``"provisional (reduced
        configuration)"`` for any other.
    """
    keys = tuple(params) if keys is None else tuple(keys)
    if all(config.get(k) == params[k].default for k in keys):
        return ""
    quick = {k: params[k].quick if params[k].quick is not None else params[k].default for k in keys}
    if all(config.get(k) == quick[k] for k in keys):
        return "provisional (quick)"
    return "provisional (reduced configuration)"


def provisional(claims: list[Claim], label: str) -> list[Claim]:
    """``claims`` with every finding's statement prefixed by ``label`` (from
    `configuration_label()`); unchanged when ``label`` is empty (the full configuration).
    Verdicts are kept: the label says they come from a smaller configuration than the one the
    protocol was fixed for. A finding that already begins with the label keeps it once, so
    labelling twice changes nothing.

    Parameters
    ----------
    claims : list of Claim
        An analysis's claims; only findings are relabelled, checks and measurements pass through.
    label : str
        The label, from `configuration_label()`; ``""`` leaves the claims as they are.

    Returns
    -------
    list of Claim
        A new list; relabelled findings are copies with ``statement`` = ``"<label>: ..."``.
    """
    if not label:
        return list(claims)
    lead = f"{label}: "
    return [
        dataclasses.replace(c, statement=lead + c.statement)
        if c.kind == "finding" and not c.statement.startswith(lead)
        else c
        for c in claims
    ]


def labelled(
    params: dict, config: dict, analysed: tuple, keys: Iterable[str] | None = None
) -> tuple[dict, list[Claim], dict]:
    """An ``analyse`` result ``(arrays, claims, diagnostics)`` with its findings labelled by
    `provisional()` for ``config`` against the declared ``params`` (over ``keys``, default
    every one), and the label (or ``None``) in ``diagnostics["provisional"]``. The harness
    applies it to every run (`gaugedyn.harness._summary.analyse()`), with the experiment's
    `Experiment.label_keys`.

    Parameters
    ----------
    params : dict
        The experiment's declared schema (name to `Param`).
    config : dict
        The run's resolved parameters.
    analysed : tuple
        ``(arrays, claims, diagnostics)``, what ``analyse`` returned with its diagnostics (a
        dict, updated in place).
    keys : Iterable[str], optional
        The settings compared (`Experiment.label_keys`); ``None``: every name in ``params``.

    Returns
    -------
    tuple of (dict, list of Claim, dict)
        ``(arrays, claims, diagnostics)``: the arrays unchanged, the claims from `provisional()`,
        the diagnostics with ``"provisional"`` set to the label or ``None``.
    """
    arrays, claims, diagnostics = analysed
    label = configuration_label(config, params, keys)
    diagnostics["provisional"] = label or None
    return arrays, provisional(claims, label), diagnostics


def analysis_seed(root_seed: int, experiment: str) -> np.random.SeedSequence:
    """The ``SeedSequence`` a run hands to ``analyse``: the task-seed rule
    (`gaugedyn._meta.task_seed()`) applied to the coordinates ``(experiment, "analysis")``."""
    from .._meta import task_seed

    return task_seed(root_seed, experiment, "analysis")


class Experiment:
    """Base class of declared experiments (see module docstring)."""

    name: str = ""
    description: str = ""
    params: dict[str, Param] = {}
    measures: dict[str, Any] = {}
    """What each finding measures (finding-id pattern -> `gaugedyn.stats.Measure`,
    declared in the experiment's ``_protocol.py`` and stated in its ``PROTOCOL.md``): the kind
    that chooses its rule and the smallest effect of interest its power is computed at. The
    audit (``gaugedyn audit-rules``) and ``gaugedyn rejudge`` read it by finding id."""
    off_catalogue: dict[str, str] = {}
    """Checks on random values (per seed, per trial, rows of a fit) that no rule of the
    catalogue judges yet: check id -> why; ``docs/verdict-rules.md`` lists them beside the checks
    judged by a rule (`gaugedyn.harness.checked`)."""
    label_keys: tuple[str, ...] | None = None
    """The settings whose declared values make the full configuration (`labelled()` compares
    them); ``None``: every name in ``params``. An experiment leaves out only settings that change
    no number it reports (a device)."""
    space: dict[str, Any] = {}
    """The declared set-up space: setting name -> `gaugedyn.harness.Choice` (its
    alternatives or range and why they are plausible); the setting's default is the primary
    specification."""

    extensions: dict[str, dict[str, Any]] = {}
    """The declared extension settings: name -> the settings changed from the full
    configuration. Each is the experiment run with those settings alone (``gaugedyn run ...
    --set KEY=VALUE``) under the same protocol; ``gaugedyn publish --add`` stores such a run
    beside the experiment's own (``results-data/<name>/extensions/<slug>/``) and the
    ``publish:extensions`` table reads it (`extension_table()`)."""

    def extension_table(self, runs: dict[str, dict | None]) -> list[str]:
        """Markdown lines of the extension table from each declared extension's published
        summary (``None``: not published): by default, per extension, its command and the
        count of each verdict."""
        lines = ["| extension | settings | verdicts |", "|---|---|---|"]
        for name, sets in self.extensions.items():
            summary = runs.get(name)
            counts: dict[str, int] = {}
            for c in (summary or {}).get("claims", []):
                if c.get("kind") == "finding":
                    counts[str(c.get("verdict"))] = counts.get(str(c.get("verdict")), 0) + 1
            got = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "not published"
            shown = " ".join(f"--set {k}={v}" for k, v in sets.items())
            lines.append(f"| {name} | `{shown}` | {got} |")
        return lines

    published_arrays: tuple[str, ...] = ()
    """Arrays of a run's ``arrays.npz`` that ``gaugedyn publish --add`` copies into the
    published summary (``published_arrays``, checked against the run's ``arrays_sha256``), so
    that tables generated from them (`result_tables()`, the ``publish:tables`` block) come from
    the committed summary alone. Only small arrays: the summary is committed."""

    def result_tables(self, summary: dict) -> list[str]:
        """Markdown lines of the experiment's own result tables (the ``publish:tables`` block)
        from its published ``summary`` (its ``published_arrays`` among them); by default, a
        sentence saying it declares none."""
        return [f"`{self.name}` declares no result tables."]

    def controls(self, config: dict) -> list:
        """The known-answer controls of the instruments this experiment judges with, at
        ``config`` (`gaugedyn.harness.Control`: at least one positive and one negative per
        instrument); run before any task, in quick and full runs."""
        return []

    def tasks(self, config: dict) -> list[dict]:
        raise NotImplementedError

    def seed_coordinates(self, task: dict) -> dict:
        """What a task's seed derives from (`gaugedyn._meta.task_seed()`): the task itself,
        unless the experiment names settings that only choose what is read off its runs (a
        multiverse's shared pass, `shared_values()`), which then leave its runs as they are."""
        return task

    def shared_values(self, primary: dict, configs: list[dict]) -> dict:
        """Settings a multiverse gives every specification (``primary``: the primary's resolved
        settings; ``configs``: every specification's, the primary first) so that their tasks
        are one and the same and computed once (the shared pass); ``{}``: none (default: each
        specification's tasks are its own)."""
        return {}

    def run_task(self, task: dict, seed: np.random.SeedSequence) -> dict:
        raise NotImplementedError

    def analyse(
        self, config: dict, tasks: list[dict], results: list[dict], seed: np.random.SeedSequence
    ) -> tuple:
        """Return ``(arrays: dict[str, np.ndarray], claims: list[Claim])``, optionally with a
        third item ``diagnostics: dict``. ``seed`` is the run's analysis seed
        (`analysis_seed()`): every resampling of the analysis derives from it."""
        raise NotImplementedError

    def plot(self, arrays: dict, config: dict, outdir: Any) -> list:
        """Draw figures from ``arrays`` into ``outdir``; return the figure base names (or
        ``(name, caption)`` pairs)."""
        return []
