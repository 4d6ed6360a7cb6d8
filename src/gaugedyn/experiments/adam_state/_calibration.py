"""The stored calibration of ``shared_representation``: a quick run previews the full one.

The calibration stage searches the candidate family (`._selection.family()`) for one set-up
(a candidate and the update route's loss weight ``w*``) by its defining properties only. A quick configuration has fewer
calibration seeds, so its own search can choose a different set-up, and then its verdicts are
about another experiment. So the full configuration's choice is stored as data, in
``calibration.json`` beside this module, written by `write()` (``python -m
gaugedyn.experiments.adam_state._calibration simulations/shared_representation.toml``) with the
command, the date and the settings it was made under; every run with ``setup = "search"``
whose set-up settings (`SETUP_KEYS`: everything but the seed counts, the horizon and the
record interval) equal the stored ones reuses that choice, and says so. A run recalibrates
instead when asked (``recalibrate = true``), or when its settings differ from the stored ones
(an extension such as ``--set beta2=0.9`` defines another set-up family; the record names the
keys that differ) and from those of every other family's calibration stored beside it
(`OTHER_FAMILIES`: ``--set beta2=0.9 --out .../calibration.beta2-0.9.json`` stores one, with
the same seed rule, so a run with those settings reuses it and, like the full run, is one task
per table, each resumable, instead of one task that calibrates and measures). A run that narrows the family (``--set d_Z=3``, ``--set acquisition=rate``)
with every other set-up setting equal reuses the stored rows of the candidates it keeps and
applies the same choice rule to them (source ``"stored subset"``), and says so.

The calibration's seed (`calibration_seed()`) is derived from the root seed and the set-up
settings alone (with the calibration seed count), never from settings the calibration does not
read (the confirmatory seed count, the horizon, the margins): a run with ``recalibrate = true``
and the stored file's settings calibrates from the stored file's seed, at any seed count of the
confirmatory stage. The stored file records the seed, the command, the date and the code's
commit; `reproduce()` reruns a record's calibration and says whether every number agrees.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

from ._selection import _as_list

STORED = Path(__file__).with_name("calibration.json")
"""The full configuration's calibration (committed with the package)."""
OTHER_FAMILIES = "calibration.*.json"
"""The calibrations of other set-up families stored beside `STORED` (Table 3's extensions,
``calibration.<name>.json``, `._extensions.calibration_file()`): a run whose set-up settings
equal one's reuses it as it reuses `STORED`."""
NOT_SETUP = (
    "recalibrate",
    "pulse",
    "seeds",
    "calibration_seeds",
    "horizon",
    "record_every",
    "margin",
    "control_margin",
    "control_period",
)
FAMILY_KEYS = ("acquisition", "d_Z", "lr", "readout")
"""The family's dimensions (lists): a run may narrow them and reuse the stored rows."""
"""Parameters that do not define the set-up family: the seed counts (a quick run has fewer),
the continued-opposition horizon, the formation record interval, the findings' margins
(measured or applied after the choice), a fixed primary pulse strength (every declared strength
is measured in the calibration) and the weight-history control's alternation period (the
control is grown after the choice; the calibration grows only the two main routes)."""
SEED_LABEL = "shared_representation calibration"


def calibration_seed(config: dict, keys, root: int):
    """The calibration's seed: `gaugedyn._meta.task_seed()` of the root seed, the label
    `SEED_LABEL`, the set-up settings ``keys`` and the calibration seed count of
    ``config`` (nothing else, so no setting the calibration does not read changes it)."""
    from ..._meta import task_seed

    settings = {k: _plain(config[k]) for k in keys} | {
        "calibration_seeds": config["calibration_seeds"]
    }
    return task_seed(int(root), SEED_LABEL, settings)


def seed_record(seed) -> dict:
    """A ``SeedSequence`` as data (``entropy``, ``spawn_key``), so a record names its seed."""
    return {"entropy": int(seed.entropy), "spawn_key": [int(k) for k in seed.spawn_key]}


def setup_keys(params: dict) -> tuple[str, ...]:
    """The parameters that define the set-up family (every declared one but `NOT_SETUP`)."""
    return tuple(k for k in params if k not in NOT_SETUP)


