"""A study's finished MLflow runs as a tidy table, one row per (run, metric).

Sweep parent runs (tag ``dp2pub.sweep = parent``) are left out. When one configuration (its
``dp2pub.config_hash``: the config without ``tracking`` and ``paths``, which say where results
go) was run more than once, only its newest finished run is kept, so a repeated sweep does not
count twice. Params arrive as strings; a column whose values are
all numbers (``None`` and empty meaning missing) becomes numeric, the same way for runs read
from MLflow and from a written CSV, so both give the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

import mlflow
import pandas as pd
from mlflow.entities import Run

from dp2pub.figures.studies import StudySpec
from dp2pub.resume import HASH_TAG, KEY_TAG, NOT_IDENTITY
from dp2pub.tracking import SWEEP_TAG, quiet_store_logs

#: Runs per request when reading a study's runs (a tracking server's usual page limit).
PAGE = 1000
#: Param strings that mean "no value" (``str(None)`` of a null config key, an empty CSV cell).
MISSING = ("None", "")


class EmptyStudyError(LookupError):
    """The study's experiment holds no finished run in the store."""


def numeric_or_text(values: pd.Series) -> pd.Series:
    """``values`` (strings) as numbers if every present one is a number, else as text;
    missing values become NaN."""
    text = values.astype("object").where(values.notna() & ~values.isin(MISSING))
    numbers = pd.to_numeric(text, errors="coerce")
    return numbers if numbers.notna().sum() == text.notna().sum() else text


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for other stores)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(unquote(urlparse(uri).path))


def search_finished(experiment: str, uri: str) -> pd.DataFrame:
    """``experiment``'s FINISHED runs in ``uri`` (no run: empty), one row per run with the
    columns of ``mlflow.search_runs``: ``run_id``, ``start_time``, ``params.*``, ``metrics.*``
    and ``tags.*``.

    A missing SQLite file or experiment counts as empty; nothing is created in the store.
    The runs are read with an ``MlflowClient`` of ``uri``, page by page: never through
    MLflow's global tracking URI, which setting would also set ``MLFLOW_TRACKING_URI`` for
    the rest of the process.
    """
    database = sqlite_path(uri)
    if database is not None and not database.is_file():
        return pd.DataFrame()
    quiet_store_logs()
    client = mlflow.MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return pd.DataFrame()
    return pd.DataFrame(search_rows(client, found.experiment_id, "attributes.status = 'FINISHED'"))


def search_rows(client: mlflow.MlflowClient, experiment_id: str, where: str) -> list[dict[str, object]]:
    """The runs of the experiment that ``where`` (MLflow's filter syntax) finds, as rows of
    :func:`run_row`, read page by page."""
    rows, token = [], None
    while True:
        page = client.search_runs([experiment_id], where, max_results=PAGE, page_token=token)
        rows += [run_row(run) for run in page]
        token = page.token
        if not token:
            return rows


def run_row(run: Run) -> dict[str, object]:
    """One run as a row of :func:`search_finished`."""
    return {
        "run_id": run.info.run_id,
        "start_time": run.info.start_time,
        **{f"params.{k}": v for k, v in run.data.params.items()},
        **{f"metrics.{k}": v for k, v in run.data.metrics.items()},
        **{f"tags.{k}": v for k, v in run.data.tags.items()},
    }


