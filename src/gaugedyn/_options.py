"""Settings declared once (engine arguments, command-line options and configuration keys): type,
bounds with their reason, choices, help and default; and the checks every command runs before it
allocates or computes anything.

A `Param` (shared with the configurations of declared experiments) turns the text a user
typed into a value or raises `InputError` with one line naming the option, the value and
what is allowed (for numbers the closed or open range and, for the upper bound, why it is there).
An engine declares its arguments as ``PARAMS: dict[str, Param]`` beside its code and checks them
with `Param.accept()`; a command line adds each one with `Param.add_to()`, so its help
text, bounds and default are those of the declaration.
`check_memory()` refuses a request whose estimated memory exceeds what this machine has
available, quoting the estimate, and `check_work()` one whose estimated time on one core
exceeds about a day. `check_writable_folder()` checks that a folder can be created (or
written) by creating and removing a probe folder, so a run cannot compute for minutes and then
fail to store anything.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import math
import numbers
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import InputError

MAX_SEED = 2**64 - 1
_SHOW = 40
DECLARED: Any = object()
"""The default of `Param.add_to()`: the option's default is the declaration's."""


def show(text: object) -> str:
    """``repr`` of a user's text, shortened to one line of at most 40 characters."""
    r = repr(text).encode("ascii", "backslashreplace").decode()
    return r if len(r) <= _SHOW else r[: _SHOW - 4] + "...'"


