"""The front page and the pages under docs/ link only to files that exist, and to headings those files have.

A section moved from one page to another leaves links behind; this finds them before a reader does.
"""
import re

import pytest

from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text):
    """The text without code, where a bracket followed by a parenthesis is not a link."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def anchors(text):
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens,
    a repeated one numbered."""
    seen, found = {}, set()
    for title in HEADING.findall(FENCED.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page):
    """Each relative link of the page whose file, or whose heading in a Markdown file, is missing."""
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved.read_text()):
            broken.append(f"{target}: no heading with that anchor in {resolved.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_pages_link_each_other():
    """The front page reaches every page under docs/, so none is left where nobody finds it."""
    front = set(LINK.findall(prose((ROOT / "README.md").read_text())))
    assert {f"docs/{page.name}" for page in PAGES[1:]} <= front


def test_the_front_page_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_a_missing_file_and_a_missing_heading_are_found(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## From CI: `fleetopt run`\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#from-ci-fleetopt-run) [ok](other.md#twice-1) [ok](https://example.org/x.md)\n"
                    "`[in code](gone.md)` [gone](gone.md) [bad](other.md#nowhere) [self](#page)\n\n# Page\n")
    assert broken_links(page) == ["gone.md: no such file", "other.md#nowhere: no heading with that anchor in other.md"]
