"""The README is a quick start and the reference lives in docs/ (issue 27, item 6): links that
resolve, a first block of at most five lines, every command named, every error's test real."""

import re

from conftest import ROOT

from scanprobe.cli import main

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path):
    return {_slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                broken.append(f"{doc.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_starts_with_a_short_quick_start():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1]
    block = quick.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert 1 <= len(commands) <= 5, commands
    for line in commands:
        words = line.split("#")[0].split()
        if words[:1] == ["scanprobe"]:
            assert words[1] in main.commands, line
    assert len(text.splitlines()) < 200, "the README is a quick start; the reference goes in docs/"


def test_the_readme_names_every_command_and_where_the_reference_is():
    text = (ROOT / "README.md").read_text()
    for name in main.commands:
        assert f"`scanprobe {name}" in text, name
    for doc in ("docs/reference.md", "docs/cli.md", "docs/errors.md", "docs/versions.md", "docs/development.md"):
        assert f"]({doc})" in text, doc


def test_every_test_the_error_table_names_exists():
    table = (ROOT / "docs" / "errors.md").read_text()
    named = set(re.findall(r"(test_\w+)::(test_\w+)", table))
    assert len(named) > 20
    missing = [f"{mod}::{fn}" for mod, fn in sorted(named)
               if not (ROOT / "tests" / f"{mod}.py").exists()
               or not re.search(rf"def {fn}\b", (ROOT / "tests" / f"{mod}.py").read_text())]
    assert not missing, missing
