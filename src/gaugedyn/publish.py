"""``gaugedyn publish``: the README's and the site's result tables, generated from committed runs.

Results as data. The ``summary.json`` of a full-configuration run is committed under
``results-data/<experiment>/summary.json`` with a ``published`` record: the command that produced
it, the date it finished (UTC) and the code version (gaugedyn's version and the git commit of the
checkout when the run was added, with ``dirty`` when ``src/`` or ``simulations/`` had uncommitted
changes: add a run from the checkout that ran it)::

    gaugedyn run simulations/spike_boundary.toml --out /tmp/sb      # a full configuration
    gaugedyn publish --add /tmp/sb                                  # -> results-data/spike_boundary/
    gaugedyn publish                                                # rewrite every marked table
    gaugedyn publish --check                                        # exit 1 naming stale tables

A table lives in a Markdown file (``README.md`` and ``docs/**/*.md``) between two marker lines,
and everything between them is generated::

    <!-- publish:claims spike_boundary -->
    ...
    <!-- /publish -->

Kinds: ``claims EXPERIMENT`` (every claim of one run: kind, measured value, 95% interval, rule
and verdict, the claims' statements, then the run's provenance), ``readings EXPERIMENT`` (every
finding of one run with its rule, primary estimate and interval, verdict, power and its verdict
under each documented reading; then its checks and measurements and the provenance: for runs
whose findings are judged under several readings), ``breakdown EXPERIMENT`` (every finding's
verdict per value of each set-up dimension its run records as ``tolerance.by_<dimension>``, such
as an acquisition meaning or a pulse strength), ``figures EXPERIMENT`` (the
run's figures, copied by ``--add`` into ``docs/figures/<experiment>/``, with their captions),
``robustness EXPERIMENT`` (every finding's verdict over the declared set-up space, from a
published ``gaugedyn multiverse`` folder: the share of specifications per verdict, robust or
not, the constants that flip it), ``sentences EXPERIMENT`` (the paper's sentences the
experiment declares, each against the verdicts and robustness of the findings that test it),
``tables EXPERIMENT`` (the experiment's own result tables, `gaugedyn.harness.Experiment.result_tables()`,
from its published summary and the arrays ``--add`` copied into it from the run's
``arrays.npz``, `gaugedyn.harness.Experiment.published_arrays`; then the provenance),
``controls EXPERIMENT`` and ``space EXPERIMENT`` (the
experiment's declared known-answer controls and set-up space at its full configuration, from
its declaration) and ``systems`` (one row per paper of
`gaugedyn.papers.PAPERS`: its checks and the counts of its findings' verdicts over the
published runs, linking to its page). The site's navigation of the systems' pages is generated
the same way, in ``mkdocs.yml`` between ``# publish:nav`` and ``# /publish`` comment lines, from
each system's declaration (``system.toml``: its page, its title, its further pages).
``--check`` regenerates every table and the navigation in memory and compares them with the
files, so a table that no longer matches its committed run, or a navigation that no longer
matches the declared systems, fails CI.

Quick and reduced configurations are refused by ``--add``: published numbers are full runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ._errors import InputError
from .papers import PAPERS

DATA = "results-data"
_OPEN = re.compile(r"^<!-- publish:(\w+)(?: (\w+))? -->$")
_CLOSE = "<!-- /publish -->"
_KINDS = (
    "claims",
    "readings",
    "breakdown",
    "extensions",
    "figures",
    "systems",
    "headlines",
    "controls",
    "space",
    "robustness",
    "sentences",
    "tables",
)
# the findings a headline names per verdict before it says "and N more"
HEADLINE_NAMES = 4
# what the words of the systems table and the headlines mean, one line each
DEFINITIONS = (
    "*Depends on the reading*: the finding was judged under every reasonable reading of the "
    "paper's statement (a sign convention, a share, a window), and the readings gave different "
    "verdicts. *Robust*: judged again over every set-up constant the paper leaves open "
    "(`gaugedyn multiverse`), no specification gives the opposite of HELD / NOT HELD.",
)
FIGURES = "docs/figures"
SITE = "mkdocs.yml"
_NAV_OPEN = re.compile(r"^(\s*)# publish:nav\b")
_NAV_CLOSE = "# /publish"
_PLAIN_TITLE = re.compile(r"[A-Za-z0-9(][^:#\"'{}\[\],&*!|>%@`]*")


def published_files(root: Path) -> list[Path]:
    """The Markdown files that may hold tables: ``README.md`` and ``docs/**/*.md``.

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    list of Path
        ``root/README.md`` first where it exists, then every ``.md`` file under ``root/docs``
        (recursively, sorted).
    """
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    return files + sorted((root / "docs").rglob("*.md"))


def load_published(root: Path) -> dict[str, dict]:
    """Every committed summary, read from ``results-data/*/summary.json``.

    Parameters
    ----------
    root : Path
        The repository root, whose ``results-data/`` holds one folder per published experiment.

    Returns
    -------
    dict of str to dict
        Experiment name (the folder's name) -> its summary, with its ``published`` record.

    Raises
    ------
    InputError
        When a summary cannot be read or is not JSON, or is malformed (not an object; claims that
        are not a list of objects with a string ``id``, a known ``kind``, a boolean ``passed``, a
        known ``verdict``, a ``readings`` table; figures without a list of file names), naming its
        file.
    """
    out = {}
    for path in sorted((root / DATA).glob("*/summary.json")):
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: not a readable summary ({err})") from None
        problem = _problem(summary, str(path))
        if problem is not None:
            raise InputError(problem)
        out[path.parent.name] = summary
    return out


# --- adding a run ---------------------------------------------------------------------------


def command_line(command: dict | None) -> str:
    """The ``gaugedyn run`` command a summary's recorded arguments stand for (output folders and
    progress options left out: they do not change the result).

    Parameters
    ----------
    command : dict or None
        A summary's ``command`` record: ``command`` (default ``"run"``), ``config``, ``quick``,
        ``overrides`` (the ``--set`` items), ``samples`` (a multiverse's random joint
        specifications), ``executor`` and ``workers``.

    Returns
    -------
    str
        The command line, e.g. ``gaugedyn run simulations/clock.toml --set seeds=8 --executor
        process``; ``"(not recorded)"`` when ``command`` is empty or ``None``.
    """
    if not command:
        return "(not recorded)"
    words = ["gaugedyn", str(command.get("command", "run")), str(command.get("config", ""))]
    if command.get("quick"):
        words.append("--quick")
    words += [f"--set {item}" for item in command.get("overrides") or []]
    for key in ("samples", "executor", "workers"):
        if command.get(key) is not None:
            words.append(f"--{key} {command[key]}")
    return " ".join(w for w in words if w)


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def code_version(root: Path) -> dict:
    """gaugedyn's version and the git commit of a checkout.

    Parameters
    ----------
    root : Path
        The checkout (``git`` runs there; a failing or missing ``git`` counts as no checkout).

    Returns
    -------
    dict
        ``{"gaugedyn": version, "commit": sha, "dirty": bool}``: ``dirty`` when ``src/`` or
        ``simulations/`` have uncommitted changes; commit ``"unknown"`` outside a git checkout.
    """
    from . import __version__

    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    dirty = bool(_git(root, "status", "--porcelain", "--", "src", "simulations"))
    return {"gaugedyn": __version__, "commit": commit, "dirty": dirty}


