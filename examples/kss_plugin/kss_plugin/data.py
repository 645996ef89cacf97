"""``dataset=survey``: the plugin's synthetic survey table (2,000 rows, 6 columns, target ``health``).

A config can name a file only by a path, and an installed package's files have no path a
config could know; so the table is reached through this builder, which reads the packaged
CSV and domain file (located with :mod:`importlib.resources`) with dp2pub's own reader for
``dataset=csv``. ``make_survey.py`` (beside pyproject.toml) generated them; the table is
synthetic.
"""

from __future__ import annotations

from importlib import resources
from numbers import Integral

import numpy as np
from dp2pub import ConfigError, Dataset
from dp2pub.data import load_csv

#: The packaged files, inside the ``kss_plugin`` package.
TABLE, DOMAIN = "tables/survey.csv", "tables/survey_domain.yaml"


def load_survey(rng: np.random.Generator | None = None, n: int | None = None, target: str | None = "health") -> Dataset:
    """The survey table as a Dataset named ``survey``.

    Args:
        rng: the job's data stream (dp2pub passes it); draws the sample of ``n`` rows
            (None: a fixed sample, seed 0).
        n: keep a uniform sample of this many of the 2,000 rows, without replacement
            (None: every row).
        target: the class attribute (``health``), another column, or None.
    """
    root = resources.files("kss_plugin")
    with resources.as_file(root / TABLE) as table, resources.as_file(root / DOMAIN) as domain:
        data = load_csv(path=str(table), domain=str(domain), target=target)
    if n is None:
        return data
    if isinstance(n, bool) or not isinstance(n, Integral) or not 2 <= int(n) <= data.n:
        raise ConfigError("n", n, f"an integer in 2..{data.n}, or null for every row")
    keep = np.zeros(data.n, dtype=bool)
    keep[(rng or np.random.default_rng(0)).choice(data.n, int(n), replace=False)] = True
    return data.rows(keep)
