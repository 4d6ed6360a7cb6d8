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
from html import unescape
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


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, worker_id) -> Path:
    """The site, built once per test session (``mkdocs build --strict``): the xdist workers share
    one build through a lock in their common temporary folder. A failed build fails every test
    that reads the site with the build's own output."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    site, log = shared / "site", shared / "site.log"
    with FileLock(str(shared / "site.lock")):
        if not log.exists():
            done = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
                env=_env(),
            )
            log.write_text(f"{done.returncode}\n{done.stdout}{done.stderr}")
    code, _, output = log.read_text().partition("\n")
    assert code == "0", output
    return site


def test_the_site_builds_strictly(built_site):
    site = built_site
    for paper in json.loads(_papers()):
        html = site / paper["page"].removesuffix(".md") / "index.html"
        assert html.is_file(), f"no page for {paper['name']}"
        if paper["published"]:
            assert "<img" in html.read_text(), f"{paper['page']} shows no figure"


# the pages the browser reads: the home page, a system page, the Adam API page
SCREENED = ("index.html", "systems/gauge/index.html", "reference/adam/index.html")
# the derivation pages `gaugedyn derive` writes from the strings of the symbolic modules
GENERATED_DERIVATIONS = (
    "adam_decomposition",
    "adam_series",
    "adam_stability",
    "auxiliary",
    "gauge_steps",
    "gaussian_erf",
    "gaussian_linear",
    "gaussian_relu",
    "homogeneous_flow",
    "order_parameter_flow",
    "reaction_transport",
)
# the pages whose formulas are written in LaTeX, not in code spans: the home page, the theory page,
# the derivations (hand-written and generated), every system page with its protocol page, the
# guides that carry formulas, the verdict-rules and activation-benchmark pages and every API
# reference page
LATEX_PAGES = (
    "index.html",
    "theory/index.html",
    "derivations/prototypes/index.html",
    "derivations/shared_representation/index.html",
    *(f"derivations/{name}/index.html" for name in GENERATED_DERIVATIONS),
    "prototypes/index.html",
    "adam-stability/index.html",
    "getting-started/index.html",
    "landscape/index.html",
    "gauge-recorder/index.html",
    "own-activation/index.html",
    "controls/index.html",
    "monitor/index.html",
    "howto/adam-recorder/index.html",
    "verdict-rules/index.html",
    "benchmarks-activations/index.html",
    *(
        f"reference/{name}/index.html"
        for name in (
            "theory",
            "training",
            "adam",
            "gauge",
            "stats",
            "experiments",
            "prototypes",
            "symbolic",
            "publish",
            "monitor",
            "plotting",
        )
    ),
    *(
        f"systems/{name}/index.html"
        for name in (
            "gauge",
            "tied-beta-adam",
            "shared-representation",
            "prototypes",
            "adam-stability",
            "conservation-laws",
            "auxiliary",
        )
    ),
)
# the pages checked without a browser for rendered math and no raw markup (those without a
# formula for no raw markup alone)
CONVERTED = tuple(dict.fromkeys((*SCREENED, *LATEX_PAGES)))
NO_FORMULAS = frozenset(
    f"reference/{name}/index.html" for name in ("publish", "monitor", "plotting")
)
_RAW = re.compile(
    r":(?:func|class|meth|mod|data|attr|math):`|\.\. math::|\\beta(?![A-Za-z])|\\frac(?![A-Za-z])"
)


def _visible_text(html: str) -> str:
    """A page's text as a reader sees it: no scripts, styles or tags, and no math elements
    (their TeX source is what MathJax reads, not what is shown)."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    html = re.sub(r"<mjx-assistive-mml\b.*?</mjx-assistive-mml>", " ", html, flags=re.S)
    html = re.sub(r"<(span|div) class=\"arithmatex\">.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.parametrize("page", CONVERTED)
def test_built_pages_carry_math_and_no_raw_markup(built_site, page):
    """Without a browser: the page holds arithmatex math elements and, outside them, no raw
    Sphinx role, math directive or LaTeX command; MathJax is served from the site itself."""
    html = (built_site / page).read_text()
    if page not in NO_FORMULAS:
        assert len(re.findall(r'class="arithmatex"', html)) > 0, f"{page}: no math element"
    raw = _RAW.findall(_visible_text(html))
    assert not raw, f"{page}: raw markup outside math: {sorted(set(raw))}"
    assert (built_site / "assets" / "mathjax" / "tex-svg.js").is_file()
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))], scripts


# an inline code span that reads as an ASCII formula (a Greek name, sqrt, a power, a sum)
_ASCII_MATH = re.compile(
    r"\b(?:beta[12]|sqrt|eta|delta|rho|theta|kappa|sigma|tau[12]?|omega|lambda|gamma|mu|pi)\b"
    r"|\^|\bsum_|_\{"
)
# code that merely names such a symbol: a name, a call, an option, a claim id, a keyword setting
_CODE_LIKE = re.compile(r"^[A-Za-z_][\w.]*$|^[\w.]+\(.*\)$|--|:|^\w+=\S+$")