def _problem(summary: object, where: str) -> str | None:
    """What makes ``summary`` unfit to render (``None``: nothing): not a JSON object, claims
    that are not a list of objects with a string ``id``, a known ``kind``, a boolean
    ``passed``, a ``readings`` table; figures that are not a list of objects with a list of
    file names."""
    from .harness import CLAIM_KINDS, FINDING_WORDS

    if not isinstance(summary, dict):
        return f"{where}: not a JSON object"
    claims = summary.get("claims", [])
    if not isinstance(claims, list):
        return f"{where}: claims = {_show(claims)} is not a list of claims"
    for i, c in enumerate(claims):
        if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not c["id"]:
            return f"{where}: claims[{i}] = {_show(c)} is not a claim with a string id"
        if c.get("kind", "check") not in CLAIM_KINDS:
            return f"{where}: claim {c['id']!r} has kind {_show(c.get('kind'))}; allowed: " + (
                ", ".join(CLAIM_KINDS)
            )
        if "passed" in c and not isinstance(c["passed"], bool):
            return f"{where}: claim {c['id']!r} has passed = {_show(c['passed'])}, not a boolean"
        if c.get("verdict") is not None and c["verdict"] not in FINDING_WORDS:
            return f"{where}: claim {c['id']!r} has verdict {_show(c['verdict'])}; allowed: " + (
                ", ".join(FINDING_WORDS)
            )
        if c.get("readings") is not None and not isinstance(c["readings"], dict):
            return f"{where}: claim {c['id']!r} has readings = {_show(c['readings'])}, not a table"
    figures = summary.get("figures", [])
    if not isinstance(figures, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("files", []), list)
        and all(isinstance(x, str) for x in f.get("files", []))
        for f in figures
    ):
        return f"{where}: figures = {_show(figures)} is not a list of figures with file names"
    return None


def _show(value: object) -> str:
    from .harness import show

    return show(value)


def read_run(run: Path, root: Path | None = None) -> dict:
    """A run's summary, checked to be publishable.

    Parameters
    ----------
    run : Path
        The run folder (the ``--out`` of ``gaugedyn run``), holding ``summary.json`` and the
        figures it lists.
    root : Path, optional
        The repository root: a re-judged run (``gaugedyn rejudge``) may leave out a figure already
        published under ``root/docs/figures/<experiment>/``. ``None``: every figure must be in
        ``run``.

    Returns
    -------
    dict
        The parsed ``summary.json``.

    Raises
    ------
    InputError
        When the folder has no readable ``summary.json``; its claims or figures are malformed; its
        experiment is not a registered name; it lacks its ``command`` record; it is a quick or
        reduced configuration (``--set`` overrides that are not exactly a declared extension); the
        run is not complete (failed tasks, or a status other than ``"passed"`` / ``"claims
        failed"``); or a figure is absolute, outside the run folder, missing, or shares its file
        name with another.
    """
    from .harness import EXPERIMENTS

    path = Path(run) / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"--add {run}: no readable summary.json there ({err})") from None
    problem = _problem(summary, f"--add {run}")
    if problem is not None:
        raise InputError(problem)
    name = summary.get("experiment")
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise InputError(
            f"--add {run}: experiment = {_show(name)} is not a registered experiment; allowed: "
            f"{', '.join(sorted(EXPERIMENTS))}"
        )
    command = summary.get("command")
    if not isinstance(command, dict) or not isinstance(command.get("config"), str):
        raise InputError(
            f"--add {run}: the summary has no command record (command = {_show(command)}); "
            "only a run made by gaugedyn run is published"
        )
    if command.get("quick") or (command.get("overrides") and extension_of(summary) is None):
        declared = ", ".join(
            f"{k} ({' '.join(f'--set {a}={b}' for a, b in v.items())})"
            for k, v in _extensions(name).items()
        )
        raise InputError(
            f"--add {run}: a quick or reduced configuration (quick="
            f"{bool(command.get('quick'))}, --set {command.get('overrides')}); "
            "only full configurations are published"
            + (f", or one of the declared extensions: {declared}" if declared else "")
        )
    failed = summary.get("failed_tasks")
    if failed or summary.get("status") not in ("passed", "claims failed"):
        count = len(failed) if isinstance(failed, list) else 0 if not failed else _show(failed)
        raise InputError(
            f"--add {run}: the run is not complete (status "
            f"{_show(summary.get('status'))}, failed tasks {count}); finish it first"
        )
    _figure_files(Path(run), summary, root)
    return summary


def _extensions(experiment: str) -> dict[str, dict]:
    """The experiment's declared extensions (`gaugedyn.harness.Experiment.extensions`)."""
    from .harness import resolve_experiment

    return dict(resolve_experiment(experiment, f"publish: {experiment}").extensions)


def slug(name: str) -> str:
    """A declared extension's folder name: its words and numbers joined by ``-``.

    Parameters
    ----------
    name : str
        The extension's declared name (`gaugedyn.harness.Experiment.extensions`).

    Returns
    -------
    str
        ``name`` lower-cased, every run of characters other than ``a-z``, ``0-9`` and ``.``
        replaced by one ``-``, with no leading or trailing ``-``.
    """
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def extension_of(summary: dict) -> str | None:
    """The declared extension (`gaugedyn.harness.Experiment.extensions`) a run is: its ``--set``
    overrides are exactly that extension's settings (values compared as parsed).

    Parameters
    ----------
    summary : dict
        A run's summary, with its ``experiment`` and ``command`` records.

    Returns
    -------
    str or None
        The extension's name; ``None`` for a run without overrides, a quick run, a run whose
        overrides or experiment do not parse, or overrides that match no declared extension.
    """
    from .harness import parse_override

    command = summary.get("command") or {}
    overrides = command.get("overrides") or []
    if not overrides or command.get("quick"):
        return None
    try:
        given = dict(parse_override(str(o)) for o in overrides)
        declared = _extensions(str(summary.get("experiment")))
    except InputError:
        return None
    for name, sets in declared.items():
        if given == dict(sets):
            return name
    return None


def extension_runs(
    experiment: str, root: Path, data: Mapping[str, dict] | None = None
) -> dict[str, dict | None]:
    """Each declared extension's published summary.

    Parameters
    ----------
    experiment : str
        A registered experiment name.
    root : Path
        The repository root; an extension's run is
        ``results-data/<experiment>/extensions/<slug>/summary.json`` (`slug()`).
    data : mapping of str to dict, optional
        The published runs (`load_published()`): an extension that changes no setting is the
        experiment's own published run, taken from here.

    Returns
    -------
    dict of str to (dict or None)
        Extension name -> its summary, ``None`` where none is published.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment, or an extension's ``summary.json``
        is not valid JSON (naming the file).
    """
    out: dict[str, dict | None] = {}
    for name, sets in _extensions(experiment).items():
        if not sets:
            out[name] = (data or {}).get(experiment)
            continue
        path = Path(root) / DATA / experiment / "extensions" / slug(name) / "summary.json"
        try:
            out[name] = json.loads(path.read_text()) if path.is_file() else None
        except ValueError as err:
            raise InputError(f"{path}: not a readable summary ({err})") from None
    return out


