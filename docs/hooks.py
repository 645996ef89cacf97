"""MkDocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

The benchmark pages (docs/reference/benchmarks/) hold empty blocks between
``<!-- bench:<name> -->`` markers; each is filled at build time with the rendering of the
committed results, docs/bench/<name>.json (:mod:`dp2pub.bench.pages`), so the site shows the
measured figures with their date and machine and the pages in the repository hold none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dp2pub.bench import pages

ROOT = Path(__file__).resolve().parent.parent


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return pages.fill(markdown, ROOT)
