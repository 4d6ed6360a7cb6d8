"""The documentation: the site builds strictly, every Python block of the README and the site runs
with its printed numbers checked, and every published table matches its committed run.

Code blocks. Every fenced block names its language. A ```` ```python ```` block runs; the blocks
of one page run in order in one namespace (a page reads as one session), in a fresh folder that
holds a link to ``simulations/``. When a ```` ```text ```` block follows a Python block, it is
what that block prints: words must match exactly and numbers to a relative 1e-3 (the printed
digits are the claim; the last one may move with the platform's floating point). Shell blocks
(```` ```bash ````) and other languages are shown, not run.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = {"python", "text", "bash", "toml", "json"}
# pages other branches are writing; the nav names them already (mkdocs.yml validation.nav)
AWAITED: set[str] = set()
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """``(language, text, line)`` of every fenced block of a Markdown file."""
    out, lines, i = [], path.read_text().split("\n"), 0
    while i < len(lines):
        match = re.match(r"^(\s*)```(\S*)", lines[i])
        if not match:
            i += 1
            continue
        indent, lang, start = len(match.group(1)), match.group(2), i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
        out.append((lang, "\n".join(x[indent:] for x in lines[start:end]), start))
        i = end + 1
    return out


def same_output(got: str, want: str) -> bool:
    """Words equal; numbers equal to a relative 1e-3 (absolute 1e-12 near zero)."""
    got_words, want_words = _NUMBER.split(got.strip()), _NUMBER.split(want.strip())
    if [" ".join(w.split()) for w in got_words] != [" ".join(w.split()) for w in want_words]:
        return False
    pairs = zip(_NUMBER.findall(got), _NUMBER.findall(want))
    return all(math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-12) for a, b in pairs)


def test_same_output_checks_words_and_numbers():
    assert same_output("time 715.1 s\n", "time 715.08 s")
    assert not same_output("time 716.1 s", "time 715.1 s")
    assert not same_output("loss 715.1", "time 715.1")
    assert not same_output("a 1 2", "a 1")


def test_every_block_names_a_known_language():
    bad = [
        f"{p.relative_to(ROOT)}:{line}: '{lang}'"
        for p in pages()
        for lang, _, line in blocks(p)
        if lang not in LANGUAGES
    ]
    assert not bad, (
        "code blocks without a known language (so unclear whether they run): " + ", ".join(bad)
    )


def _runnable() -> list[Path]:
    return [p for p in pages() if any(lang == "python" for lang, _, _ in blocks(p))]


@pytest.fixture
def fresh_torch():
    """torch as a reader's fresh process has it (default dtype, thread count), restored after:
    the pages' printed numbers are for that state, whatever ran before in this process."""
    import torch

    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(dtype)
    torch.set_num_threads(threads)