def extensions_table(
    experiment: str,
    root: Path,
    data: Mapping[str, dict] | None = None,
    added: Mapping[str, Mapping[str, dict]] | None = None,
) -> list[str]:
    """The experiment's extension table (its `gaugedyn.harness.Experiment.extension_table()`) from
    the published extension runs.

    Parameters
    ----------
    experiment : str
        A registered experiment name.
    root : Path
        The repository root (the extension runs are read from ``results-data/``).
    data : mapping of str to dict, optional
        The published runs (`load_published()`), for an extension that changes no setting.
    added : mapping of str to mapping of str to dict, optional
        Runs being added, experiment -> extension -> summary: they replace the stored ones.

    Returns
    -------
    list of str
        The table's Markdown lines; one sentence when the experiment declares no extensions.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment, or a stored extension summary is not
        valid JSON (`extension_runs()`).
    """
    exp, _ = _declared(experiment)
    if not exp.extensions:
        return [f"`{experiment}` declares no extensions."]
    runs = extension_runs(experiment, root, data) | dict((added or {}).get(experiment, {}))
    return exp.extension_table(runs)


def _figure_files(run: Path, summary: dict, root: Path | None = None) -> list[Path]:
    """The run's PNG figures as paths inside ``run``, refused (`InputError`)
    when one is absolute, leaves the folder, is missing (a re-judged run may leave out a figure
    already published under ``root``) or two share a name."""
    inside = run.resolve()
    published = None if root is None else Path(root) / FIGURES / str(summary.get("experiment"))
    files, names = [], set()
    for name in _pngs(summary):
        rel = Path(name)
        path = (run / rel).resolve()
        if rel.is_absolute() or ".." in rel.parts or not path.is_relative_to(inside):
            raise InputError(
                f"--add {run}: figure {name!r} is not a path inside the run folder; allowed: "
                "relative paths such as figures/NAME.png"
            )
        if not path.is_file():
            if summary.get("rejudged") and published and (published / rel.name).is_file():
                continue  # re-judging changes no figure: the published one stays
            raise InputError(f"--add {run}: figure {name!r} is missing from the run folder")
        if rel.name in names:
            raise InputError(f"--add {run}: two figures are named {rel.name!r}")
        names.add(rel.name)
        files.append(path)
    return files


def prepare_run(run: Path, root: Path) -> tuple[dict, dict[Path, bytes]]:
    """A run's summary with its ``published`` record, and the files adding it writes. Nothing is
    written.

    Parameters
    ----------
    run : Path
        The run folder, checked by `read_run()`.
    root : Path
        The repository root the run is added to; its current commit is the run's code version
        (`code_version()`).

    Returns
    -------
    tuple of (dict, dict of Path to bytes)
        The summary as it will be read back (keys sorted), with ``published``: the command
        (`command_line()`), the date ``summary.json`` was last written (UTC) and the code version;
        a re-judged run keeps the record of the run it re-judges; and ``published_arrays``, the
        arrays its experiment publishes (`published_arrays()`). Then the files:
        ``results-data/<experiment>/summary.json`` (``.../extensions/<slug>/`` for a declared
        extension) and its PNG figures under ``docs/figures/<experiment>/``.

    Raises
    ------
    InputError
        When `read_run()` refuses the run.
    """
    path = Path(run) / "summary.json"
    summary = read_run(run, root)
    arrays = published_arrays(Path(run), summary)
    if arrays:
        summary["published_arrays"] = arrays
    # as it will be read back (keys sorted): a table rendered now equals one rendered later
    summary = json.loads(json.dumps(summary, sort_keys=True))
    finished = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    if not (summary.get("rejudged") and summary.get("published")):  # a re-judged run keeps
        summary["published"] = {  # the record of the run it re-judges
            "command": command_line(summary["command"]),
            "date": finished.strftime("%Y-%m-%d %H:%M UTC"),
            "code_version": code_version(root),
        }
    where = stored_at(summary)
    writes = {
        root / DATA / where / "summary.json": (
            json.dumps(summary, indent=1, sort_keys=True) + "\n"
        ).encode()
    }
    for png in _figure_files(Path(run), summary, root):
        writes[root / FIGURES / where / png.name] = png.read_bytes()
    return summary, writes


def stored_at(summary: dict) -> Path:
    """Where a run's summary is stored under ``results-data/``.

    Parameters
    ----------
    summary : dict
        A run's summary, with its ``experiment`` and ``command`` records.

    Returns
    -------
    Path
        ``<experiment>``, or ``<experiment>/extensions/<slug>`` for a declared extension's run
        (`extension_of()`), relative to ``results-data/``.
    """
    name = summary["experiment"]
    ext = extension_of(summary)
    return Path(name) if ext is None else Path(name) / "extensions" / slug(ext)


def add_run(run: Path, root: Path) -> Path:
    """Copy a run's ``summary.json`` into ``results-data/`` with its ``published`` record, and its
    figures into ``docs/figures/`` (`prepare_run()`); every file atomically, all or none.

    Parameters
    ----------
    run : Path
        The run folder, checked by `read_run()`.
    root : Path
        The repository root.

    Returns
    -------
    Path
        The written ``results-data/<experiment>/summary.json`` (or an extension's, under
        ``extensions/<slug>/``).

    Raises
    ------
    InputError
        When `read_run()` refuses the run; nothing is written then.
    """
    summary, writes = prepare_run(run, root)
    write_all(writes)
    return next(p for p in writes if p.name == "summary.json")


def write_all(writes: dict[Path, bytes]) -> None:
    """Write every file atomically (a temporary name, then a rename); if one fails, the files
    already replaced get their former content back (or are removed), so a command writes all or
    nothing.

    Parameters
    ----------
    writes : dict of Path to bytes
        Each file's full new content; missing parent folders are made (and removed again when
        a write fails).

    Raises
    ------
    BaseException
        Whatever stopped a write (an `OSError`, a `KeyboardInterrupt`), re-raised after the files
        written so far are restored.
    """
    from .harness import atomic_write

    done: list[tuple[Path, bytes | None]] = []
    made: list[Path] = []
    try:
        for path, data in writes.items():
            old = path.read_bytes() if path.is_file() else None
            missing = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += missing
            atomic_write(path, data)
            done.append((path, old))
    except BaseException:
        for path, old in reversed(done):
            if old is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, old)
        for folder in made:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _pngs(summary: dict) -> list[str]:
    """The PNG files of a summary's figures (relative to the run folder)."""
    return [
        f for fig in summary.get("figures", []) for f in fig.get("files", []) if f.endswith(".png")
    ]


# --- rendering ------------------------------------------------------------------------------


def _fmt(value, limit: int = 60) -> str:
    from .harness import fmt

    return fmt(value, limit).replace("|", "\\|")


def _rule(claim: dict) -> str:
    """A finding's threshold (``< 0.5``), a check's ``expected +- tolerance``, ``-`` for a
    measurement."""
    kind, expected, tol = claim.get("kind", "check"), claim.get("expected"), claim.get("tolerance")
    if kind == "measurement":
        return "-"
    if (
        kind == "check"
        and not isinstance(expected, str)
        and isinstance(tol, int | float)
        and not isinstance(tol, bool)
    ):
        return f"{_fmt(expected)} +- {_fmt(tol)}" if tol else f"= {_fmt(expected)}"
    return _fmt(expected, limit=10_000)  # a paper's values are never cut


