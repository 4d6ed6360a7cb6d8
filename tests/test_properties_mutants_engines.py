"""Properties of the engines written for generated mutants that survived the suite
(``tools/mutate.py --generated --select coverage``; the record is
``tools/mutation-data/generated.json``): each fails on the mutant named beside it."""

from __future__ import annotations

from gaugedyn.theory import single, solve


def test_gd_progress_reports_one_total_and_the_steps_done_when_it_stops_early():
    # theory:_methods:346:8:swap (the last report's done and total swapped)
    calls = []
    sol = solve(
        single(10, "w-heavy"),
        dynamics="gd",
        eta=0.5,
        t_max=3000,
        stop_at_specialization=True,
        progress=lambda done, total: calls.append((done, total)),
    )
    steps = sol.diagnostics["nsteps"]
    total = calls[0][1]
    assert steps < total  # the run stopped at specialization, before its last step
    assert all(t == total for _, t in calls)
    assert calls[-1] == (steps, total)
    assert all(0 <= d <= total for d, _ in calls)
