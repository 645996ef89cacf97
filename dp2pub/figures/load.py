"""A study's figures from its experiment config, composed by Hydra as ``dp2pub -m
experiment=<study>`` composes it: from dp2pub's config directory
(:func:`dp2pub.config.config_dir`), the installed plugins' and any directory added with
``--config-dir``.

The study's ``figures:`` section (:mod:`dp2pub.figures.schema`) gives its figures; its
``tracking.experiment`` the MLflow experiment they read; its ``tracking.uri`` and
``paths.outputs`` the store, unless the command line says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from dp2pub.config import config_dir, plugin_config_dirs
from dp2pub.figures.schema import parse_section
from dp2pub.figures.studies import StudySpec
from dp2pub.hydra_errors import CONFIG_ERRORS, one_line
from dp2pub.validation import ConfigError, check_text


class StudyError(LookupError):
    """A study that cannot be drawn: unknown, without a ``figures:`` section, or whose config
    does not compose; its message is one line."""


@dataclass(frozen=True)
class Study:
    """A study's config as the figures need it.

    Attributes:
        name: the experiment config (``conf/experiment/<name>.yaml``).
        figures: its figures, in the order of its section (empty: no section).
        experiment: its ``tracking.experiment``.
        uri: its ``tracking.uri`` (None: the default store).
        outputs: its ``paths.outputs``.
    """

    name: str
    figures: tuple[StudySpec, ...]
    experiment: str
    uri: str | None
    outputs: str


def config_dirs(extra: Path | None = None) -> list[Path]:
    """dp2pub's config directory, the installed plugins' (:func:`dp2pub.config.plugin_config_dirs`),
    then ``extra`` (a ``--config-dir``)."""
    added = [Path(extra).expanduser().resolve()] if extra is not None else []
    return [config_dir(), *plugin_config_dirs(), *added]


def study_names(dirs: Sequence[Path]) -> list[str]:
    """Every experiment config in ``dirs`` (``experiment/*.yaml``), sorted, each once."""
    return sorted({path.stem for d in dirs for path in (Path(d) / "experiment").glob("*.yaml")})


def _searchpath(dirs: Sequence[Path]) -> list[str]:
    """The override adding the directories after the first to Hydra's search path."""
    if len(dirs) < 2:
        return []
    quoted = ",".join("'file://" + str(d).replace("\\", "\\\\").replace("'", "\\'") + "'" for d in dirs[1:])
    return [f"hydra.searchpath=[{quoted}]"]


def compose_study(study: str, dirs: Sequence[Path]) -> DictConfig:
    """The config ``dp2pub -m experiment=<study>`` composes (a StudyError if it does not)."""
    try:
        with initialize_config_dir(config_dir=str(dirs[0]), version_base="1.3"):
            return compose("config", overrides=[f"experiment={study}", *_searchpath(dirs)])
    except CONFIG_ERRORS as error:
        raise StudyError(f"study {study!r} does not compose: {one_line(error)}") from None


def _value(cfg: DictConfig, key: str) -> object:
    """The resolved value at ``key`` (None when missing); a StudyError if it does not resolve."""
    try:
        node = OmegaConf.select(cfg, key, throw_on_missing=True)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    except CONFIG_ERRORS as error:
        raise StudyError(one_line(error)) from None


def load_study(study: str, dirs: Sequence[Path]) -> Study:
    """The study ``study`` (an experiment config of ``dirs``) and its figures."""
    if study not in study_names(dirs):
        raise StudyError(f"no experiment config {study!r}")
    cfg = compose_study(study, dirs)
    experiment = check_text(_value(cfg, "tracking.experiment"), "tracking.experiment", "a non-empty name")
    section = _value(cfg, "figures")
    figures = () if section is None else tuple(parse_section(section, study, experiment))
    uri, outputs = _value(cfg, "tracking.uri"), _value(cfg, "paths.outputs")
    return Study(study, figures, experiment, None if uri is None else str(uri), str(outputs or "outputs"))


def all_studies(dirs: Sequence[Path]) -> list[Study]:
    """Every study of ``dirs``, with its figures (a StudyError names the first that cannot be
    read)."""
    return [_named(name, dirs) for name in study_names(dirs)]


def readable_studies(dirs: Sequence[Path]) -> tuple[list[Study], list[str]]:
    """The studies of ``dirs`` that can be read, and the names of those that cannot."""
    found, unread = [], []
    for name in study_names(dirs):
        try:
            found.append(_named(name, dirs))
        except StudyError:
            unread.append(name)
    return found, unread


def _named(study: str, dirs: Sequence[Path]) -> Study:
    """:func:`load_study`, its ConfigError made a StudyError prefixed with the study's name."""
    try:
        return load_study(study, dirs)
    except ConfigError as error:
        raise StudyError(f"study {study}: {error}") from None


def builtin_figures() -> dict[str, StudySpec]:
    """Every figure of dp2pub's own studies (its config directory's, no plugin's) by name."""
    return {spec.name: spec for study in all_studies([config_dir()]) for spec in study.figures}


def adhoc_hint(experiment: str) -> str:
    """The ad hoc command that draws any sweep of ``experiment``."""
    return f"dp2pub-figures experiment={experiment} x=epsilon y=<metric> hue=mechanism.name"
