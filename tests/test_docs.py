"""The documentation's code runs, and its figures are what the code prints.

Every fenced block preceded by ``<!-- runnable -->`` in the project's Markdown files (README.md, the
guides in docs/, the folders' README.md) is run: Python as a script, ``bash``/``sh`` with ``bash -e``,
``granular`` and ``python3`` being this interpreter's. Each runs in a folder of its own holding the
checkout's ``data/``, ``sim/``, ``training/`` and ``examples/`` (their files linked, so what a block
writes stays in its folder). The marker takes two optional words:

- ``slow``: the block takes more than a few seconds; it runs in the slow tier only (``-m slow``).
- ``expect="KEY=VALUE±TOL; …"``: the figures the block must print. KEY is a dotted path into the
  JSON object the block prints (``bodies.torso.final.x``, ``cv.rbf.rel_rmse``; ``N:KEY`` reads the
  N-th JSON object it prints, from 1), or else a name the text output writes before a number.
  VALUE is the figure as the document quotes it (``1.08``, ``49,100``, ``−7.5``): it must appear
  in the text of the block's section (between the headings around it), so that the prose and the
  check cannot drift apart. TOL is absolute (``±0.02``) or relative (``±15%``); without it the
  printed value must round to VALUE at the precision VALUE is quoted with.

So a stale figure fails: a test below alters one in a copy of the README and sees the check fail.
The site (mkdocs.yml) builds with warnings as errors, and every figure in docs/img/ that a document
shows is one that ``python3 docs/figures.py`` regenerates from its stated command."""
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *ROOT.glob("*/README.md"), *ROOT.glob("*/*/README.md"), *ROOT.glob("docs/*.md")])
MARK = re.compile(r"<!-- runnable(?P<attrs>[^>]*?)-->[ \t]*\n```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.DOTALL)
SHELLS = ("bash", "sh", "shell")
LINKED = ("data", "sim", "training", "examples")       # the checkout's folders a block may read
NUMBER = r"[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
EXPECT = re.compile(rf"^\s*(?:(?P<doc>\d+):)?(?P<key>[^=≈\s]+)\s*[=≈]\s*(?P<value>{NUMBER})"
                    rf"\s*(?:±\s*(?P<tol>\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<pct>%)?)?\s*$")


# --- the blocks and their expectations ---------------------------------------------------------

@dataclass(frozen=True)
class Expectation:
    key: str
    value: str              # as quoted in the document
    tol: float | None       # absolute; None: the printed value rounds to `value`
    relative: bool
    doc: int | None         # the N-th JSON object printed (1-based), or any

    @property
    def number(self):
        return float(self.value.replace("−", "-").replace(",", ""))

    def allowed(self):
        if self.tol is None:
            decimals = len(self.value.split(".")[1]) if "." in self.value else 0
            return 0.5 * 10.0 ** -decimals * (1 + 1e-9)
        return self.tol * abs(self.number) if self.relative else self.tol

    def __str__(self):
        tol = "" if self.tol is None else f"±{self.tol * 100:g}%" if self.relative else f"±{self.tol:g}"
        return f"{'' if self.doc is None else f'{self.doc}:'}{self.key}={self.value}{tol}"


@dataclass(frozen=True)
class Block:
    doc: str                # the document's path from the checkout
    line: int               # the fence's line (1-based)
    language: str
    code: str
    slow: bool
    expect: tuple           # Expectation, …
    section: str            # the text between the headings around the block, comments removed

    @property
    def id(self):
        return f"{self.doc}:{self.line}"


def parse_expect(text):
    found = []
    for item in filter(str.strip, text.split(";")):
        m = EXPECT.match(item)
        if not m:
            raise ValueError(f"cannot read the expectation {item!r} (KEY=VALUE, KEY=VALUE±TOL or KEY=VALUE±TOL%)")
        tol = m["tol"] and float(m["tol"].replace(",", ""))
        found.append(Expectation(m["key"], m["value"], None if tol is None else tol / 100 if m["pct"] else tol,
                                 bool(m["pct"]), m["doc"] and int(m["doc"])))
    return tuple(found)


def sections(text):
    """(start, end) character offsets of the text between headings (fenced code is not a heading)."""
    bounds, offset, fenced = [0], 0, False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            bounds.append(offset)
        offset += len(line)
    bounds.append(len(text))
    return list(zip(bounds[:-1], bounds[1:]))


def blocks(text, doc="README.md"):
    """The runnable blocks of one document's text."""
    found, spans = [], sections(text)
    for match in MARK.finditer(text):
        attrs = match["attrs"]
        expect = re.search(r'expect="([^"]*)"', attrs)
        words = set(re.sub(r'\w+="[^"]*"', "", attrs).split())
        unknown = words - {"slow"}
        if unknown:
            raise ValueError(f"{doc}: unknown word(s) {sorted(unknown)} in a runnable marker")
        start, end = next((a, b) for a, b in spans if a <= match.start() < b)
        section = re.sub(r"<!--.*?-->", "", text[start:end], flags=re.DOTALL)
        found.append(Block(doc, text.count("\n", 0, match.start()) + 2, match["lang"], match["code"], "slow" in words,
                           parse_expect(expect[1]) if expect else (), section))
    return found


def all_blocks():
    return [b for doc in DOCS for b in blocks(doc.read_text(), str(doc.relative_to(ROOT)))]


# --- checking what a block printed ------------------------------------------------------------

def json_objects(out):
    """Every JSON object or array printed, in order (a line that starts one, read to its end)."""
    decoder, found, pos = json.JSONDecoder(), [], 0
    for line in out.splitlines(keepends=True):
        if line.lstrip().startswith(("{", "[")):
            try:
                obj, _ = decoder.raw_decode(out, pos + len(line) - len(line.lstrip()))
            except json.JSONDecodeError:
                pass
            else:
                found.append(obj)
        pos += len(line)
    return found


def lookup(obj, key):
    for part in key.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and re.fullmatch(r"-?\d+", part) and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        else:
            raise KeyError(key)
    if isinstance(obj, bool) or not isinstance(obj, (int, float)):
        raise KeyError(key)
    return float(obj)


def printed(exp, out):
    """The number the block printed for `exp`'s key, or None."""
    objects = json_objects(out)
    candidates = [objects[exp.doc - 1]] if exp.doc is not None and exp.doc <= len(objects) else \
        [] if exp.doc is not None else objects
    for obj in candidates:
        try:
            return lookup(obj, exp.key)
        except KeyError:
            continue
    if exp.doc is None:
        m = re.search(rf"{re.escape(exp.key)}\s*[:=]?\s*({NUMBER})", out)
        if m:
            return float(m[1].replace("−", "-").replace(",", ""))
    return None


def quoted(value, section):
    """Whether the document quotes `value` in the block's section (as a number, not a part of one)."""
    text = section.replace("−", "-")
    return re.search(rf"(?<![\d.,]){re.escape(value.replace('−', '-'))}(?![\d]|[.,]\d)", text) is not None


def stale(block, out):
    """What is wrong with the figures `block` quotes, given what it printed: a list of sentences."""
    problems = []
    for exp in block.expect:
        if not quoted(exp.value, block.section):
            problems.append(f"{exp}: the section around the block does not quote {exp.value}")
        got = printed(exp, out)
        if got is None:
            problems.append(f"{exp}: the block printed no {exp.key}")
        elif not math.isfinite(got) or abs(got - exp.number) > exp.allowed():
            problems.append(f"{exp}: the block printed {got:.6g}")
    return problems


# --- running a block --------------------------------------------------------------------------

def workdir(tmp_path):
    """A folder of the block's own, with the checkout's data, scenarios, training jobs and examples."""
    # folders made, files linked: a block that writes training/models/x.h5 writes into its own folder
    # (the project writes every file under a temporary name and renames it, replacing a link, never its target)
    for name in LINKED:
        for folder, _, files in os.walk(ROOT / name):
            mirror = tmp_path / Path(folder).relative_to(ROOT)
            mirror.mkdir(exist_ok=True)
            for file in files:
                (mirror / file).symlink_to(Path(folder) / file)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    for name, args in (("granular", " -m granular"), ("python3", ""), ("python", "")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONDONTWRITEBYTECODE="1")
    return tmp_path, env


def run(block, tmp_path):
    cwd, env = workdir(tmp_path)
    if block.language == "python":
        cmd = [sys.executable, "snippet.py"]
        (cwd / "snippet.py").write_text(block.code + "\n")
    else:
        assert block.language in SHELLS, f"a runnable block is Python or a shell's, not {block.language!r}"
        cmd = ["bash", "-e", "-o", "pipefail", "snippet.sh"]
        (cwd / "snippet.sh").write_text(block.code + "\n")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def params():
    return [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in all_blocks()]


@pytest.mark.parametrize("block", params())
def test_runnable_block(block, tmp_path):
    out = run(block, tmp_path)
    problems = stale(block, out)
    if problems and block.slow:
        # once more before it fails: a timing's band holds this machine's run-to-run spread, but
        # not a run beside the other worker's just-in-time compilation (README's quadruped step read
        # 2.3× its figure so, in two fresh clones of 2026-11-29); a stale figure fails again
        again = tmp_path / "again"
        again.mkdir()
        out = run(block, again)
        problems = stale(block, out)
    assert not problems, f"{block.id}: stale figures:\n  " + "\n  ".join(problems) + f"\nits output:\n{out[-3000:]}"


def test_the_snippets_a_newcomer_pastes_first_are_marked_runnable():
    """The vector environment's snippet (which needs the __main__ guard) and the converter's (whose
    imports once named modules that no longer exist) are among those run, and so are the README's
    tour and its headline figures, each with the figures it quotes."""
    found = all_blocks()
    assert any("QuadrupedVectorEnv" in b.code and '__name__ == "__main__"' in b.code for b in found)
    assert any("WrenchDataset" in b.code and "write(" in b.code for b in found)
    readme = [b for b in found if b.doc == "README.md"]
    for command in ("granular sim quad-trot", "granular inspect", "granular train", "granular validate",
                    "granular bench", "my_robot.toml"):
        assert any(command in b.code and b.expect for b in readme), command
    quick = [b for b in readme if b.expect and not b.slow]
    assert {"granular sim", "granular validate", "granular inspect"} <= {c for b in quick for c in
                                                                         re.findall(r"granular \w+", b.code)}


# --- the check fails on a stale figure ---------------------------------------------------------

def altered(value):
    """Another figure quoted at the same precision: 1.5 times `value`."""
    decimals = len(value.split(".")[1]) if "." in value else 0
    return f"{float(value.replace('−', '-').replace(',', '')) * 1.5 + 10.0 ** -decimals:.{decimals}f}"


def test_a_stale_figure_fails_the_check(tmp_path):
    """The README's simulate step run once; its check passes on the README as it is, and fails on a
    copy where a figure was changed, in the prose and the marker alike (the output disagrees) or in
    the prose alone (the marker's figure is no longer quoted)."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in blocks(text) if "granular sim quad-trot" in b.code and b.expect and not b.slow)
    out = run(block, tmp_path)
    assert stale(block, out) == []
    exp = block.expect[0]
    marker = text[:text.index(block.code)].rindex("<!-- runnable")
    section_end = next(b for a, b in sections(text) if a <= marker < b)
    new = altered(exp.value)
    assert not quoted(new, block.section)
    everywhere = text[:section_end].replace(exp.value, new) + text[section_end:]
    changed = next(b for b in blocks(everywhere) if b.line == block.line)
    assert any(f"printed {printed(exp, out):.6g}" in p for p in stale(changed, out)), stale(changed, out)
    prose = everywhere.replace(f"{exp.key}={new}", f"{exp.key}={exp.value}", 1)
    changed = next(b for b in blocks(prose) if b.line == block.line)
    assert any("does not quote" in p for p in stale(changed, out)), stale(changed, out)


def test_the_expectation_syntax():
    block, = blocks('# A\n\nIt walks 1.08 m in 6 s, 49,100 robot-steps/s, a pull of −7.5 N.\n\n'
                    '<!-- runnable slow expect="a.b=1.08; 2:n≈49,100±10%; pull=−7.5±0.5" -->\n```bash\necho\n```\n\n# B\n')
    assert block.slow and [str(e) for e in block.expect] == ["a.b=1.08", "2:n=49,100±10%", "pull=−7.5±0.5"]
    out = '{"a": {"b": 1.0849}}\n{"n": 52000}\npull: -7.1 N\n'
    assert stale(block, out) == []
    assert len(stale(block, '{"a": {"b": 1.0851}}\n{"n": 54100}\npull: -8.1 N\n')) == 3
    assert "printed no n" in stale(block, '{"a": {"b": 1.08}}\npull = -7.5\n')[0]
    with pytest.raises(ValueError):
        blocks('<!-- runnable expect="a.b is 1" -->\n```bash\necho\n```\n')
    with pytest.raises(ValueError):
        blocks('<!-- runnable fast -->\n```bash\necho\n```\n')


# --- the site and the figures ------------------------------------------------------------------

def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """`mkdocs build --strict`: a broken link, a missing page or image, or a docstring the API
    reference cannot read is an error."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert proc.returncode == 0, proc.stderr[-5000:]
    site = tmp_path / "site"
    assert (site / "index.html").is_file() and (site / "img" / "quad_trot.gif").is_file()
    assert "granular sim quad-trot" in (site / "index.html").read_text()
    api = (site / "api" / "contact" / "index.html").read_text()
    assert "max_dissipation" in api or "data_flow" in api, "the API reference renders the docstrings"
    print(f"mkdocs build: {time.monotonic() - start:.1f} s")


def figures():
    spec = importlib.util.spec_from_file_location("doc_figures", ROOT / "docs" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_figure_the_docs_show_is_regenerated_by_one_command():
    """Each image under docs/img/ that a document shows has an entry in docs/figures.py, whose
    command the document states; each entry names an image that exists."""
    registry = figures().FIGURES
    shown = {}
    for doc in DOCS:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", doc.read_text()):
            path = (doc.parent / target).resolve()
            if path.is_relative_to(ROOT / "docs" / "img"):
                shown.setdefault(str(path.relative_to(ROOT / "docs")), []).append(doc)
    assert shown, "the documents show figures"
    missing = sorted(set(shown) - set(registry))
    assert not missing, f"figures the docs show without an entry in docs/figures.py: {missing}"
    for image, figure in registry.items():
        assert (ROOT / "docs" / image).is_file(), image
        if image in shown:
            stated = [d for d in shown[image] if figure.stated in d.read_text()]
            assert stated, f"{image}: no document that shows it states its command `{figure.stated}`"
