"""dp2pub's sweeper checks a sweep as Hydra's BasicSweeper does, with fewer compositions: the
same outcome (nothing, or the same error from the same job) on sweeps that compose, sweeps
with a bad key, group option or value, typed and untyped nodes, and one composition per class
of jobs that differ only in plain values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.dp2pub_sweeper.sweeper import ClassComposingLoader, ValidateOnceSweeper, is_plain, untyped
from tests.conftest import CONF


def multirun(arguments: list[str]) -> tuple[DictConfig, ConfigLoader, list[list[str]]]:
    """Within an initialized Hydra: the master config of ``dp2pub -m ARGUMENTS``, Hydra's config
    loader and the sweep's jobs (their overrides), as Hydra's basic sweeper expands them."""
    hydra = GlobalHydra.instance().hydra
    assert hydra is not None
    master = hydra.compose_config("config", arguments, run_mode=RunMode.MULTIRUN, with_log_configuration=False)
    loader = hydra.config_loader
    parser = OverridesParser.create(config_loader=loader)
    (batch,) = BasicSweeper.split_arguments(parser.parse_overrides(list(master.hydra.overrides.task)), None)
    return master, loader, batch


def check(arguments: list[str], validate) -> tuple[str | None, int]:
    """The outcome of ``validate(sweeper, batch)`` for ``dp2pub -m ARGUMENTS`` (None or the
    error's type and message) and how many job configs it composed."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        master, loader, batch = multirun(arguments)
        sweeper = ValidateOnceSweeper(max_batch_size=None)
        ours = validate is ValidateOnceSweeper.validate_batch_is_legal  # its loader, as its setup gives it
        used = ClassComposingLoader(loader) if ours else loader
        sweeper.hydra_context = HydraContext(config_loader=used, callbacks=None)  # type: ignore[arg-type]
        sweeper.config = master
        composed: list[Sequence[str]] = []
        compose = loader.load_sweep_config

        def counting(master_config, sweep_overrides):
            composed.append(sweep_overrides)
            return compose(master_config, sweep_overrides)

        loader.load_sweep_config = counting  # type: ignore[method-assign]
        try:
            validate(sweeper, batch)
        except Exception as error:  # the outcome compared between the two sweepers
            return f"{type(error).__name__}: {error}", len(composed)
        return None, len(composed)


@pytest.mark.parametrize(
    "arguments,jobs,composed",
    [
        (["seed=range(0,8)"], 8, 1),
        (["seed=range(0,3)", "epsilon=0.5,1,2", "dataset.n=500"], 9, 1),
        (["mechanism=grr,oue", "seed=0,1,2"], 6, 2),  # one per config group option
        (["seed=0,1,abc", "epsilon=1,true"], 6, 1),  # any plain value composes (the job checks it)
        (["seed=0,1", "save_published=true,false"], 4, 1),
        (["+extra=1,2", "seed=0,1"], 4, 2),  # adding a key is not plain: a class per value
        (["epsilon=1,null"], 2, 2),  # null is not a plain value
        (["~save_published", "seed=0,1"], 2, 1),
        (["seed=0,1", "metrics.ways=[1,2],[2]"], 4, 2),  # a list is compared as written
    ],
)
def test_a_sweep_that_composes_is_checked_once_per_class(arguments, jobs, composed):
    reference = check(arguments, Sweeper.validate_batch_is_legal)
    assert reference == (None, jobs)  # Hydra composes every job, and all compose
    assert check(arguments, ValidateOnceSweeper.validate_batch_is_legal) == (None, composed)


@pytest.mark.parametrize(
    "arguments",
    [
        ["seed=0,1", "bogus=1,2"],  # a key that is not in the config: the first job
        ["seed=0,1", "mechanism=grr,oue", "mechanism.bogus=1,2"],
        ["dataset=synthetic,nope", "seed=0,1"],  # a group option that does not exist: the third
        ["seed=0,1", "epsilon@pkg=1,2"],  # a package on a key that is not a group
        ["seed=0,1", "+seed=2,3"],  # adding a key that exists
        ["seed=0,1", "dataset.n.deep=1,2"],  # a key below a value
    ],
)
def test_a_sweep_with_a_bad_job_fails_with_the_error_hydra_gives(arguments):
    expected, _ = check(arguments, Sweeper.validate_batch_is_legal)
    assert expected is not None
    assert check(arguments, ValidateOnceSweeper.validate_batch_is_legal)[0] == expected


def test_plain_overrides_set_a_key_to_a_bool_number_or_string_without_interpolation():
    parse = OverridesParser.create().parse_overrides
    plain = ["a=1", "a=0.5", "a=true", "a=abc", "a.b='x y'"]
    other = ["+a=1", "++a=1", "~a", "a@p=1", "a=null", "a=[1]", "a={b:1}", "a='${b}'"]
    assert [is_plain(o, is_group=False) for o in parse(plain + other)] == [True] * 5 + [False] * 8
    assert not is_plain(parse(["dataset=car"])[0], is_group=True)


@dataclass
class Typed:
    count: int = 1
    anything: Any = None
    nested: dict = field(default_factory=lambda: {"level": 2})


def test_only_untyped_value_nodes_let_a_class_skip_its_jobs():
    config = OmegaConf.structured(Typed)
    config.anything = 3
    plain = OmegaConf.create({"a": {"b": 1, "c": [1, {"d": 2}]}})
    assert not untyped(config, "count")  # an IntegerNode accepts 1 and refuses "x"
    assert untyped(config, "anything")
    assert untyped(plain, "a.b") and untyped(plain, "a.c.1.d")
    assert not untyped(plain, "a")  # a container
    assert not untyped(plain, "a.c.7") and not untyped(plain, "a.z") and not untyped(plain, "a.b.c")


@pytest.mark.parametrize(
    "arguments",
    [
        ["seed=range(0,3)", "epsilon=0.5,2", "dataset.n=500"],
        ["mechanism=grr,oue", "seed=0,1", "metrics.ways=[1,2],[2]", "tracking.experiment=a,'b c'"],
        ["seed=0,1", "save_published=true,false", "+extra=1,2", "hydra.job.config.override_dirname.kv_sep=:"],
        ["limits.memory_gib=1,2", "limits={memory_gib:3}", "seed=0,1"],  # a key and the mapping above it
    ],
)
def test_a_derived_job_config_is_the_config_hydra_composes(arguments):
    """Every job's config from the class-composing loader equals Hydra's own composition of
    that job, node for node (unresolved, as the job receives it) and resolved."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        master, loader, batch = multirun(arguments)
        wrapped = ClassComposingLoader(loader)
        derived = 0
        for overrides in batch:
            ours = wrapped.load_sweep_config(master, list(overrides))
            derived += wrapped.derivable(wrapped.job_key(master, overrides)[0])
            hydras = loader.load_sweep_config(master, list(overrides))
            assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydras)
            assert OmegaConf.to_container(ours, resolve=False) == OmegaConf.to_container(hydras, resolve=False)
            job = [k for k in hydras if k != "hydra"]
            assert OmegaConf.to_container(OmegaConf.masked_copy(ours, job), resolve=True) == OmegaConf.to_container(
                OmegaConf.masked_copy(hydras, job), resolve=True
            )
            assert ours.hydra.job.override_dirname == hydras.hydra.job.override_dirname
        assert derived > 0  # the comparison covered derived configs, not only composed ones


def test_a_jobs_own_hydra_overrides_stay_out_of_its_task_overrides():
    """A sweep's job may carry ``hydra.*`` overrides (``hydra.sweeper.params`` can set them):
    the derived config puts them where Hydra does, not among the task's overrides."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        master, loader, _ = multirun(["seed=0"])
        wrapped = ClassComposingLoader(loader)
        for seed in range(3):
            overrides = [f"seed={seed}", "hydra.job.chdir=false"]
            ours, hydras = wrapped.load_sweep_config(master, overrides), loader.load_sweep_config(master, overrides)
            assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydras)
            assert list(ours.hydra.overrides.task) == [f"seed={seed}"]
        assert wrapped.derivable(wrapped.job_key(master, overrides)[0])