def provenance(experiment: str, summary: dict) -> str:
    """One line: which committed file, command, date and code version a table comes from.

    Parameters
    ----------
    experiment : str
        The experiment name (its summary is ``results-data/<experiment>/summary.json``).
    summary : dict
        Its published summary; ``published`` gives the command and date, ``code`` the code
        identity the run recorded (``published.code_version``, the commit it was added at, for
        runs that recorded none; both named when they differ), and a ``rejudged`` record adds when and at which commit it was re-judged, how many verdicts
        changed, how many findings were kept under the old rules and how many statements were
        re-worded.

    Returns
    -------
    str
        The sentence (``?`` for what the record lacks; the commit cut to 10 characters, marked
        "with local changes" when ``dirty``).
    """
    pub = summary.get("published", {})
    added = pub.get("code_version", {})
    ran = summary.get("code") or {}
    code = ran if ran.get("commit") else added

    def _commit(c: dict) -> str:
        return str(c.get("commit", "unknown"))[:10] + (
            " (with local changes)" if c.get("dirty") else ""
        )

    line = (
        f"From `{DATA}/{experiment}/summary.json`: `{pub.get('command', '?')}`, finished "
        f"{pub.get('date', '?')}, gaugedyn {code.get('gaugedyn', '?')} at commit {_commit(code)}"
    )
    if code is ran and added.get("commit") and added.get("commit") != ran.get("commit"):
        line += f" (added at commit {_commit(added)})"
    line += "."
    again = summary.get("rejudged")
    if again:
        kept = again.get("kept_under_old_rules") or []
        line += (
            f" Re-judged from the stored values under the current verdict rules on "
            f"{again.get('date', '?')} at commit {str(again.get('commit', '?'))[:10]} "
            f"(`gaugedyn rejudge`): {len(again.get('changed') or [])} verdict change(s)"
            + (
                f"; {len(kept)} finding(s) kept under the rules they were judged by (their "
                "other readings' values were not stored), marked *old rules*"
                if kept
                else ""
            )
            + (
                f"; {len(again['reworded'])} statement(s) re-worded to name the location "
                "their rule judges"
                if again.get("reworded")
                else ""
            )
            + "."
        )
    return line


def _word(claim: dict) -> str:
    """A claim's verdict word, marked *old rules* where a finding was kept from an earlier
    judgement (``tolerance.judged_under``: its other readings' values were not stored)."""
    from .harness import verdict_word

    old = isinstance(claim.get("tolerance"), dict) and claim["tolerance"].get("judged_under")
    if not old:
        return verdict_word(claim)
    if "would not stand" in str(old):
        return verdict_word(claim) + " *(old rules; would not stand under the current ones)*"
    return verdict_word(claim) + " *(old rules)*"


def _plain(text: object) -> str:
    """``text`` on one line with Markdown's link brackets escaped, so that a statement's
    ``[...] [...]`` reads as text, not as a reference link."""
    return " ".join(str(text).split()).replace("[", "\\[").replace("]", "\\]")


def _require_run(block: str, experiment: str, data: dict[str, dict]) -> None:
    """Refuse (`InputError`) a ``publish:BLOCK`` of an experiment with no published run, naming
    the published ones."""
    if experiment not in data:
        raise InputError(
            f"publish:{block} {experiment}: no {DATA}/{experiment}/summary.json; "
            f"published runs: {', '.join(sorted(data)) or 'none'}"
        )


def claims_table(experiment: str, data: dict[str, dict]) -> list[str]:
    """Every claim of one published run: kind, measured value, 95% interval, rule and verdict (and
    the verdict over the set-up space where a claim has ``robustness``), then the claims'
    statements and the run's provenance (`provenance()`).

    Parameters
    ----------
    experiment : str
        The experiment whose published run is tabulated.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines.

    Raises
    ------
    InputError
        When ``data`` has no run of ``experiment`` (naming the published ones).
    """

    _require_run("claims", experiment, data)
    summary = data[experiment]
    robust = any(c.get("robustness") for c in summary.get("claims", []))
    lines = [
        "| claim | kind | measured | 95% interval | rule | verdict |"
        + (" over the set-up space |" if robust else ""),
        "|---|---|---|---|---|---|" + ("---|" if robust else ""),
    ]
    for claim in summary.get("claims", []):
        lines.append(
            f"| `{claim['id']}` | {claim.get('kind', 'check')} | "
            f"{_fmt(claim.get('measured'))} | {_fmt(claim.get('interval'))} | "
            f"{_rule(claim)} | {_word(claim)} |" + (f" {_robust_cell(claim)} |" if robust else "")
        )
    notes = [
        f"- `{c['id']}`: {_plain(c['statement'])}"
        for c in summary.get("claims", [])
        if c.get("statement")
    ]
    return [
        *lines,
        "",
        *(["Statements:", "", *notes, ""] if notes else []),
        provenance(experiment, summary),
    ]


def readings_table(experiment: str, data: dict[str, dict]) -> list[str]:
    """Every finding of one published run with its rule, primary estimate and interval, verdict,
    power and verdict under each reading; then its checks and measurements, then its provenance
    (`provenance()`).

    Parameters
    ----------
    experiment : str
        The experiment whose published run is tabulated.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines.

    Raises
    ------
    InputError
        When ``data`` has no run of ``experiment`` (naming the published ones).
    """
    from .harness import verdict_word

    _require_run("readings", experiment, data)
    claims = data[experiment].get("claims", [])
    robust = any(c.get("robustness") for c in claims)
    lines = [
        "| finding | rule | primary estimate [95% interval] | verdict | power | verdict per "
        "reading |" + (" over the set-up space |" if robust else ""),
        "|---|---|---|---|---|---|" + ("---|" if robust else ""),
    ]
    for c in (c for c in claims if c.get("kind") == "finding"):
        power = _fmt(c.get("power")) + (" (underpowered)" if c.get("underpowered") else "")
        readings = "; ".join(f"{k}: {v}" for k, v in (c.get("readings") or {}).items())
        lines.append(
            f"| `{c['id']}` | `{c.get('rule', '-')}` | {_fmt(c.get('measured'))} "
            f"{_fmt(c.get('interval'))} | **{_word(c)}** | {power} | "
            f"{readings or '-'} |" + (f" {_robust_cell(c)} |" if robust else "")
        )
    lines += ["", "| check or measurement | value | status |", "|---|---|---|"]
    for c in (c for c in claims if c.get("kind") != "finding"):
        lines.append(f"| `{c['id']}` | {_fmt(c.get('measured'))} | {verdict_word(c)} |")
    return [*lines, "", provenance(experiment, data[experiment])]


