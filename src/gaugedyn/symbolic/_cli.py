"""``gaugedyn derive``: write or check the derivation documents and the generated kernels."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "derive",
        help="write derivations/ and the generated kernels; --check verifies they are current",
        description="Re-derive every identity with sympy, verify it, and write one Markdown "
        "document per derivation (plus gaugedyn/theory/_generated_kernels.py). With --check, "
        "write nothing and exit 1 naming any document that is stale or whose identity fails.",
    )
    p.add_argument(
        "--dir", default=None, help="documents folder (default: the repository's derivations/)"
    )
    p.add_argument("--check", action="store_true", help="verify instead of writing")
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="only the document NAME (e.g. gaussian_relu; repeatable) and the kernels, which "
        "are generated from every closed form (default: every document)",
    )
    p.add_argument(
        "--kernels",
        default=None,
        help="path of the generated kernel module (default: gaugedyn/theory/_generated_kernels.py)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite files gaugedyn derive did not write (those without its generated mark) "
        "and write into a non-empty folder that holds none of its documents",
    )
    p.set_defaults(func=_handle)


def _check_paths(args: argparse.Namespace) -> None:
    """Before any derivation: the folder and the kernel module's folder can be written (or,
    with --check, the folder exists)."""
    from pathlib import Path

    from .._errors import InputError
    from .._options import check_writable_folder

    if args.dir is not None:
        if args.check and not Path(args.dir).is_dir():
            raise InputError(f"--dir {args.dir!r}: no such folder to check")
        if not args.check:
            check_writable_folder("--dir", args.dir)
    if args.kernels is not None:
        kernels = Path(args.kernels)
        if not args.kernels.strip() or kernels.is_dir():
            raise InputError(f"--kernels {args.kernels!r}: give the path of a .py file")
        if not args.check:
            check_writable_folder("--kernels", str(kernels.parent))


def _handle(args: argparse.Namespace) -> int:
    from ._registry import derive

    _check_paths(args)

    only = None if args.only is None else tuple(args.only)
    report = derive(args.dir, check=args.check, kernels=args.kernels, force=args.force, only=only)
    if report.ok:
        verb = "checked" if args.check else "written or unchanged"
        n = len(report.checked) if args.check else len(report.written) + len(report.unchanged)
        print(f"derive: {n} files {verb}; {len(report.skipped)} skipped")
        return 0
    print("derive: failed:", file=sys.stderr)
    for line in report.failures:
        print(f"  {line}", file=sys.stderr)
    return 1
