"""Finishing what a crashed run left in Doris, before anything new is loaded.

Exactly-once rule 2: a run starts by finishing the PREPARED records it finds — commit those the
state store marks complete, abort the others — and by aborting lingering transactions of our
label prefix that no record names. Doris has no "list transactions by label prefix" over HTTP,
but our labels are deterministic, so the caller names the labels a crashed run may have used
(e.g. every pending chunk's label at its current generation, the binlog batch that was in
flight) and each is probed:

* ``GET /api/{db}/get_load_state?label=`` (one request, no side effect), or, where that API is
  missing, the connector's probe: an empty-body 2PC load under the label — ``Label Already
  Exists`` tells the holder's state and txn id; a ``Success`` means the label was free (the
  empty transaction just opened is aborted at once);
* PREPARE / PRECOMMITTED → aborted; COMMITTED / VISIBLE with no record → reported in
  ``unrecorded_commits`` (data is visible that the state store never knew: the caller decides;
  it cannot be undone).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import DorisError, TransactionAbortedError
from cdc_core.doris.stream_load import LABEL_EXISTS, StreamLoader
from cdc_core.doris.transactions import TwoPhaseCommitter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabelRef:
    """A label a crashed run may have used in ``database`` (table is for messages and probes)."""

    database: str
    table: str
    label: str


@dataclass
class RecoveryReport:
    committed: list[Committable] = field(default_factory=list)
    aborted: list[Committable] = field(default_factory=list)
    lost: list[Committable] = field(default_factory=list)  # to commit, but Doris had aborted them
    lingering_aborted: list[LabelRef] = field(default_factory=list)
    unrecorded_commits: list[LabelRef] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[dict]]:
        return {
            "committed": [c.to_dict() for c in self.committed],
            "aborted": [c.to_dict() for c in self.aborted],
            "lost": [c.to_dict() for c in self.lost],
            "lingering_aborted": [ref.__dict__ for ref in self.lingering_aborted],
            "unrecorded_commits": [ref.__dict__ for ref in self.unrecorded_commits],
        }


class TransactionRecovery:
    """Resolves a previous run's transactions (see the module docstring)."""

    def __init__(self, committer: TwoPhaseCommitter, loader: StreamLoader | None = None,
                 *, use_load_state: bool = True):
        self.committer = committer
        self.loader = loader
        self.use_load_state = use_load_state

    def recover(self, *, commit: Iterable[Committable] = (), abort: Iterable[Committable] = (),
                probe: Iterable[LabelRef] = ()) -> RecoveryReport:
        report = RecoveryReport()
        handled: set[tuple[str, str]] = set()
        for c in commit:
            handled.add((c.database, c.label))
            try:
                self.committer.commit(c)
                report.committed.append(c)
            except TransactionAbortedError as exc:
                log.error("recovery: %s", exc)
                report.lost.append(c)
        for c in abort:
            handled.add((c.database, c.label))
            self.committer.abort(c)
            report.aborted.append(c)
        for ref in probe:
            if (ref.database, ref.label) in handled:
                continue
            handled.add((ref.database, ref.label))
            state = self.label_state(ref)
            if state in ("PREPARE", "PRECOMMITTED", "RUNNING"):
                self.committer.abort_label(ref.database, ref.label)
                report.lingering_aborted.append(ref)
                log.info("recovery: aborted lingering label %s (%s)", ref.label, state)
            elif state in ("COMMITTED", "VISIBLE", "FINISHED"):
                log.warning("recovery: label %s is %s but no PREPARED record names it", ref.label, state)
                report.unrecorded_commits.append(ref)
        return report

    def label_state(self, ref: LabelRef) -> str:
        """The label's transaction state, by ``get_load_state`` or by an empty-body probe load."""
        if self.use_load_state:
            try:
                return self.committer.states.state(ref.database, ref.label)
            except DorisError as exc:
                if _no_such_target(str(exc)):
                    return "UNKNOWN"  # no database: nothing can have been loaded under any label there
                if self.loader is None:
                    raise
                log.info("get_load_state unavailable (%s); probing label %s with an empty load", exc, ref.label)
                self.use_load_state = False
        return self.probe(ref)

    def probe(self, ref: LabelRef) -> str:
        if self.loader is None:
            raise DorisError("probing labels needs a StreamLoader")
        loader = self.loader
        path = f"/api/{ref.database}/{ref.table}/_stream_load"
        headers = loader.headers(ref.label, None)

        def attempt(n: int):  # noqa: ANN202 - a DorisResponse
            url = loader.target_url(ref.database, ref.table, path, n)
            return loader.client.send("PUT", url, headers=headers, body=lambda: b"", follow_redirects=False)

        resp = loader.client.with_retries(f"probe of label {ref.label}", attempt)
        body = loader._json(resp, f"probe of label {ref.label}")
        status = body.get("Status")
        if status == LABEL_EXISTS:
            existing = str(body.get("ExistingJobStatus") or "RUNNING")
            return existing
        txn = body.get("TxnId")
        if isinstance(txn, int) and txn > 0:
            self.committer.abort_txn(ref.database, txn, label=ref.label)
        if status not in ("Success", "Publish Timeout") and _no_such_target(str(body.get("Message"))):
            return "UNKNOWN"  # no such database or table: no load can exist under this label
        if status not in ("Success", "Publish Timeout"):
            raise DorisError(f"probe of label {ref.label} failed: {loader.client.redact(str(body.get('Message')))}")
        return "UNKNOWN"


def _no_such_target(message: str) -> bool:
    """Doris's answer for a database or table that does not exist (``errCode = 7``)."""
    return "unknown databases" in message or "unknown table" in message
