"""The door for a user's code: a mechanism or dataset named by ``_target_`` or registered by
an installed package's entry point is built, checked, identified and recorded exactly as a
built-in one (dp2pub's own are entry points too)."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from dp2pub import plugins, registry
from dp2pub.job import run_job
from dp2pub.resume import config_hash
from dp2pub.validation import ConfigError
from tests.conftest import CONF

#: A user's mechanism (GRR's oracle under another name) and dataset (integer codes read from
#: a text file), written only against dp2pub's public names.
FLIP = """
from pathlib import Path

import numpy as np

from dp2pub import Dataset, Domain, GRRPublisher, InputPath


class Flip(GRRPublisher):
    name = "flip"


def load(path: InputPath, k: int = 3) -> Dataset:
    codes = np.loadtxt(path, dtype=np.int64, ndmin=2)
    return Dataset(codes, Domain.from_sizes([k] * codes.shape[1]), name=Path(path).stem)


def not_a_publisher() -> int:
    return 3


def needs(a, b=1):
    return Flip()


def positional(a, /, b=1):
    return Flip()


def counts(rng=None):
    from dp2pub.data.tally import Tally

    return Tally((np.array([3, 4]),), Domain.from_sizes([2]), name="counts")
"""


def job(mechanism: dict, dataset: dict | None = None) -> dict:
    return {
        "epsilon": 1.0,
        "seed": 0,
        "dataset": dataset or {"name": "synthetic", "n": 500, "d": 3, "k_min": 2, "k_max": 4},
        "mechanism": mechanism,
        "metrics": {"models": []},
    }


@pytest.fixture
def module(tmp_path, monkeypatch, request):
    """A uniquely named module of :data:`FLIP` on sys.path; returns its name (an identifier:
    a name built from the test's id, which holds the expected message, was echoed in every
    error and let a message check pass whatever the error said)."""
    name = f"user_flip_{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]}"
    (tmp_path / f"{name}.py").write_text(FLIP)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.fixture
def fresh_entry_points():
    """Forget the entry points read so far, before and after the test (it installs its own)."""
    plugins.entry_points.cache_clear()
    registry._load.cache_clear()
    yield
    plugins.entry_points.cache_clear()
    registry._load.cache_clear()


def install(site: Path, dist: str, version: str, entry_points: str, module: str | None = None) -> None:
    """A distribution ``dist`` as pip leaves it in ``site``: its metadata and entry points
    (and the module source, if given)."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module is not None:
        (site / f"{dist.replace('-', '_')}.py").write_text(module)
        (info / "RECORD").write_text(f"{dist.replace('-', '_')}.py,,\n")
    (info / "top_level.txt").write_text(dist.replace("-", "_") + "\n")


def test_every_built_in_config_names_a_registered_entry_point():
    for group, registered in (("mechanism", registry.PUBLISHERS), ("dataset", registry.DATASETS)):
        for path in sorted((CONF / group).glob("*.yaml")):
            name = yaml.safe_load(path.read_text()).get("name")
            if name is None:  # a variant of another file (its defaults list names it)
                continue
            assert name in registered, f"{path.name}: {name}"
            point = plugins.entry_points(plugins.GROUPS[group])[name][0]
            assert point.value.startswith("dp2pub."), point  # dp2pub's own, through the same door


def test_a_target_class_runs_the_job_as_its_built_in_base_does(module):
    mine = run_job(job({"_target_": f"{module}.Flip", "estimator": "unbiased"}))
    builtin = run_job(job({"name": "grr", "estimator": "unbiased"}))
    untimed = {k: v for k, v in mine.metrics.items() if not k.startswith("time_")}
    assert untimed == {k: v for k, v in builtin.metrics.items() if not k.startswith("time_")}
    assert registry.named(job({"_target_": f"{module}.Flip"}))["mechanism"]["name"] == "flip"


