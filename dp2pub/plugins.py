"""The door for code that is not dp2pub's: names to objects, and what ran.

A config entry (``dataset``, ``mechanism``) names its builder in one of two ways:

- ``name: <registered name>``: looked up among the installed packages' entry points of the
  entry's group (:data:`GROUPS`: ``dp2pub.datasets``, ``dp2pub.publishers``). dp2pub's own
  datasets and mechanisms are registered there by its ``pyproject.toml``, exactly as a
  plugin package registers its own; no name is special.
- ``_target_: <module>.<Name>`` (or ``<module>:<Name>``, or ``<file.py>:<Name>``): imported
  with :mod:`importlib`, the way Hydra's ``instantiate`` reads ``_target_``, without Hydra.
  A dotted module is looked for on ``sys.path`` and then in the working directory (as
  ``python -m`` does); a ``.py`` file is loaded from its path.

Every run records what ran (:func:`provenance`): the object's module and qualified name, the
distribution that installed it and its version, and the SHA-256 of the file that defines it,
so a run of a plugin can be traced to its code.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from dp2pub.digest import sha256_of
from dp2pub.validation import INPUT_PATH, ConfigError

#: Config entry -> entry-point group of its named builders.
GROUPS = {"dataset": "dp2pub.datasets", "mechanism": "dp2pub.publishers"}
#: Entry points whose value is a package of Hydra config groups (``dataset/``,
#: ``mechanism/``, ``experiment/``, ...) added to dp2pub's config search path.
CONFIGS_GROUP = "dp2pub.configs"


@functools.cache
def entry_points(group: str) -> dict[str, tuple[metadata.EntryPoint, ...]]:
    """The installed packages' entry points of ``group`` by name (a name two packages
    register maps to both; :func:`load_named` refuses it)."""
    found: dict[str, list[metadata.EntryPoint]] = {}
    for point in metadata.entry_points(group=group):
        if point.value not in {p.value for p in found.get(point.name, [])}:  # a package seen twice on sys.path
            found.setdefault(point.name, []).append(point)
    return {name: tuple(points) for name, points in sorted(found.items())}


def load_named(group: str, name: str, key: str) -> Any:
    """The object the entry point ``name`` of ``group`` names.

    Raises:
        ConfigError: naming ``key`` when no installed package registers ``name`` (listing
            those that are), two do, or importing it fails.
    """
    points = entry_points(group).get(name, ())
    if not points:
        raise ConfigError(key, name, "one of " + ", ".join(entry_points(group)) + " (or a _target_)")
    if len(points) > 1:
        owners = ", ".join(sorted(f"{_dist_name(p)} ({p.value})" for p in points))
        raise ConfigError(key, name, f"a name only one package registers; {owners} do: name one by _target_")
    try:
        return points[0].load()
    except (Exception, SystemExit) as error:  # an error, or an exit, inside the plugin's import
        raise ConfigError(key, name, f"an entry point that imports ({points[0].value}: {_reason(error)})") from None


def _dist_name(point: metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return dist.metadata["Name"] if dist is not None else "?"


def _reason(error: BaseException) -> str:
    """An exception in one line."""
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]


def resolve_target(target: Any, key: str) -> Any:
    """The object a ``_target_`` names: ``pkg.module.Name``, ``pkg.module:Name`` or
    ``path/to/file.py:Name`` (a nested ``Outer.Inner`` after the colon too).

    Raises:
        ConfigError: naming ``key`` if ``target`` is not such a string, its module cannot be
            imported (the import error is quoted), or the module has no such attribute.
    """
    if not isinstance(target, str) or not target.strip():
        raise ConfigError(key, target, "a dotted path such as mypkg.module.Name, or file.py:Name")
    module_name, attribute = _split(target)
    if not module_name or not attribute:
        raise ConfigError(key, target, "a dotted path such as mypkg.module.Name, or file.py:Name")
    try:
        module = _import(module_name)
    except ConfigError as error:
        raise ConfigError(key, target, error.allowed) from None
    except (Exception, SystemExit) as error:  # an exit inside the import is the module's too
        raise ConfigError(key, target, f"a module that imports ({_reason(error)})") from None
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ConfigError(key, target, f"a name defined in {module_name} (it has no {attribute!r})")
        found = getattr(found, part)
    return found


def _split(target: str) -> tuple[str, str]:
    """``(module, attribute)`` of a target."""
    if ":" in target:
        module, _, attribute = target.rpartition(":")
        return module, attribute
    module, _, attribute = target.rpartition(".")
    return module, attribute


def _import(module_name: str) -> ModuleType:
    """Import a dotted module (from ``sys.path``, else from the working directory) or a
    ``.py`` file."""
    if module_name.endswith(".py"):
        return _import_file(Path(module_name))
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        top = module_name.partition(".")[0]
        if error.name != top:  # the module exists, but a module it imports does not
            raise
        here = Path.cwd()
        if str(here) in sys.path or not ((here / top).is_dir() or (here / f"{top}.py").is_file()):
            raise ConfigError(
                "", module_name, f"an importable module (no module {top!r} on sys.path or in {here})"
            ) from None
    sys.path.insert(0, str(here))  # as python -m: the working directory's modules
    return importlib.import_module(module_name)


def _import_file(path: Path) -> ModuleType:
    """The module of a ``.py`` file (imported once per resolved path)."""
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ConfigError("", str(path), "an existing .py file")
    name = "dp2pub_target_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


@dataclass(frozen=True)
class Provenance:
    """What ran: an object's module, qualified name, the distribution that installed it
    (None for a module that no installed distribution owns) and its version, and the SHA-256
    of its source file (None when it has none, as a builtin)."""

    module: str
    qualname: str
    distribution: str | None
    version: str | None
    source_sha256: str | None

    def tags(self, prefix: str) -> dict[str, str]:
        """The run tags ``<prefix>.module``, ``.qualname``, ``.distribution``, ``.version``,
        ``.source_sha256`` (those known)."""
        fields = {
            "module": self.module,
            "qualname": self.qualname,
            "distribution": self.distribution,
            "version": self.version,
            "source_sha256": self.source_sha256,
        }
        return {f"{prefix}.{k}": v for k, v in fields.items() if v is not None}


def provenance(obj: Any) -> Provenance:
    """The :class:`Provenance` of a class or function (of its wrapped function for a
    :class:`functools.partial` and for objects with ``__wrapped__``)."""
    while isinstance(obj, functools.partial) or hasattr(obj, "__wrapped__"):
        obj = obj.func if isinstance(obj, functools.partial) else obj.__wrapped__
    described = obj if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__")) else type(obj)
    module_name = getattr(described, "__module__", None) or "?"
    module = sys.modules.get(module_name)
    source = getattr(module, "__file__", None)
    dist = _distribution(module_name)
    version = None if dist is None else _version(dist)
    return Provenance(module_name, getattr(described, "__qualname__", "?"), dist, version, _file_sha256(source))


@functools.cache
def _version(dist: str) -> str | None:
    """The installed version of the distribution ``dist`` (None if it is not installed)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _file_sha256(path: str | None) -> str | None:
    if path is None or not Path(path).is_file():
        return None
    return sha256_of(path)


