"""Helpers of the learning tests: composed configs and the UCI directory."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from tests.conftest import compose_config
from tests.data.conftest import find_uci_dir


def plain(overrides: list[str]) -> dict:
    return OmegaConf.to_container(compose_config(overrides), resolve=True)


@pytest.fixture(scope="session")
def data_dir() -> str:
    folder, candidates = find_uci_dir()
    if folder is None:
        pytest.skip(f"UCI files not found in {candidates}")
    return str(folder)
