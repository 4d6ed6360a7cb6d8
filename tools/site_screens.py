"""Screenshots and rendered DOMs of built site pages in headless Chromium.

    python tools/site_screens.py SITE_DIR OUT_DIR [PAGE ...]

``SITE_DIR`` is a built site (``mkdocs build -d SITE_DIR``), served on a local port; each page
(a path under it, default :data:`PAGES`) is opened, MathJax typesets it, and ``OUT_DIR`` receives
``<page>.png`` and ``<page>.html`` (the DOM after scripts ran). Prints one line per page with
its count of rendered equations (MathJax's ``mjx-container`` elements). Exit 2 when no
Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
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


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """The site served over HTTP on a free local port (a browser refuses MathJax's fonts from
    ``file://`` pages), as its base URL."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def render(base: str, page: str, out: Path, exe: str) -> tuple[str, Path]:
    """``(DOM after scripts, screenshot path)`` of one page of a site served at ``base``."""
    url = base + page
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
    with serve(site) as base:
        for page in argv[2:] or PAGES:
            dom, png = render(base, page, out, exe)
            print(f"{page}: {rendered_math(dom)} rendered equations, {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