@dataclass(frozen=True)
class Param:
    """One setting, declared once: type, bounds and why, choices, lengths, default, quick value
    and help. Configuration keys (`gaugedyn.harness`) and command-line options (``solve``,
    ``train``, ...) are both ``Param``; the check, the error text and the documentation are
    derived from the declaration:

    - ``lo`` / ``hi``: inclusive bounds of a number, or of every element of a list
      (``lo_open`` / ``hi_open`` make them strict). Every numeric setting has an ``hi``;
      ``why`` says in a few words why the upper bound is where it is (quoted in the error);
    - ``choices``: the allowed values of a string (or of every element of a list of strings);
    - ``min_len`` / ``max_len``: the length of a list; ``distinct``: no repeated elements;
      ``item``: the type of every element of a list (``int`` excludes booleans and floats;
      ``float`` admits integers);
    - ``check`` / ``allowed``: an extra predicate and its words, for what bounds cannot say.

    - ``name``: the command-line option's name (``--name`` with ``-`` for ``_``);
      ``hi_text``: how to write the upper bound in words (``2**64 - 1``); ``help``: what the
      setting is, in a few words; ``metavar``: the placeholder of its value in a usage line.

    `validate()` returns ``None`` for an allowed value (already of the right type) and
    otherwise the text of what is allowed; `parse()` turns text a user typed into the value or
    raises `InputError` with one line naming the option, the value and what is allowed;
    `accept()` does the same for a Python argument; `describe()` is that text, used in
    errors, in the documentation and (`add_to()`) in a command's ``--help``.
    """

    type: type | tuple[type, ...]
    default: Any = None
    quick: Any = None
    check: Callable[[Any], bool] | None = None
    allowed: str = ""
    help: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    why: str = ""
    choices: tuple[str, ...] | None = None
    min_len: int | None = None
    max_len: int | None = None
    distinct: bool = False
    item: builtins.type | None = None
    name: str = ""
    hi_text: str = ""
    metavar: str = ""

    def _range_text(self) -> str:
        if self.lo is None and self.hi is None:
            return ""
        left = "(" if self.lo_open else "["
        right = ")" if self.hi_open else "]"
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = self.hi_text or ("inf" if self.hi is None else f"{self.hi:g}")
        return f"in {left}{lo}, {hi}{right}"

    def describe(self) -> str:
        """What is allowed, in words (derived from the declaration unless ``allowed`` is set)."""
        if self.allowed:
            return self.allowed
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        parts = []
        if list in types:
            size = []
            if self.min_len is not None:
                size.append(f"at least {self.min_len}")
            if self.max_len is not None:
                size.append(f"at most {self.max_len}")
            nouns: dict[builtins.type | None, str] = {
                int: "integers",
                float: "numbers",
                str: "strings",
            }
            noun = nouns.get(self.item, "values")
            what = f"distinct {noun}" if self.distinct else noun
            parts.append(f"a list of {' and '.join(size) or 'any number of'} {what}")
            if self.choices is not None:
                parts.append("each one of " + ", ".join(self.choices))
            elif self._range_text():
                parts.append("each " + self._range_text())
        elif self.choices is not None:
            parts.append("one of " + ", ".join(self.choices))
        else:
            if types == (int,):
                kind = "an integer"
            elif types == (bool,):
                kind = "a boolean"
            elif types == (str,):
                kind = "a string"
            else:
                kind = "a number"
            parts.append(f"{kind} {self._range_text()}".rstrip())
        text = ", ".join(parts)
        if self.why and self.hi is not None:
            text += f" (upper bound: {self.why})"
        return text

    def _item_ok(self, x: Any) -> bool:
        if self.item is None:
            return True
        if isinstance(x, bool):
            return self.item is bool
        if self.item is float:
            return isinstance(x, int | float)
        return isinstance(x, self.item)

    def _in_range(self, x: Any) -> bool:
        if self.choices is not None:
            return isinstance(x, str) and x in self.choices
        if isinstance(x, bool) or not isinstance(x, int | float):
            return self.lo is None and self.hi is None
        if self.lo is not None and (x < self.lo or (self.lo_open and x == self.lo)):
            return False
        if self.hi is not None and (x > self.hi or (self.hi_open and x == self.hi)):
            return False
        return True

    def validate(self, value: Any) -> str | None:
        """``None`` if ``value`` (already of the right type) is allowed, else `describe()`."""
        items = value if isinstance(value, list) else [value]
        ok = all(self._in_range(x) for x in items)
        if isinstance(value, list):
            ok = ok and all(self._item_ok(x) for x in items)
        if isinstance(value, list):
            ok = ok and (self.min_len is None or len(value) >= self.min_len)
            ok = ok and (self.max_len is None or len(value) <= self.max_len)
            if self.distinct:
                try:
                    ok = ok and len(set(value)) == len(value)
                except TypeError:
                    ok = False
        if ok and self.check is not None:
            try:
                ok = bool(self.check(value))
            except InputError as err:  # the check names its cause: keep it
                return f"{self.describe()}; here: {' '.join(str(err).split())}"
            except Exception:
                ok = False
        return None if ok else self.describe()

    @property
    def flag(self) -> str:
        """The command-line flag: ``--name`` with ``-`` for ``_``."""
        return "--" + self.name.replace("_", "-")

    def help_text(self, default: Any = None, required: bool = False, default_text: str = "") -> str:
        """The help of the command-line option: ``help``, what is allowed (`describe()`) and
        the default (``default_text`` where the default is computed, not a value)."""
        text = f"{self.help}: {self.describe()}" if self.help else self.describe()
        if required:
            return text + "; required"
        if default_text:
            return f"{text}; default: {default_text}"
        if default is not None:
            return f"{text}; default: {value_text(default)}"
        return text

    def add_to(
        self,
        parser: argparse.ArgumentParser | argparse._ArgumentGroup,
        *,
        default: Any = DECLARED,
        required: bool = False,
        default_text: str = "",
    ) -> argparse.Action:
        """Add this setting to ``parser`` as the option `flag`, its help derived from the
        declaration (`help_text()`) and its value kept as the text the user typed, for
        `parse()` to check before any work (one `InputError`, exit status 2).

        ``default``: the option's default, by default the declaration's (``None``: not given);
        ``default_text``: the words for a default the command computes (``0.5 / (s D)``)."""
        value = self.default if default is DECLARED else default
        help_ = self.help_text(value, required, default_text).replace("%", "%%")
        return parser.add_argument(
            self.flag, default=value, required=required, metavar=self.metavar or None, help=help_
        )

    def error(self, text: object, reason: str = "", label: str | None = None) -> InputError:
        extra = f" ({reason})" if reason else ""
        return InputError(
            f"{label or self.flag}={show(text)} is not allowed{extra}; allowed: {self.describe()}"
        )

    def accept(self, value: object, name: str | None = None):
        """A Python argument checked against this declaration, or InputError naming it.

        The same bounds and choices as `parse()`, but for a value passed in Python: a number
        must be a real number (not text, not a bool), an integer must be integral (``2.0`` is
        2, ``1.5`` is refused), every number finite; the error names ``name=value`` (default:
        the declared name).
        """
        label = name or self.name
        if self.choices is not None:
            if not isinstance(value, str) or value not in self.choices:
                raise self.error(value, label=label)
            return value
        if self.type is str:
            return self._text(value, label)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise self.error(
                value, f"not a {'whole ' if self.type is int else ''}number", label=label
            )
        v = float(value)
        if not math.isfinite(v):
            raise self.error(value, "not finite", label=label)
        if self.type is int:
            if not isinstance(value, numbers.Integral) and not v.is_integer():
                raise self.error(value, "not an integer", label=label)
            v = int(value) if isinstance(value, numbers.Integral) else int(v)
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            raise self.error(value, label=label)
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            raise self.error(value, label=label)
        return v

    def parse(self, text: object):
        """The value of ``text`` (a string, or an already converted value) or InputError."""
        if self.choices is not None:
            if not isinstance(text, str) or text not in self.choices:
                raise self.error(text)
            return text
        if self.type is str:
            return self._text(text)
        value = self._number(text)
        if not self._in_range(value):
            raise self.error(text)
        return value

    def _text(self, text: object, label: str | None = None) -> str:
        """A string setting checked by ``check``; an `InputError` the check raises (it
        names the cause, e.g. why a user's activation cannot be loaded) is kept, prefixed with
        the option."""
        if not isinstance(text, str):
            raise self.error(text, label=label)
        if self.check is not None:
            try:
                ok = bool(self.check(text))
            except InputError as err:
                raise InputError(
                    f"{label or self.flag}={show(text)}: {' '.join(str(err).split())}"
                ) from None
            except Exception:
                ok = False
            if not ok:
                raise self.error(text, label=label)
        return text

    def _number(self, text: object):
        integer = self.type is int
        if isinstance(text, bool):
            raise self.error(text)
        if isinstance(text, int | float):
            value = text
        else:
            s = str(text).strip()
            if len(s) > 400:  # beyond any bound; int() would also refuse past 4300 digits
                raise self.error(text, "too long")
            try:
                value = int(s) if integer else float(s)
            except ValueError:
                if not integer:
                    raise self.error(text) from None
                try:  # 1e3 and 1000.0 are integers too; 1.5 is not
                    f = float(s)
                except ValueError:
                    raise self.error(text) from None
                if not (math.isfinite(f) and f.is_integer()):
                    raise self.error(text) from None
                value = int(f)
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(text, "not finite")
        if integer and value != int(value):
            raise self.error(text)
        return int(value) if integer else float(value)