def breakdown_table(experiment: str, data: dict[str, dict]) -> list[str]:
    """Every finding of one published run with its verdict per value of each set-up dimension the
    run records (``tolerance.by_<dimension>``: ``{value: verdict}``; marked with the earlier rule
    where ``gaugedyn rejudge`` changed the finding's rule but could not judge these again,
    ``tolerance.breakdown_judged_under``), then the provenance.

    Parameters
    ----------
    experiment : str
        The experiment whose published run is tabulated.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines; a sentence saying so when no finding records a dimension.

    Raises
    ------
    InputError
        When ``data`` has no run of ``experiment`` (naming the published ones).
    """
    from .harness import verdict_word

    _require_run("breakdown", experiment, data)
    findings = [c for c in data[experiment].get("claims", []) if c.get("kind") == "finding"]
    dims: list[str] = []
    for c in findings:
        for key, value in (c.get("tolerance") or {}).items():
            if key.startswith("by_") and isinstance(value, dict) and key not in dims:
                dims.append(key)
    if not dims:
        lines = ["This run records no verdict per set-up dimension (no `tolerance.by_*`)."]
        return [*lines, "", provenance(experiment, data[experiment])]
    names = [d.removeprefix("by_").replace("_", " ") for d in dims]
    lines = [
        "| finding | verdict | " + " | ".join(f"per {n}" for n in names) + " |",
        "|---|---|" + "---|" * len(dims),
    ]
    for c in findings:
        tol = c.get("tolerance") or {}
        old = tol.get("breakdown_judged_under")
        note = f" (judged by {old} before the run was re-judged)" if old else ""
        cells = [
            "; ".join(f"{k}: {v}" for k, v in tol[d].items()) + note
            if isinstance(tol.get(d), dict)
            else "-"
            for d in dims
        ]
        lines.append(f"| `{c['id']}` | **{verdict_word(c)}** | " + " | ".join(cells) + " |")
    return [*lines, "", provenance(experiment, data[experiment])]


def _robust_cell(claim: dict) -> str:
    from .harness import robustness_text

    return robustness_text(claim.get("robustness")).replace("|", "\\|")


def robustness_table(experiment: str, data: dict[str, dict]) -> list[str]:
    """Every finding of one published run over its declared set-up space (a published multiverse):
    verdict, number of specifications, share per verdict, robust or not, the constants that flip
    it; then the specifications and the provenance.

    Parameters
    ----------
    experiment : str
        The experiment whose published run is tabulated.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines; one sentence when no run of ``experiment`` is published, or one
        saying how to publish a multiverse when the run was not judged over its set-up space.
    """
    from .harness import FINDING_WORDS, verdict_word

    if experiment not in data:
        return [f"No full run of `{experiment}` is published yet."]
    summary = data[experiment]
    findings = [c for c in summary.get("claims", []) if c.get("kind") == "finding"]
    if not any(c.get("robustness") for c in findings):
        return [
            f"The published run of `{experiment}` was not judged over its set-up space "
            f"(`gaugedyn multiverse simulations/{experiment}.toml`, then `gaugedyn publish "
            "--add` of its folder, publishes one).",
            "",
            provenance(experiment, summary),
        ]
    words = " / ".join(FINDING_WORDS)
    lines = [
        f"| finding | verdict | specifications | share {words} | robust | flipped by |",
        "|---|---|---|---|---|---|",
    ]
    for c in findings:
        r = c.get("robustness") or {}
        shares = " / ".join(
            f"{100 * float(r.get('shares', {}).get(w, 0)):.0f}%" for w in FINDING_WORDS
        )
        lines.append(
            f"| `{c['id']}` | {verdict_word(c)} | {r.get('specifications', '-')} | {shares} | "
            f"{'yes' if r.get('robust') else '**no**'} | "
            f"{', '.join(r.get('flipping') or []) or '-'} |"
        )
    specs = (summary.get("multiverse") or {}).get("specifications", [])
    lines += ["", f"Specifications ({len(specs)}):", ""]
    lines += [f"- {s['id']} ({s['kind']}): {s['status']}" for s in specs]
    return [*lines, "", provenance(experiment, summary)]


def _declared(experiment: str):
    from .harness import make_config, resolve_experiment

    try:
        exp = resolve_experiment(experiment, f"publish:controls {experiment}")
    except InputError as err:
        raise InputError(f"publish: {err}") from None
    return exp, make_config(exp)


def controls_table(experiment: str) -> list[str]:
    """The experiment's declared known-answer controls at its full configuration: instrument,
    control, kind, case (the known answer) and what it proves.

    Parameters
    ----------
    experiment : str
        A registered experiment name.

    Returns
    -------
    list of str
        The Markdown lines; one sentence when the experiment declares no controls.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment.
    """
    from .harness import declared_controls

    exp, cfg = _declared(experiment)
    controls = declared_controls(exp, cfg.params)
    if not controls:
        return [f"`{experiment}` declares no known-answer controls."]
    lines = [
        "| instrument | control | kind | case (known answer) | proves |",
        "|---|---|---|---|---|",
    ]
    for c in controls:
        lines.append(
            f"| {_fmt(c.instrument, 10_000)} | `{c.id}` | {c.kind} | {_fmt(c.case, 10_000)} | "
            f"{_fmt(c.proves, 10_000)} |"
        )
    return lines


def space_table(experiment: str) -> list[str]:
    """The experiment's declared set-up space: each constant's default, alternatives or range (with
    its scale), and why they are plausible.

    Parameters
    ----------
    experiment : str
        A registered experiment name.

    Returns
    -------
    list of str
        The Markdown lines; one sentence when the experiment declares no set-up space.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment.
    """
    exp, cfg = _declared(experiment)
    if not cfg.space:
        return [f"`{experiment}` declares no set-up space."]
    lines = ["| constant | default | alternatives or range | why plausible |", "|---|---|---|---|"]
    for name, choice in cfg.space.items():
        d = choice.describe(cfg.params[name])
        alt = (
            f"[{_fmt(d['lo'])}, {_fmt(d['hi'])}] ({d['scale']})"
            if "lo" in d
            else ", ".join(_fmt(v) for v in d["values"])
        )
        lines.append(f"| `{name}` | {_fmt(d['default'])} | {alt} | {_fmt(d['why'], 10_000)} |")
    return lines


def sentences_table(experiment: str, data: dict[str, dict]) -> list[str]:
    """The paper's sentences against the findings that test them (the experiment's declared
    ``sentences``: sentence -> finding names), each finding of the published run with its
    verdict and its robustness over the declared set-up space; then the provenance.

    Parameters
    ----------
    experiment : str
        A registered experiment name.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines (a sentence whose findings are not in the run reads "not run"); one
        sentence when no run of ``experiment`` is published.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment or declares no sentences.
    """
    from .harness import verdict_word

    exp, _ = _declared(experiment)
    sentences = dict(getattr(exp, "sentences", {}) or {})
    if not sentences:
        raise InputError(f"publish:sentences {experiment}: the experiment declares no sentences")
    if experiment not in data:
        return [f"No full run of `{experiment}` is published yet."]
    claims = [c for c in data[experiment].get("claims", []) if c.get("kind") == "finding"]
    lines = [
        "| the abstract says | finding | verdict | over the declared space |",
        "|---|---|---|---|",
    ]
    for sentence, names in sentences.items():
        rows = [c for c in claims if c["id"].split("[")[0] in names]
        if not rows:
            lines.append(f"| {sentence} | {', '.join(f'`{n}`' for n in names)} | not run | - |")
        for i, c in enumerate(rows):
            lines.append(
                f"| {sentence if i == 0 else ''} | `{c['id']}` | {verdict_word(c)} | "
                f"{_robust_cell(c)} |"
            )
    return [*lines, "", provenance(experiment, data[experiment])]