def _ascii_formulas(html: str) -> list[str]:
    """The inline code spans of a page (outside code blocks and generated tables) that read as
    ASCII formulas rather than code."""
    html = re.sub(r"<(pre|table)\b.*?</\1>", " ", html, flags=re.S)
    spans = (unescape(c) for c in re.findall(r"<code>(.*?)</code>", html, flags=re.S))
    return [c for c in spans if _ASCII_MATH.search(c) and not _CODE_LIKE.search(c)]


@pytest.mark.parametrize("page", LATEX_PAGES)
def test_converted_pages_write_formulas_in_latex_not_code_spans(built_site, page):
    left = _ascii_formulas((built_site / page).read_text())
    assert not left, f"{page}: ASCII formulas in code spans: {left}"


def test_ascii_formula_detector():
    page = (
        "<p><code>1 - beta2 = C (1 - beta1)</code> <code>sqrt(v^) + eps</code> <code>train()</code>"
        " <code>online_ode(problem, eta, times)</code> <code>--set beta2=0.9</code>"
        " <code>rho=0.0</code> <code>beta2</code></p><pre><code>x = sqrt(eta)</code></pre>"
    )
    assert _ascii_formulas(page) == ["1 - beta2 = C (1 - beta1)", "sqrt(v^) + eps"]


# a formula left in the prose of a generated derivation (outside display math, inline math and
# code): a Greek name, sqrt, a power, an arrow, a distribution or a comparison in ASCII
_PROSE_ASCII = re.compile(
    r"(?<![-\w])(?:beta[12]?|sqrt|eta|delta|rho|theta|kappa|sigma|tau[12]?|omega|lambda|gamma|mu"
    r"|pi)\b|\^|->|\s~\s|<=|>=|!="
)


