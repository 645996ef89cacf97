"""Reruns that resume: a job's identity, finding it already finished, and closing the runs
of killed processes.

- A job is identified by the SHA-256 of its resolved config without ``tracking``,
  ``paths`` and ``limits`` (where results go and what may start, not what is computed) and
  without keys added later at their neutral value (``mechanism.simulate: records``); runs carry it in the tag
  ``dp2pub.config_hash``. With ``tracking.skip_finished=true`` a job whose identity already
  has a FINISHED run in the experiment is skipped, so repeating a sweep adds no runs. The
  check is made again after the job's run is created (:func:`holder`): of two processes that
  start the same configuration at the same moment, exactly one goes on, whatever the store.
- Every run records the host and process that write it (``dp2pub.host``, ``dp2pub.pid``,
  ``dp2pub.pid_start``, ``dp2pub.pid_ns``). When a job starts, RUNNING runs of the
  experiment whose process on this host (and pid namespace) no longer exists are marked KILLED: a killed job never stays RUNNING, and its
  configuration has no FINISHED run, so it is redone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
from collections.abc import Mapping

import mlflow
from mlflow.entities import RunStatus

log = logging.getLogger(__name__)

HASH_TAG = "dp2pub.config_hash"
#: The hash of the config alone (:func:`config_hash` without inputs): equal to
#: :data:`HASH_TAG` unless the config names files or a plugin's code, whose digests the
#: identity adds. A figure keeps the newest run per config key, so a job rerun after its
#: table or code changed replaces the earlier run in the figure instead of joining it.
KEY_TAG = "dp2pub.config_key"
HOST_TAG, PID_TAG, START_TAG = "dp2pub.host", "dp2pub.pid", "dp2pub.pid_start"
#: The process-id namespace (Linux): containers that share a host name do not share pids.
PIDNS_TAG = "dp2pub.pid_ns"
#: Top-level config keys that say where results go, not what is computed.
NOT_IDENTITY = ("tracking", "paths", "limits", "figures")
#: Keys added after runs existed, at the value that computes what configs without them
#: computed: left out of the identity at that value, so earlier runs keep theirs (a rerun with
#: ``skip_finished`` does not redo them, and a figure does not count a computation twice).
NEUTRAL_DEFAULTS: dict[tuple[str, str], object] = {
    ("mechanism", "simulate"): "records",
    ("mechanism", "hierarchies"): None,
}


def config_hash(cfg: Mapping, inputs: Mapping[str, Mapping] | None = None) -> str:
    """SHA-256 of the resolved config without :data:`NOT_IDENTITY` and the keys at their
    :data:`NEUTRAL_DEFAULTS` (keys sorted, JSON), and of ``inputs``: what the config names
    but does not hold, such as the digests of the files it reads and of a plugin's code
    (:func:`dp2pub.registry.input_files`, :func:`~dp2pub.registry.code_identity`). An
    empty ``inputs`` section adds nothing, so the built-ins' identities are unchanged."""
    identity = {key: value for key, value in cfg.items() if key not in NOT_IDENTITY and key != "hydra"}
    for (group, key), neutral in NEUTRAL_DEFAULTS.items():
        entry = identity.get(group)
        if isinstance(entry, Mapping) and key in entry and entry[key] == neutral:
            identity[group] = {k: v for k, v in entry.items() if k != key}
    for section, values in (inputs or {}).items():
        if values:
            identity[f"__{section}__"] = dict(values)
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``), or
    None where unavailable: with the pid it tells a process from a later one that reuses it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def pid_namespace() -> str:
    """This process's pid namespace (``pid:[4026531836]``), or "" where unavailable."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def process_tags() -> dict[str, str]:
    """Tags naming the process that writes a run."""
    pid = os.getpid()
    return {
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(pid),
        START_TAG: process_start(pid) or "",
        PIDNS_TAG: pid_namespace(),
    }


def process_alive(pid: int, start: str | None) -> bool:
    """Whether process ``pid`` (started at ``start``, if known) still runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return not start or process_start(pid) in (None, start)


def reap_stale_runs(client: mlflow.MlflowClient, experiment_id: str) -> list[str]:
    """Mark KILLED every RUNNING run of the experiment written by a process of this host
    that no longer exists; returns their ids. Runs of other hosts are left alone (their
    processes cannot be checked from here)."""
    host = socket.gethostname()
    running = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.status = 'RUNNING' and tags.`{HOST_TAG}` = '{host}'",
        max_results=5000,
    )
    namespace = pid_namespace()
    reaped = []
    for run in running:
        pid = run.data.tags.get(PID_TAG, "")
        if run.data.tags.get(PIDNS_TAG, "") != namespace:
            continue  # another container on a host of the same name: its pids are not ours
        if not pid.isdigit() or process_alive(int(pid), run.data.tags.get(START_TAG)):
            continue
        client.set_tag(run.info.run_id, "error", f"process {pid} on {host} ended without closing this run (killed)")
        client.set_terminated(run.info.run_id, status=RunStatus.to_string(RunStatus.KILLED))
        reaped.append(run.info.run_id)
    if reaped:
        log.warning("marked %d run(s) of killed processes KILLED: %s", len(reaped), ", ".join(reaped))
    return reaped


def finished_run(client: mlflow.MlflowClient, experiment_id: str, identity: str) -> str | None:
    """The id of a FINISHED run of the experiment with config hash ``identity``, if any."""
    found = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.status = 'FINISHED' and tags.`{HASH_TAG}` = '{identity}'",
        max_results=1,
    )
    return found[0].info.run_id if found else None


def holder(client: mlflow.MlflowClient, experiment_id: str, identity: str, own_run_id: str) -> str | None:
    """The run that holds configuration ``identity``, if it is not ``own_run_id``: a FINISHED
    run, else the earliest RUNNING one (by start time, then id). Every process that created a
    run of the configuration sees the same runs in the store, so they agree on the one that
    goes on; the others delete their runs. (A RUNNING run of a process on another host that
    died holds its configuration until it is marked KILLED: such processes cannot be checked
    from here.)"""
    runs = client.search_runs([experiment_id], filter_string=f"tags.`{HASH_TAG}` = '{identity}'", max_results=5000)
    finished = [run for run in runs if run.info.status == "FINISHED"]
    if finished:
        return finished[0].info.run_id
    running = sorted(
        (run for run in runs if run.info.status == "RUNNING"), key=lambda run: (run.info.start_time, run.info.run_id)
    )
    if running and running[0].info.run_id != own_run_id:
        return running[0].info.run_id
    return None