def result_tables(experiment: str, data: dict[str, dict]) -> list[str]:
    """The experiment's own result tables (`gaugedyn.harness.Experiment.result_tables()`) from
    its published run, then the provenance.

    Parameters
    ----------
    experiment : str
        A registered experiment name.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines; one sentence when no run of ``experiment`` is published.

    Raises
    ------
    InputError
        When ``experiment`` is not a registered experiment.
    """
    exp, _ = _declared(experiment)
    if experiment not in data:
        return [f"No full run of `{experiment}` is published yet."]
    summary = data[experiment]
    return [*exp.result_tables(summary), "", provenance(experiment, summary)]


def published_arrays(run: Path, summary: dict) -> dict[str, object]:
    """The arrays the run's experiment publishes (`gaugedyn.harness.Experiment.published_arrays`),
    read from the run's ``arrays.npz`` checked against its ``arrays_sha256``, as JSON values
    (non-finite numbers as ``"nan"``, ``"inf"``); empty when it declares none. A run folder
    without ``arrays.npz`` whose summary already carries them (re-judged from a published
    summary, `gaugedyn rejudge`) keeps those.

    Parameters
    ----------
    run : Path
        The run folder (holding ``summary.json`` and, for a run just made, ``arrays.npz``).
    summary : dict
        The run's summary as read from that folder.

    Returns
    -------
    dict of str to object
        Array name -> its values as nested lists (empty when the experiment publishes none).

    Raises
    ------
    InputError
        When the run has no ``arrays.npz``, it does not match the summary's checksum, or it
        lacks a declared array.
    """
    from ._json import strict
    from .harness import load_arrays, resolve_experiment

    name = str(summary.get("experiment"))
    try:
        exp = resolve_experiment(name, f"publish: {name}")
    except InputError:  # registered, but not loadable as an Experiment: it declares none
        return {}
    names = tuple(exp.published_arrays)
    if not names:
        return {}
    kept = summary.get("published_arrays")
    if not (run / "arrays.npz").exists() and isinstance(kept, dict) and set(names) <= set(kept):
        return {n: kept[n] for n in names}  # a re-judged run keeps the arrays it was added with
    try:
        arrays = load_arrays(run, summary)
    except InputError as err:
        raise InputError(
            f"--add {run}: {name} publishes the arrays {', '.join(names)}, read from the run's "
            f"arrays.npz ({err})"
        ) from None
    missing = [n for n in names if n not in arrays]
    if missing:
        raise InputError(
            f"--add {run}: arrays.npz lacks {', '.join(missing)}, which {name} publishes "
            "(rerun it with the current code)"
        )
    return {n: strict(arrays[n]) for n in names}


def figures_block(
    experiment: str,
    data: dict[str, dict],
    here: Path,
    root: Path,
    pending: Collection[Path] = (),
) -> list[str]:
    """Every figure of one published run, each image linking to itself (a wide figure opens at full
    size) above the caption its summary gives, then its provenance.

    Parameters
    ----------
    experiment : str
        The experiment whose published run's figures are shown.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).
    here : Path
        The folder of the Markdown file the block is written into (the image links are relative
        to it).
    root : Path
        The repository root; the images are ``docs/figures/<experiment>/<name>.png``, copied there
        by ``--add``.
    pending : collection of Path
        Figure files about to be written by the same ``publish`` (counted as present).

    Returns
    -------
    list of str
        The Markdown lines.

    Raises
    ------
    InputError
        When ``data`` has no run of ``experiment``, or one of its PNG figures is neither under
        ``docs/figures/<experiment>/`` nor pending.
    """
    _require_run("figures", experiment, data)
    lines = []
    for fig in data[experiment].get("figures", []):
        for png in (f for f in fig.get("files", []) if f.endswith(".png")):
            path = root / FIGURES / experiment / Path(png).name
            if not path.is_file() and path not in pending:
                raise InputError(
                    f"publish:figures {experiment}: {path} is missing; rerun "
                    f"gaugedyn publish --add on the run"
                )
            rel = os.path.relpath(path, here).replace(os.sep, "/")
            caption = " ".join(str(fig.get("caption", fig.get("name", ""))).split())
            # the image links to itself: a wide figure opens at full size
            lines += [f"[![{fig.get('name', '')}]({rel})]({rel})", "", f"*{caption}*", ""]
    return [*lines, provenance(experiment, data[experiment])]


def verdict_counts(summaries: list[dict]) -> dict[str, int]:
    """Checks passed / failed, findings HELD / NOT HELD / UNRESOLVED / depends on the reading, and
    measurements over some summaries.

    Parameters
    ----------
    summaries : list of dict
        Run summaries, each with its ``claims``.

    Returns
    -------
    dict of str to int
        The count per verdict word of `gaugedyn.harness.verdict_word()`: ``"PASS"``, ``"FAIL"``,
        each of `gaugedyn.harness.FINDING_WORDS` and ``"MEASURED"`` (every key present).
    """
    from .harness import FINDING_WORDS, verdict_word

    counts = dict.fromkeys(("PASS", "FAIL", *FINDING_WORDS, "MEASURED"), 0)
    for summary in summaries:
        for claim in summary.get("claims", []):
            counts[verdict_word(claim)] += 1
    return counts


def systems_table(data: dict[str, dict], here: Path, root: Path) -> list[str]:
    """One row per paper of `gaugedyn.papers.PAPERS`: its page, its published full runs, checks and
    finding verdicts, and how many of its HELD and NOT HELD verdicts would be expected to be wrong
    by chance (`gaugedyn.harness.expected_wrong()`, from each finding's audited rates in
    ``results-data/audit-rules/audit.json``); then the line defining that last column.

    Parameters
    ----------
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).
    here : Path
        The folder of the Markdown file the table is written into (the page links are relative
        to it).
    root : Path
        The repository root (``docs/`` and the audit are found there).

    Returns
    -------
    list of str
        The Markdown lines.
    """
    from .harness import expected_wrong, read_audit

    audit = read_audit(root)
    lines = [
        "| system | paper | full runs published | checks passed | findings: HELD / NOT "
        "HELD / UNRESOLVED / depends on the reading | expected wrong by chance |",
        "|---|---|---|---|---|---|",
    ]
    for paper in PAPERS:
        page = os.path.relpath(root / "docs" / paper.page, here).replace(os.sep, "/")
        title = f"*{paper.title}*" if paper.title else paper.subject
        runs = [e for e in paper.experiments if e in data]
        if not runs:
            lines.append(f"| [{paper.name}]({page}) | {title} | none yet | - | - | - |")
            continue
        c = verdict_counts([data[e] for e in runs])
        checks = f"{c['PASS']} of {c['PASS'] + c['FAIL']}" if c["PASS"] + c["FAIL"] else "no checks"
        findings = [
            (e, claim)
            for e in runs
            for claim in data[e].get("claims", [])
            if claim.get("kind") == "finding"
        ]
        wrong = expected_wrong(findings, audit)
        lines.append(
            f"| [{paper.name}]({page}) | {title} | {', '.join(f'`{e}`' for e in runs)} "
            f"| {checks} | {c['HELD']} / {c['NOT HELD']} "
            f"/ {c['UNRESOLVED']} / {c['depends on the reading']} "
            f"| {wrong:.2f} of {c['HELD'] + c['NOT HELD']} |"
        )
    return [
        *lines,
        "",
        "Expected wrong by chance: the sum, over the HELD and NOT HELD verdicts, of the "
        "probability that the finding's rule says that word with its parameter exactly on the "
        "threshold (the least favourable truth), as audited on resamples of the finding's own "
        "values (the `audit-rules` command; 2.5% where the audit has no row for it).",
    ]


