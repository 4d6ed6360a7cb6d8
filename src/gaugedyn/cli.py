"""gaugedyn: theory and simulation of neural-network training dynamics, one system per paper.

Each subcommand lives with the module it exposes; that module defines ``register(subparsers)``
and keeps its heavy imports inside the handler, so ``gaugedyn --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ._errors import DivergenceError, InputError, oneline

_COMMAND_MODULES = (
    "gaugedyn.symbolic._cli",  # derive
    "gaugedyn.theory._cli",  # solve
    "gaugedyn.training._cli",  # train
    "gaugedyn.harness._cli",  # run, reproduce, plot
    "gaugedyn.harness._audit_cli",  # audit-rules
    "gaugedyn.harness._rejudge",  # rejudge
    "gaugedyn.publish",  # publish
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


_SEEN = "_gaugedyn_seen_options"
_SINGLE = (argparse._StoreAction, argparse._StoreConstAction)


def _once(cls: type) -> type:
    """``cls`` refusing a second occurrence of its option (argparse lets the last one win)."""

    class Once(cls):
        def __call__(self, parser, namespace, values, option_string=None):
            seen = getattr(namespace, _SEEN, None)
            if seen is None:
                seen = set()
                setattr(namespace, _SEEN, seen)
            if self.dest in seen:
                parser.error(
                    f"{'/'.join(self.option_strings)} is given more than once; give "
                    "each option once"
                )
            seen.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    Once.__name__ = f"Once{cls.__name__}"
    return Once


def _refuse_repeats(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _refuse_repeats(sub)
        elif action.option_strings and type(action) in _SINGLE + (
            argparse._StoreTrueAction,
            argparse._StoreFalseAction,
        ):
            action.__class__ = _once(type(action))


def build_parser() -> argparse.ArgumentParser:
    """The ``gaugedyn`` argument parser, every installed subcommand registered.

    Each module of the command table contributes its subcommands through its own
    ``register(subparsers)``; a subsystem missing from this checkout is skipped. Errors print
    one line and exit with status 2, and every single-valued option refuses a second
    occurrence (argparse would let the last one win).

    Returns
    -------
    argparse.ArgumentParser
        The parser; parsing a command sets ``func``, the handler `main()` calls.
    """
    from .papers import PAPERS

    parser = _Parser(
        prog="gaugedyn",
        description=__doc__.splitlines()[0],
        epilog=f"The {len(PAPERS)} systems: " + "; ".join(p.name for p in PAPERS) + ".",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"gaugedyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:  # a subsystem not installed in this checkout
            if err.name != name:
                raise
            continue
        module.register(sub)
    _refuse_repeats(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (2: bad input, one line on stderr; 3: diverged;
    130: interrupted). A closed standard output (``gaugedyn solve ... | head``) ends quietly.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``gaugedyn`` (``["solve", "--help"]``); ``None`` reads
        ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: the handler's own (0 when it returns nothing), 2 for bad input, no
        command or an allocation that failed (out of memory), 3 when a run diverged, 141 when
        standard output was closed, 130 when interrupted.

    Raises
    ------
    SystemExit
        From argument parsing: status 2 for a bad argument (one line on stderr), 0 for
        ``--help`` and ``--version``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    vars(args).pop(_SEEN, None)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except InputError as err:
        print(f"gaugedyn {args.command}: error: {oneline(err)}", file=sys.stderr)
        return 2
    except DivergenceError as err:
        print(f"gaugedyn {args.command}: error: {oneline(err)}", file=sys.stderr)
        return 3
    except (MemoryError, RuntimeError) as err:
        if isinstance(err, RuntimeError) and not _allocation_failure(err):
            raise
        print(
            f"gaugedyn {args.command}: error: out of memory ({oneline(err)[:300]}); choose "
            "smaller values",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 141  # what a shell reports for a process ended by SIGPIPE
    except KeyboardInterrupt:
        print(f"gaugedyn {args.command}: interrupted", file=sys.stderr)
        return 130


_ALLOCATION_FAILURES = (
    "DefaultCPUAllocator: not enough memory",
    "can't allocate memory",
    "CUDA out of memory",
    "out of memory",
)


def _allocation_failure(err: RuntimeError) -> bool:
    """Whether ``err`` is torch's way of saying an allocation failed (a ``RuntimeError``, or
    ``torch.OutOfMemoryError``, rather than Python's ``MemoryError``)."""
    return type(err).__name__ == "OutOfMemoryError" or any(
        text in str(err) for text in _ALLOCATION_FAILURES
    )


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush into the closed
    pipe does not print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (tests capture it)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
