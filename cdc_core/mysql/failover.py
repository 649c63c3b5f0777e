"""Following a failover: resuming by GTID on a server whose binlog files are not the old one's.

A committed offset names a file and position of the server that wrote it (``BinlogOffset.server``)
and the GTID position after its last transaction (``BinlogOffset.gtid_set``). When the source's
identity is another one (the pipeline's ``hostname``/``port`` now point at a promoted replica),
the file position is meaningless there: its files have other names and other numbers, and a
position compared across servers either looks "caught up" (lower-numbered files: the changes are
silently skipped) or impossible (higher-numbered: error 1236). So:

* the server's GTID position must contain every committed transaction, on the same history
  (:func:`cdc_core.mysql.gtid.compare_positions`); otherwise :class:`GtidFailoverError` names both
  positions and stops before anything is read or applied;
* the stream resumes exactly after the last committed transaction: a GTID dump from the committed
  position (MariaDB ``is_mariadb=True, auto_position=…``, MySQL ``COM_BINLOG_DUMP_GTID``; the
  server itself refuses a position not in its history, ``slave_gtid_strict_mode``) finds the new
  server's file and position of the first transaction after it
  (:func:`cdc_core.mysql.startup.resolve_gtid`), and the stream reads on by file and position there;
* when the server holds every committed transaction but the binlog files with the ones right after
  them were purged there (a purge soon after the failover, before a batch was committed on the new
  server), that is a purge, not a divergence: :class:`cdc_core.mysql.purge.GtidPurgedError`, healed
  as any purged binlog is (``tidemark resnapshot``, or ``tidemark.binlog.on-purged: resnapshot``);
* offsets on the new server take the next **epoch** (``BinlogOffset.epoch``): they sort, and give
  Doris sequence values, after every offset of the old server, whatever their file numbers.

``docs/mysql.md`` ("Failover by GTID") has the rules and the filter's behaviour afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pymysql

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.gtid import compare_positions, is_mariadb_gtid
from cdc_core.mysql.purge import GtidPurgedError, binary_logs
from cdc_core.mysql.startup import StartupError, resolve_gtid

logger = logging.getLogger(__name__)

WHAT_TO_DO = ("Point the pipeline's source (hostname/port) at a server that has every committed transaction "
              "(e.g. wait for the replica to catch up before promoting it), or take a new snapshot with "
              "`tidemark resnapshot PIPELINE.yaml`.")


class GtidFailoverError(RuntimeError):
    """The source changed and cannot continue the committed history: resuming would lose changes."""

    def __init__(self, message: str, committed: BinlogOffset, server: BinlogOffset):
        super().__init__(message)
        self.committed = committed
        self.server = server


def same_server(offset: BinlogOffset, identity: str | None) -> bool:
    """Is ``offset`` a position of the server with ``identity``? (An offset or a server without a
    recorded identity — a state written before identities were kept — counts as the same.)"""
    return offset.server is None or identity is None or offset.server == identity


def align(server_offset: BinlogOffset, reference: BinlogOffset | None) -> BinlogOffset:
    """The server's offset with the epoch it has in the pipeline whose stream is at ``reference``:
    the reference's epoch on the same server, the next one on another (a failover not yet followed)."""
    if reference is None:
        return server_offset
    epoch = reference.epoch if same_server(reference, server_offset.server) else reference.epoch + 1
    return replace(server_offset, epoch=epoch)


def failed_over(committed: BinlogOffset | None, server_offset: BinlogOffset) -> bool:
    return committed is not None and not same_server(committed, server_offset.server)


def behind_by_gtid(committed: BinlogOffset, server_offset: BinlogOffset) -> bool:
    """Across servers "caught up" is a GTID question: the server has transactions the committed
    position lacks (file positions of two servers are never compared)."""
    if not committed.gtid_set or not server_offset.gtid_set:
        return True  # unknown: let the stream's own checks decide (and refuse if it must)
    return not compare_positions(server_offset.gtid_set, committed.gtid_set).ok


def check_successor(committed: BinlogOffset, server_offset: BinlogOffset) -> None:
    """Raise :class:`GtidFailoverError` unless the server's GTID position continues the committed one."""
    where = f"server {server_offset.server or '?'} (at {server_offset.file}:{server_offset.position})"
    if not committed.gtid_set:
        raise GtidFailoverError(
            f"the source is now {where}, not {committed.server}, which the committed offset {committed.file}:"
            f"{committed.position} belongs to; the committed offset carries no GTID position, so where to resume "
            f"on the new server cannot be known. {WHAT_TO_DO}", committed, server_offset)
    verdict = compare_positions(committed.gtid_set, server_offset.gtid_set)
    if verdict.missing:
        raise GtidFailoverError(
            f"the source is now {where}, not {committed.server}: its GTID position {server_offset.gtid_set or '(empty)'}"
            f" lacks transactions the pipeline already committed (committed GTID position {committed.gtid_set}; "
            f"missing: {', '.join(verdict.missing)}). Resuming there would skip them, so nothing was read or "
            f"applied. {WHAT_TO_DO}", committed, server_offset)
    if verdict.diverged:
        raise GtidFailoverError(
            f"the source is now {where}, not {committed.server}: its GTID history diverged from the committed one "
            f"(committed GTID position {committed.gtid_set}, the server's {server_offset.gtid_set}; "
            f"{'; '.join(verdict.diverged)}). Nothing was read or applied. {WHAT_TO_DO}", committed, server_offset)