def _names(ids: list[str]) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:HEADLINE_NAMES])
    more = len(ids) - HEADLINE_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def headline(paper, data: dict[str, dict]) -> str:
    """One sentence for one paper from its published full runs: how many findings held and which,
    which did not, how many are unresolved or depend on the reading, and the checks.

    Parameters
    ----------
    paper : Paper
        One of `gaugedyn.papers.PAPERS` (its ``name`` and ``experiments`` are used).
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    str
        The Markdown sentence (at most `HEADLINE_NAMES` findings named per verdict, then "and N
        more"); "no full run is published yet" when none of its experiments is in ``data``.
    """
    from .harness import verdict_word

    runs = [e for e in paper.experiments if e in data]
    if not runs:
        return f"**{paper.name}**: no full run is published yet."
    claims = [c for e in runs for c in data[e].get("claims", [])]
    by_word: dict[str, list[str]] = {}
    for claim in claims:
        by_word.setdefault(verdict_word(claim), []).append(str(claim["id"]))
    findings = sum(len(by_word.get(w, [])) for w in ("HELD", "NOT HELD", "UNRESOLVED")) + len(
        by_word.get("depends on the reading", [])
    )
    held, failed = by_word.get("HELD", []), by_word.get("NOT HELD", [])
    parts = [
        f"{len(held)} of {findings} findings held" + (f" ({_names(held)})" if held else ""),
        (f"{len(failed)} did not ({_names(failed)})" if failed else "none failed"),
    ]
    if by_word.get("UNRESOLVED"):
        n = len(by_word["UNRESOLVED"])
        parts.append(f"{n} {'is' if n == 1 else 'are'} unresolved at the declared sample sizes")
    if by_word.get("depends on the reading"):
        n = len(by_word["depends on the reading"])
        parts.append(f"{n} {'depends' if n == 1 else 'depend'} on the reading")
    checks = len(by_word.get("PASS", [])) + len(by_word.get("FAIL", []))
    tail = f"; {len(by_word.get('PASS', []))} of {checks} checks passed" if checks else ""
    return f"**{paper.name}**: " + ", ".join(parts) + tail + "."


def headlines_block(data: dict[str, dict]) -> list[str]:
    """One headline per paper (`headline()`), then the one-line definitions (`DEFINITIONS`).

    Parameters
    ----------
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`).

    Returns
    -------
    list of str
        The Markdown lines: a list item per paper of `gaugedyn.papers.PAPERS`, a blank line and the
        definitions.
    """
    return [*(f"- {headline(paper, data)}" for paper in PAPERS), "", *DEFINITIONS]


