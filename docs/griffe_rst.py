"""A griffe extension (mkdocs.yml, the python handler's `extensions`): the package's docstrings are
prose with a few reStructuredText habits, which the API reference renders as Markdown.

- cross-reference roles, :func:`fit`, :class:`~granular.x.Y`, become code: `fit`, `Y`;
- ``double`` backquotes become `single` ones;
- a paragraph that ends in "::" introduces a literal block: it ends in ":" and the indented block
  after it is fenced as code;
- a simple table (columns under lines of "=") is kept as preformatted text.

Only what is shown changes: the docstrings themselves are left as they are.
"""
from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const):`(~?)([^`]+)`")
BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")


def _role(match):
    target = match[2]
    return f"`{target.rsplit('.', 1)[-1] if match[1] else target}`"


def markdown(text: str) -> str:
    text = ROLE.sub(_role, text)
    text = re.sub(r"``([^`]+?)``", r"`\1`", text)
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        if BORDER.match(line):                       # a simple table: its rows up to the third border
            block, borders = [], 0
            while i < len(lines):
                borders += bool(BORDER.match(lines[i]))
                block.append(lines[i])
                i += 1
                if borders == 3 or (borders == 2 and (i == len(lines) or not lines[i].strip())):
                    break
            out += ["```text", *block, "```"]
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith((">>>", "#")):
            out.append(line.rstrip()[:-1] if not line.rstrip() == "::" else "")
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            indent = len(lines[j]) - len(lines[j].lstrip()) if j < len(lines) else 0
            base = len(line) - len(line.lstrip())
            if j < len(lines) and indent > base:
                block = []
                while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) >= indent):
                    block.append(lines[j][indent:])
                    j += 1
                while block and not block[-1].strip():
                    block.pop()
                out += ["", "```", *block, "```", ""]
                i = j
                continue
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RestructuredTextHabits(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
