"""Screenshots and rendered DOMs of built site pages in headless Chromium.

    python tools/site_screens.py SITE_DIR OUT_DIR [PAGE ...]

``SITE_DIR`` is a built site (``mkdocs build -d SITE_DIR``); each page (a path under it, default
:data:`PAGES`) is opened from disk, MathJax typesets it, and ``OUT_DIR`` receives
``<page>.png`` and ``<page>.html`` (the DOM after scripts ran). Prints one line per page with
its count of rendered equations (MathJax's ``mjx-container`` elements). Exit 2 when no
Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

PAGES = ("index.html", "systems/gauge/index.html", "reference/adam/index.html")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--virtual-time-budget=15000",
    "--window-size=1280,1800",
)


def browser() -> str | None:
    """The path of an installed Chromium, or None."""
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def render(site: Path, page: str, out: Path, exe: str) -> tuple[str, Path]:
    """``(DOM after scripts, screenshot path)`` of one page of a built site."""
    url = (site / page).resolve().as_uri()
    stem = page.removesuffix("/index.html").removesuffix(".html").replace("/", "-") or "index"
    png = out / f"{stem}.png"
    common = [exe, *_FLAGS]
    dom = subprocess.run(
        [*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    subprocess.run(
        [*common, f"--screenshot={png}", url], capture_output=True, timeout=120, check=True
    )
    (out / f"{stem}.html").write_text(dom)
    return dom, png


def rendered_math(dom: str) -> int:
    """How many equations MathJax rendered in a DOM."""
    return len(re.findall(r"<mjx-container\b", dom))


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    exe = browser()
    if exe is None:
        print("no Chromium found (tried: " + ", ".join(BROWSERS) + ")", file=sys.stderr)
        return 2
    site, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for page in argv[2:] or PAGES:
        dom, png = render(site, page, out, exe)
        print(f"{page}: {rendered_math(dom)} rendered equations, {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
