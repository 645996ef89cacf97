"""The benchmark pages of the documentation site, generated from the committed results.

Each page under ``docs/reference/benchmarks/`` holds an empty block between
``<!-- bench:<name> -->`` and ``<!-- /bench:<name> -->``; ``make docs`` fills it at build time
(the MkDocs hook ``docs/hooks.py`` calls :func:`fill`) with the benchmark's ``render`` of its
committed results, ``docs/bench/<name>.json``, which record the date and the machine. The
pages in the repository hold no measured figure, so none can go stale: measuring again
(``python -m dp2pub.bench <name> --out docs/bench/<name>.json``) and rebuilding the site is all
it takes. Rendering imports none of the optional ``bench`` extras."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Each benchmark with a page: the module whose ``render`` turns its results into markdown.
RENDERERS = {
    "oracles": "dp2pub.bench.oracles_report",
    "overhead": "dp2pub.bench.overhead",
    "sweep": "dp2pub.bench.sweep",
}


def docs_json(name: str) -> str:
    """The committed results of benchmark ``name``, relative to the repository's root."""
    return f"docs/bench/{name}.json"


def renderer(name: str) -> Callable[[Any], str]:
    """The ``render`` function of benchmark ``name``."""
    return importlib.import_module(RENDERERS[name]).render


def markers(name: str) -> tuple[str, str]:
    """The markers around a page's block of benchmark ``name``."""
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def replace_block(text: str, block: str, name: str) -> str:
    """``text`` with the part between the markers of ``name`` (:func:`markers`) replaced by ``block``."""
    start_mark, end_mark = markers(name)
    before, start, rest = text.partition(start_mark)
    _, end, after = rest.partition(end_mark)
    if not start or not end:
        raise ValueError(f"{start_mark} ... {end_mark} not found")
    return f"{before}{start_mark}\n{block}\n{end_mark}{after}"


def block_of(text: str, name: str) -> str:
    """The part of ``text`` between the markers of ``name``, without the newlines next to them."""
    start_mark, end_mark = markers(name)
    return text.partition(start_mark)[2].partition(end_mark)[0].strip("\n")


def rendering(name: str, root: str | Path = ".") -> str:
    """Benchmark ``name``'s committed results (under ``root``, the repository) as markdown."""
    return renderer(name)(json.loads((Path(root) / docs_json(name)).read_text()))


def fill(text: str, root: str | Path = ".") -> str:
    """``text`` (a page's markdown) with the block of every benchmark whose markers it holds
    filled with the rendering of its committed results."""
    for name in RENDERERS:
        if markers(name)[0] in text:
            text = replace_block(text, rendering(name, root), name)
    return text


def print_rendering(path: str | Path, render: Callable[[Any], str]) -> Any:
    """Print the markdown that ``render`` makes of the results file ``path`` (what its page
    will show); returns the results."""
    results = json.loads(Path(path).read_text())
    print(render(results))
    return results
