"""Helpers of the learning tests: composed configs."""

from __future__ import annotations

from omegaconf import OmegaConf

from tests.conftest import compose_config


def plain(overrides: list[str]) -> dict:
    return OmegaConf.to_container(compose_config(overrides), resolve=True)
