"""Named fault points: where tests (and the crash matrix) make the pipeline fail on purpose.

Production code calls ``fault_point("snapshot.after_precommit", label=...)`` at every step
boundary of the exactly-once protocol; no production signature carries a test parameter. The
points are configured by the environment variable ``TIDEMARK_FAULTS`` and are inert without it:
one ``os.environ`` lookup. An environment variable reaches every process of the pipeline: the
driver, a subprocess (``tidemark run --once``), and Spark's Python workers — a task receives the
driver's setting with its spec (``forwarded()`` / ``adopt()``), because Spark's worker daemons
outlive a change of the driver's environment.

``TIDEMARK_FAULTS`` is a JSON object, point name → action::

    {"snapshot.after_precommit": {"action": "raise_once", "marker": "/tmp/failed-once"},
     "binlog.after_loads": {"action": "kill"},
     "snapshot.read": {"action": "raise", "when": {"chunk": 0}, "sleep_s": 0.8}}

Actions: ``raise`` (every time), ``raise_once`` (the first time
only: the ``marker`` file is created then, and its existence disarms the point, also across
processes and task retries), ``kill`` (SIGKILL of the current process, as a crash would),
``sleep`` (``sleep_s`` seconds, nothing else), ``sleep_until`` (until the epoch second ``at``),
``barrier`` (the process writes a file into the directory ``dir`` and waits until ``parties``
files are there: processes started apart go on from the point at one moment), and ``post``: an
HTTP POST of the JSON ``body`` to ``url``, then the code goes on — something outside the pipeline
happens at exactly this moment (the Doris stand-in restarts its BE or FE: ``{"action": "post",
"url": "http://127.0.0.1:8030/_standin/restart", "body": {"node": "be", "downtime_s": 6}}``,
``devstack/doris/admin.py``). A non-2xx answer raises. With a ``marker`` it fires once, as
``raise_once`` does. ``when`` restricts a point to calls whose
keyword context matches (compared as text); a call it does not match sleeps ``sleep_s`` if given,
which keeps the other tasks busy while a matching one fails.

Fault points (name: where it fires):

* ``snapshot.read`` — in a chunk's read task, after its range scan and before its high
  watermark is taken (context: ``table``, ``chunk``);
* ``snapshot.after_precommit`` — in a writing task, after its Doris loads are precommitted and
  before the driver records them (context: ``table``, ``chunk``, ``label``);
* ``snapshot.after_state_write`` — on the driver, after chunks are recorded PREPARED, before
  anything commits them (context: ``keys``);
* ``snapshot.committing`` — a chunk's Doris transactions committed, not yet recorded COMMITTED
  (context: ``key``);
* ``snapshot.between_groups`` — a run of more chunks than the running-transaction bound: a batch
  of its chunks committed early by the commit window (``cdc_core/pipeline/commit_window.py``), the
  run's other chunks read meanwhile or not yet (context: ``group``, the batch counted from 0);
* ``binlog.after_loads`` — a binlog batch's loads precommitted, before its PREPARED record
  (context: ``batch``);
* ``binlog.between_groups`` — a batch touching more tables than the running-transaction bound:
  a group of its loads committed and recorded in the RUNNING batch, the next group not loaded
  (context: ``batch``, ``group`` counted from 0);
* ``binlog.after_state_write`` — the batch recorded PREPARED, before its commit (context: ``batch``);
* ``binlog.committing`` — the batch's transactions committed, the offset not yet moved
  (context: ``batch``);
* ``schema_change.after_quiesce``, ``schema_change.after_flush``, ``schema_change.after_apply``,
  ``schema_change.after_resume`` — after each step of a schema change has recorded its state.
* ``schema_change.before_sweep`` — in ``apply``, a reloaded table's chunks committed again, the
  sweep of its stale rows not run yet (context: ``tables``; ``cdc_core/pipeline/reload.py``);
* ``reload.after_page_commit`` — a page of the sweep's deletes committed, its page number not yet
  recorded (context: ``table``, ``page``);
* ``resnapshot.after_request`` — a resnapshot's chunks marked PENDING and its sweeps recorded, no
  chunk read yet (context: ``tables``; ``cdc_core/pipeline/resnapshot.py``);
* ``repair.after_loads`` — a repair's loads precommitted and recorded, before their commit
  (context: ``table``; ``cdc_core/pipeline/parity/repair.py``);
* ``run.before_lease`` — ``tidemark run`` about to take its pipeline's lease, nothing of the state
  written yet (context: ``pipeline``; ``orchestration/cli/run_once.py``);
* ``run.resource_setup`` — a Dagster run's pipeline resource set up for it, its process recorded
  in the run's tags, no step started and no lease taken (context: ``run``, the run id;
  ``orchestration/defs/resources.py``);
* ``plan.after_step`` — a split step's chunks and the splitter's cursor committed to the state
  (context: ``table``, ``chunk``: the step's last chunk index; ``cdc_core/mysql/snapshot_assigner.py``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

ENV = "TIDEMARK_FAULTS"

POINTS = (
    "snapshot.read",
    "snapshot.after_precommit",
    "snapshot.after_state_write",
    "snapshot.committing",
    "snapshot.between_groups",
    "binlog.after_loads",
    "binlog.between_groups",
    "binlog.after_state_write",
    "binlog.committing",
    "schema_change.after_quiesce",
    "schema_change.after_flush",
    "schema_change.after_apply",
    "schema_change.after_resume",
    "schema_change.before_sweep",
    "reload.after_page_commit",
    "resnapshot.after_request",
    "repair.after_loads",
    "run.before_lease",
    "run.resource_setup",
    "plan.after_step",
)
ACTIONS = ("raise", "raise_once", "kill", "sleep", "sleep_until", "barrier", "post")
BARRIER_TIMEOUT_S = 300


class InjectedFault(RuntimeError):
    """The failure a fault point raises; its message names the point."""


@functools.lru_cache(maxsize=8)
def _parse(raw: str) -> dict[str, dict[str, Any]]:
    config = json.loads(raw)
    if not isinstance(config, dict):
        raise ValueError(f"{ENV} must be a JSON object of fault point → action, not {raw!r}")
    for name, spec in config.items():
        if name not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {name!r}; the points are {', '.join(POINTS)}")
        if spec.get("action") not in ACTIONS:
            raise ValueError(f"{ENV}: {name}: action must be one of {', '.join(ACTIONS)}")
        if spec["action"] == "sleep_until" and not isinstance(spec.get("at"), int | float):
            raise ValueError(f"{ENV}: {name}: sleep_until needs 'at', an epoch second")
        if spec["action"] == "barrier" and not (spec.get("dir") and spec.get("parties")):
            raise ValueError(f"{ENV}: {name}: barrier needs 'dir' and 'parties'")
        if spec["action"] == "raise_once" and not spec.get("marker"):
            raise ValueError(f"{ENV}: {name}: raise_once needs a 'marker' file path")
        if spec["action"] == "post" and not str(spec.get("url", "")).startswith(("http://", "https://")):
            raise ValueError(f"{ENV}: {name}: post needs an http(s) 'url'")
    return config


def fault_point(name: str, **context: Any) -> None:
    """Act here (fail, sleep, kill, post) if ``TIDEMARK_FAULTS`` says so; otherwise do nothing."""
    raw = os.environ.get(ENV)
    if not raw:
        return
    spec = _parse(raw).get(name)
    if spec is None:
        return
    when = spec.get("when") or {}
    matches = all(str(context.get(k)) == str(v) for k, v in when.items())
    if matches and spec["action"] == "sleep_until":
        time.sleep(max(0.0, float(spec["at"]) - time.time()))
        return
    if matches and spec["action"] == "barrier":
        _barrier(Path(spec["dir"]), int(spec["parties"]))
        return
    if not matches or spec["action"] in ("sleep", "sleep_until", "barrier"):
        if spec.get("sleep_s"):
            time.sleep(float(spec["sleep_s"]))
        return
    action = spec["action"]
    # A post is the outside world acting, not the pipeline failing: the log file only, so the terminal
    # shows what a user would see of that event.
    logger.log(logging.INFO if action == "post" else logging.WARNING, "fault point %s fires (%s) %s", name, action,
               context)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise_once" or (action == "post" and spec.get("marker")):
        marker = spec["marker"]
        try:
            with open(marker, "x") as handle:  # created once: later calls and retries pass
                handle.write(f"{name} fired once\n")
        except FileExistsError:
            return
    if action == "post":
        _post(name, spec["url"], spec.get("body"))
        return
    raise InjectedFault(f"injected failure at {name} ({action}) {context}")


def _barrier(directory: Path, parties: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{os.getpid()}-{time.time_ns()}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while sum(1 for _ in directory.iterdir()) < parties:
        if time.monotonic() > deadline:
            raise InjectedFault(f"barrier {directory}: {parties} parties did not arrive in {BARRIER_TIMEOUT_S} s")
        time.sleep(0.005)


def _post(name: str, url: str, body: Any) -> None:
    """The ``post`` action: POST ``body`` as JSON and wait for the answer (a non-2xx one raises)."""
    request = urllib.request.Request(url, data=json.dumps(body if body is not None else {}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - a test's own URL
            answer.read()
    except (urllib.error.URLError, OSError) as exc:
        raise InjectedFault(f"fault point {name}: POST {url} failed: {exc}") from exc


def forwarded() -> dict[str, str]:
    """The driver's fault setting, to travel with a Spark task's spec (empty when inert)."""
    raw = os.environ.get(ENV)
    return {ENV: raw} if raw else {}


def adopt(spec: dict[str, Any]) -> None:
    """In a Spark task: take the driver's fault setting from the task's spec (see ``forwarded``)."""
    raw = (spec.get("faults") or {}).get(ENV)
    if raw:
        os.environ[ENV] = raw
    elif "faults" in spec:
        os.environ.pop(ENV, None)
