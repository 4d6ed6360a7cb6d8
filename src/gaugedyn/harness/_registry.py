"""The systems and their experiments, by name: the only place the harness learns of a system.

Each system is a folder under `gaugedyn.experiments` that declares itself once, in its
``system.toml`` (read here as data: the harness never imports a system to learn of it): the
paper it reproduces, its experiments in report order, its documentation page and the page's
title in the site's navigation. From these declarations come

- `DECLARATIONS`: system name -> `System`;
- `SYSTEMS`: system name -> the names of its experiments;
- `EXPERIMENTS`: experiment name -> the module that defines its ``EXPERIMENT``
  (``gaugedyn.experiments.<system>.<name>``);
- the papers (`gaugedyn.papers.PAPERS`) and the navigation's *Systems* section of
  ``mkdocs.yml`` (``gaugedyn publish``; ``--check`` fails on a stale one).

`SYSTEM_NAMES` lists the folders, in the order of the papers' tables. The harness imports an
experiment's module only when a configuration names it, and a helper module in a system folder
needs no prefix: only the modules the declarations name define experiments
(``tests/test_structure.py`` checks both ways).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from .._errors import InputError

SYSTEM_NAMES: tuple[str, ...] = (
    "gauge",
    "adam_split",
    "adam_state",
    "prototypes",
    "adam_stability",
    "conservation",
    "auxiliary",
)
"""The system folders under ``gaugedyn/experiments/``, each with its ``system.toml``."""

DECLARATION = "system.toml"
"""The file name of a system's declaration, in its folder."""

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_PAGE = re.compile(r"[A-Za-z0-9_./-]+\.md")


@dataclass(frozen=True)
class System:
    """One system: the paper (or pair of papers) it reproduces, its experiments, its pages.

    ``system`` is the folder name; ``name`` the paper's short name (tables, reports); ``title``
    and ``authors`` are ``None`` where the source material does not give them (then ``subject``
    alone identifies the paper); ``experiments`` are the names of the modules of the folder that
    define an ``EXPERIMENT``, in report order; ``page`` is the system's page under ``docs/`` and
    ``nav`` its title in the site's navigation; ``more_pages`` are further ``(title, page)``
    entries listed under it there.
    """

    system: str
    name: str
    title: str | None
    authors: tuple[str, ...] | None
    subject: str
    experiments: tuple[str, ...]
    page: str
    nav: str
    more_pages: tuple[tuple[str, str], ...] = ()

    @property
    def nav_entries(self) -> tuple[tuple[str, str], ...]:
        """``(title, page)`` of every page of this system in the site's navigation, in order."""
        return ((self.nav, self.page), *self.more_pages)


_KEYS = {"name", "title", "authors", "subject", "experiments", "docs"}
_REQUIRED = ("name", "subject", "experiments", "docs")
_DOCS_KEYS = {"page", "nav", "more"}


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where} = {value!r} is not allowed; allowed: a non-empty string")
    return " ".join(value.split())


def _page(where: str, value: Any) -> str:
    if not isinstance(value, str) or not _PAGE.fullmatch(value) or ".." in value.split("/"):
        raise InputError(
            f"{where} = {value!r} is not allowed; allowed: a Markdown page under "
            "docs/ (e.g. 'systems/gauge.md')"
        )
    return value


