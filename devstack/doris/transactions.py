"""Per-database transaction manager: the FE ``DatabaseTransactionMgr`` state machine.

States: PREPARE -> (PRECOMMITTED, 2PC only) -> COMMITTED -> VISIBLE, or ABORTED from PREPARE /
PRECOMMITTED. Labels are unique per database among transactions that are not ABORTED; finished
labels are forgotten after ``label_keep_s`` (Doris ``streaming_label_keep_max_second``, 12 h) or
when a database holds more than ``label_num_threshold`` finished transactions (Doris 2.x
``label_num_threshold``, 2000) — after that a label can be reused, exactly as on a real FE.

Running transactions (PREPARE, PRECOMMITTED, COMMITTED: begun, not yet VISIBLE or ABORTED) are
counted per database; a begin is refused once a database holds ``max_running_txn_num_per_db`` of them
(FE ``DatabaseTransactionMgr.checkRunningTxnExceedLimit``), after the label check as on the FE. The
peak count per database is kept for tests and benchmarks (``/_standin/txns``, :mod:`devstack.doris.admin`).

Two locks, as Doris's FE has a transaction manager apart from its catalog and the BEs' writes: the
manager's own (:attr:`TxnManager.lock`) guards the transactions' states, the running counts and the
journal; the storage's write lock guards DuckDB (tables, rows, ``__standin.txns``). A load's begin and
precommit take only the manager's, so they never wait for a group of commits merging rows or a group
of ``CREATE TABLE``s (a 300-table snapshot's loads waited ~1.2 s for those here, docs/performance.md).
Whatever else changes a transaction's state — a commit, an abort, the ticker's timeouts and journal
folds, a BE restart's aborts — holds the write lock (aborts, the ticker and restarts take the
manager's within it: that order, never the other). So while a commit checks its transaction, merges
its rows and marks it VISIBLE, nothing else that could change that transaction runs (an abort, a
timeout, another commit; a precommit only moves a PREPARE one, which a commit refuses), and the
running counts a commit changes are updated under the manager's lock (:meth:`TxnManager._track`).

Every state change is recorded before the reply: PREPARE, PRECOMMITTED and ABORTED as a line of the
transaction journal (written under the manager's lock, fdatasynced after it and before any reply that
depends on it; a begin's by the load's precommit or abort, :meth:`TxnManager._journaled`, :meth:`TxnManager.begin`),
PRECOMMITTED after the load's staged file is on disk, an aborted load's staged file deleted once its
record is synced; COMMITTED and VISIBLE as a ``__standin.txns`` row in the same DuckDB transaction as the merged
rows. So a restart — even after ``kill -9`` — sees a consistent picture: each transaction in the
furthest state either place recorded (states only move forward). PREPARE transactions found at
start-up belonged to loads that died with the process and are aborted. The journal is folded into
``__standin.txns`` (:meth:`TxnManager.fold_journal`) at start-up, when labels expire and once it
holds :data:`FOLD_AFTER` transactions (or ``FOLD_AFTER_BYTES``: small loads' rows ride in their
PRECOMMITTED lines, ``Storage.write_staging``).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from .storage import FOLD_AFTER_BYTES, Storage, now_ms

LABEL_RE = re.compile(r"^[-_A-Za-z0-9:]{1,128}$")
USER_ABORT = "User Abort"
TIMEOUT_REASON = "timeout by txn manager"
RESTART_REASON = "coordinate BE is down"
BE_RESTART_REASON = "coordinate BE restart"
DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB = 100
FINAL = ("VISIBLE", "ABORTED")
# How far each state is along the state machine: at start-up a transaction takes the furthest state
# that ``__standin.txns`` or the journal recorded for it.
_RANK = {"PREPARE": 0, "PRECOMMITTED": 1, "COMMITTED": 2, "VISIBLE": 3, "ABORTED": 3}
# The journal is folded into ``__standin.txns`` (by the ticker) once it holds this many transactions.
FOLD_AFTER = 2000


@dataclass
class Txn:
    """One load transaction (a row of ``__standin.txns``)."""

    txn_id: int
    db: str
    label: str
    tbl: str
    status: str
    reason: str = ""
    two_pc: bool = False
    prepare_ms: int = 0
    precommit_ms: int | None = None
    commit_ms: int | None = None
    finish_ms: int | None = None
    staged: bool = False
    visible_at_ms: int | None = None

    def record(self) -> dict[str, Any]:
        """Its fields as a dict (a journal line, a ``__standin.txns`` row): a shallow copy, as every
        field is a str, int, bool or None; ``dataclasses.asdict`` deep-copies each field, ~0.3 ms a
        call, three calls a load."""
        return dict(vars(self))

    def job_status(self) -> str:
        """``ExistingJobStatus`` for a label held by this txn (LabelAlreadyUsedException)."""
        if self.status == "PRECOMMITTED":
            return "PRECOMMITTED"
        if self.status in ("COMMITTED", "VISIBLE"):
            return "FINISHED"
        return "RUNNING"


@dataclass
class _CommitRequest:
    """One 2PC commit waiting for the write lock (:meth:`TxnManager.commit_2pc`)."""

    db: str
    txn_id: int | None
    label: str | None
    early: Txn | None  # the transaction as resolved before the lock, whose staged rows were read then
    rows: Any
    done: bool = False
    result: Txn | None = None
    error: BaseException | None = None


class LabelAlreadyUsed(Exception):
    def __init__(self, txn: Txn) -> None:
        super().__init__(f"Label [{txn.label}] has already been used, relate to txn [{txn.txn_id}]")
        self.txn = txn


class TxnError(Exception):
    """A 2PC failure; ``str()`` is the FE detail message."""


class RunningTxnLimitExceeded(Exception):
    """FE ``BeginTransactionException`` from ``checkRunningTxnExceedLimit``; ``str()`` is its text."""

    def __init__(self, db_id: int, running: int, limit: int) -> None:
        super().__init__(f"current running txns on db {db_id} is {running}, larger than limit {limit}")
        self.running = running
        self.limit = limit


class FrontendUnreachable(Exception):
    """The BE cannot reach the FE (an FE restart); ``str()`` is the BE's thrift error."""


