"""Config entries (``dataset``, ``mechanism``) to library objects.

An entry names its builder by ``name`` (an entry point of the installed packages: dp2pub's
own built-ins and any plugin's, :mod:`dp2pub.plugins`) or by ``_target_`` (a class or
function imported by its dotted path). The builder's signature is the entry's schema: every
other key of the entry is one of its keyword arguments, and a key it does not take is
refused by name. The same objects can be built without Hydra, from plain mappings.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dp2pub.data.dataset import Dataset
from dp2pub.data.generator import Generator
from dp2pub.data.tally import Tally
from dp2pub.digest import sha256_of
from dp2pub.plugins import (
    GROUPS,
    Provenance,
    builder_of,
    entry_points,
    load_named,
    path_parameters,
    provenance,
    resolve_target,
)
from dp2pub.publish.base import Publisher
from dp2pub.validation import ConfigError

#: Keys of a config entry that are not arguments of its builder.
RESERVED = {"name", "seed", "_target_"}
#: What each entry's builder must return.
PRODUCTS: dict[str, type] = {"dataset": Dataset, "mechanism": Publisher}


class Registry(Mapping[str, Callable[..., Any]]):
    """The registered builders of one config entry (``dataset`` or ``mechanism``), by name,
    read from the installed packages' entry points and imported on first use."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.group = GROUPS[entry]

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in entry_points(self.group):
            raise KeyError(name)
        return builder_of(self.loaded(name))

    def loaded(self, name: str) -> Any:
        """The object the entry point ``name`` names (ConfigError naming ``<entry>.name`` if
        it is not registered, registered twice or does not import)."""
        return _load(self.group, name, f"{self.entry}.name")

    def __iter__(self) -> Iterator[str]:
        return iter(entry_points(self.group))

    def __len__(self) -> int:
        return len(entry_points(self.group))


@functools.cache
def _load(group: str, name: str, key: str) -> Any:
    return load_named(group, name, key)


DATASETS = Registry("dataset")
PUBLISHERS = Registry("mechanism")


@dataclass(frozen=True)
class Entry:
    """A config entry resolved to its builder: the registered or targeted object, the
    function to call, the name runs show, and the entry's other keys."""

    entry: str
    name: str
    obj: Any
    builder: Callable[..., Any]
    params: dict[str, Any]
    #: The entry's ``_target_``, or None when it is named.
    target: Any = None

    @property
    def key(self) -> str:
        """The config key that names the builder: ``<entry>._target_`` or ``<entry>.name``."""
        return f"{self.entry}._target_" if self.target is not None else f"{self.entry}.name"

    @property
    def named_by(self) -> Any:
        """The value of :attr:`key`."""
        return self.target if self.target is not None else self.name

    @property
    def provenance(self) -> Provenance:
        """What runs when this entry is built (:func:`dp2pub.plugins.provenance`)."""
        return provenance(self.obj)


def resolve(entry: str, cfg: Mapping) -> Entry:
    """The builder of the config entry ``cfg`` of ``entry`` (``dataset`` or ``mechanism``).

    Raises:
        ConfigError: naming ``<entry>.name`` or ``<entry>._target_`` when it names nothing
            that imports.
    """
    target = cfg.get("_target_")
    if target is not None:
        obj = resolve_target(target, f"{entry}._target_")
        name = cfg.get("name") or default_name(obj, target)
    else:
        name = cfg.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{entry}.name", name, "one of " + ", ".join(_registry(entry)) + " (or a _target_)")
        obj = _registry(entry).loaded(name)
    params = {k: v for k, v in cfg.items() if k not in RESERVED}
    return Entry(entry, str(name), obj, builder_of(obj), params, target)


def _registry(entry: str) -> Registry:
    return DATASETS if entry == "dataset" else PUBLISHERS


def default_name(obj: Any, target: str) -> str:
    """The name a targeted entry shows when it sets none: a Publisher class's ``name``, else
    the target's last part."""
    named = getattr(obj, "name", None)
    return named if isinstance(named, str) and named else str(target).replace(":", ".").rpartition(".")[2]