def parse_system(system: str, text: str, where: str | None = None) -> System:
    """The `System` declared by ``text`` (a ``system.toml``) for folder ``system``.

    Refused (`InputError`, naming the file and the key) when a key is unknown
    or missing, a value has the wrong type, an experiment name is not a module name, or the
    system declares no experiment.

    Parameters
    ----------
    system : str
        The system's folder name under ``gaugedyn/experiments/``.
    text : str
        The declaration's TOML: ``name``, ``subject``, ``experiments`` and a ``[docs]`` table
        (``page``, ``nav``, optionally ``more``) required; ``title`` and ``authors`` optional.
    where : str, optional
        The file as error messages name it; ``None``: ``experiments/<system>/system.toml``.

    Returns
    -------
    System
        The declaration, its texts with runs of whitespace collapsed.

    Raises
    ------
    InputError
        When ``text`` is not valid TOML, a key is unknown or missing, a text is empty,
        ``authors`` is not a non-empty list, ``experiments`` is not a non-empty list of distinct
        module names, or ``[docs]`` is malformed or names a page that is not a ``.md`` path under
        ``docs/``.
    """
    where = where or f"experiments/{system}/{DECLARATION}"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{where}: not valid TOML ({err})") from None
    unknown = sorted(set(data) - _KEYS)
    missing = [k for k in _REQUIRED if k not in data]
    if unknown or missing:
        raise InputError(
            f"{where}: unknown keys {unknown}, missing keys {missing}; allowed: "
            f"{', '.join(sorted(_KEYS))} (title and authors may be left out)"
        )
    authors = data.get("authors")
    if authors is not None and (not isinstance(authors, list) or not authors):
        raise InputError(
            f"{where}: authors = {authors!r} is not allowed; allowed: a non-empty "
            "list of names, or no authors key"
        )
    experiments = data["experiments"]
    if (
        not isinstance(experiments, list)
        or not experiments
        or not all(isinstance(e, str) and _IDENTIFIER.fullmatch(e) for e in experiments)
        or len(set(experiments)) != len(experiments)
    ):
        raise InputError(
            f"{where}: experiments = {experiments!r} is not allowed; allowed: a "
            "non-empty list of distinct module names (lower case, digits, _)"
        )
    docs = data["docs"]
    if not isinstance(docs, dict) or set(docs) - _DOCS_KEYS or not {"page", "nav"} <= set(docs):
        raise InputError(
            f"{where}: [docs] = {docs!r} is not allowed; allowed: a table with "
            "page, nav and optionally more = [{nav = ..., page = ...}, ...]"
        )
    more = docs.get("more", [])
    if not isinstance(more, list) or not all(
        isinstance(m, dict) and set(m) == {"nav", "page"} for m in more
    ):
        raise InputError(
            f"{where}: docs.more = {more!r} is not allowed; allowed: a list of "
            "tables {nav = 'title', page = 'page.md'}"
        )
    return System(
        system=system,
        name=_text(f"{where}: name", data["name"]),
        title=_text(f"{where}: title", data["title"]) if "title" in data else None,
        authors=None if authors is None else tuple(_text(f"{where}: authors", a) for a in authors),
        subject=_text(f"{where}: subject", data["subject"]),
        experiments=tuple(experiments),
        page=_page(f"{where}: docs.page", docs["page"]),
        nav=_text(f"{where}: docs.nav", docs["nav"]),
        more_pages=tuple(
            (
                _text(f"{where}: docs.more.nav", m["nav"]),
                _page(f"{where}: docs.more.page", m["page"]),
            )
            for m in more
        ),
    )


def read_system(system: str) -> System:
    """The declaration ``gaugedyn/experiments/<system>/system.toml``, read as data.

    Parameters
    ----------
    system : str
        The system's folder name under ``gaugedyn/experiments/`` (one of `SYSTEM_NAMES` for
        the shipped systems).

    Returns
    -------
    System
        The parsed declaration (`parse_system()`).

    Raises
    ------
    InputError
        When the folder has no ``system.toml``, or its declaration is refused by
        `parse_system()`.
    """
    path = files("gaugedyn") / "experiments" / system / DECLARATION
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"system {system!r} has no declaration: experiments/{system}/{DECLARATION} is missing"
        ) from None
    return parse_system(system, text)


def _declarations(names: tuple[str, ...]) -> dict[str, System]:
    out = {name: read_system(name) for name in names}
    seen: dict[str, str] = {}
    for system in out.values():
        for experiment in system.experiments:
            if experiment in seen:
                raise InputError(
                    f"experiment {experiment!r} is declared by two systems: "
                    f"{seen[experiment]} and {system.system}"
                )
            seen[experiment] = system.system
    return out


DECLARATIONS: dict[str, System] = _declarations(SYSTEM_NAMES)
"""Every system's declaration, in the order of `SYSTEM_NAMES`."""

SYSTEMS: dict[str, tuple[str, ...]] = {
    name: system.experiments for name, system in DECLARATIONS.items()
}
"""System name -> the names of its experiments, in report order."""

EXPERIMENTS: dict[str, str] = {
    name: f"gaugedyn.experiments.{system}.{name}"
    for system, names in SYSTEMS.items()
    for name in names
}
"""Experiment name -> the module that defines its ``EXPERIMENT``."""


def system_of(name: str) -> str:
    """The system folder of experiment ``name`` (a key of `EXPERIMENTS`)."""
    return EXPERIMENTS[name].split(".")[2]
