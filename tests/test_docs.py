"""The design lives in the repository: docs/design.md exists, the README links it, and no
tracked text refers to documents outside the repository or to issue numbers."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: References to what a clone does not hold: the original design notes and source
#: documents beside the repository, or the tracker's issue numbers.
OUTSIDE = re.compile(
    r"\bDESIGN(?: section|\.md| table)|(?i:seed documents|the seed(?:'s| reported| had)|\.\./shared|\bissue \d+)"
)


def test_the_design_document_exists_and_the_readme_links_it():
    design = (ROOT / "docs" / "design.md").read_text()
    for section in (
        "layers",
        "pipeline",
        "Mechanisms",
        "Privacy accounting",
        "metric contract",
        "Tracking",
        "pitfalls",
    ):
        assert section.lower() in design.lower(), section
    assert "](docs/design.md)" in (ROOT / "README.md").read_text()


def test_no_tracked_text_refers_outside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = [f for f in files if f.endswith((".py", ".md", ".yaml", ".toml", ".cfg", ".txt")) or f in ("Makefile",)]
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in texts
        if name != "tests/test_docs.py" and "LICENSE" not in name
        for number, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_the_tutorial_prints_its_files_exactly_and_the_readme_links_it():
    """Every ``<!-- file: PATH -->`` block of docs/tutorial.md is PATH's text, so the files a
    test runs (tests/test_tutorial.py) are the ones a reader copies."""
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```\n", tutorial, flags=re.DOTALL)
    assert {path for path, _ in blocks} >= {
        "examples/tutorial/independent.py",
        "examples/tutorial/myconf/mechanism/independent.yaml",
        "examples/tutorial/myconf/experiment/my_study.yaml",
        "examples/tutorial/test_independent.py",
    }
    for path, text in blocks:
        assert text == (ROOT / path).read_text(), path
    readme = (ROOT / "README.md").read_text()
    assert "](docs/tutorial.md)" in readme.split("\n## ")[0]  # on the first screen