@pytest.mark.parametrize("page", _runnable(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run_and_print_what_the_page_says(page, tmp_path, monkeypatch, fresh_torch):
    import matplotlib

    matplotlib.use("Agg")
    (tmp_path / "simulations").symlink_to(ROOT / "simulations")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    found = blocks(page)
    for k, (lang, code, line) in enumerate(found):
        if lang != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{page.name}:{line}", "exec"), namespace)  # noqa: S102
        follows = found[k + 1] if k + 1 < len(found) else None
        if follows and follows[0] == "text" and _adjacent(page, line, code, follows[2]):
            assert same_output(out.getvalue(), follows[1]), (
                f"{page.relative_to(ROOT)}:{line} printed\n{out.getvalue()}\nthe page says\n"
                f"{follows[1]}"
            )
    import matplotlib.pyplot as plt

    plt.close("all")


def _adjacent(page: Path, line: int, code: str, next_line: int) -> bool:
    """Whether only blank lines separate a block's closing fence from the next block."""
    lines = page.read_text().split("\n")
    close = line + len(code.split("\n"))
    return all(not x.strip() for x in lines[close + 1 : next_line - 1])


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for paper in json.loads(_papers()):
        html = site / paper["page"].removesuffix(".md") / "index.html"
        assert html.is_file(), f"no page for {paper['name']}"
        if paper["published"]:
            assert "<img" in html.read_text(), f"{paper['page']} shows no figure"


def _env() -> dict:
    import os

    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def _papers() -> str:
    from gaugedyn.papers import PAPERS

    have = {p.name for p in (ROOT / "results-data").iterdir()}
    return json.dumps(
        [
            {"name": p.name, "page": p.page, "published": any(e in have for e in p.experiments)}
            for p in PAPERS
        ]
    )


def test_the_nav_names_only_existing_pages_or_awaited_ones():
    text = (ROOT / "mkdocs.yml").read_text()
    named = re.findall(r":\s*(\S+\.md)\s*$", text, flags=re.M)
    assert named, "no nav entries found in mkdocs.yml"
    missing = {n for n in named if not (ROOT / "docs" / n).is_file()}
    assert missing <= AWAITED, f"nav entries with no page: {sorted(missing - AWAITED)}"


def test_readme_is_a_front_door():
    from gaugedyn.papers import PAPERS

    text = (ROOT / "README.md").read_text()
    assert len(text.split("\n")) < 260
    missing = [p.name for p in PAPERS if p.title and p.title not in text]
    assert not missing, f"README does not name these papers by title: {missing}"
    assert "bash tools/setup.sh && .venv/bin/gaugedyn reproduce --quick --out results" in text
    ci = next(
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.startswith("bash tools/setup.sh && ")
    )
    assert ci.split("&& ", 1)[1] in text, "README's test command is not what CI runs"


# --- results as data ------------------------------------------------------------------------


def test_published_tables_match_their_runs():
    done = subprocess.run(
        [sys.executable, "-m", "gaugedyn", "publish", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "results-data", root / "results-data")
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copy(ROOT / "README.md", root / "README.md")
    return root


def test_check_fails_when_a_committed_number_changes(tmp_path):
    from gaugedyn.publish import publish

    root = _copy(tmp_path)
    assert publish(root, check=True) == []
    path = root / "results-data" / "spike_boundary" / "summary.json"
    summary = json.loads(path.read_text())
    claim = next(c for c in summary["claims"] if isinstance(c.get("measured"), float))
    claim["measured"] *= 1.5
    path.write_text(json.dumps(summary))
    stale = publish(root, check=True)
    assert stale and all(p.suffix == ".md" for p in stale)
    done = subprocess.run(
        [sys.executable, "-m", "gaugedyn", "publish", "--check", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert done.returncode == 1 and "stale" in done.stderr


def test_check_fails_when_a_table_is_edited(tmp_path):
    from gaugedyn.publish import publish

    root = _copy(tmp_path)
    page = next(
        p
        for p in [root / "README.md", *(root / "docs").rglob("*.md")]
        if "<!-- publish:claims spike_boundary -->" in p.read_text()
    )
    text = page.read_text()
    edited = re.sub(
        r"(\| `spike_boundary\.[^`]+` \| \w+ \| )([-0-9.e]+)", r"\g<1>9.999", text, count=1
    )
    assert edited != text
    page.write_text(edited)
    assert publish(root, check=True) == [page]
    publish(root)
    assert page.read_text() == text


def test_add_refuses_a_quick_run_before_writing(tmp_path):
    from gaugedyn import InputError
    from gaugedyn.publish import add_run

    run = tmp_path / "run"
    run.mkdir()
    summary = json.loads((ROOT / "results-data" / "spike_boundary" / "summary.json").read_text())
    summary["command"] = {**summary["command"], "quick": True}
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match="quick"):
        add_run(run, tmp_path)
    assert not (tmp_path / "results-data").exists()


def test_release_metadata():
    import gaugedyn

    assert (ROOT / "src" / "gaugedyn" / "py.typed").is_file()
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert f'\nversion = "{gaugedyn.__version__}"\n' in (ROOT / "pyproject.toml").read_text()
    cff = (ROOT / "CITATION.cff").read_text()
    assert f'version: "{gaugedyn.__version__}"' in cff
    assert f"## {gaugedyn.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_every_committed_run_is_full_and_shown():
    from gaugedyn.publish import load_published

    text = "\n".join(p.read_text() for p in pages())
    for name, summary in load_published(ROOT).items():
        command = summary["command"]
        assert not command.get("quick") and not command.get("overrides"), name
        assert summary["published"]["code_version"]["commit"] != "unknown", name
        assert any(f"<!-- publish:{kind} {name} -->" in text for kind in ("claims", "readings")), (
            f"{name} is committed but shown nowhere"
        )
