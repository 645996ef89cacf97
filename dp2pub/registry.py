"""Config entries (``dataset.name``, ``mechanism.name``) to library objects.

This is the only place that knows the config layout of a dataset or a mechanism; each entry
is a plain function of the entry's keys, so the same objects can be built without Hydra.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dp2pub.data.adult import load_adult
from dp2pub.data.car import load_car
from dp2pub.data.dataset import Dataset
from dp2pub.data.privbayes import load_privbayes
from dp2pub.data.synthetic import check_shape, make_synthetic, tally_synthetic
from dp2pub.data.synthetic_bn import make_synthetic_bn
from dp2pub.data.tally import Tally
from dp2pub.data.uci_nb import UCI_NB, load_uci_nb
from dp2pub.publish.base import Publisher
from dp2pub.publish.dp2pub_publisher import DP2PubPublisher
from dp2pub.publish.dppro import DPProPublisher
from dp2pub.publish.kanonymity import MondrianPublisher, SamaratiPublisher
from dp2pub.publish.ldp_marginals import LDPMarginalsPublisher
from dp2pub.publish.ldp_nb import LDPNBPublisher
from dp2pub.publish.oracle_table import ORACLE_PUBLISHERS, oracle_publisher
from dp2pub.publish.pram import PRAMPublisher
from dp2pub.publish.privbayes import PrivBayesPublisher
from dp2pub.validation import ConfigError

DATASETS: dict[str, Callable[..., Dataset]] = {
    "synthetic": make_synthetic,
    "synthetic_bn": make_synthetic_bn,
    "car": load_car,
    "adult": load_adult,
    # the PrivBayes benchmark tables (adult15: their 15-attribute Adult)
    "nltcs": functools.partial(load_privbayes, "nltcs"),
    "acs": functools.partial(load_privbayes, "acs"),
    "br2000": functools.partial(load_privbayes, "br2000"),
    "adult15": functools.partial(load_privbayes, "adult"),
    # the other UCI tables of LDP naive Bayes (Yilmaz et al.): mushroom, nursery, chess, connect4
    **{name: functools.partial(load_uci_nb, name) for name in UCI_NB},
}
#: Generators whose histograms have a closed-form distribution, drawn without a record per user.
TALLIES: dict[str, Callable[..., Tally]] = {"synthetic": tally_synthetic}
PUBLISHERS: dict[str, Callable[..., Publisher]] = {
    **{name: oracle_publisher(name) for name in ORACLE_PUBLISHERS},
    "pram": PRAMPublisher,
    "dp2pub": DP2PubPublisher,
    "privbayes": PrivBayesPublisher,
    "dppro": DPProPublisher,
    "samarati": SamaratiPublisher,
    "mondrian": MondrianPublisher,
    "ldp_nb": LDPNBPublisher,
    "ldp_marginals": LDPMarginalsPublisher,
}

#: Datasets drawn by a generator from ``n``, ``d``, ``k_min``, ``k_max``: their shape is known
#: from the config before they are built (the real tables are small and read first).
GENERATED = ("synthetic", "synthetic_bn")

#: Keys of a config entry that are not arguments of its builder.
RESERVED = {"name", "seed"}


def _build(group: str, registry: Mapping[str, Callable[..., Any]], cfg: Mapping, **extra: Any) -> Any:
    name = cfg.get("name")
    if name not in registry:
        raise ConfigError(f"{group}.name", name, "one of " + ", ".join(sorted(registry)))
    assert isinstance(name, str)  # equal to a key of the registry
    builder = registry[name]
    params = {k: v for k, v in cfg.items() if k not in RESERVED}
    signature = set(inspect.signature(builder).parameters)
    extra = {k: v for k, v in extra.items() if k in signature}  # only what the builder takes
    accepted = signature - set(extra)
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ConfigError(f"{group}.{unknown[0]}", params[unknown[0]], f"a key of {name}: {sorted(accepted)}")
    try:
        return builder(**params, **extra)
    except ConfigError as error:
        raise error.under(group) from None


def build_dataset(
    cfg: Mapping,
    rng: np.random.Generator,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Dataset:
    """The dataset described by a ``dataset`` config entry: drawn with ``rng`` if random, read
    from ``data_dir`` (``paths.data_dir``; None: DP2PUB_DATA_DIR, else the packaged copies, see
    :func:`dp2pub.data.files.open_data_files`) if real, downloads going to ``cache_dir`` (``paths.cache_dir``). Each builder gets only the
    ones among ``rng``, ``data_dir``, ``cache_dir`` that it takes."""
    return _build("dataset", DATASETS, cfg, rng=rng, data_dir=data_dir, cache_dir=cache_dir)


def build_tally(
    cfg: Mapping,
    rng: np.random.Generator,
    data_dir: str | None = None,
    cache_dir: str | None = None,
) -> Tally:
    """The histograms of the dataset described by ``cfg``: drawn without records for a
    generator that can (:data:`TALLIES`), else counted from the table :func:`build_dataset` gives."""
    if draws_counts(cfg):
        return _build("dataset", TALLIES, cfg, rng=rng)
    return Tally.of(build_dataset(cfg, rng, data_dir, cache_dir))


def draws_counts(cfg: Mapping) -> bool:
    """Whether :func:`build_tally` draws the histograms of ``cfg``'s dataset without records."""
    return cfg.get("name") in TALLIES


def build_publisher(cfg: Mapping) -> Publisher:
    """The publisher described by a ``mechanism`` config entry."""
    return _build("mechanism", PUBLISHERS, cfg)


def planned_shape(cfg: Mapping) -> tuple[int, list[int]] | None:
    """``(n, sizes)`` of a generated dataset from its config entry, before it is drawn, with
    every domain at its largest size ``k_max`` (None for a real table).

    Raises:
        ConfigError: naming the ``dataset`` key whose value is out of range.
    """
    if cfg.get("name") not in GENERATED:
        return None
    try:
        n, d, _, k_max = check_shape(cfg.get("n"), cfg.get("d"), cfg.get("k_min"), cfg.get("k_max"))
    except ConfigError as error:
        raise error.under("dataset") from None
    return n, [k_max] * d
