"""MkDocs hooks (mkdocs.yml, `hooks:`): the site is built from the Markdown as GitHub shows it.

- The top-level README.md is the site's home page, and the folders' README.md files (the scenario
  files, the datasets' format and provenance, the validation set) are pages of the reference; each
  is read from where it lives, never copied into docs/.
- Every relative link and image in every page is resolved from the file's own place in the
  checkout, as GitHub resolves it, and rewritten to the page or image of the site: README.md's
  `docs/img/x.png` is the site's `img/x.png`, a guide's `../sim/README.md` the reference page.
  A link to a file that is no page of the site (a module, a scenario's TOML) becomes its text.
  A link to a file that does not exist is a warning, so `mkdocs build --strict` fails on it.
"""
from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.plugins.granular")
ROOT = Path(__file__).resolve().parents[1]

# files outside docs/ that are pages of the site: checkout path -> the page's path in the site. The
# top-level README is the home page, these three are in the reference's menu, and any other folder's
# README.md (under data/, sim/, training/, examples/) is a page too, reached from the links to it.
NAMED = {
    "README.md": "index.md",
    "sim/README.md": "reference/scenario-files.md",
    "data/README.md": "reference/datasets.md",
    "data/validation/README.md": "reference/validation-set.md",
}
FOLDERS = ("data", "sim", "training", "examples")


def pages():
    found = dict(NAMED)
    for folder in FOLDERS:
        for readme in sorted((ROOT / folder).rglob("README.md")):
            path = readme.relative_to(ROOT).as_posix()
            found.setdefault(path, "reference/" + path.removesuffix("/README.md").replace("/", "-") + ".md")
    return found


PAGES = pages()
SOURCE = {page: path for path, page in PAGES.items()}
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def on_files(files, config):
    for path, page in PAGES.items():
        if (ROOT / path).is_file():
            files.append(File.generated(config, page, abs_src_path=str(ROOT / path)))
    return files


def site_path(checkout_path):
    """The page or file of the site that a checkout path is, or None."""
    if checkout_path.startswith("docs/"):
        return checkout_path[len("docs/"):]
    return PAGES.get(checkout_path)


def rewrite(markdown, checkout_path, page_path):
    """`markdown`'s relative links, resolved from `checkout_path`, made relative to `page_path`."""
    here = posixpath.dirname(checkout_path)

    def link(match):
        target = match["target"]
        if SCHEME.match(target) or target.startswith(("#", "/")):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(here, path))
        if resolved.startswith("../") or not (ROOT / resolved).exists():
            log.warning(f"{checkout_path}: the link {target!r} points to no file of the checkout")
            return match["text"]
        in_site = site_path(resolved)
        if in_site is None or not (ROOT / resolved).is_file():
            return match["text"] if not match["bang"] else match[0]
        relative = posixpath.relpath(in_site, posixpath.dirname(page_path) or ".")
        return f"{match['bang']}[{match['text']}]({relative}{'#' + anchor if anchor else ''}{match['title'] or ''})"

    out, fenced = [], None
    for line in markdown.splitlines(keepends=True):
        fence = re.match(r"\s*(```+|~~~+)", line)
        if fence and (fenced is None or fence[1].startswith(fenced)):
            fenced = fence[1] if fenced is None else None
            out.append(line)
            continue
        if fenced is not None:
            out.append(line)
            continue
        # links outside inline code spans
        parts = re.split(r"(`+[^`]*`+)", line)
        out.append("".join(p if p.startswith("`") else LINK.sub(link, p) for p in parts))
    return "".join(out)


def on_page_markdown(markdown, page, config, files):
    path = page.file.src_uri
    return rewrite(markdown, SOURCE.get(path, f"docs/{path}"), path)
