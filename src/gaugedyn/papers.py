"""The papers gaugedyn reproduces and the declared experiments that test each one.

One paper (or pair of papers) per system, as the system declares it in its folder's
``system.toml`` (`gaugedyn.harness.DECLARATIONS`): its key (the folder name the
experiments of that system live under), the paper's title and authors as the sources name them,
a one-line description, its experiments and the page of the documentation site. The README's and
the site's tables of systems and the site's navigation (``gaugedyn publish``) are generated from
this tuple.

Where the source material names no title or no authors, the entry says so (``None``) rather
than guessing one.
"""

from __future__ import annotations

from .harness import DECLARATIONS
from .harness import System as Paper

__all__ = ["PAPERS", "Paper", "paper_of"]

PAPERS: tuple[Paper, ...] = tuple(DECLARATIONS.values())
"""Every system's paper, in the order of `gaugedyn.harness.SYSTEM_NAMES`."""


def paper_of(experiment: str) -> Paper:
    """The paper an experiment tests.

    Parameters
    ----------
    experiment : str
        An experiment's name, as in ``simulations/<name>.toml``.

    Returns
    -------
    Paper
        The entry of ``PAPERS`` whose ``experiments`` name it.

    Raises
    ------
    KeyError
        Naming the experiment, when no paper claims it.
    """
    for paper in PAPERS:
        if experiment in paper.experiments:
            return paper
    raise KeyError(f"experiment {experiment!r} belongs to no paper in gaugedyn.papers.PAPERS")
