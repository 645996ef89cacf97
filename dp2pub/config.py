"""The composed Hydra config as the plain dict that :func:`dp2pub.job.run_job` takes."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

from dp2pub.validation import ConfigError


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
        detail = error.msg.splitlines()[0].split("while resolving interpolation: ")[-1].strip("\"'")
        raise ConfigError(key, raw, f"a value that resolves ({detail}); set {key}=... on the command line") from None
    assert isinstance(plain, dict)
    return plain


def plain_config(cfg: DictConfig) -> dict:
    """:func:`resolve`, with an integer ``epsilon`` made a float (``epsilon=1`` and
    ``epsilon=1.0`` are one param value)."""
    plain = resolve(cfg)
    if isinstance(plain.get("epsilon"), int) and not isinstance(plain["epsilon"], bool):
        plain["epsilon"] = float(plain["epsilon"])
    return plain