def named(cfg: Mapping) -> dict:
    """``cfg`` with ``dataset.name`` and ``mechanism.name`` set where only a ``_target_``
    names the builder (runs, labels and figures read the name). An entry whose target does
    not import is left as it is: the job refuses it, inside its run."""
    completed = dict(cfg)
    for entry in GROUPS:
        section = cfg.get(entry)
        if isinstance(section, Mapping) and section.get("_target_") is not None and not section.get("name"):
            with contextlib.suppress(ConfigError):
                completed[entry] = {**section, "name": resolve(entry, section).name}
    return completed


def call(resolved: Entry, extra: Mapping, builder: Callable[..., Any] | None = None) -> Any:
    """``builder(**params, **extra)`` (default: the entry's builder), with ``extra`` cut to
    what the builder takes and the entry's keys checked against its signature first: a key
    it does not take, or a parameter it requires that no key gives, is a ConfigError."""
    builder = builder or resolved.builder
    entry, name, params = resolved.entry, resolved.name, resolved.params
    try:
        signature = inspect.signature(builder).parameters
    except (TypeError, ValueError):
        raise ConfigError(
            resolved.key, resolved.named_by, "a class or function whose signature Python can read"
        ) from None
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values())
    extra = {k: v for k, v in extra.items() if k in signature}  # only what the builder takes
    accepted = set(signature) - set(extra)
    unknown = [] if takes_any else sorted(set(params) - accepted)
    if unknown:
        raise ConfigError(f"{entry}.{unknown[0]}", params[unknown[0]], f"a key of {name}: {sorted(accepted)}")
    for parameter in signature.values():
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ConfigError(
                resolved.key, resolved.named_by, f"a builder taking keywords ({parameter.name} is positional)"
            )
        required = parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        )
        if required and parameter.name not in params and parameter.name not in extra:
            raise ConfigError(f"{entry}.{parameter.name}", None, f"a value: {name} requires it")
    try:
        return builder(**params, **extra)
    except ConfigError as error:
        raise error.under(entry) from None


def check_product(resolved: Entry, product: Any, expected: type | None = None) -> Any:
    """Refuse, naming the entry's key, a builder that returned another kind of object than
    ``expected`` (default: what the entry builds, :data:`PRODUCTS`)."""
    expected = expected or PRODUCTS[resolved.entry]
    if not isinstance(product, expected):
        raise ConfigError(
            resolved.key,
            resolved.named_by,
            f"a builder of a {expected.__module__}.{expected.__name__} (it returned an object of type {type(product).__name__})",
        )
    return product


