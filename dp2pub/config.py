"""Where the config files are, and the composed Hydra config as the plain dict that
:func:`dp2pub.job.run_job` takes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

from dp2pub.plugins import config_packages
from dp2pub.validation import ConfigError

_PACKAGE = Path(__file__).resolve().parent


def config_dir() -> Path:
    """The directory of ``config.yaml`` and its groups.

    In a source checkout (and an editable install) it is the top-level ``conf/``, the one
    users read and edit. A wheel carries the same files as ``dp2pub/conf/`` (pyproject.toml
    maps the package ``dp2pub.conf`` to ``conf/``); where that copy exists it is the one used
    (a source checkout has none). ``dp2pub --info searchpath`` prints the one in use.
    """
    packaged = _PACKAGE / "conf"
    return packaged if (packaged / "config.yaml").is_file() else _PACKAGE.parent / "conf"


def plugin_config_dirs() -> list[Path]:
    """The folders of the config packages that installed plugins register (entry points
    ``dp2pub.configs``, :func:`dp2pub.plugins.config_packages`); a package that cannot be
    found is left to Hydra to report."""
    dirs = []
    for package in config_packages():
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.append(Path(location))
    return dirs


def resolve(cfg: DictConfig) -> dict:
    """The job's config as plain containers; a value that cannot be resolved (``???``, an
    unset environment variable) is a ConfigError naming its key."""
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except (MissingMandatoryValue, InterpolationResolutionError) as error:
        key = str(error.full_key)
        raw: object = OmegaConf.to_container(cfg, resolve=False)
        for part in key.split("."):
            raw = raw.get(part) if isinstance(raw, dict) else None
        assert error.msg is not None  # OmegaConf sets the message of every error it raises
        detail = error.msg.splitlines()[0].split("while resolving interpolation: ")[-1].strip("\"'")
        raise ConfigError(key, raw, f"a value that resolves ({detail}); set {key}=... on the command line") from None
    assert isinstance(plain, dict)
    return plain


def study_figures(cfg: DictConfig) -> dict:
    """A composed config's ``figures`` section (its study's figures) as plain containers, {}
    without one: what names the study's main metrics (:mod:`dp2pub.metrics.main`)."""
    figures = cfg.get("figures")  # unresolved: what the job does not use cannot fail it
    return OmegaConf.to_container(figures, resolve=False) if isinstance(figures, DictConfig) else {}  # type: ignore[return-value]


def plain_config(cfg: DictConfig) -> dict:
    """:func:`resolve`, with an integer ``epsilon`` made a float (``epsilon=1`` and
    ``epsilon=1.0`` are one param value), without a study's ``figures`` section (what
    ``dp2pub-figures`` draws is neither a param of the job's run nor part of its identity)."""
    plain = resolve(OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "figures"]) if "figures" in cfg else cfg)
    if isinstance(plain.get("epsilon"), int) and not isinstance(plain["epsilon"], bool):
        plain["epsilon"] = float(plain["epsilon"])
    return plain