def value_text(value: Any) -> str:
    """A default as a user would type it: ``1e-08``, ``0.95``, ``1000``, ``relu``."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def progress_options(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--quiet``: a progress bar on standard error (default: on a terminal)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--progress",
        action="store_true",
        help="show progress with the time left on stderr even when it is not a terminal",
    )
    group.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


# ---------------------------------------------------------------------------- memory


def available_memory() -> int:
    """Bytes of memory available to a new allocation: ``MemAvailable`` on Linux, capped by the
    room left under a cgroup (v2) memory limit, as in a container."""
    free = None
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
    if free is None:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            free = int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit != "max":
            room = max(int(limit) - used, 0)
            free = room if free is None else min(free, room)
    return 2**62 if free is None else free


def size_text(n: float) -> str:
    """``n`` bytes in binary units (``7.1 PiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} EiB"


def check_memory(what: str, estimate: float, formula: str, fraction: float = 0.8) -> None:
    """Refuse ``what`` (the options that set the size) if ``estimate`` bytes exceed ``fraction``
    of the memory available now; the error quotes the estimate and its formula."""
    budget = fraction * available_memory()
    if estimate > budget:
        raise InputError(
            f"{what} needs about {size_text(estimate)} of memory ({formula}), more than the "
            f"{size_text(budget)} available; choose smaller values"
        )


FLOP_RATE = 1e10
"""Floating-point operations per second of one core, the rate every work estimate assumes."""
MAX_SECONDS = 1e5
"""The longest a single command accepts to compute, about a day (27.8 h) of one core."""


def check_work(what: str, seconds: float, formula: str, advice: str) -> None:
    """Refuse ``what`` (the options that set the work) if its estimated ``seconds`` on one core
    exceed `MAX_SECONDS`; the error quotes the estimate, its ``formula`` and ``advice``."""
    if not seconds <= MAX_SECONDS:  # NaN and inf refused too
        raise InputError(
            f"{what} needs about {seconds / 3600:.3g} h on one core ({formula}), more than the "
            f"{MAX_SECONDS / 3600:.3g} h (about a day) this command accepts; {advice}"
        )


# ---------------------------------------------------------------------------- folders


def check_writable_folder(option: str, raw: str) -> None:
    """Check that the folder ``raw`` exists and is writable, or can be created; write nothing
    that stays. A probe folder is created (and removed) in the nearest existing ancestor, so
    read-only file systems, ``/proc`` and folders under a regular file are refused up front."""
    if not raw.strip():
        raise InputError(f"{option} '': give a folder path")
    if "\0" in raw:
        raise InputError(f"{option} {show(raw)}: a path cannot contain a NUL character")
    path = Path(raw).absolute()
    try:
        if any(len(part.encode()) > 255 for part in path.parts):
            raise InputError(f"{option} {show(raw)}: a path component is longer than 255 bytes")
        existing = path
        while not existing.exists() and not existing.is_symlink():
            existing = existing.parent
        if not existing.is_dir():
            where = (
                "exists and is not a folder"
                if existing == path
                else f"{existing} is a file, not a folder"
            )
            raise InputError(f"{option} {show(raw)}: {where}")
        probe = tempfile.mkdtemp(prefix=".gaugedyn-probe-", dir=existing)
        os.rmdir(probe)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise InputError(f"{option} {show(raw)}: cannot write there ({reason})") from None