def build_dataset(
    cfg: Mapping,
    rng: np.random.Generator,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Dataset:
    """The dataset described by a ``dataset`` config entry: drawn with ``rng`` if random, read
    from ``data_dir`` (``paths.data_dir``; None: DP2PUB_DATA_DIR, else the packaged copies, see
    :func:`dp2pub.data.files.open_data_files`) if real, downloads (``dataset.download=true``,
    which then reads no data directory) going to ``cache_dir`` (``paths.cache_dir``). Each builder gets only the ones among ``rng``, ``data_dir``,
    ``cache_dir`` that it takes."""
    resolved = resolve("dataset", cfg)
    extra = {"rng": rng, "data_dir": data_dir, "cache_dir": cache_dir}
    return check_product(resolved, call(resolved, extra))


def build_tally(
    cfg: Mapping,
    rng: np.random.Generator,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Tally:
    """The histograms of the dataset described by ``cfg``: drawn without records for a
    :class:`~dp2pub.data.generator.Generator` with a ``tally``, else counted from the table
    :func:`build_dataset` gives."""
    resolved = resolve("dataset", cfg)
    if isinstance(resolved.obj, Generator) and resolved.obj.tally is not None:
        return check_product(resolved, call(resolved, {"rng": rng}, resolved.obj.tally), Tally)
    return Tally.of(build_dataset(cfg, rng, data_dir, cache_dir))


def draws_counts(cfg: Mapping) -> bool:
    """Whether :func:`build_tally` draws the histograms of ``cfg``'s dataset without records."""
    obj = resolve("dataset", cfg).obj
    return isinstance(obj, Generator) and obj.tally is not None


def build_publisher(cfg: Mapping) -> Publisher:
    """The publisher described by a ``mechanism`` config entry."""
    resolved = resolve("mechanism", cfg)
    return check_product(resolved, call(resolved, {}))


def publisher_class(cfg: Mapping) -> type[Publisher] | None:
    """The Publisher class a ``mechanism`` entry builds, when its builder is one (or an
    oracle publisher's config builder); None when it is a function or does not resolve."""
    try:
        obj = resolve("mechanism", cfg).obj
    except ConfigError:
        return None
    return obj if isinstance(obj, type) and issubclass(obj, Publisher) else None


def builder_defaults(cfg: Mapping) -> dict[str, Any]:
    """The default of every keyword of the ``mechanism`` entry's builder (empty when it
    does not resolve)."""
    try:
        builder = resolve("mechanism", cfg).builder
        parameters = inspect.signature(builder).parameters.values()
    except (ConfigError, TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def planned_shape(cfg: Mapping) -> tuple[int, list[int]] | None:
    """``(n, sizes)`` of a generated dataset from its config entry, before it is drawn
    (:attr:`Generator.shape`; None for a table that is read).

    Raises:
        ConfigError: naming the ``dataset`` key whose value is out of range.
    """
    resolved = resolve("dataset", cfg)
    if not isinstance(resolved.obj, Generator):
        return None
    try:
        return resolved.obj.shape(**resolved.params)
    except ConfigError as error:
        raise error.under("dataset") from None


def input_files(cfg: Mapping) -> dict[str, str]:
    """The SHA-256 of every file (or folder of files) that the ``dataset`` and ``mechanism``
    entries name by a parameter their builder annotates
    :data:`~dp2pub.plugins.InputPath` (``dataset.path``, ``dataset.domain``,
    ``mechanism.hierarchies``), by key. Relative paths are read from the working directory,
    as the builders read them. Part of a job's identity: a changed file is a new job. No other
    value is looked up on disk (a folder named ``records`` changes nothing)."""
    digests = {}
    for entry in GROUPS:
        section = cfg.get(entry)
        if not isinstance(section, Mapping):
            continue
        try:
            resolved = resolve(entry, section)
        except ConfigError:
            continue  # the job refuses it, inside its run
        for key in sorted(path_parameters(resolved.builder) | path_parameters(resolved.obj)):
            value = resolved.params.get(key)
            digest = _path_sha256(Path(value).expanduser()) if isinstance(value, str) and value else None
            if digest is not None:
                digests[f"{entry}.{key}"] = digest
    return digests


def _path_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes, of a folder's files (their relative paths and bytes, the
    whole tree), or None when ``path`` is neither (the builder then refuses it)."""
    try:
        if path.is_file():
            return sha256_of(path)
        if path.is_dir():
            digest = hashlib.sha256()
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                digest.update(f"{child.relative_to(path)}\0{sha256_of(child)}\0".encode())
            return digest.hexdigest()
    except OSError:
        return None
    return None


def code_identity(cfg: Mapping) -> dict[str, str]:
    """The qualified name, distribution version and source SHA-256 of every builder of
    ``cfg`` that is not dp2pub's own (a plugin's, or a ``_target_``'s), by entry: part of a
    job's identity, so changed code (or a new release of its package, which may ship new
    data files) is a new job. Empty for dp2pub's built-ins (their identity is their config,
    as before)."""
    found = {}
    for entry in GROUPS:
        section = cfg.get(entry)
        if not isinstance(section, Mapping):
            continue
        try:
            described = resolve(entry, section).provenance
        except ConfigError:
            continue  # the job refuses it, inside its run
        if described.module.partition(".")[0] != "dp2pub":
            found[entry] = f"{described.module}.{described.qualname}=={described.version}@{described.source_sha256}"
    return found


def provenance_tags(cfg: Mapping) -> dict[str, str]:
    """Run tags that say which code built the dataset and the mechanism:
    ``dp2pub.<entry>.module``, ``.qualname``, ``.distribution``, ``.version``,
    ``.source_sha256``."""
    tags = {}
    for entry in GROUPS:
        section = cfg.get(entry)
        if isinstance(section, Mapping):
            try:
                tags.update(resolve(entry, section).provenance.tags(f"dp2pub.{entry}"))
            except ConfigError:
                continue
    return tags