def job_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The job runs of a ``search_runs`` frame: no sweep parents, newest run per configuration.

    A configuration is the run's ``dp2pub.config_key`` tag (the config without ``tracking``
    and ``paths``), else its ``dp2pub.config_hash`` (the identity that
    ``tracking.skip_finished`` uses, which adds the digests of the files and plugin code the
    config names: a run after the table changed is the same configuration, newer); runs
    logged without either fall back to their params without ``tracking.*`` and ``paths.*``.
    """
    tag = f"tags.{SWEEP_TAG}"
    if tag in runs:
        runs = runs[runs[tag].fillna("") != "parent"]
    where = tuple(f"params.{key}." for key in NOT_IDENTITY)
    params = sorted(c for c in runs.columns if c.startswith("params.") and not c.startswith(where))
    identity = pd.util.hash_pandas_object(runs[params], index=False).astype(str) if params else runs["run_id"]
    for column in (f"tags.{HASH_TAG}", f"tags.{KEY_TAG}"):  # the config key where a run has it
        if column in runs:
            identity = runs[column].where(runs[column].notna(), identity)
    newest_first = runs.assign(_identity=identity).sort_values(["start_time", "run_id"], ascending=False)
    return newest_first.drop_duplicates(subset="_identity").drop(columns="_identity")


def tidy(spec: StudySpec, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, metric): ``run_id``, ``study``, the spec's columns, ``metric``,
    ``value``, sorted by columns and metric. Metrics a run did not log are left out; a metric
    of a family (``spec.families``) is named by its family, its value in the family's column."""
    table = pd.DataFrame({"run_id": runs["run_id"].astype(str), "study": spec.name})
    for param in spec.params:
        table[param] = runs.get(f"params.{param}", None)
    if spec.hue_parts:
        table[spec.hue] = joined(table[list(spec.hue_parts)])
    if spec.hue in table:
        table[spec.hue] = one_per_label(table[spec.hue], spec.hue_labels)
    logged = [c[len("metrics.") :] for c in runs.columns if c.startswith("metrics.")]
    metrics = [m for m in logged if m in spec.collected_metrics or family_of(spec, m)]
    table = table.join(runs[[f"metrics.{m}" for m in metrics]].rename(columns=lambda c: c[len("metrics.") :]))
    keys = [c for c in table.columns if c not in metrics]
    long = table.melt(id_vars=keys, value_vars=metrics, var_name="metric", value_name="value")
    for family in spec.families:
        values = long["metric"].map(family.value)
        found = values.notna()
        long[family.param] = values.where(found, long.get(family.param))
        long.loc[found, "metric"] = family.metric
    return normalize(spec, long.dropna(subset=["value"]))


def family_of(spec: StudySpec, metric: str) -> bool:
    """Whether the logged ``metric`` belongs to a family whose metric the spec reads."""
    return any(f.metric in spec.collected_metrics and f.value(metric) is not None for f in spec.families)


def one_per_label(hue: pd.Series, labels: Mapping[str, str]) -> pd.Series:
    """Hue values that share a legend label in ``labels`` as the first of them there: one
    line (the same variant logged with more parameters, by newer runs, or a parameter that
    does not apply to it)."""
    first: dict[str, str] = {}
    for value, label in labels.items():
        first.setdefault(label, value)
    canonical = hue.astype(str).map({value: first[label] for value, label in labels.items()})
    return canonical.where(canonical.notna() & hue.notna(), hue)


def joined(parts: pd.DataFrame) -> pd.Series:
    """Per row, the present values of ``parts`` joined by ``/`` (NaN when none is present)."""
    present = parts.astype("object").where(parts.notna() & ~parts.isin(MISSING))
    text = present.apply(lambda row: "/".join(str(v) for v in row if pd.notna(v)), axis=1)
    return text.where(text != "")


def normalize(spec: StudySpec, frame: pd.DataFrame) -> pd.DataFrame:
    """Typed columns (:func:`numeric_or_text`), float values, a fixed row order and index."""
    frame = frame.copy()
    for column in spec.columns:
        frame[column] = numeric_or_text(frame[column])
    frame["value"] = frame["value"].astype(float)
    order = [*spec.columns, "metric", "run_id"]
    return frame.sort_values(order, kind="mergesort", na_position="last").reset_index(drop=True)


def collect(spec: StudySpec, uri: str, fill_command: str | None = None) -> pd.DataFrame:
    """The tidy runs of ``spec``'s experiment in the store ``uri``.

    Raises EmptyStudyError, naming the experiment, the store and the command that fills it
    (``fill_command``, default the study's sweep command), when it holds no finished job run
    with any of the spec's metrics.
    """
    runs = search_finished(spec.experiment, uri)
    table = tidy(spec, job_runs(runs)) if not runs.empty else pd.DataFrame()
    if table.empty:
        raise EmptyStudyError(
            f"experiment '{spec.experiment}' in {uri} has no finished runs; fill it with: "
            f"{fill_command or spec.sweep_command}"
        )
    return table


def runs_csv(directory: Path, study: str) -> Path:
    """Where the tidy runs of ``study`` are written."""
    return Path(directory) / f"{study}_runs.csv"


def write_csv(table: pd.DataFrame, path: Path) -> Path:
    """Write a table of the study (tidy runs or summary; floats at full precision) and
    return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return path


def read_runs(spec: StudySpec, path: Path) -> pd.DataFrame:
    """The tidy runs of ``spec`` from a CSV written by :func:`write_csv`; the same table
    :func:`collect` returned. Raises ValueError if the file is of another study."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("run_id", "study", *spec.columns, "metric", "value") if c not in frame]
    if missing:
        raise ValueError(f"{path} is not a runs CSV of {spec.name}: no column {missing[0]!r}")
    studies = set(frame["study"])
    if studies - {spec.name}:
        raise ValueError(f"{path} holds runs of {', '.join(sorted(studies))}, not {spec.name}")
    return normalize(spec, frame)