def check_one_snapshot_server(high_watermarks: list[BinlogOffset]) -> None:
    """Before the first batch the stream starts at the smallest high watermark: chunks read on two
    servers (a failover during the snapshot) have watermarks that do not compare. Refuse then."""
    servers = sorted({hw.server for hw in high_watermarks if hw.server})
    if len(servers) > 1:
        raise GtidFailoverError(
            f"the snapshot's chunks were read on {len(servers)} servers ({', '.join(servers)}): the source failed "
            "over while the snapshot was read, and their high watermarks are file positions of different servers, "
            "so where the stream must start cannot be known. Take a new snapshot with `tidemark resnapshot "
            "PIPELINE.yaml`.", min(high_watermarks), max(high_watermarks))


def resume_after_failover(settings: Any, committed: BinlogOffset, server_offset: BinlogOffset,
                          server_id: int) -> BinlogOffset:
    """Where the stream resumes on the new server: the file and position of the first transaction after
    the committed GTID position, in the next epoch. Raises :class:`GtidFailoverError` when the server
    cannot continue the committed history."""
    check_successor(committed, server_offset)
    assert committed.gtid_set is not None  # checked above
    check_gtids_available(settings, committed)
    try:
        start = resolve_gtid(settings, committed.gtid_set, server_id)
    except (StartupError, pymysql.MySQLError) as exc:
        raise GtidFailoverError(
            f"the source is now server {server_offset.server} (GTID position {server_offset.gtid_set}), not "
            f"{committed.server}; it refused to resume after the committed GTID position {committed.gtid_set}: "
            f"{exc}. Its history does not continue the committed one. {WHAT_TO_DO}", committed, server_offset,
        ) from exc
    resumed = BinlogOffset(start.file, start.position, committed.gtid_set, committed.epoch + 1, server_offset.server)
    logger.warning("the source failed over from %s to %s: resuming after GTID position %s at %s:%d (epoch %d)",
                   committed.server, server_offset.server, committed.gtid_set, resumed.file, resumed.position,
                   resumed.epoch)
    return resumed


def oldest_gtid_position(cur: Any, gtid_set: str) -> tuple[str, list[str]]:
    """The GTID position before the server's oldest binlog (MariaDB: the ``Gtid_list`` event that
    opens every binlog file; MySQL: ``gtid_purged``), and the server's binlog files."""
    names = [name for name, _ in binary_logs(cur)]
    if not is_mariadb_gtid(gtid_set):
        cur.execute("SELECT @@GLOBAL.gtid_purged")
        row = cur.fetchone()
        value = (list(row.values())[0] if isinstance(row, dict) else row[0]) if row else ""
        return str(value or "").replace("\n", ""), names
    if not names:
        return "", names
    cur.execute(f"SHOW BINLOG EVENTS IN '{names[0]}' LIMIT 4")
    for row in cur.fetchall():
        values = list(row.values()) if isinstance(row, dict) else list(row)
        if str(values[2]) == "Gtid_list":
            return str(values[5]).strip().strip("[]").strip(), names
    return "", names


def check_gtids_available(settings: Any, committed: BinlogOffset) -> None:
    """Raise :class:`GtidPurgedError` when the transactions right after the committed GTID position
    are no longer in the server's binlogs: its oldest binlog starts past that position (call it once
    the server is known to hold every committed transaction, :func:`check_successor`)."""
    if not committed.gtid_set:
        return
    conn = pymysql.connect(**MySqlConnectionSettings.of(settings).pymysql_kwargs())
    try:
        with conn.cursor() as cur:
            oldest, names = oldest_gtid_position(cur, committed.gtid_set)
    finally:
        conn.close()
    if oldest and compare_positions(oldest, committed.gtid_set).missing:
        raise GtidPurgedError(committed, names, oldest)


def current_offset(settings: Any) -> BinlogOffset:
    """The server's offset now, with its GTID position and identity (one short connection)."""
    conn = pymysql.connect(**MySqlConnectionSettings.of(settings).pymysql_kwargs())
    try:
        with conn.cursor() as cur:
            return read_current_offset(cur)
    finally:
        conn.close()
