"""A test-only experiment: seeded tasks that sleep briefly, optionally fail or diverge.

Importable by subprocesses through ``PYTHONPATH=tests`` as ``toy_experiments:TOY``. When the
environment variable ``TOY_LOG`` names a file, every task appends ``<index>`` to it as it starts,
so a test can count how often each task was computed. ``TOY_SLOW_ANALYSIS`` and
``TOY_SLOW_FIGURES`` (seconds) make the analysis and the figures pause, after creating the file
``analysis`` or ``figures`` in the folder ``TOY_MARK`` names, so a test can interrupt a run there.
"""

from __future__ import annotations

import os
import time

import numpy as np

from gaugedyn import DivergenceError
from gaugedyn.experiments import Choice, Claim, Control, Experiment, Param
from gaugedyn.plotting import save_figure, subplots
from gaugedyn.stats import Measure


def _index_list(v) -> bool:
    return isinstance(v, list) and all(type(i) is int and 0 <= i < 10_000 for i in v)


def _pause(phase: str) -> None:
    mark = os.environ.get("TOY_MARK")
    if mark:
        open(os.path.join(mark, phase), "w").close()
    time.sleep(float(os.environ.get(f"TOY_SLOW_{phase.upper()}", "0")))


class Toy(Experiment):
    name = "toy"
    description = "Sums of seeded Gaussian draws, one task per index."
    captions = {"draws": "Sum of the draws of each task."}
    definitions = {"s": "sum of the task's draws"}
    params = {
        "n_tasks": Param(int, 6, quick=3, check=lambda v: 1 <= v <= 200, allowed="1 to 200"),
        "size": Param(int, 8, check=lambda v: 1 <= v <= 10_000, allowed="1 to 10000"),
        "scale": Param(float, 1.0, check=lambda v: v > 0, allowed="a positive number"),
        "sleep": Param(float, 0.0, check=lambda v: 0 <= v <= 2, allowed="0 to 2 (seconds)"),
        "fail_on": Param(list, [], check=_index_list, allowed="a list of task indices"),
        "diverge_on": Param(list, [], check=_index_list, allowed="a list of task indices"),
        "crash_on": Param(list, [], check=_index_list, allowed="a list of task indices"),
        "bound": Param(float, 1e6, check=lambda v: v > 0, allowed="a positive number"),
        "gauge": Param(str, "w", check=lambda v: v in ("w", "a"), allowed="'w' or 'a'"),
    }

    def tasks(self, config):
        return [
            {
                "i": i,
                "size": config["size"],
                "scale": config["scale"],
                "sleep": config["sleep"],
                "fail": i in config["fail_on"],
                "diverge": i in config["diverge_on"],
                **({"crash": True} if i in config["crash_on"] else {}),
            }
            for i in range(config["n_tasks"])
        ]

    def run_task(self, task, seed):
        log = os.environ.get("TOY_LOG")
        if log:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{task['i']}\n".encode())
            finally:
                os.close(fd)
        if task["sleep"]:
            time.sleep(task["sleep"])
        time.sleep(float(os.environ.get("TOY_SLOW_TASK", "0")))
        if task.get("crash"):
            import multiprocessing

            if multiprocessing.parent_process() is not None:
                os._exit(3)  # a worker process dying hard (segfault, out-of-memory kill)
            raise RuntimeError("crash_on runs only in worker processes")
        if task["fail"]:
            raise RuntimeError(f"task {task['i']} was told to fail")
        x = np.random.default_rng(seed).standard_normal(task["size"]) * task["scale"]
        if task["diverge"]:
            raise DivergenceError("loss", 1.25, 17, last_state=x[:3])
        return {"x": x, "s": float(x.sum()), "i": task["i"], "note": None}

    def analyse(self, config, tasks, results, seed):
        _pause("analysis")
        s = np.array([r["s"] for r in results])
        x = np.stack([r["x"] for r in results])
        assert all(r["note"] is None for r in results)
        biggest = float(np.abs(s).max())
        claims = [
            Claim(
                "bounded",
                "every task's sum stays below the bound",
                biggest,
                0.0,
                config["bound"],
                biggest < config["bound"],
            ),
        ]
        return {"s": s, "x": x, "i": np.array([r["i"] for r in results])}, claims, {"max": biggest}

    def plot(self, arrays, config, outdir):
        _pause("figures")
        fig, ax = subplots()
        ax.plot(arrays["i"], arrays["s"], "o-")
        ax.set_xlabel("task")
        ax.set_ylabel("sum")
        return [save_figure(fig, outdir, "draws")]