def blocks(lines: list[str], path: Path) -> list[tuple[int, int, str, str | None]]:
    """The marked blocks of a file's lines. Every opening marker must be closed before the next one
    opens, and every closing marker must close one.

    Parameters
    ----------
    lines : list of str
        The file's lines.
    path : Path
        The file, named in the errors.

    Returns
    -------
    list of tuple of (int, int, str, str or None)
        ``(opening line, closing line, kind, argument)`` per block, 0-based, in order; the argument
        is the experiment (``None`` for ``systems`` and ``headlines``).

    Raises
    ------
    InputError
        Naming the marker and its line, before anything is rendered: when a marker opens before
        the last one closed, an opening marker is not one of the allowed kinds (or gives an
        experiment to ``systems``/``headlines``, or none to another kind), a closing marker closes
        nothing, or the last marker is never closed.
    """
    out: list[tuple[int, int, str, str | None]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        text = line.strip()
        opening = text.startswith("<!-- publish:")
        if opening and start is not None:
            raise InputError(
                f"{path}:{start + 1}: '{lines[start].strip()}' has no closing '{_CLOSE}' before "
                f"the next marker at line {i + 1}; add it, nothing was written"
            )
        if opening:
            match = _OPEN.match(text)
            if (
                match is None
                or match[1] not in _KINDS
                or (match[1] in ("systems", "headlines")) == bool(match[2])
            ):
                raise InputError(
                    f"{path}:{i + 1}: '{text}': allowed are 'publish:claims EXPERIMENT', "
                    "'publish:readings EXPERIMENT', 'publish:breakdown EXPERIMENT', "
                    "'publish:extensions EXPERIMENT', 'publish:figures EXPERIMENT', "
                    "'publish:robustness EXPERIMENT', 'publish:controls EXPERIMENT', "
                    "'publish:space EXPERIMENT', 'publish:sentences EXPERIMENT', "
                    "'publish:tables EXPERIMENT', "
                    "'publish:systems' and 'publish:headlines'"
                )
            start = i
        elif text == _CLOSE:
            if start is None:
                raise InputError(
                    f"{path}:{i + 1}: '{_CLOSE}' closes no '<!-- publish:... -->' marker; "
                    "nothing was written"
                )
            match = _OPEN.match(lines[start].strip())
            assert match is not None
            out.append((start, i, match[1], match[2]))
            start = None
    if start is not None:
        raise InputError(
            f"{path}:{start + 1}: '{lines[start].strip()}' has no closing '{_CLOSE}'; add it, "
            "nothing was written"
        )
    return out


def render(
    text: str,
    path: Path,
    root: Path,
    data: dict[str, dict],
    pending: Collection[Path] = (),
    added: Mapping[str, Mapping[str, dict]] | None = None,
) -> str:
    """``text`` with every marked table regenerated (markers kept, bodies replaced); the markers are
    checked first (`blocks()`).

    Parameters
    ----------
    text : str
        A Markdown file's content.
    path : Path
        The file (named in errors; its folder anchors relative links).
    root : Path
        The repository root.
    data : dict of str to dict
        The published runs, experiment -> summary (`load_published()`), with the runs being added.
    pending : collection of Path
        Figure files about to be written (`figures_block()`).
    added : mapping of str to mapping of str to dict, optional
        Extension runs being added, experiment -> extension -> summary.

    Returns
    -------
    str
        The regenerated text (unchanged outside the markers).

    Raises
    ------
    InputError
        When the markers are malformed (`blocks()`) or a table cannot be made from ``data`` (its
        run or a figure is missing, its experiment is not registered).
    """
    lines = text.split("\n")
    out: list[str] = []
    last = 0
    for start, end, kind, arg in blocks(lines, path):
        out += lines[last : start + 1]
        if kind == "claims":
            body = claims_table(str(arg), data)
        elif kind == "robustness":
            body = robustness_table(str(arg), data)
        elif kind == "controls":
            body = controls_table(str(arg))
        elif kind == "space":
            body = space_table(str(arg))
        elif kind == "sentences":
            body = sentences_table(str(arg), data)
        elif kind == "tables":
            body = result_tables(str(arg), data)
        elif kind == "readings":
            body = readings_table(str(arg), data)
        elif kind == "breakdown":
            body = breakdown_table(str(arg), data)
        elif kind == "extensions":
            body = extensions_table(str(arg), root, data, added)
        elif kind == "figures":
            body = figures_block(str(arg), data, path.parent, root, pending)
        elif kind == "headlines":
            body = headlines_block(data)
        else:
            body = systems_table(data, path.parent, root)
        out += ["", *body, "", lines[end]]
        last = end + 1
    return "\n".join(out + lines[last:])


def _nav_title(title: str) -> str:
    """``title`` as a YAML mapping key: plain where YAML reads it back unchanged, else quoted."""
    if _PLAIN_TITLE.fullmatch(title) and title == title.strip():
        return title
    return json.dumps(title, ensure_ascii=False)


def nav_entries(root: Path) -> list[tuple[str, str]]:
    """``(title, page)`` of every system's pages, in the order of the declarations.

    Parameters
    ----------
    root : Path
        The repository root (the pages are under ``root/docs/``).

    Returns
    -------
    list of tuple of (str, str)
        Each page's navigation title and its path relative to ``docs/``.

    Raises
    ------
    InputError
        When a system declares a page that is not a file under ``docs/``, naming its
        ``system.toml``.
    """
    entries = []
    for paper in PAPERS:
        for title, page in paper.nav_entries:
            if not (root / "docs" / page).is_file():
                raise InputError(
                    f"experiments/{paper.system}/system.toml declares the page "
                    f"{page!r}, which is not in docs/; write docs/{page}"
                )
            entries.append((title, page))
    return entries


def render_nav(text: str, path: Path, root: Path) -> str:
    """``text`` (``mkdocs.yml``) with the systems' navigation between ``# publish:nav`` and
    ``# /publish`` regenerated from the declarations (markers kept, entries replaced at the
    opening marker's indentation).

    Parameters
    ----------
    text : str
        The content of ``mkdocs.yml``.
    path : Path
        The file, named in errors.
    root : Path
        The repository root (`nav_entries()`).

    Returns
    -------
    str
        The regenerated text.

    Raises
    ------
    InputError
        When ``text`` has no ``# publish:nav`` line or more than one, when it is not closed by a
        ``# /publish`` line, or when a declared page is missing (`nav_entries()`).
    """
    lines = text.split("\n")
    opens = [i for i, line in enumerate(lines) if _NAV_OPEN.match(line)]
    if len(opens) != 1:
        raise InputError(
            f"{path}: needs exactly one '# publish:nav' comment line where the "
            f"systems' pages are listed, found {len(opens)}"
        )
    start = opens[0]
    end = next((j for j in range(start + 1, len(lines)) if lines[j].strip() == _NAV_CLOSE), None)
    if end is None:
        raise InputError(f"{path}: '# publish:nav' has no closing '{_NAV_CLOSE}'")
    match = _NAV_OPEN.match(lines[start])
    indent = match.group(1) if match else ""
    body = [f"{indent}- {_nav_title(title)}: {page}" for title, page in nav_entries(root)]
    return "\n".join([*lines[: start + 1], *body, *lines[end:]])


def plan(root: Path, adds: Sequence[Path] = ()) -> dict[Path, tuple[bytes, bool]]:
    """Every file a ``publish`` (with the runs ``adds`` added) would write: the added runs'
    summaries and figures, every marked table, and the navigation in ``mkdocs.yml``. Every check
    (the runs, the committed summaries, the markers, the figures) runs here; nothing is written.

    Parameters
    ----------
    root : Path
        The repository root.
    adds : sequence of Path
        Run folders to add first (`prepare_run()`); a declared extension's run replaces the stored
        run of that extension.

    Returns
    -------
    dict of Path to tuple of (bytes, bool)
        ``{path: (content, whether it changes)}``: a file changes when it does not exist or its
        bytes differ.

    Raises
    ------
    InputError
        When a committed summary is malformed (`load_published()`), a run to add is refused
        (`read_run()`), or a file's markers or tables cannot be rendered (`render()`,
        `render_nav()`).
    """
    root = Path(root)
    data = load_published(root)
    files: dict[Path, bytes] = {}
    added: dict[str, dict[str, dict]] = {}
    for run in adds:
        summary, writes = prepare_run(Path(run), root)
        ext = extension_of(summary)
        if ext is None:
            data[summary["experiment"]] = summary
        else:
            added.setdefault(summary["experiment"], {})[ext] = summary
        files.update(writes)
    site = root / SITE  # first: a missing declared page is refused before the tables' work
    nav = render_nav(site.read_text(), site, root).encode() if site.is_file() else None
    pending = set(files)
    for path in published_files(root):
        files[path] = render(path.read_text(), path, root, data, pending, added).encode()
    if nav is not None:
        files[site] = nav
    return {
        path: (data_, not path.is_file() or path.read_bytes() != data_)
        for path, data_ in files.items()
    }


def publish(root: Path, check: bool = False, adds: Sequence[Path] = ()) -> list[Path]:
    """Regenerate every marked table under ``root`` and, where ``root`` has a ``mkdocs.yml``, its
    navigation of the systems' pages, after adding the runs ``adds``. Everything is checked before
    anything is written (`plan()`); the files are then written atomically, all or none
    (`write_all()`).

    Parameters
    ----------
    root : Path
        The repository root.
    check : bool
        Write nothing, only list what would change (``gaugedyn publish --check``).
    adds : sequence of Path
        Run folders to add first (``--add``).

    Returns
    -------
    list of Path
        The files that changed (written, or with ``check`` only listed).

    Raises
    ------
    InputError
        When `plan()` refuses a run, a committed summary or a marker; nothing is written then.
    """
    changes = plan(root, adds)
    stale = [path for path, (_, changed) in changes.items() if changed]
    if not check:
        write_all({path: changes[path][0] for path in stale})
    return stale


# --- command line ---------------------------------------------------------------------------


def register(sub) -> None:
    """Add the ``publish`` subcommand (``--check``, ``--add RUN``, ``--root``) to the command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the ``gaugedyn`` parser (``parser.add_subparsers()``).
    """
    p = sub.add_parser(
        "publish",
        help="result tables of README and docs from results-data/",
        description="Regenerate the README's and the docs' result tables from the "
        f"committed runs in {DATA}/ (between <!-- publish:... --> "
        "markers).",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming every table that does not match its run",
    )
    p.add_argument(
        "--add",
        metavar="RUN",
        type=Path,
        action="append",
        default=[],
        help=f"first copy a full run's summary.json into {DATA}/ (repeatable)",
    )
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.set_defaults(func=_main)


def _main(args) -> int:
    root = args.root
    if not (root / DATA).is_dir() and not args.add:
        raise InputError(f"--root {root}: no {DATA}/ folder there; run from the repository root")
    if args.check and args.add:
        raise InputError("--check and --add exclude each other: --check writes nothing")
    wheres = [stored_at(read_run(run, root)) for run in args.add]
    twice = sorted({str(w) for w in wheres if wheres.count(w) > 1})
    if twice:
        raise InputError(f"--add names two runs of {', '.join(twice)}; add one run each")
    stale = publish(root, check=args.check, adds=args.add)
    for run, where in zip(args.add, wheres):
        print(f"added {run} as {root / DATA / where / 'summary.json'}")
    for path in stale:
        verb = (
            "stale (does not match results-data/ or the declared systems; run gaugedyn publish)"
            if args.check
            else "rewritten"
        )
        print(f"{path}: {verb}", file=sys.stderr if args.check else sys.stdout)
    return 1 if args.check and stale else 0