def stored(path: Path = STORED) -> dict | None:
    """The stored calibration record, or ``None`` when there is none."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None


def plan(config: dict, keys, path: Path = STORED) -> dict:
    """How a run with ``config`` gets its set-up: ``{"source": "stored", ...the record...}``,
    ``{"source": "stored subset", ...}`` (a narrowed family: the stored rows of the kept
    candidates, chosen again by the same rule), or ``{"source": "calibrate", "reason": ...}``
    (asked to recalibrate, no stored record, or set-up settings that differ)."""
    if config.get("recalibrate"):
        return {"source": "calibrate", "reason": "recalibrate = true"}
    for where in (Path(path), *sorted(Path(path).parent.glob(OTHER_FAMILIES))):
        rec = stored(where)
        if rec is not None and all(
            _plain(config.get(k)) == _plain(rec["settings"].get(k)) for k in keys
        ):
            from ._selection import choose, choose_readings

            rows = rec["candidates"]
            return {
                "source": "stored",
                "file": where.name,
                **rec,
                **choose(rows),
                "readings": choose_readings(rows),
            }
    record = stored(path)
    if record is None:
        return {"source": "calibrate", "reason": f"no stored calibration ({Path(path).name})"}
    differ = [k for k in keys if _plain(config.get(k)) != _plain(record["settings"].get(k))]
    narrowed = [
        k
        for k in differ
        if k in FAMILY_KEYS
        and set(_plain(_as_list(config[k]))) <= set(_plain(_as_list(record["settings"].get(k, []))))
    ]
    if narrowed == differ:
        from ._selection import choose, choose_readings, family

        names = {c["name"] for c in family(config)}
        rows = [r for r in record["candidates"] if r["name"] in names]
        if len(rows) == len(names):
            return {
                "source": "stored subset",
                "file": Path(path).name,
                **record,
                "candidates": rows,
                **choose(rows),
                "readings": choose_readings(rows),
                "narrowed": {k: config[k] for k in narrowed},
            }
    return {
        "source": "calibrate",
        "reason": "the stored calibration was made under other "
        "set-up settings ("
        + ", ".join(
            f"{k} = {record['settings'].get(k)!r} there, {config.get(k)!r} here" for k in differ
        )
        + ")",
    }


def _plain(v):
    return json.loads(json.dumps(v))


def describe(cal: dict) -> str:
    """One sentence saying where the run's set-up came from (for the report)."""
    n = len(cal.get("candidates", []))
    if cal.get("choice"):
        choice = (
            f"set-up {cal['choice']} with w* = {cal['w_star']:g}, the one of {n} "
            f"candidates chosen by the rule ({cal['rule']})"
        )
        others = {
            m: r for m, r in (cal.get("readings") or {}).items() if r.get("choice") != cal["choice"]
        }
        if others:
            choice += "; per acquisition meaning (each a reading): " + "; ".join(
                f"{m}: {r['choice']} with w* = {r['w_star']:g}"
                if r.get("choice")
                else f"{m}: no candidate with every defining property"
                for m, r in others.items()
            )
    else:
        choice = (
            f"no set-up: {cal['rule']} among {n} candidates; measured: "
            f"{cal['measured']} with w* = {cal['w_star']:g}"
        )
    if cal.get("source") in ("stored", "stored subset"):
        sub = (
            (
                " (the family narrowed to "
                + ", ".join(f"{k} = {v}" for k, v in cal["narrowed"].items())
                + "; the stored rows of those candidates)"
            )
            if cal.get("narrowed")
            else ""
        )
        return (
            f"{choice}, from the stored full calibration{sub} ({cal['file']}: "
            f"{cal['calibration_seeds']} calibration seeds, written {cal['date']} by "
            f"`{cal['command']}`), not recalibrated in this run"
        )
    return f"{choice}, calibrated in this run ({cal.get('reason', 'calibration')})"