TOY = Toy()


def toml_value(value) -> str:
    """A TOML literal for a test value (strings as JSON strings, which TOML also reads)."""
    import json
    import math

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def to_toml(data: dict) -> str:
    """A TOML document for a configuration mapping (top-level scalars, then tables)."""
    import json

    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{json.dumps(key)} = {toml_value(value)}")
    for key, table in tables:
        lines.append(f"[{json.dumps(key)}]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def config_text(seed: int = 0, quick: dict | None = None, **params) -> str:
    data = {"experiment": "toy_experiments:TOY", "seed": seed, "params": params}
    if quick is not None:
        data["quick"] = quick
    return to_toml(data)


def invoke(argv, capsys) -> tuple[int, str, str]:
    """``gaugedyn ARGV`` in this process: exit code, stdout, stderr."""
    from gaugedyn.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _mean_readout(values, broken: bool = False) -> float:
    """The toy's instrument: the mean of a sample (``broken``: its median, which agrees with the
    mean on a symmetric sample and not on a skewed one)."""
    values = np.asarray(values, dtype=float)
    return float(np.median(values)) if broken else float(values.mean())


class Judged(Experiment):
    """A toy with one finding (the draws' mean exceeds a declared threshold), a declared set-up
    space (the threshold and the number of draws) and known-answer controls of its readout;
    ``broken`` breaks the readout (a median in place of the mean), so its positive control (a
    skewed sample) fails and its negative one (a symmetric sample) still passes."""

    name = "judged"
    description = "Means of seeded Gaussian draws with a shift, judged against a threshold."
    params = {
        "seeds": Param(int, 8, quick=5, lo=2, hi=100, why="a toy"),
        "draws": Param(int, 20, lo=1, hi=1000, why="a toy"),
        "shift": Param(float, 1.0, lo=-10, hi=10, why="a toy"),
        "threshold": Param(float, 0.0, lo=-10, hi=10, why="a toy"),
        "broken": Param(bool, False),
    }
    measures = {
        "mean_positive": Measure(
            "symmetric",
            "per seed, the mean of the draws",
            0.5,
            why="a toy: half a draw's standard deviation above the threshold",
        )
    }
    space = {
        "threshold": Choice(lo=-0.5, hi=2.0, why="the paper says only 'positive'"),
        "draws": Choice(values=(10, 40), why="any sample size resolves the mean"),
    }

    def controls(self, config):
        broken = bool(config["broken"])

        def known(values, target):
            return lambda: (
                m := _mean_readout(values, broken),
                abs(m - target) < 1e-12,
            )

        return [
            Control(
                "readout.planted",
                "mean readout",
                "positive",
                "draws 1, 2, 6 (mean 3)",
                "the readout returns a sample's mean",
                known([1.0, 2.0, 6.0], 3.0),
            ),
            Control(
                "readout.none",
                "mean readout",
                "negative",
                "draws -1, 0, 1 (mean 0)",
                "a sample without shift reads zero",
                known([-1.0, 0.0, 1.0], 0.0),
            ),
        ]

    def tasks(self, config):
        return [
            {"seed_index": s, "draws": config["draws"], "shift": config["shift"]}
            for s in range(config["seeds"])
        ]

    def run_task(self, task, seed):
        x = np.random.default_rng(seed).standard_normal(task["draws"]) + task["shift"]
        return {"x": x}

    def analyse(self, config, tasks, results, seed):
        from gaugedyn.harness import judged
        from gaugedyn.stats import judge, measure_of

        measure = measure_of(self.measures, "mean_positive")
        means = [_mean_readout(r["x"], bool(config["broken"])) for r in results]
        j = judge(measure.rule("threshold"), means, threshold=config["threshold"], direction=">")
        claim = judged(
            "mean_positive", f"the mean exceeds {config['threshold']:g}", j, measure=measure
        )
        return {"means": np.array(means)}, [claim]

    def plot(self, arrays, config, outdir):
        return []


JUDGED = Judged()
