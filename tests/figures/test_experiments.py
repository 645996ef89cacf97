"""Every study config composes, names its own MLflow experiment and sweeps keys that exist."""

import itertools
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from dp2pub.registry import build_publisher
from tests.figures.conftest import STUDIES

#: Runs the command line or real services end to end (``make test-fast`` skips it).
pytestmark = pytest.mark.slow

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = {"dataset", "mechanism"}


def compose_study(study: str, extra: list[str] | None = None):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[f"experiment={study}", *(extra or [])], return_hydra_config=True)


def test_one_config_per_study():
    # every study config has a figure of its name; every figure reads a study's experiment
    assert {p.stem for p in (CONF / "experiment").glob("*.yaml")} == {s.experiment for s in STUDIES.values()}
    assert {s.experiment for s in STUDIES.values()} <= set(STUDIES)
    assert all(s.study == s.experiment for s in STUDIES.values())  # each study fills its own experiment
    for path in (CONF / "experiment").glob("*.yaml"):
        assert path.read_text().startswith("# @package _global_\n"), path


@pytest.mark.parametrize("figure", sorted(STUDIES))
def test_study_composes_with_its_grid_and_experiment(figure):
    spec = STUDIES[figure]
    study = spec.experiment
    cfg = compose_study(study)
    grid = OmegaConf.to_container(cfg.hydra.sweeper.params)
    assert grid and cfg.tracking.experiment == study
    # every combination of the swept config groups and keys has every swept key and the
    # figure's params (of a joined hue, the first: a mechanism need not have the others)
    options = {key: str(values).split(",") for key, values in grid.items() if key in GROUPS | {"paper"}}
    families = {f.param for f in spec.families}
    for choice in itertools.product(*options.values()):
        chosen = [f"{key}={value}" for key, value in zip(options, choice)]
        cfg = compose_study(study, chosen)
        for key in [*grid, spec.x, (spec.hue_parts or (spec.hue,))[0], *spec.facets]:
            if key not in GROUPS | families | {"seed", "paper"}:
                assert OmegaConf.select(cfg, key) is not None, (chosen, key)
        mechanism = OmegaConf.to_container(cfg.mechanism, resolve=True)
        build_publisher(mechanism)  # every mechanism key is one the publisher takes
