"""The documentation's code runs: every fenced Python block preceded by ``<!-- runnable -->`` in the
project's Markdown files is run as a script, in a folder of its own (what it writes stays there)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *ROOT.glob("*/README.md"), *ROOT.glob("*/*/README.md"), *ROOT.glob("docs/*.md")])
MARK = re.compile(r"<!-- runnable -->\s*\n```(\w*)\n(.*?)\n```", re.DOTALL)


def snippets():
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in MARK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            found.append(pytest.param(match.group(1), match.group(2), id=f"{doc.relative_to(ROOT)}:{line}"))
    return found


def test_the_snippets_a_newcomer_pastes_first_are_marked_runnable():
    """The vector environment's snippet (which needs the __main__ guard) and the converter's (whose
    imports once named modules that no longer exist) are among those run."""
    ids = {p.id: p.values[1] for p in snippets()}
    assert any(i.startswith("README.md") and "QuadrupedVectorEnv" in code and '__name__ == "__main__"' in code
               for i, code in ids.items()), ids.keys()
    assert any(i.startswith("data/README.md") and "WrenchDataset" in code for i, code in ids.items()), ids.keys()


@pytest.mark.parametrize("language, code", snippets())
def test_runnable_snippet(language, code, tmp_path):
    assert language == "python", "a runnable block is Python"
    script = tmp_path / "snippet.py"
    script.write_text(code + "\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
