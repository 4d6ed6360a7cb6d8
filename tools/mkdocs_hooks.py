"""MkDocs hooks of the gaugedyn site (named in mkdocs.yml's ``hooks``).

MathJax is served from the site itself: its ``es5`` build, fonts and TeX extensions are copied
from the installed ``django-static-mathjax`` package (a plain copy of MathJax 3, no Django
needed) into ``assets/mathjax/``, so neither the build nor a reader's browser reaches a network.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
from importlib.resources import files
from pathlib import Path

# what the page loads (tex-svg.js: glyphs as SVG paths, no web fonts to fetch) and the TeX
# extensions it fetches on demand, relative to MathJax's es5/
MATHJAX_PARTS = ("tex-svg.js", "input/tex/extensions")
TARGET = "assets/mathjax"


def mathjax_source() -> Path:
    """The ``es5`` folder of the installed MathJax (package ``django-static-mathjax``)."""
    try:
        root = Path(str(files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError as err:
        raise SystemExit(
            "the docs need MathJax from the package django-static-mathjax: pip install -e '.[docs]'"
        ) from err
    if not (root / "tex-svg.js").is_file():
        raise SystemExit(f"no MathJax build at {root}: reinstall django-static-mathjax")
    return root


def on_post_build(config, **kwargs) -> None:
    source = mathjax_source()
    target = Path(config["site_dir"]) / TARGET
    for part in MATHJAX_PARTS:
        src, dst = source / part, target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


# --- the API reference, by public namespace ---------------------------------------------------

_API = re.compile(r"^<!-- api (gaugedyn(?:\.\w+)*) -->$", re.M)


def public_names(namespace: str) -> list[str]:
    """The public names of a namespace: its ``__all__`` (the lazy exports included), else the
    names of its module that do not start with ``_``."""
    module = importlib.import_module(namespace)
    names = getattr(module, "__all__", None)
    source = inspect.getsource(module)
    if names is None:  # a plain module: what it defines itself (functions, classes, CONSTANTS)
        names = [
            n
            for n, obj in vars(module).items()
            if not n.startswith("_")
            and (
                getattr(obj, "__module__", None) == namespace
                if inspect.isfunction(obj) or inspect.isclass(obj)
                else n.isupper() and re.search(rf"^{n}\s*[:=]", source, re.M) is not None
            )
        ]
    return list(names)


def defined_at(namespace: str, name: str) -> str:
    """The dotted path where ``namespace.name`` is defined (the private module and the name
    there, which an alias import may have renamed)."""
    module = importlib.import_module(namespace)
    obj = getattr(module, name)
    home = getattr(obj, "__module__", None)
    own = getattr(obj, "__qualname__", getattr(obj, "__name__", name))
    if (
        isinstance(home, str)
        and home.startswith("gaugedyn")
        and getattr(importlib.import_module(home), own.split(".")[0], None) is not None
        and (inspect.isfunction(obj) or inspect.isclass(obj))
    ):
        return f"{home}.{own}"
    # a constant: the private module of the namespace whose global of that value it is
    for sub in sorted(_submodules(namespace)):
        mod = importlib.import_module(sub)
        for key, value in vars(mod).items():
            if value is obj and not key.startswith("__"):
                return f"{sub}.{key}"
    return f"{namespace}.{name}"


def _submodules(namespace: str) -> list[str]:
    module = importlib.import_module(namespace)
    paths = getattr(module, "__path__", None)
    if not paths:
        return [module.__name__]
    return [f"{namespace}.{info.name}" for info in pkgutil.iter_modules(paths)]


def api_section(namespace: str, level: int = 2) -> str:
    """The Markdown of one namespace's reference: its module docstring, then one entry per
    public name headed by the public path (``gaugedyn.adam.split_update``), in the namespace's
    order."""
    out = [
        f"::: {namespace}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
    ]
    for name in public_names(namespace):
        path = defined_at(namespace, name)
        out += [
            f"::: {path}",
            "    options:",
            f'      heading: "{namespace}.{name}"',
            f'      toc_label: "{name}"',
            "      show_root_heading: true",
            "      show_root_full_path: false",
            f"      heading_level: {level}",
            "",
        ]
    return "\n".join(out)


_GITHUB_ONLY = re.compile(r"^<!-- on GitHub -->.*\n", re.M)


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    # a line for readers of the Markdown file on GitHub (where an include shows as a directive)
    markdown = _GITHUB_ONLY.sub("", markdown)
    level = 3 if len(_API.findall(markdown)) > 1 else 2
    return _API.sub(lambda m: api_section(m.group(1), level), markdown)