def write(
    toml: str, overrides=(), path: Path = STORED, command: str | None = None, workers: int = 1
) -> dict:
    """Run the calibration stage of the full configuration of ``toml`` (with ``overrides``) as
    a run with ``recalibrate = true`` would, and store its choice at ``path``; ``workers > 1``
    runs the formations in that many processes (the same record)."""
    from ...harness import load_config

    cfg = load_config(toml, overrides=[*overrides, "recalibrate=true"])
    task = cfg.tasks[0]
    keys = setup_keys(cfg.params)
    seed = calibration_seed(task, keys, cfg.seed)
    cal = run_calibration(task, seed, workers)
    record = {
        "choice": cal["choice"],
        "measured": cal["measured"],
        "w_star": cal["w_star"],
        "strength": cal["strength"],
        "rule": cal["rule"],
        "readings": cal["readings"],
        "levels": cal["levels"],
        "candidates": cal["candidates"],
        "calibration_seeds": task["calibration_seeds"],
        "root_seed": cfg.seed,
        "seed": seed_record(seed),
        "settings": {k: task[k] for k in keys},
        "command": command
        or "python -m gaugedyn.experiments.adam_state._calibration "
        + " ".join(shlex.quote(a) for a in (toml, *(w for o in overrides for w in ("--set", o)))),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "code_version": _code_version(),
        "seed_derivation": "gaugedyn._meta.task_seed(root_seed, "
        f"{SEED_LABEL!r}, the set-up settings and calibration_seeds)",
    }
    Path(path).write_text(json.dumps(record, indent=1) + "\n")
    return record


def _code_version() -> dict:
    from ...publish import code_version

    return code_version(Path(__file__).resolve().parents[4])


def run_calibration(task: dict, seed, workers: int = 1) -> dict:
    """The calibration stage on ``task`` from ``seed`` (``workers`` processes; the same
    record at any count)."""
    from . import _stages as ss

    if workers > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(
            workers, mp_context=mp.get_context("spawn"), initializer=_one_thread
        ) as pool:
            cal = ss.calibrate(task, seed, map_=pool.map)
    else:
        _one_thread()
        cal = ss.calibrate(task, seed)
    return cal


RECORD_KEYS = ("choice", "measured", "w_star", "strength", "rule", "readings", "candidates")
"""The numbers of a stored record that a rerun of its calibration must give bit for bit."""


def reproduce(record: dict, workers: int = 1) -> list[str]:
    """Rerun the calibration of ``record`` (its settings, calibration seed count and stored
    seed) and return the keys of `RECORD_KEYS` whose values differ (empty: reproduced bit
    for bit; floats compared exactly through their JSON text)."""
    import numpy as np

    seed = np.random.SeedSequence(
        record["seed"]["entropy"], spawn_key=tuple(record["seed"]["spawn_key"])
    )
    task = dict(record["settings"]) | {"calibration_seeds": record["calibration_seeds"]}
    cal = run_calibration(task, seed, workers)
    return [k for k in RECORD_KEYS if json.dumps(cal.get(k)) != json.dumps(record.get(k))]


def rederive(record: dict) -> list[str]:
    """What a record's stored rows no longer give: each candidate's defining properties from
    its stored intervals and levels (`._selection.properties()`), its eligibility, its primary
    strength from its stored dose fractions (`._selection.primary_strength()`), then the
    selection (`._selection.choose()`) and each meaning's (`._selection.choose_readings()`) from
    the rows. Empty: the record's selection follows from its own stored values (seconds; the
    rerun of `reproduce()` checks the values themselves)."""
    from . import _stages as ss

    out = []
    rows = record["candidates"]
    for r in rows:
        props = ss.properties(r, record["levels"])
        if props != r["properties"] or all(props.values()) != r["eligible"]:
            out.append(f"{r['name']}: properties")
        if r.get("dose") and ss.primary_strength(r["dose"]) != r.get("strength"):
            out.append(f"{r['name']}: strength")
    chosen = ss.choose(rows)
    out += [k for k, v in chosen.items() if json.dumps(v) != json.dumps(record.get(k))]
    if json.dumps(ss.choose_readings(rows)) != json.dumps(record.get("readings")):
        out.append("readings")
    return out


