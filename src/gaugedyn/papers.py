"""The papers gaugedyn reproduces and the declared experiments that test each one.

One entry per system: its key (the folder name the experiments of that system live under), the
paper's title and authors as the sources name them, a one-line description, the page of the
documentation site; the experiments whose claims test it are its system's in the harness's
registry (:data:`gaugedyn.harness.SYSTEMS`). The
README's and the site's tables of systems (``gaugedyn publish``) are generated from this map.

Where the source material names no title or no authors, the entry says so (``None``) rather
than guessing one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .harness._registry import SYSTEMS


@dataclass(frozen=True)
class Paper:
    """One reproduced paper (or pair of papers) and the experiments that test it.

    ``title`` and ``authors`` are ``None`` where the source material does not give them; then
    ``subject`` alone identifies the paper.
    """

    system: str
    name: str
    title: str | None
    authors: tuple[str, ...] | None
    subject: str
    page: str

    @property
    def experiments(self) -> tuple[str, ...]:
        """The experiments of this paper's system, as the harness's registry lists them."""
        return SYSTEMS[self.system]


PAPERS: tuple[Paper, ...] = (
    Paper(
        system="gauge",
        name="Hidden gauge in ReLU networks",
        title="Hidden Gauge Controls Feature Specialization in ReLU Networks",
        authors=("Tongxi Wang",),
        subject="a rescaling gauge invisible to the initial function sets which duplicate neuron "
                "owns a teacher feature, and when",
        page="systems/gauge.md",
    ),
    Paper(
        system="adam_split",
        name="Tied-beta Adam",
        title="Why β1 = β2 Is Dynamically Special in Adam",
        authors=None,
        subject="Adam's update splits into a sign part, a magnitude-lag part that vanishes "
                "exactly when beta1 = beta2, and remainders",
        page="systems/tied-beta-adam.md",
    ),
    Paper(
        system="adam_state",
        name="Second-moment structure in shared representations",
        title="Matched Specialization, Different Adaptation: Second-Moment Structure in Shared "
              "Representations",
        authors=("Toru Takahashi",),
        subject="networks matched in their measured specialization adapt differently because of "
                "the second moment Adam carries",
        page="systems/shared-representation.md",
    ),
    Paper(
        system="prototypes",
        name="Prototype specialization in minimal Gaussian MLPs",
        title="From Latent Space to Training Data: Explainable Specialization in Minimal MLPs",
        authors=("Alba", "López-Rubio"),
        subject="structural losses make the hidden units of a Gaussian-activation MLP readable "
                "as prototypes of the training inputs",
        page="systems/prototypes.md",
    ),
    Paper(
        system="adam_stability",
        name="Adam stability: loss spikes and the edge of stability",
        title=None,
        authors=None,
        subject="two papers: a linear boundary 1 - beta2 = C (1 - beta1) between spiky and "
                "smooth Adam training, and full-batch Adam at the edge of stability through the "
                "active curvature and gradient reversal",
        page="systems/adam-stability.md",
    ),
    Paper(
        system="conservation",
        name="Symmetries and conservation laws",
        title=None,
        authors=None,
        subject="a geometric framework relating parameter symmetries to conservation laws of "
                "gradient flow, with complete characterizations for attention, polynomial and "
                "square deep linear networks",
        page="systems/conservation-laws.md",
    ),
)


def paper_of(experiment: str) -> Paper:
    """The paper an experiment tests (``KeyError`` naming it for an unmapped experiment)."""
    for paper in PAPERS:
        if experiment in paper.experiments:
            return paper
    raise KeyError(f"experiment {experiment!r} belongs to no paper in gaugedyn.papers.PAPERS")
