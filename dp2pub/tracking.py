"""One MLflow run per job: params, tags, metrics and artifacts around :func:`run_job`.

The store is ``tracking.uri`` if set, else ``MLFLOW_TRACKING_URI``, else a SQLite file
``<outputs>/mlflow.db`` with artifacts under ``<outputs>/mlartifacts``. A job that raises
leaves its run FAILED, with the error text in the ``error`` tag, and the error propagates.

For MLflow's dashboard: the experiment is tagged a model-training experiment (not a GenAI
one), the printed link opens its runs in the model-training view (:func:`ui_url`), a
run's name says what ran in its first words (:func:`run_name`), and the table the job
loaded is the run's dataset input (:func:`dataset_input`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import mlflow
import yaml
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.dataset import Dataset as MlflowDataset
from mlflow.entities import Experiment, RunStatus
from mlflow.exceptions import MlflowException
from mlflow.types import ColSpec, DataType, Schema

from dp2pub.artifacts import log_folder
from dp2pub.environment import environment_tags
from dp2pub.faults import damage, disk_full, free_bytes
from dp2pub.interrupts import Terminated, describe
from dp2pub.job import DatasetInfo, JobResult
from dp2pub.registry import builder_defaults, code_identity, input_files, named, provenance_tags, publisher_class
from dp2pub.resume import HASH_TAG, KEY_TAG, config_hash, finished_run, holder, process_tags, reap_stale_runs
from dp2pub.seeding import seed_entropy
from dp2pub.settings import tracking_settings
from dp2pub.store import StoreError, check_artifact_root, lost_server, machine_fault, open_store, sqlite_path
from dp2pub.units import human
from dp2pub.validation import ConfigError

log = logging.getLogger(__name__)

PACKAGES = ("dp2pub", "numpy", "pandas", "scikit-learn", "hydra-core", "mlflow")
#: MLflow's tag that nests a run under its parent in the UI.
PARENT_TAG = "mlflow.parentRunId"
#: The notes a job's results need (:attr:`dp2pub.job.JobResult.notes`), one per line.
NOTES_TAG = "dp2pub.notes"
#: ``parent`` on a sweep's parent run, ``child`` on its jobs.
SWEEP_TAG = "dp2pub.sweep"
#: MLflow 3's experiment tag for the kind of an experiment, and its value for a
#: model-training experiment (the other main kind is ``genai_development``). MLflow's tools
#: and earlier MLflow 3 dashboards read it; the dashboard of 3.17 does not (see below).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
#: The query that opens the dashboard of MLflow 3 (3.17) in its model-training view: it
#: opens every experiment in its GenAI view otherwise, whatever its kind, until the user
#: switches to Model training once in that browser.
MODEL_TRAINING_VIEW = "workflowType=machine_learning"
#: The experiment tag of a saved view of the runs table, before its key (:func:`save_view`).
VIEW_TAG = "mlflow.sharedViewState."
#: Where ``mlflow ui`` serves the dashboard by default.
UI_ADDRESS = "http://127.0.0.1:5000"
#: Keys of a mechanism whose values other than the default name a version of it in run
#: names (the four configs dp2pub, dp2pub_trusted, dp2pub_ibu, dp2pub_trusted_ibu all have
#: ``name: dp2pub``).
VARIANTS = {"dp2pub": ("trust", "prior")}


def outputs_dir(cfg: Mapping) -> Path:
    """Absolute path of the outputs folder (``paths.outputs``, relative to the working dir)."""
    return Path(cfg.get("paths", {}).get("outputs", "outputs")).resolve()


def tracking_uri(cfg: Mapping) -> str:
    """The tracking store this job writes to: ``tracking.uri``, else a non-empty
    ``MLFLOW_TRACKING_URI``, else the SQLite file under ``paths.outputs``."""
    uri = tracking_settings(cfg).uri or os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    return uri or f"sqlite:///{outputs_dir(cfg) / 'mlflow.db'}"


def ui_command(uri: str) -> str:
    """The command that opens the MLflow dashboard on ``uri``, with this environment's
    ``mlflow`` executable (relative to the working directory when it lies below it)."""
    if uri.startswith(("http://", "https://")):
        return f"open {uri} in a browser"
    mlflow_exe = Path(sys.executable).parent / "mlflow"
    if mlflow_exe.exists():
        try:
            exe = str(mlflow_exe.relative_to(Path.cwd()))
        except ValueError:
            exe = str(mlflow_exe)
    else:
        exe = "mlflow"
    return f"{exe} ui --backend-store-uri {uri}"


def ui_url(uri: str, experiment_id: str, run_id: str | None = None, view: str | None = None) -> str:
    """The MLflow UI's address of a run, or without ``run_id`` of the experiment's runs table
    (with ``view``, as the saved view of that key shows it: :func:`save_view`), in the
    model-training view (MLflow 3 opens an experiment in its GenAI view otherwise): on the
    tracking server ``uri`` itself, else on the ``mlflow ui`` of :func:`ui_command` at its
    default address."""
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else UI_ADDRESS
    return f"{base}/{ui_path(experiment_id, run_id, view)}"


def ui_path(experiment_id: str, run_id: str | None = None, view: str | None = None) -> str:
    """The part of :func:`ui_url` after the dashboard's address (``#/experiments/...``): a
    link that a page of the dashboard itself can hold (a run's description)."""
    if run_id is not None:
        return f"#/experiments/{experiment_id}/runs/{run_id}?{MODEL_TRAINING_VIEW}"
    shown = f"&viewStateShareKey={urllib.parse.quote(view, safe='')}" if view else ""
    return f"#/experiments/{experiment_id}/runs?{MODEL_TRAINING_VIEW}{shown}"


def save_view(
    client: mlflow.MlflowClient,
    experiment_id: str,
    key: str,
    name: str,
    columns: Sequence[str],
    search: str = "",
    order_by: str | None = None,
) -> str:
    """Save a view of the experiment's runs table that shows ``columns`` (``params.<key>``,
    ``metrics.<name>``), the runs ``search`` finds (MLflow's filter syntax), sorted by
    ``order_by`` (a flat list; None: by start time, children under their parent); returns
    ``key``, which :func:`ui_url` opens.

    MLflow 3.17's dashboard takes a table's columns from no URL parameter and no server
    option: only from the browser's storage or a saved view, which it keeps as the
    experiment tag ``mlflow.sharedViewState.<key>`` (its "Views" menu lists it; the runs
    page opens it with ``viewStateShareKey=<key>``, unless the address carries search
    parameters of its own). Saving again under ``key`` replaces the view."""
    state: dict[str, Any] = {
        "selectedColumns": [_column(column) for column in dict.fromkeys(columns)],
        "runsHiddenMode": "SHOW_ALL",
        "searchFilter": search,
    }
    if order_by is not None:
        state.update(orderByKey=_column(order_by), orderByAsc=True)
    now = int(time.time() * 1000)
    envelope = {"name": name, "createdAt": now, "updatedAt": now, "state": json.dumps(state)}
    client.set_experiment_tag(experiment_id, f"{VIEW_TAG}{key}", json.dumps(envelope))
    return key


def _column(column: str) -> str:
    """``params.dataset.n`` as the dashboard names its column: ``params.`dataset.n```."""
    kind, _, name = column.partition(".")
    return f"{kind}.`{name}`" if kind in ("params", "metrics", "tags") else column


def experiment_of(uri: str, run_id: str) -> str:
    """The id of the experiment of run ``run_id`` in the store ``uri``."""
    return str(mlflow.MlflowClient(uri).get_run(run_id).info.experiment_id)


def dashboard_hint(uri: str, experiment_id: str, run_id: str | None = None, view: str | None = None) -> str:
    """Where to see a run (the experiment's runs without ``run_id``, as ``view`` shows them)
    in the MLflow UI: the command that starts the UI on a local store and the address in
    it, or the address on a tracking server."""
    url = ui_url(uri, experiment_id, run_id, view)
    if uri.startswith(("http://", "https://")):
        return f"Open the MLflow dashboard: {url}"
    return f"Open the MLflow dashboard: {ui_command(uri)}\n  then {url}"


#: The view of an experiment's runs that a single run's printed link opens (:func:`runs_view`).
RUNS_VIEW = "dp2pub-runs"
#: What that view shows of every run besides its main metrics.
RUN_COLUMNS = ("params.mechanism.name", "params.dataset.name", "params.epsilon", "params.seed")


def runs_view(uri: str, experiment_id: str, metrics: Sequence[str]) -> str | None:
    """Save the view of the experiment's runs with :data:`RUN_COLUMNS` and the main
    ``metrics`` of the latest single run (:func:`save_view`); its key, or None when the store
    does not take it (the run is recorded either way)."""
    columns = [*RUN_COLUMNS, *(f"metrics.{m}" for m in metrics)]
    try:
        return save_view(mlflow.MlflowClient(uri), experiment_id, RUNS_VIEW, "dp2pub: runs", columns)
    except MlflowException as error:
        log.warning("the dashboard's view of the runs was not saved: %s", " ".join(str(error).split())[:300])
        return None


def flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def run_tags(overrides: list[str]) -> dict[str, str]:
    """Provenance tags of a run: the Hydra overrides, the process, and what
    :func:`installation_tags` says of the code and environment."""
    return {"hydra_overrides": " ".join(overrides), **process_tags(), **installation_tags()}


@functools.cache
def installation_tags() -> dict[str, str]:
    """The git commit, package versions, and the lock file and environment hashes
    (:func:`dp2pub.environment.environment_tags`): read once per process (a sweep's worker
    runs many jobs of the same code)."""
    tags = dict(environment_tags())
    commit = _git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
        tags["git_commit"] = commit
    for package in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            tags[f"version.{package}"] = metadata.version(package)
    return tags


def quiet_store_logs() -> None:
    """Silence the INFO lines MLflow's SQL store prints when it opens or migrates a database,
    and the traceback it logs of a database error that dp2pub words itself in one line (a
    full disk, a damaged file: :func:`dp2pub.store.machine_fault`)."""
    for noisy in ("alembic", "mlflow.store.db.utils"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    utils = logging.getLogger("mlflow.store.db.utils")
    if not any(isinstance(f, _WordedFaults) for f in utils.filters):
        utils.addFilter(_WordedFaults())


class _WordedFaults(logging.Filter):
    """Drops the log records of a full disk or a damaged database (worded by dp2pub)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or (not disk_full(error) and damage(error) is None)


def experiment_name(cfg: Mapping) -> str:
    """The MLflow experiment of a job (``tracking.experiment``, default ``dp2pub``)."""
    return tracking_settings(cfg).experiment


def open_experiment(cfg: Mapping) -> tuple[str, str]:
    """The job's tracking URI and experiment id, creating the local store folder and the
    experiment if needed (on the default local store its artifacts go to
    ``<outputs>/mlartifacts``). The store and the experiment's artifact location are
    checked the first time a process opens them (:mod:`dp2pub.store`; a sweep's worker, for
    its first job only, see :data:`_OPENED`): one that cannot be used raises StoreError within
    seconds, before any work."""
    quiet_store_logs()
    uri = tracking_uri(cfg)
    if uri == f"sqlite:///{outputs_dir(cfg) / 'mlflow.db'}":
        outputs_dir(cfg).mkdir(parents=True, exist_ok=True)
    settings = tracking_settings(cfg)
    key = (uri, settings.experiment, settings.artifact_location, str(outputs_dir(cfg)))
    known = _OPENED.get(key)
    if known is not None and known[0] == _store_file(uri) and _still_active(uri, known[1], settings.experiment):
        return uri, known[1]
    client = open_store(uri)  # a new store's schema is created by one process at a time
    experiment_id = _experiment_id(cfg, uri)
    check_artifact_root(client.get_experiment(experiment_id).artifact_location)
    _OPENED[key] = (_store_file(uri), experiment_id)
    return uri, experiment_id


#: The store file's identity and the experiment id of each store and experiment this process
#: opened and checked (by :func:`open_experiment`): a sweep's worker opens them for its first
#: job only. A store whose file was replaced, or an experiment deleted or renamed since, is
#: opened again.
_OPENED: dict[tuple, tuple[tuple[int, int] | None, str]] = {}


def _still_active(uri: str, experiment_id: str, name: str) -> bool:
    """Whether the experiment ``experiment_id`` of ``uri`` still exists, active, as ``name``."""
    try:
        found = mlflow.MlflowClient(uri).get_experiment(experiment_id)
    except MlflowException:
        return False
    return found.lifecycle_stage == "active" and found.name == name


def _store_file(uri: str) -> tuple[int, int] | None:
    """The device and inode of a SQLite store's file (None when it has none yet or is not one)."""
    path = sqlite_path(uri)
    try:
        stat = path.stat() if path is not None else None
    except OSError:
        return None
    return None if stat is None else (stat.st_dev, stat.st_ino)


def _experiment_id(cfg: Mapping, uri: str) -> str:
    """The id of the job's experiment, created as a model-training experiment if needed; an
    existing one without a kind gets that kind (:func:`mark_model_training`)."""
    name = experiment_name(cfg)
    client = mlflow.MlflowClient(uri)
    found = client.get_experiment_by_name(name)
    if found is not None:
        return mark_model_training(client, found)
    location = tracking_settings(cfg).artifact_location
    if location is None and uri.startswith("sqlite:///"):
        location = (outputs_dir(cfg) / "mlartifacts").as_uri()
    try:
        return client.create_experiment(name, artifact_location=location, tags={EXPERIMENT_KIND_TAG: MODEL_TRAINING})
    except mlflow.exceptions.MlflowException:
        found = client.get_experiment_by_name(name)  # created meanwhile by a parallel job
        if found is None:
            raise
        return mark_model_training(client, found)


def mark_model_training(client: mlflow.MlflowClient, experiment: Experiment) -> str:
    """Tag ``experiment`` a model-training experiment unless it has a kind (one its user chose,
    even GenAI, is kept); returns its id."""
    if EXPERIMENT_KIND_TAG not in experiment.tags:
        client.set_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
    return str(experiment.experiment_id)


def _log_artifacts(cfg: Mapping, result: JobResult, save_published: bool) -> None:
    """Write the run's artifacts into a temporary folder and log them (:func:`log_folder`).

    Raises:
        StoreError: a disk without room for them, in one line.
    """
    try:
        _write_and_log(cfg, result, save_published)
    except OSError as error:
        if not disk_full(error):
            raise
        where = Path(tempfile.gettempdir())  # the job's temporary folder, gone by now
        if error.filename and not Path(error.filename).is_relative_to(where):
            where = Path(error.filename).parent
        raise StoreError(
            f"no space left writing the run's artifacts in {where} ({human(free_bytes(where))} free); "
            "free space there or set TMPDIR to another disk"
        ) from None


def _write_and_log(cfg: Mapping, result: JobResult, save_published: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.yaml").write_text(yaml.safe_dump(dict(cfg), sort_keys=False))
        result.per_attribute.to_csv(folder / "per_attribute_metrics.csv", index=False)
        if not result.ledger.empty:
            result.ledger.to_csv(folder / "budget_ledger.csv", index=False)
        for name, value in result.artifacts.items():
            (folder / f"{name}.json").write_text(json.dumps(value, indent=2))
        if save_published and result.published is not None:
            result.published.to_frame().to_csv(folder / "published.csv.gz", index=False)
        log_folder(folder)


def run_name(cfg: Mapping) -> str:
    """A run name that says what ran in its first words, as the dashboard's narrow column
    shows them: mechanism (:func:`mechanism_label`), dataset, budget, seed, e.g.
    ``grr synthetic ε1 s0``. A mechanism without a privacy budget (k-anonymity) shows its
    ``k`` instead: ``samarati adult k10 s0``."""
    mechanism = cfg["mechanism"]
    if getattr(publisher_class(mechanism), "uses_budget", True):
        budget = f"ε{_short_number(cfg.get('epsilon'))}"
    else:
        budget = f"k{mechanism.get('k')}"
    return f"{mechanism_label(mechanism)} {cfg['dataset'].get('name')} {budget} s{cfg.get('seed')}"


def mechanism_label(mechanism: Mapping) -> str:
    """``mechanism.name`` and the values of its :data:`VARIANTS` keys that differ from the
    publisher's defaults, as conf/mechanism's files name them: ``dp2pub_trusted_ibu``."""
    name = str(mechanism.get("name"))
    defaults = builder_defaults(mechanism)
    variant = [
        str(mechanism[key])
        for key in VARIANTS.get(name, ())
        if key in defaults and mechanism.get(key, defaults[key]) != defaults[key]
    ]
    return "_".join([name, *variant])


def _short_number(value: Any) -> str:
    """``1.0`` -> ``1``, ``0.25`` -> ``0.25`` (every digit kept: two budgets never share a
    name); anything but a float as it is."""
    return repr(value).removesuffix(".0") if isinstance(value, float) else str(value)


class TableDataset(MlflowDataset):
    """A table a job loaded, as an MLflow dataset: its name, digest, the config that built it
    (source), attributes (schema) and size (profile); never its records."""

    def __init__(self, info: DatasetInfo, source_tags: dict[str, str]) -> None:
        self.info = info
        super().__init__(source=CodeDatasetSource(source_tags), name=info.name, digest=info.digest[:8])

    def _compute_digest(self) -> str:
        return self.info.digest[:8]

    @property
    def schema(self) -> Schema:
        """One categorical (string) column per attribute."""
        return Schema([ColSpec(DataType.string, name) for name in self.info.names])

    @property
    def profile(self) -> dict[str, Any]:
        """Records, cells, the domain size of every attribute and the target."""
        info = self.info
        sizes = dict(zip(info.names, info.sizes))
        return {"num_rows": info.n, "num_elements": info.n * len(sizes), "domain_sizes": sizes, "target": info.target}

    def to_dict(self) -> dict[str, str]:
        """MLflow's fields, with the schema and profile as JSON."""
        schema = json.dumps({"mlflow_colspec": self.schema.to_dict()})
        return {**super().to_dict(), "schema": schema, "profile": json.dumps(self.profile)}


def dataset_input(cfg: Mapping, info: DatasetInfo) -> TableDataset:
    """The run's dataset input: the table ``info`` describes, with the config's ``dataset``
    section (and ``paths.data_dir`` if set) as its source."""
    section = flatten(cfg.get("dataset") or {}, "dataset.")
    tags = {key: str(value) for key, value in section.items() if value is not None}
    data_dir = (cfg.get("paths") or {}).get("data_dir")
    if data_dir:
        tags["paths.data_dir"] = str(data_dir)
    return TableDataset(info, tags)


def _parent_tags(parent: Mapping | None, uri: str, experiment_id: str) -> dict[str, str]:
    """Tags that make a sweep job the child of ``parent`` (only within the same experiment
    of the same store: MLflow nests runs per experiment)."""
    if not parent:
        return {}
    if parent.get("uri") != uri or parent.get("experiment_id") != experiment_id:
        log.warning(
            "sweep parent %s is in another store or experiment; run logged without parent", parent.get("run_id")
        )
        return {}
    return {PARENT_TAG: str(parent["run_id"]), SWEEP_TAG: "child"}


#: Attempts at logging a run's dataset input, and the pause before the n-th retry (n x this).
DATASET_ATTEMPTS, DATASET_RETRY_S = 4, 0.2


def log_dataset(dataset: MlflowDataset) -> bool:
    """Log ``dataset`` as the active run's input; whether it was logged. Parallel jobs of a
    sweep log the same table into one experiment, and MLflow's store creates a dataset row by
    get-or-create: two jobs racing both insert it and one fails on the unique key (seen with
    two joblib workers on an ``mlflow server``). A retry finds the row and links it; after the
    last attempt the run goes on without its dataset input (it is metadata: the params name
    the dataset), with a warning."""
    for attempt in range(1, DATASET_ATTEMPTS + 1):
        try:
            mlflow.log_input(dataset)
            return True
        except mlflow.exceptions.MlflowException as error:  # a local store wraps SQL errors in it too
            if attempt == DATASET_ATTEMPTS:
                reason = " ".join(str(error).split())[:300]
                log.warning("the run's dataset input was not logged after %d attempts: %s", attempt, reason)
                return False
            time.sleep(DATASET_RETRY_S * attempt)
    return False


def run_tracked(
    cfg: Mapping,
    job: Callable[[Mapping], JobResult],
    overrides: list[str] | None = None,
    parent: Mapping | None = None,
) -> tuple[str, JobResult | None]:
    """Run ``job(cfg)`` inside a new MLflow run and log everything; returns the run id and
    the result, or, when ``tracking.skip_finished`` is true and this configuration already
    has a FINISHED run in the experiment (or a concurrent job runs it, see
    :func:`dp2pub.resume.holder`), that run's id and None (no run is added).

    ``cfg`` is the resolved config as plain containers. The run is created before the job
    starts, so even a config error leaves a FAILED run that says why. ``parent`` (``run_id``,
    ``experiment_id``, ``uri``; see :mod:`dp2pub.sweep`) nests the run under a sweep's
    parent run. Runs left RUNNING by killed processes of this host are marked KILLED first
    (:mod:`dp2pub.resume`).
    """
    cfg = named(cfg)
    uri = tracking_uri(cfg)
    try:
        uri, experiment_id = open_experiment(cfg)
        return _run_in(uri, experiment_id, cfg, job, overrides, parent)
    except MlflowException as error:  # a full disk, a damaged store: one line, not a traceback
        fault = machine_fault(uri, error)
        if fault is None:
            raise
        raise fault from None


def _run_in(
    uri: str,
    experiment_id: str,
    cfg: Mapping,
    job: Callable[[Mapping], JobResult],
    overrides: list[str] | None,
    parent: Mapping | None,
) -> tuple[str, JobResult | None]:
    """:func:`run_tracked` in the opened experiment ``experiment_id`` of the store ``uri``."""
    skip = tracking_settings(cfg).skip_finished
    client = mlflow.MlflowClient(uri)
    reap_stale_runs(client, experiment_id)
    identity = config_hash(cfg, {"files": input_files(cfg), "code": code_identity(cfg)})
    if skip and (done := finished_run(client, experiment_id, identity)) is not None:
        return done, None
    mlflow.set_tracking_uri(uri)
    tags = {
        **run_tags(overrides or []),
        HASH_TAG: identity,
        KEY_TAG: config_hash(cfg),
        **provenance_tags(cfg),
        **_parent_tags(parent, uri, experiment_id),
    }
    with contextlib.suppress(ConfigError):  # the job refuses a bad seed itself, into this run's error tag
        tags["seed_entropy"] = str(seed_entropy(cfg.get("seed")))
    active = None
    try:
        active = mlflow.start_run(experiment_id=experiment_id, run_name=run_name(cfg), tags=tags)
        with active as run:
            return _log_job(cfg, job, client, run, identity)
    except MlflowException as error:  # a server that died, a disk that filled: one line, not tracebacks
        run_id = None if active is None else active.info.run_id
        lost = lost_server(uri, run_id) or machine_fault(uri, error, run_id)
        if lost is None:
            raise
        raise lost from None


def _log_job(
    cfg: Mapping, job: Callable[[Mapping], JobResult], client: mlflow.MlflowClient, run: mlflow.ActiveRun, identity: str
) -> tuple[str, JobResult | None]:
    """The body of :func:`run_tracked`'s run: the job and everything it logs (or, when a
    concurrent job holds the configuration under ``tracking.skip_finished``, nothing)."""
    experiment_id = run.info.experiment_id
    try:
        skip = tracking_settings(cfg).skip_finished
        if skip and (other := holder(client, experiment_id, identity, run.info.run_id)) is not None:
            mlflow.end_run(RunStatus.to_string(RunStatus.KILLED))  # lost the race to a concurrent job
            client.delete_run(run.info.run_id)
            return other, None
        mlflow.log_params({k: str(v) for k, v in flatten(cfg).items() if not k.startswith(("hydra.", "figures."))})
        try:
            result = job(cfg)
        except Exception as error:
            mlflow.set_tag("error", f"{type(error).__name__}: {error}"[:5000])
            raise
        mlflow.log_metrics(result.metrics)
        if result.notes:  # what the results table says under the numbers
            mlflow.set_tag(NOTES_TAG, "\n".join(result.notes)[:5000])
        if result.dataset is not None:
            log_dataset(dataset_input(cfg, result.dataset))
        try:
            _log_artifacts(cfg, result, bool(cfg.get("save_published", False)))
        except StoreError as error:
            with contextlib.suppress(Exception):  # a store on the full disk cannot take it either
                mlflow.set_tag("error", f"{type(error).__name__}: {error}"[:5000])
            raise
    except (KeyboardInterrupt, Terminated) as error:  # stopped from outside: KILLED, not FAILED
        mlflow.set_tag("error", f"stopped by {describe(error)}")
        mlflow.end_run(RunStatus.to_string(RunStatus.KILLED))
        raise
    return run.info.run_id, result
