"""``dp2pub --help`` explains every option of dp2pub's config groups in one line each."""

from __future__ import annotations

import re

import pytest
import yaml

from dp2pub.config import config_dir
from tests.conftest import run_cli

CONF = config_dir()
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name != "hydra")


def help_template() -> str:
    return yaml.safe_load((CONF / "hydra" / "help" / "dp2pub.yaml").read_text())["template"]


def listed(template: str, group: str) -> set[str]:
    """The options the help lists under ``group``: one per indented line, or a comma list."""
    block = re.search(rf"^{group} +.*\n((?:  +\S.*\n)*)", template, re.MULTILINE)
    assert block, f"no section for group {group}"
    lines = block.group(1).splitlines()
    if len(lines) == 1 and "," in lines[0]:
        return {name.strip() for name in lines[0].split(",")}
    return {line.split()[0] for line in lines}


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_of_every_group_has_its_line(group):
    options = {path.stem for path in (CONF / group).glob("*.yaml")}
    template = help_template()
    if options == {"default"}:  # a group with one option: described on the group's line
        assert re.search(rf"^{group} +default: ", template, re.MULTILINE)
        return
    assert listed(template, group) == options


@pytest.mark.slow
def test_dp2pub_help_prints_the_groups_and_the_config(tmp_path):
    done = run_cli(["--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "grr_table           LDP: GRR's raw reports published as the table" in done.stdout
    assert "synthetic_bn_tree   synthetic_bn with one parent per attribute" in done.stdout
    assert "== Config (override any key: key=value) ==" in done.stdout and "estimator: norm_sub" in done.stdout
    assert "$CONFIG" not in done.stdout and "${" not in done.stdout.split("== Config (")[0]