DOSE_LINE = (0.0, 1e-06, 0.001, 0.005, 0.01, 0.02, 0.05)
"""The points ``a`` of the strength line `dose_line()` measures: its end ``a = 0`` (no label
is masked there, so no mask is drawn and the pulse's later batches differ from the other
points'), ``a = 1e-6`` (the limit on the same batches), two points between it and the weakest
declared strength, then ``hint``, ``trace`` and ``faint`` (whose stored fractions the
measurement must give again)."""


def dose_line(record: dict, name: str, a_values=DOSE_LINE) -> dict:
    """The strength line's removed fractions for candidate ``name`` of a stored calibration
    ``record`` (`._stages.dose_line()` from the record's settings, calibration seeds, seed and
    ``w*``), with the record's stored fractions beside them (seconds to a minute: one
    formation)."""
    import numpy as np

    from . import _stages as ss

    rows = {r["name"]: r for r in record["candidates"]}
    if name not in rows:
        raise ValueError(f"no candidate {name!r} in the record; it has {sorted(rows)}")
    row = rows[name]
    seed = np.random.SeedSequence(
        record["seed"]["entropy"], spawn_key=tuple(record["seed"]["spawn_key"])
    )
    hp = dict(record["settings"]) | {"calibration_seeds": record["calibration_seeds"]}
    _one_thread()
    cand = {k: row[k] for k in ("acquisition", "d_Z", "lr", "eval", "name")}
    return {
        "candidate": name,
        "w_star": row["w_star"],
        "pulse_steps": hp["pulse_steps"],
        "line": ss.dose_line(hp, seed, cand, row["w_star"], a_values),
        "stored": row.get("dose"),
    }


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)  # tiny batched kernels: extra threads only add contention


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="store the full calibration of shared_representation")
    p.add_argument("config", help="the configuration file (simulations/shared_representation.toml)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an override of the configuration (a full run's settings by default)",
    )
    p.add_argument(
        "--out",
        default=str(STORED),
        help="where to store the record (another family's, e.g. an extension's: "
        "calibration.<name>.json beside calibration.json, which runs with its settings reuse)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        choices=range(1, 65),
        metavar="N",
        help="processes for the formations (1 to 64; the same record)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="re-derive the stored record's selection from its stored rows, then rerun its "
        "calibration from its stored seed and say whether every number agrees bit for bit "
        "(exit 1 if not)",
    )
    p.add_argument(
        "--rederive",
        action="store_true",
        help="only re-derive the stored record's properties, primary strengths and selection "
        "from its stored rows (seconds; exit 1 if they differ)",
    )
    p.add_argument(
        "--dose-line",
        metavar="CANDIDATE",
        help="grow the stored record's CANDIDATE again and print, per point a of the strength "
        "line down to a = 0 (and for the update-formed route's own formation loss), the "
        "fraction of each route's specialization the combined pulse removes (JSON)",
    )
    args = p.parse_args(argv)
    if args.dose_line:
        record = stored(Path(args.out))
        if record is None or "seed" not in record:
            print(f"{args.out}: no record with a stored seed", file=sys.stderr)
            return 2
        names = [r["name"] for r in record["candidates"]]
        if args.dose_line not in names:
            print(
                f"--dose-line {args.dose_line!r}: not a candidate of {args.out}; "
                f"one of {', '.join(names)}",
                file=sys.stderr,
            )
            return 2
        print(json.dumps(dose_line(record, args.dose_line), indent=1))
        return 0
    if args.check or args.rederive:
        record = stored(Path(args.out))
        if record is None or "seed" not in record:
            print(f"{args.out}: no record with a stored seed to check", file=sys.stderr)
            return 2
        wrong = rederive(record)
        print(
            f"{args.out}: selection "
            + ("re-derived from the stored rows" if not wrong else f"differs in {wrong}")
        )
        if wrong or args.rederive:
            return 1 if wrong else 0
        differ = reproduce(record, workers=args.workers)
        print(
            f"{args.out}: " + ("reproduced bit for bit" if not differ else f"differs in {differ}")
        )
        return 1 if differ else 0
    record = write(args.config, args.set, Path(args.out), workers=args.workers)
    print(f"stored {args.out}: {describe(record | {'source': 'stored', 'file': args.out})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
