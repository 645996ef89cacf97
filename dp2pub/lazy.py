"""Packages that export their modules' names without importing them first (PEP 562).

A package's ``__init__.py`` lists what it exports as ordinary imports inside an
``if TYPE_CHECKING:`` block (so type checkers, readers and the layer test see them) and a
static ``__all__``; :func:`lazy_exports` reads that block and returns the module's
``__getattr__`` and ``__dir__``, which import a name's module the first time the name is
used. ``import dp2pub`` then costs nothing beyond the standard library, and ``from dp2pub
import GRR`` imports the oracles, not scikit-learn or MLflow::

    from typing import TYPE_CHECKING

    from dp2pub.lazy import lazy_exports

    if TYPE_CHECKING:
        from dp2pub.mechanisms.grr import GRR

    __all__ = ["GRR"]
    if not TYPE_CHECKING:  # type checkers read the imports above
        __getattr__, __dir__ = lazy_exports(__name__, __file__, __all__)

The exports are read from the ``__init__.py`` source (an installed package has it). A name
may not also be a submodule's: importing the submodule binds its name in the package, which
would then hide the export (``dp2pub.synthesis`` exports ``gum`` from its module ``gum``, so it
imports eagerly).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def exported_origins(path: str | Path) -> dict[str, str]:
    """Name -> module of every ``from <module> import <name>`` in the ``if TYPE_CHECKING:``
    blocks of the file ``path``."""
    origins: dict[str, str] = {}
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                    origins.update({alias.asname or alias.name: statement.module for alias in statement.names})
    return origins


def lazy_exports(
    package: str, path: str | Path, exported: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (whose ``__init__.py`` is ``path``)
    that import each name of ``exported`` from its module on first use and keep it in the
    package's namespace. Raises ValueError naming an exported name that no ``TYPE_CHECKING``
    import provides (a typo fails on import, not on first use), or that is also the name of a
    submodule of the package (which, once imported, would hide the export)."""
    origins = exported_origins(path)
    missing = sorted(set(exported) - set(origins))
    if missing:
        raise ValueError(f"{package}.__all__ names {missing}, which no TYPE_CHECKING import of {path} provides")
    folder = Path(path).parent
    clashes = sorted(n for n in exported if (folder / f"{n}.py").exists() or (folder / n / "__init__.py").exists())
    if clashes:
        raise ValueError(f"{package} exports {clashes} lazily, but a submodule has that name: export it eagerly")

    def __getattr__(name: str) -> Any:
        if name not in origins:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(origins[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(origins))

    return __getattr__, __dir__