def test_a_target_may_be_a_file_and_names_its_code_by_hash(tmp_path):
    source = tmp_path / "somewhere" / "mine.py"
    source.parent.mkdir()
    source.write_text(FLIP)
    cfg = job({"_target_": f"{source}:Flip"})
    assert run_job(cfg).metrics["epsilon_spent"] <= 1.0
    tags = registry.provenance_tags(cfg)
    assert tags["dp2pub.mechanism.qualname"] == "Flip"
    assert tags["dp2pub.mechanism.source_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert "dp2pub.mechanism.distribution" not in tags  # no package owns a loose file
    assert tags["dp2pub.dataset.module"] == "dp2pub.data.synthetic"
    assert tags["dp2pub.dataset.distribution"] == "dp2pub"


def test_a_target_dataset_is_read_and_its_file_is_part_of_the_identity(module, tmp_path):
    table = tmp_path / "codes.txt"
    table.write_text("0 1\n2 0\n1 1\n0 2\n" * 50)
    cfg = job({"name": "grr"}, {"_target_": f"{module}.load", "path": str(table)})
    result = run_job(cfg)
    assert result.dataset is not None and (result.dataset.name, result.dataset.n) == ("codes", 200)
    before = config_hash(cfg, {"files": registry.input_files(cfg), "code": registry.code_identity(cfg)})
    table.write_text("0 1\n2 0\n1 1\n0 2\n" * 49 + "0 1\n2 0\n1 1\n0 1\n")  # one byte changed
    after = config_hash(cfg, {"files": registry.input_files(cfg), "code": registry.code_identity(cfg)})
    assert before != after
    assert set(registry.code_identity(cfg)) == {"dataset"}  # the user's code; GRR is dp2pub's


def test_inputs_leave_the_identity_of_built_in_configs_unchanged(tmp_path, monkeypatch):
    cfg = job({"name": "grr", "estimator": "norm_sub", "strategy": "split", "simulate": "records"})
    monkeypatch.chdir(tmp_path)
    for value in ("records", "split", "norm_sub", "synthetic"):  # values that are also names on disk
        (tmp_path / value).mkdir()
        (tmp_path / value / "x").write_text("x")
    assert registry.input_files(cfg) == {} and registry.code_identity(cfg) == {}
    assert config_hash(cfg, {"files": {}, "code": {}}) == config_hash(cfg)


def test_only_parameters_annotated_as_input_paths_are_read_from_disk(module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "codes.txt").write_text("0 1\n1 0\n")
    (tmp_path / "3").write_text("a file named like the value of k")
    cfg = job({"name": "grr"}, {"_target_": f"{module}.load", "path": "codes.txt", "k": "3"})
    assert set(registry.input_files(cfg)) == {"dataset.path"}


@pytest.mark.parametrize(
    "target, allowed",
    [
        ("no_such_module_anywhere.Thing", "no module 'no_such_module_anywhere'"),
        ("{module}.Missing", "has no 'Missing'"),
        (
            "{module}.not_a_publisher",
            "a builder of a dp2pub.publish.base.Publisher (it returned an object of type int)",
        ),
        ("{broken}.Thing", "ZeroDivisionError: division by zero"),
        ("Flip", "a dotted path"),
        (7, "a dotted path"),
        ("{exits}.Thing", "a module that imports (SystemExit: 3)"),
        ("{module}.positional", "a builder taking keywords (a is positional)"),
    ],
)
def test_a_bad_target_is_one_line_naming_the_key(module, tmp_path, target, allowed):
    (tmp_path / f"{module}_broken.py").write_text("x = 1 / 0\n")
    (tmp_path / f"{module}_exits.py").write_text("raise SystemExit(3)\n")
    if isinstance(target, str):
        target = target.format(module=module, broken=f"{module}_broken", exits=f"{module}_exits")
    with pytest.raises(ConfigError) as raised:
        run_job(job({"_target_": target}))
    message = str(raised.value)
    assert message.startswith("mechanism._target_=") and allowed in message and "\n" not in message


def test_a_required_parameter_without_a_key_is_named(module):
    with pytest.raises(ConfigError, match=r"^mechanism\.a=None is invalid: expected a value: needs requires it$"):
        run_job(job({"_target_": f"{module}.needs"}))


def test_a_dataset_builder_returning_histograms_is_refused(module):
    with pytest.raises(ConfigError, match=r"^dataset\._target_=.* expected a builder of a dp2pub.data.dataset.Dataset"):
        run_job(job({"name": "grr"}, {"_target_": f"{module}.counts"}))


def test_a_target_keeps_the_signature_as_schema(module):
    with pytest.raises(ConfigError, match=r"^mechanism\.bogus=1 is invalid: expected a key of flip: \["):
        run_job(job({"_target_": f"{module}.Flip", "bogus": 1}))


def test_an_installed_plugin_registers_names_like_the_built_ins(tmp_path, monkeypatch, fresh_entry_points):
    site = tmp_path / "site"
    install(
        site,
        "flip-plugin",
        "0.3.1",
        """
        [dp2pub.publishers]
        flip = flip_plugin:Flip
        [dp2pub.datasets]
        codes = flip_plugin:load
        """,
        FLIP,
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(plugins, "_packages_distributions", lambda: {"flip_plugin": ["flip-plugin"]})
    assert "flip" in registry.PUBLISHERS and "codes" in registry.DATASETS and "grr" in registry.PUBLISHERS
    cfg = job({"name": "flip"})
    assert run_job(cfg).metrics["epsilon_spent"] <= 1.0
    tags = registry.provenance_tags(cfg)
    assert (tags["dp2pub.mechanism.distribution"], tags["dp2pub.mechanism.version"]) == ("flip-plugin", "0.3.1")
    assert tags["dp2pub.mechanism.module"] == "flip_plugin"


def test_a_name_two_packages_register_is_refused_naming_both(tmp_path, monkeypatch, fresh_entry_points):
    site = tmp_path / "site"
    install(site, "rogue-plugin", "1.0", "[dp2pub.publishers]\ngrr = rogue_plugin:Flip\n", FLIP)
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match=r"^mechanism\.name='grr' is invalid: .*dp2pub .*rogue-plugin .*_target_"):
        run_job(job({"name": "grr"}))


def test_an_unknown_name_lists_the_registered_ones():
    with pytest.raises(ConfigError, match=r"^dataset\.name='survey' is invalid: expected one of acs, adult, "):
        run_job(job({"name": "grr"}, {"name": "survey"}))


def test_a_plugin_that_fails_to_import_is_named(tmp_path, monkeypatch, fresh_entry_points):
    site = tmp_path / "site"
    install(site, "bad-plugin", "1.0", "[dp2pub.publishers]\nbad = bad_plugin:Thing\n", "import no_such_dependency\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError) as raised:
        run_job(job({"name": "bad"}))
    assert str(raised.value).startswith("mechanism.name='bad' is invalid: expected an entry point that imports")
    assert "no_such_dependency" in str(raised.value)


def test_config_packages_of_plugins_join_the_search_path(tmp_path, monkeypatch, fresh_entry_points):
    site = tmp_path / "site"
    install(site, "conf-plugin", "1.0", "[dp2pub.configs]\nconf_plugin = conf_plugin_configs\n")
    (site / "conf_plugin_configs" / "mechanism").mkdir(parents=True)
    (site / "conf_plugin_configs" / "__init__.py").write_text("")
    (site / "conf_plugin_configs" / "mechanism" / "mine.yaml").write_text("name: grr\n")
    monkeypatch.syspath_prepend(str(site))
    assert plugins.config_packages() == ["conf_plugin_configs"]
    from dp2pub.config import plugin_config_dirs

    assert plugin_config_dirs() == [site / "conf_plugin_configs"]


def test_modules_are_not_left_imported_from_a_failed_file(tmp_path):
    source = tmp_path / "fails.py"
    source.write_text("raise RuntimeError('at import')\n")
    with pytest.raises(ConfigError, match="RuntimeError: at import"):
        plugins.resolve_target(f"{source}:Thing", "mechanism._target_")
    assert not any(
        name.startswith("dp2pub_target_") and sys.modules[name].__file__ == str(source) for name in sys.modules
    )


def test_the_search_path_plugin_adds_config_packages_to_dp2pubs_app_only(monkeypatch):
    from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

    from dp2pub.config import config_dir
    from hydra_plugins.dp2pub_searchpath import searchpath

    monkeypatch.setattr(searchpath, "config_packages", lambda: ["some_plugin.conf"])
    ours, other = ConfigSearchPathImpl(), ConfigSearchPathImpl()
    ours.append("main", f"file://{config_dir()}")
    other.append("main", "file:///somewhere/else/conf")
    for path in (ours, other):
        searchpath.PluginConfigs().manipulate_search_path(path)
    assert [e.path for e in ours.get_path()] == [f"file://{config_dir()}", "pkg://some_plugin.conf"]
    assert [e.path for e in other.get_path()] == ["file:///somewhere/else/conf"]