def _prose_formulas(markdown: str) -> list[str]:
    """The ASCII formulas in a derivation's prose; headings (page titles) and comments aside."""
    text = re.sub(r"^\$\$\n.*?\n\$\$$", " ", markdown, flags=re.S | re.M)
    text = re.sub(r"^#.*$|<!--.*?-->", " ", text, flags=re.M)
    text = re.sub(r"\$[^$]+\$|`[^`]*`", " ", text)
    return [
        text[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ")
        for m in _PROSE_ASCII.finditer(text)
    ]


@pytest.mark.parametrize("name", GENERATED_DERIVATIONS)
def test_generated_derivations_write_formulas_in_latex(name):
    """The prose `gaugedyn derive` writes (intros, assumptions, steps, checks) carries no ASCII
    formula: each is written in LaTeX in the symbolic module's strings."""
    left = _prose_formulas((ROOT / "derivations" / f"{name}.md").read_text())
    assert not left, f"derivations/{name}.md: ASCII formulas in the prose: {left}"


def test_prose_formula_detector():
    page = (
        "# Adam on |x|^n / n\n\nThe rescaling (w, a) -> (c w, a / c) conserves delta = a^2 - w^2,"
        " x ~ N(0, q), tied-beta shrinkage, `beta2`, $\\eta^2$ and\n$$\na^2 -> b\n$$\n"
    )
    found = _prose_formulas(page)
    assert len(found) == 5, found
    assert not _prose_formulas("The eps part, $\\delta = a^2$, the `x -> y` map, tied-beta.")


def test_raw_markup_detector_sees_raw_markup():
    assert _RAW.findall(_visible_text("<p>see :func:`x` and \\beta_1</p>")) == [":func:`", "\\beta"]
    assert not _RAW.findall(
        _visible_text('<p>ok <span class="arithmatex">\\(\\beta_1\\)</span></p>')
    )


def test_a_browser_renders_the_equations(built_site, tmp_path):
    """Headless Chromium opens the home page, a system page and the Adam API page (served on a
    local port):
    MathJax (from the site) renders equations on each, no raw TeX or Sphinx role is left in
    the text, and a screenshot of each is written (tools/site_screens.py)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import site_screens
    finally:
        sys.path.pop(0)
    exe = site_screens.browser()
    if exe is None:
        pytest.skip("no Chromium installed (apt-get install chromium); the HTML test still runs")
    with site_screens.serve(built_site) as base:
        shots = {page: site_screens.render(base, page, tmp_path, exe) for page in SCREENED}
    for page, (dom, png) in shots.items():
        assert site_screens.rendered_math(dom) > 0, f"{page}: no equation rendered"
        raw = _RAW.findall(_visible_text(dom))
        assert not raw, f"{page}: raw markup in the rendered page: {sorted(set(raw))}"
        assert png.stat().st_size > 10_000, f"{page}: empty screenshot"


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


def test_check_fails_when_a_committed_number_changes(tmp_path, capsys):
    """A changed number in a stored summary makes its pages stale, in ``publish`` and in
    ``gaugedyn publish --check`` (exit 1; its command line in this process: the module entry
    point's exit code is `test_published_tables_match_their_runs`' subprocess)."""
    from gaugedyn.cli import main
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
    capsys.readouterr()
    try:
        code = main(["publish", "--check", "--root", str(root)])
    except SystemExit as exc:
        code = exc.code
    assert code == 1 and "stale" in capsys.readouterr().err


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


def test_readme_headlines_follow_the_published_verdicts(tmp_path):
    """A finding whose stored verdict moves from HELD to NOT HELD moves in the README's
    headline (generated, so `publish --check` sees the stale sentence)."""
    from gaugedyn.papers import PAPERS
    from gaugedyn.publish import headline, load_published, publish

    root = _copy(tmp_path)
    text = (root / "README.md").read_text()
    assert "<!-- publish:headlines -->" in text
    assert "*Depends on the reading*:" in text and "*Robust*:" in text
    for paper in PAPERS:
        assert f"- **{paper.name}**:" in text, paper.name
    path = root / "results-data" / "clock" / "summary.json"
    summary = json.loads(path.read_text())
    claim = next(c for c in summary["claims"] if c["id"] == "clock.clocks")
    assert claim["verdict"] == "HELD"
    paper = next(p for p in PAPERS if "clock" in p.experiments)
    before = headline(paper, load_published(root))
    claim["verdict"], claim["passed"] = "NOT HELD", False
    path.write_text(json.dumps(summary))
    after = headline(paper, load_published(root))
    assert "`clock.clocks`" in after.split("did not", 1)[1]
    assert before != after
    assert root / "README.md" in publish(root, check=True)


def test_readme_calls_the_command_one_way():
    text = (ROOT / "README.md").read_text()
    bare = re.findall(
        r"(?<![/\w.-])gaugedyn (?:solve|run|publish|reproduce|plot|audit-rules)", text
    )
    assert not bare, f"README calls a bare `gaugedyn` (not on PATH after set-up): {bare}"
    for page in ("docs/own-activation.md", "docs/gauge-recorder.md"):
        assert f"]({page})" in text, f"README does not link {page}"


def test_every_system_is_named_where_the_package_describes_itself():
    """pyproject's description, the site's description and ``gaugedyn --help`` name every
    system (each paper's first two words), so none describes two of seven."""
    import tomllib

    from gaugedyn.cli import build_parser
    from gaugedyn.papers import PAPERS

    described = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    site = re.search(r"site_description: >-\n((?:  .*\n)+)", (ROOT / "mkdocs.yml").read_text())
    assert site is not None
    helped = build_parser().format_help()
    for where, text in (("pyproject", described), ("mkdocs.yml", site[1]), ("--help", helped)):
        flat = " ".join(text.lower().split())
        missing = [
            p.name
            for p in PAPERS
            if " ".join(re.sub(r"[^\w\s-]", "", p.name.lower()).split()[:2]) not in flat
        ]
        assert not missing, f"{where} does not name: {missing}"
    assert f"The {len(PAPERS)} systems:" in " ".join(helped.split())


def test_the_quoted_test_count_is_current(request):
    """docs/test-record.md quotes the suite's size to the nearest hundred; checked against this
    session's collection when it collected the whole suite (any selection skips)."""
    config = request.config
    whole = {Path(a).resolve() for a in config.args} <= {ROOT, ROOT / "tests"}
    if config.option.keyword or config.option.markexpr or not whole:
        pytest.skip("a selection of the suite was collected, not the whole")
    quoted = re.search(
        r"The suite \(about ([\d,]+) tests\)", (ROOT / "docs/test-record.md").read_text()
    )
    assert quoted, "docs/test-record.md no longer quotes the suite's size"
    n = len(request.session.items)
    assert int(quoted[1].replace(",", "")) == round(n, -2), (
        f"docs/test-record.md says about {quoted[1]} tests; the suite has {n}"
    )


def test_included_pages_read_on_github():
    """A page that the site fills from an include also links, for a reader on GitHub, the file
    it includes (the hook drops that line from the site)."""
    include = re.compile(r'^--8<-- "([^"]+)"$', re.M)
    stubs = [p for p in (ROOT / "docs").rglob("*.md") if include.search(p.read_text())]
    assert stubs
    for page in stubs:
        text = page.read_text()
        for target in include.findall(text):
            link = re.search(r"^<!-- on GitHub --> .*\]\(([^)]+)\)", text, re.M)
            assert link, f"{page.relative_to(ROOT)} includes {target} with no link for GitHub"
            assert (page.parent / link[1]).resolve() == (ROOT / target).resolve(), page


def test_every_image_of_the_site_exists(built_site):
    """No page of the built site shows a broken image (links and anchors are checked by the
    strict build: mkdocs.yml validation.links)."""
    missing, seen = [], 0
    for html in built_site.rglob("*.html"):
        for src in re.findall(r'<img[^>]+src="([^"]+)"', html.read_text()):
            if src.startswith(("http:", "https:", "data:")):
                continue
            seen += 1
            if not (html.parent / src.split("#")[0]).resolve().is_file():
                missing.append(f"{html.relative_to(built_site)}: {src}")
    assert seen > 0 and not missing, missing[:20]