@functools.cache
def _distribution(module_name: str) -> str | None:
    """The distribution that installed the top-level package of ``module_name``: the one of
    the same (normalized) name when it is installed and declares that package (dp2pub's own
    entries, most plugins), else the first that declares it in a scan of every installed
    distribution (the scan reads the file lists of all of them: a second or so)."""
    top = module_name.partition(".")[0]
    with contextlib.suppress(metadata.PackageNotFoundError):
        dist = metadata.distribution(top)
        if top in _top_level(dist):
            return str(dist.metadata["Name"])
    owners = _packages_distributions().get(top, [])
    return owners[0] if owners else None


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The top-level packages and modules ``dist`` declares (``top_level.txt``), else those
    its installed files hold."""
    declared = dist.read_text("top_level.txt")
    if declared:
        return set(declared.split())
    return {Path(str(file)).parts[0].removesuffix(".py") for file in dist.files or ()}


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()


def config_packages() -> list[str]:
    """The packages of Hydra configs that installed plugins register (:data:`CONFIGS_GROUP`),
    in name order."""
    return [points[0].value for points in entry_points(CONFIGS_GROUP).values()]


def builder_of(obj: Any) -> Callable[..., Any]:
    """The function a config entry calls: the object itself, or what its
    ``config_builder()`` returns when it has one (a class whose config keys are not its
    constructor's, such as an :class:`~dp2pub.publish.oracle_table.OraclePublisher`)."""
    make = getattr(obj, "config_builder", None)
    return make() if callable(make) else obj


def path_parameters(builder: Any) -> set[str]:
    """The parameters of ``builder`` annotated :data:`~dp2pub.validation.InputPath` (or
    ``InputPath | None``):
    of a function, of a class's fields and ``__init__``, of what a wrapper wraps. Empty when
    its annotations cannot be evaluated."""
    target = inspect.unwrap(builder)
    sources = [target, getattr(target, "__init__", None)] if isinstance(target, type) else [target]
    found: set[str] = set()
    for source in sources:
        try:
            hints = get_type_hints(source, include_extras=True)
        except Exception:  # an annotation naming what its module does not define at run time
            continue
        found |= {name for name, hint in hints.items() if _marks_path(hint)}
    return found


def _marks_path(hint: Any) -> bool:
    """Whether an annotation is :data:`~dp2pub.validation.InputPath`, alone or in a union."""
    if get_origin(hint) is Annotated:
        return INPUT_PATH in get_args(hint)[1:]
    return any(_marks_path(arg) for arg in get_args(hint))