class BackendRestarted(Exception):
    """A load that reached the BE before a BE restart tries to begin after it (it died with the BE)."""


def fe_error(msg: str) -> str:
    """How a FE ``UserException`` text reaches a BE reply."""
    return f"TStatus: errCode = 2, detailMessage = {msg}"


class TxnManager:
    """All transactions of all databases; guarded by :attr:`lock` (module doc: the two locks)."""

    def __init__(
        self,
        storage: Storage,
        precommit_timeout_s: float = 3600.0,
        label_keep_s: float = 43200.0,
        label_num_threshold: int = 2000,
        max_running_txn_num_per_db: int = DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB,
    ) -> None:
        self.st = storage
        # The transaction manager's lock: states, running counts, labels, the journal. Taken after
        # the storage's write lock by whoever holds both; a load's begin and precommit take it alone.
        self.lock = threading.RLock()
        self.precommit_timeout_s = precommit_timeout_s
        self.label_keep_s = label_keep_s
        self.label_num_threshold = label_num_threshold
        self.max_running_txn_num_per_db = check_txn_limit(max_running_txn_num_per_db)
        self.txns: dict[int, Txn] = {}
        self.by_label: dict[tuple[str, str], list[int]] = {}
        # db -> ids of its running transactions, and the most it held at once since the last reset
        self.running: dict[str, set[int]] = {}
        self.peak_running: dict[str, int] = {}
        # Bumped by each BE restart: a load that reached the BE before it cannot begin after it.
        self.be_epoch = 0
        # While the FE restarts, the BE's RPCs to it fail with this text (None: the FE is up).
        self.fe_unreachable: str | None = None
        recs = {int(r["txn_id"]): r for r in storage.load_txns()}
        # ids with a ``__standin.txns`` row (a commit's record UPDATEs it, else INSERTs one), and ids
        # whose latest state the journal holds (written to ``__standin.txns`` by the next fold)
        self.in_db: set[int] = set(recs)
        self.dirty: set[int] = set()
        for rec in storage.journal_records():
            txn_id = int(rec["txn_id"])
            old = recs.get(txn_id)
            if old is None or _RANK[rec["status"]] >= _RANK[old["status"]]:
                recs[txn_id] = rec
            self.dirty.add(txn_id)
        for txn_id in sorted(recs):
            self._index(Txn(**recs[txn_id]))
        self._discard: list[int] = []  # staged files of aborted transactions, deleted once their records are synced
        # 2PC commits waiting for the write lock, applied together by the next thread to take it
        # (commit_2pc), and how many groups of more than one were committed, with how many commits
        self._commit_queue: list[_CommitRequest] = []
        self._commit_queue_lock = threading.Lock()
        # While a group of commits is applied (_apply_together): each transaction's record, by id,
        # written for the whole group by one statement before its COMMIT (Storage.save_txns)
        self._group_records: dict[int, tuple[dict[str, Any], bool]] | None = None
        self.group_commits = 0
        self.group_committed = 0
        # before the fold, which writes the rows of loads staged inline that still wait to staged
        # files (aborting the PREPARE ones below changes no ``staged``: a load stages at its precommit)
        storage.remove_orphan_staging({t.txn_id for t in self.txns.values() if t.staged})
        with self._journaled():
            for t in list(self.txns.values()):
                if t.status == "PREPARE":
                    self._set_aborted(t, RESTART_REASON)
            if self.dirty:
                self.fold_journal([])
        self.peak_running = {db: len(ids) for db, ids in self.running.items()}

    # ---- bookkeeping ------------------------------------------------------------------------
    def _index(self, t: Txn) -> None:
        self.txns[t.txn_id] = t
        ids = self.by_label.setdefault((t.db, t.label), [])
        if t.txn_id not in ids:
            ids.append(t.txn_id)
        self._track(t)

    def _track(self, t: Txn) -> None:
        """Keep :attr:`running` (and the peak) in step with ``t``'s status."""
        with self.lock:
            running = self.running.setdefault(t.db, set())
            if t.status in FINAL:
                running.discard(t.txn_id)
                return
            running.add(t.txn_id)
            if len(running) > self.peak_running.get(t.db, 0):
                self.peak_running[t.db] = len(running)

    def running_count(self, db: str) -> int:
        return len(self.running.get(db, ()))

    def reset_peaks(self) -> None:
        """Start measuring peaks afresh (each database's peak becomes its current count)."""
        with self.lock:
            self.peak_running = {db: len(ids) for db, ids in self.running.items()}

    def set_fe_unreachable(self, message: str | None) -> None:
        """An FE restart begins (the BE's RPCs will fail with ``message``) or ends (None)."""
        with self.st.lock, self.lock:
            self.fe_unreachable = message

    def _fe_rpc(self) -> None:
        """A BE -> FE call: fails while the FE restarts."""
        if self.fe_unreachable is not None:
            raise FrontendUnreachable(self.fe_unreachable)

    def set_limit(self, limit: int) -> None:
        """``ADMIN SET FRONTEND CONFIG ("max_running_txn_num_per_db" = ...)``: applies to later begins."""
        with self.lock:
            self.max_running_txn_num_per_db = check_txn_limit(limit)

    def _save(self, cur: Any, t: Txn) -> None:
        """Write ``t``'s state as its ``__standin.txns`` row, in the caller's DuckDB transaction."""
        new = t.txn_id not in self.in_db
        if self._group_records is not None:  # written with the group's others (_apply_together)
            self._group_records[t.txn_id] = (t.record(), new)
        else:
            self.st.save_txn(cur, t.record(), new=new)
        if new:
            self.st.after_commit(lambda: self.in_db.add(t.txn_id))
        self._track(t)

    def _record(self, t: Txn, done: Txn, *, staged_inline: bool = False) -> None:
        """Record ``done`` (``t`` in its next state) in the journal, then make it ``t``'s state; the
        caller holds :attr:`lock`. ``t`` changes only once the record is written. ``staged_inline``: the
        record carries the rows the load staged inline (:meth:`Storage.journal`)."""
        self.st.journal(done.record(), staged_inline=staged_inline)
        self.dirty.add(t.txn_id)
        vars(t).update(vars(done))
        self._track(t)

    @contextlib.contextmanager
    def _journaled(self, *, load: bool = False) -> Iterator[None]:
        """The write lock and :attr:`lock` (``load``: a load's own precommit, :attr:`lock` alone), for
        changes recorded in the journal; once released, the records are synced
        (:meth:`Storage.sync_journal`), then the staged files of the transactions aborted meanwhile
        deleted: a record on the disk says they are gone before they go."""
        discard: list[int] = []
        with contextlib.nullcontext() if load else self.st.locked(), self.lock:
            outer, self._discard = self._discard, discard
            try:
                yield
            finally:
                self._discard = outer
        self.st.sync_journal()
        for txn_id in discard:
            self.st.discard_staging(txn_id)

    def _set_aborted(self, t: Txn, reason: str) -> None:
        """Abort ``t`` (in :meth:`_journaled`): its record now, its staged file once that is synced."""
        done = replace(t, status="ABORTED", reason=reason, finish_ms=now_ms(), staged=False)
        if t.staged and self.st.has_legacy_staging(t.txn_id):  # a data directory of an earlier stand-in
            with self.st.transaction() as cur:
                self.st.drop_staging(cur, t.txn_id)
                vars(t).update(vars(done))
                self._save(cur, t)
            return
        staged = t.staged
        self._record(t, done)
        if staged:
            self._discard.append(t.txn_id)

    def fold_journal(self, expired: list[int]) -> None:
        """Write the journal's transactions into ``__standin.txns`` and forget ``expired`` ones
        (their rows deleted, their labels free), in one DuckDB transaction; the journal starts
        afresh (:meth:`Storage.fold_journal`). Under the lock."""
        gone = set(expired)
        rows = [self.txns[i].record() for i in sorted(self.dirty) if i in self.txns and i not in gone]
        self.st.fold_journal(rows, sorted(gone))
        self.in_db |= {int(r["txn_id"]) for r in rows}
        self.in_db -= gone
        self.dirty.clear()
        for i in expired:
            t = self.txns.pop(i)
            ids = self.by_label.get((t.db, t.label), [])
            if i in ids:
                ids.remove(i)
            if not ids:
                self.by_label.pop((t.db, t.label), None)

    def lookup(self, txn_id: int) -> Txn | None:
        return self.txns.get(txn_id)

    def label_holder(self, db: str, label: str) -> Txn | None:
        """The non-aborted transaction holding ``label`` in ``db``, if any."""
        for i in self.by_label.get((db, label), []):
            t = self.txns.get(i)
            if t and t.status != "ABORTED":
                return t
        return None

    def label_state(self, db: str, label: str) -> str:
        """The state of ``label``'s transaction in ``db`` for a reply: its record synced first (a
        begin's is not synced by the begin, :meth:`begin`)."""
        self.st.sync_journal()
        ids = [i for i in self.by_label.get((db, label), []) if i in self.txns]
        if not ids:
            return "UNKNOWN"
        holder = self.label_holder(db, label)
        return holder.status if holder else "ABORTED"

    # ---- load lifecycle ---------------------------------------------------------------------
    def begin(self, db: str, label: str, tbl: str, two_pc: bool, be_epoch: int | None = None) -> Txn:
        """Start a load transaction (PREPARE); raises :class:`LabelAlreadyUsed`, then
        :class:`RunningTxnLimitExceeded` (the FE's order), or :class:`BackendRestarted` when
        ``be_epoch`` (read when the load reached the BE) is older than the last BE restart.

        Its PREPARE record is written (a ``kill -9`` keeps it) but not synced here: no reply depends
        on it alone. The load answers after its precommit's (or abort's) sync, which covers every
        record written before it; a reply that tells of a PREPARE transaction (the label's holder,
        its state) syncs first (:meth:`Storage.sync_journal`). So a begin costs no ``fdatasync``
        of its own, as a Doris FE does not persist a stream load's PREPARE (a lost one only fails
        the load's commit)."""
        with self.lock:
            if be_epoch is not None and be_epoch != self.be_epoch:
                raise BackendRestarted()
            self._fe_rpc()
            holder = self.label_holder(db, label)
            if holder is not None:
                raise LabelAlreadyUsed(holder)
            running = self.running_count(db)
            if running >= self.max_running_txn_num_per_db:
                raise RunningTxnLimitExceeded(self.st.dbs.get(db, -1), running, self.max_running_txn_num_per_db)
            t = Txn(txn_id=self.st.next_txn_id(), db=db, label=label, tbl=tbl, status="PREPARE",
                    two_pc=two_pc, prepare_ms=now_ms())
            self.st.journal(t.record())  # its id is recorded by this record
            self.dirty.add(t.txn_id)
            self._index(t)
            return t

    def fail(self, t: Txn, reason: str) -> None:
        """A load failed after begin: abort its transaction (label becomes reusable). While the FE
        restarts the BE's rollback cannot reach it: the transaction stays PREPARE."""
        with self._journaled():
            if self.fe_unreachable is not None:
                return
            if t.status in ("PREPARE", "PRECOMMITTED"):
                self._set_aborted(t, reason)

    def _still_prepared(self, t: Txn) -> None:
        """A load whose transaction was aborted while it ran (a 2PC abort by label, a timeout)
        cannot finish it: the FE refuses, and the load fails."""
        if t.status != "PREPARE":
            raise TxnError(f"transaction [{t.txn_id}] is already aborted. abort reason: {t.reason}")

    def precommit(self, t: Txn, staged: bool) -> None:
        """PREPARE -> PRECOMMITTED, by the load that began ``t`` (only it, and before its reply):
        no commit of ``t`` can be under way, and an abort or a timeout of ``t`` holds :attr:`lock`
        too, so the two go one after the other."""
        with self._journaled(load=True):
            self._fe_rpc()
            self._still_prepared(t)
            self._record(t, replace(t, status="PRECOMMITTED", staged=staged, precommit_ms=now_ms()), staged_inline=staged)

    def commit_now(self, t: Txn, staged: bool, visible_delay_ms: int = 0) -> None:
        """Non-2PC load: apply the staged rows and make the txn VISIBLE in one transaction.

        With ``visible_delay_ms`` (publish-timeout fault) the txn stays COMMITTED and the rows are
        applied later by :meth:`tick`.
        """
        with self.st.transaction() as cur:
            self._fe_rpc()
            self._still_prepared(t)
            t.staged = staged
            t.commit_ms = now_ms()
            if visible_delay_ms > 0:
                t.status = "COMMITTED"
                t.visible_at_ms = t.commit_ms + visible_delay_ms
                self._save(cur, t)
                return
            self._publish(cur, t, alone=True)

    def _publish(self, cur: Any, t: Txn, rows: Any = None, *, alone: bool = False) -> None:
        """Apply ``t``'s staged rows (``rows``: already read, :meth:`Storage.read_staged`) and make it VISIBLE.

        ``alone``: ``cur``'s DuckDB transaction holds this publish only, so rows the load appended
        ahead of it (``Storage._prebuild``) may be committed in their own transaction, with the
        VISIBLE record; in a group they are not (the group's later members would not see them, and
        the group must commit or roll back as one), so they are rolled back and the staged file merged."""
        table = self.st.table(t.db, t.tbl)
        if t.staged and table is not None and alone:
            before = replace(t)
            if self.st.publish_prebuilt(cur, table, t.txn_id, lambda appended: self._visible(appended, t)):
                self.st.drop_staging(cur, t.txn_id)
                return
            vars(t).update(vars(before))
            self._track(t)
        elif t.staged:
            self.st.drop_prebuilt(t.txn_id)
        if t.staged:
            if table is not None:
                self.st.merge(cur, table, t.txn_id, rows)
            self.st.drop_staging(cur, t.txn_id)
        self._visible(cur, t)

    def _visible(self, cur: Any, t: Txn) -> None:
        """Make ``t`` VISIBLE, recorded in the DuckDB transaction of ``cur`` (that of its rows)."""
        t.staged = False
        t.status = "VISIBLE"
        t.finish_ms = now_ms()
        t.commit_ms = t.commit_ms or t.finish_ms
        self._save(cur, t)

    # ---- 2PC --------------------------------------------------------------------------------
    def _resolve(self, db: str, txn_id: int | None, label: str | None, op: str) -> Txn:
        if txn_id is not None:
            t = self.txns.get(txn_id)
            if t is None or t.db != db:
                raise TxnError(f"transaction [{txn_id}] not found")
            return t
        ids = [i for i in self.by_label.get((db, label or ""), []) if i in self.txns]
        if not ids:
            raise TxnError(f"transaction not found, label={label}")
        wanted = ("PRECOMMITTED",) if op == "commit" else ("PRECOMMITTED", "PREPARE")
        for i in ids:
            if self.txns[i].status in wanted:
                return self.txns[i]
        raise TxnError(f"running transaction not found, label={label}")

    def commit_2pc(self, db: str, txn_id: int | None, label: str | None) -> Txn:
        """Commit a PRECOMMITTED transaction: its rows applied and its VISIBLE record, in one DuckDB
        transaction, before the reply.

        Commits that arrive while another holds the write lock are applied together (group commit):
        the thread that next takes the lock applies every commit queued by then, one after the other
        in arrival order, in one DuckDB transaction, so they share its ``COMMIT`` (a WAL write and
        sync, ~half of a small commit's time under the lock) instead of each waiting for the lock
        and paying its own. Each is answered only once that transaction has committed, and each is
        checked as alone (a refused one writes nothing and gets its own error); a group whose
        transaction fails is rolled back and its commits applied one by one, so one failing commit
        never fails another. A ``kill -9`` leaves the whole group committed or none of it — and no
        client was answered before the ``COMMIT``."""
        # The staged rows are read before the write lock (Storage.read_staged); they are used only
        # if, under the lock, the same transaction is still the one to commit.
        try:
            early: Txn | None = self._resolve(db, txn_id, label, "commit")
        except TxnError:
            early = None
        rows = self.st.read_staged(early.txn_id) if early is not None and early.staged else None
        request = _CommitRequest(db, txn_id, label, early, rows)
        with self._commit_queue_lock:
            self._commit_queue.append(request)
        with self.st.lock:
            if not request.done:  # not applied by the group of a thread that held the lock before
                self._commit_queued()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _commit_queued(self) -> None:
        """Apply every queued commit (the caller holds the write lock): one alone as before, several
        in one DuckDB transaction, or each alone should that transaction fail."""
        with self._commit_queue_lock:
            group, self._commit_queue = self._commit_queue, []
        try:
            self._apply_group(group)
        finally:
            for request in group:
                if request.result is None and request.error is None:  # cut short (an interrupt)
                    request.error = TxnError("the commit was interrupted; ask for the transaction's state again")
                request.done = True

    def _apply_group(self, queued: list[_CommitRequest]) -> None:
        """Apply queued commits in arrival order: a load appended ahead of its commit
        (``Storage.has_prebuilt``) alone, committing its appended rows; the others between such
        ones together (:meth:`_apply_together`)."""
        run: list[_CommitRequest] = []
        for request in queued:
            if request.early is not None and self.st.has_prebuilt(request.early.txn_id):
                self._apply_together(run)
                run = []
                self._commit_alone(request)
            else:
                run.append(request)
        self._apply_together(run)

    def _apply_together(self, group: list[_CommitRequest]) -> None:
        if len(group) > 1:
            before: dict[int, dict[str, Any]] = {}  # each applied transaction's state before, should the group roll back
            try:
                with self.st.transaction() as cur:
                    # The group's VISIBLE records are one statement, not one each: a DuckDB
                    # statement costs ~1 ms of CPU however few its rows.
                    self._group_records = {}
                    try:
                        for request in group:
                            try:
                                request.result = self._commit_in(cur, request, before)
                            except (TxnError, FrontendUnreachable) as exc:  # refused before it wrote anything
                                request.error = exc
                        self.st.save_txns(cur, list(self._group_records.values()))
                    finally:
                        self._group_records = None
                self.group_commits += 1
                self.group_committed += sum(1 for r in group if r.result is not None)
            except Exception:  # noqa: BLE001 - the group is rolled back; each commit is then tried alone
                for txn_id, state in before.items():
                    t = self.txns[txn_id]
                    vars(t).update(state)
                    self._track(t)
                for request in group:
                    request.result = request.error = None
                    self._commit_alone(request)
        else:
            for request in group:
                self._commit_alone(request)

    def _commit_alone(self, request: _CommitRequest) -> None:
        try:
            with self.st.transaction() as cur:
                request.result = self._commit_in(cur, request, None)
        except Exception as exc:  # noqa: BLE001 - raised in the thread whose commit it is
            request.error = exc

    def _commit_in(self, cur: Any, request: _CommitRequest, before: dict[int, dict[str, Any]] | None) -> Txn:
        """One commit's checks and its rows, in the caller's DuckDB transaction (``before``: where
        a group keeps the transaction's state as it was, to restore should the group roll back)."""
        self._fe_rpc()
        t = self._resolve(request.db, request.txn_id, request.label, "commit")
        n = t.txn_id
        if t.status == "ABORTED":
            raise TxnError(f"transaction [{n}] is already aborted. abort reason: {t.reason}")
        if t.status == "VISIBLE":
            raise TxnError(f"transaction [{n}] is already visible, not pre-committed.")
        if t.status == "COMMITTED":
            raise TxnError(f"transaction [{n}] is already committed, not pre-committed.")
        if t.status == "PREPARE":
            raise TxnError(f"transaction [{n}] is prepare, not pre-committed.")
        if self.st.table(t.db, t.tbl) is None:
            raise TxnError(f"unknown table, tableName={t.tbl}")
        if before is not None:
            before.setdefault(n, dict(vars(t)))
        t.commit_ms = now_ms()
        self._publish(cur, t, request.rows if t is request.early else None, alone=before is None)
        return t

    def abort_2pc(self, db: str, txn_id: int | None, label: str | None) -> Txn:
        # A label with nothing to abort is answered at once, not after the write lock that a
        # concurrent load may hold for its whole staging (a client probing before it loads).
        self._fe_rpc()
        self._resolve(db, txn_id, label, "abort")
        with self._journaled():
            self._fe_rpc()
            t = self._resolve(db, txn_id, label, "abort")
            n = t.txn_id
            if t.status == "ABORTED":
                raise TxnError(f"transaction [{n}] is already aborted, abort reason: {t.reason}")
            if t.status in ("COMMITTED", "VISIBLE"):
                raise TxnError(f"transaction [{n}] is already {t.status}, could not abort.")
            self._set_aborted(t, USER_ABORT)
            return t

    def abort_in_flight(self) -> list[int]:
        """A BE restart: the loads it was running die, and the FE aborts their PREPARE transactions
        (``abortTxnWhenCoordinateBeRestart``); PRECOMMITTED ones keep their staged data and survive."""
        with self._journaled():
            self.be_epoch += 1
            aborted = [t for t in self.txns.values() if t.status == "PREPARE"]
            for t in aborted:
                self._set_aborted(t, BE_RESTART_REASON)
            return [t.txn_id for t in aborted]

    # ---- background work --------------------------------------------------------------------
    def tick(self) -> None:
        """Abort timed-out PRECOMMITTED txns, publish delayed commits, forget old labels (not while
        the FE restarts: this is the FE's own work)."""
        if self.fe_unreachable is not None:
            return
        now = now_ms()
        with self._journaled():
            due: list[Txn] = []
            for t in list(self.txns.values()):
                if (t.status == "PRECOMMITTED" and t.precommit_ms is not None
                        and now - t.precommit_ms > self.precommit_timeout_s * 1000):
                    self._set_aborted(t, TIMEOUT_REASON)
                elif t.status == "COMMITTED" and t.visible_at_ms is not None and now >= t.visible_at_ms:
                    due.append(t)
            if due:
                with self.st.transaction() as cur:
                    for t in due:
                        self._publish(cur, t)
            expired: list[int] = []
            per_db: dict[str, list[Txn]] = {}
            for t in self.txns.values():
                if t.status in FINAL and t.finish_ms is not None:
                    if now - t.finish_ms > self.label_keep_s * 1000:
                        expired.append(t.txn_id)
                    else:
                        per_db.setdefault(t.db, []).append(t)
            for finished in per_db.values():
                if len(finished) > self.label_num_threshold:
                    finished.sort(key=lambda x: (x.finish_ms or 0, x.txn_id))
                    expired.extend(x.txn_id for x in finished[: len(finished) - self.label_num_threshold])
            if expired or len(self.dirty) >= FOLD_AFTER or self.st.journal_bytes >= FOLD_AFTER_BYTES:
                self.fold_journal(expired)

    def checkpoint_when_idle(self) -> bool:
        """DuckDB's checkpoint at an idle moment (:meth:`Storage.checkpoint_when_idle`), and only when
        no load transaction is running (begun, not yet VISIBLE or ABORTED) in any database; whether it
        checkpointed. A snapshot's loads write no DuckDB row until their commits: a second without
        a DuckDB write there is not idle, and a checkpoint taken then would hold the write lock the
        commits wait for. A transaction left running (an abandoned precommit) holds the checkpoint
        off until its timeout aborts it;
        DuckDB's own threshold (``storage.WAL_CHECKPOINT_BYTES``) still bounds the WAL meanwhile."""
        if any(list(self.running.values())):
            return False
        return self.st.checkpoint_when_idle()


def check_txn_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"max_running_txn_num_per_db must be a positive integer, not {limit!r}")
    return limit


class Ticker(threading.Thread):
    """Runs :meth:`TxnManager.tick` periodically until stopped."""

    def __init__(self, mgr: TxnManager, interval_s: float) -> None:
        super().__init__(name="txn-ticker", daemon=True)
        self.mgr = mgr
        self.interval_s = interval_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            try:
                self.mgr.tick()
                self.mgr.checkpoint_when_idle()
            except Exception as e:  # keep ticking; a failed tick is retried next time
                print(f"txn ticker error: {e!r}", flush=True)
