"""The documentation lives in the repository as a site (mkdocs.yml, docs/): every page is in
the nav and every nav entry is a page, the design's sections have their pages, every public
name has its API entry, the tutorial prints its files exactly, the README links the site's
pages that exist, the benchmark pages render without the optional extras, the site builds in
strict mode (broken links and anchors fail it), and no tracked text refers to documents
outside the repository or to issue numbers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import dp2pub

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: References to what a clone does not hold: the original design notes and source
#: documents beside the repository, or the tracker's issue numbers.
OUTSIDE = re.compile(
    r"\bDESIGN(?: section|\.md| table)|(?i:seed documents|the seed(?:'s| reported| had)|\.\./shared|\bissue \d+)"
)
#: The mechanism pages, one per mechanism or family (the Mechanisms section of the nav).
MECHANISM_PAGES = [
    "index.md",
    "frequency-oracles.md",
    "oracle-table.md",
    "pram.md",
    "dp2pub.md",
    "privbayes.md",
    "k-anonymity.md",
    "ldp-nb.md",
    "dppro.md",
    "ldp-marginals.md",
    "hdg.md",
    "mst-aim.md",
    "inpht.md",
]


def nav_pages(entries: object) -> list[str]:
    """Every page path of a nav (nested lists of ``{title: page or list}`` and bare pages)."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in nav_pages(value)]
    raise AssertionError(f"unexpected nav entry {entries!r}")


def site_config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page():
    nav = nav_pages(site_config()["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(nav) == len(set(nav))


def test_the_mechanisms_section_has_one_page_per_mechanism_family():
    (section,) = [entry["Mechanisms"] for entry in site_config()["nav"] if "Mechanisms" in entry]
    assert nav_pages(section) == [f"mechanisms/{name}" for name in MECHANISM_PAGES]


def test_the_design_sections_have_their_pages_and_the_readme_links_them():
    explanation = "\n".join(p.read_text() for p in sorted((DOCS / "explanation").glob("*.md")))
    for section in ("layers", "pipeline", "Data model", "Randomness", "Privacy accounting", "metric contract"):
        assert section.lower() in explanation.lower(), section
    for section in ("Tracking", "pitfalls", "Concurrency", "conformance suite"):
        assert section.lower() in explanation.lower(), section
    assert (DOCS / "mechanisms" / "index.md").exists()
    readme = (ROOT / "README.md").read_text()
    assert "](docs/explanation/index.md)" in readme and "](docs/mechanisms/index.md)" in readme


def test_every_relative_link_of_the_readme_and_the_contributing_guide_exists():
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        text = (ROOT / name).read_text()
        links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
        missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
        assert missing == [], name


def test_every_public_name_has_its_api_entry():
    entries = re.findall(
        r"^::: dp2pub\.(\w+)$",
        "\n".join(p.read_text() for p in (DOCS / "reference" / "api").glob("*.md")),
        flags=re.M,
    )
    assert sorted(entries) == sorted(dp2pub.__all__)


def test_the_benchmark_pages_render_without_the_optional_extras():
    """The site's build renders the benchmark pages (docs/hooks.py): with none of the
    ``bench`` extra's libraries imported, and the committed pages hold no figures."""
    code = (
        "import sys\n"
        "from dp2pub.bench import pages\n"
        "for name in pages.RENDERERS:\n"
        "    assert pages.rendering(name, sys.argv[1])\n"
        "extras = ('pure_ldp', 'multi_freq_ldpy', 'DataSynthesizer', 'statsmodels', 'xxhash', 'numba')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in extras))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_no_tracked_text_refers_outside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = [
        f for f in files if f.endswith((".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".txt")) or f in ("Makefile",)
    ]
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in texts
        if name != "tests/test_docs.py" and "LICENSE" not in name and (ROOT / name).exists()
        for number, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_the_tutorial_prints_its_files_exactly_and_the_readme_links_it():
    """Every ``<!-- file: PATH -->`` block of docs/tutorials/your-own-study.md is PATH's text,
    so the files a test runs (tests/test_tutorial.py) are the ones a reader copies."""
    tutorial = (DOCS / "tutorials" / "your-own-study.md").read_text()
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
    assert "](docs/tutorials/your-own-study.md)" in readme.split("\n## ")[0]  # on the first screen


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    """``make docs``: any broken internal link or anchor, or a page left out of the nav, fails
    the build (mkdocs.yml's validation settings, strict); the benchmark pages get their tables."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr
    sweep = (tmp_path / "site" / "reference" / "benchmarks" / "sweep.html").read_text()
    assert "by <code>python -m dp2pub.bench sweep</code>" in sweep
    api = (tmp_path / "site" / "reference" / "api" / "oracles.html").read_text()
    assert 'id="dp2pub.GRR"' in api
