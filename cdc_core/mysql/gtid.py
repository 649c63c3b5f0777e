"""GTID state carried along binlog offsets, so a resume point can also be given by GTID.

MariaDB's GTID position is one ``domain-server-seq`` per replication domain (``@@gtid_binlog_pos``
syntax, e.g. ``0-1-42,1-5-7``); MySQL's is a ``uuid:intervals`` set. The order of offsets on one
server comes from file and position (``cdc_core.model.offsets``); the GTID position is what a
failover resumes from, and :func:`compare_positions` decides whether a server holds every
transaction the pipeline committed (``docs/mysql.md``, "Failover by GTID").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pymysql
from pymysqlreplication.gtid import Gtid, GtidSet

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.connection import MySqlConnectionSettings


def is_mariadb_gtid(text: str) -> bool:
    """``domain-server-seq[,...]`` (MariaDB), as opposed to MySQL's ``uuid:intervals``."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return bool(parts) and all(len(p.split("-")) == 3 and all(x.isdigit() for x in p.split("-")) for p in parts)


@dataclass
class GtidState:
    """The GTID position after the last event read (mutable while reading)."""

    mariadb: dict[int, tuple[int, int]] = field(default_factory=dict)
    mysql: GtidSet | None = None

    @classmethod
    def parse(cls, text: str | None) -> GtidState:
        state = cls()
        if not text or not text.strip():
            return state
        if is_mariadb_gtid(text):
            for part in text.split(","):
                if part.strip():
                    domain, server, seq = (int(x) for x in part.strip().split("-"))
                    state.mariadb[domain] = (server, seq)
        else:
            try:
                state.mysql = GtidSet(text.strip())
            except Exception as exc:  # noqa: BLE001 - library raises bare ValueErrors/asserts
                raise ValueError(
                    f"cannot parse GTID set {text!r}: expected MariaDB 'domain-server-seq[,...]' "
                    "or MySQL 'uuid:1-5[,...]'"
                ) from exc
        return state

    @classmethod
    def at_cursor(cls, cursor: Any, offset: BinlogOffset) -> GtidState:
        """As :meth:`at`, on an open cursor."""
        try:
            cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
            row = cursor.fetchone()
        except pymysql.MySQLError:
            return cls()
        value = (next(iter(row.values())) if isinstance(row, dict) else row[0]) if row else None
        return cls.parse(value or None)

    @classmethod
    def at(cls, settings: Any, offset: BinlogOffset) -> GtidState:
        """The GTID position at a file/position, asked of the server (MariaDB's ``BINLOG_GTID_POS``).

        MySQL has no such function; the state then starts empty and fills as GTID events pass.
        """
        try:
            conn = pymysql.connect(**MySqlConnectionSettings.of(settings).pymysql_kwargs())
        except pymysql.MySQLError:
            return cls()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
                row = cur.fetchone()
            return cls.parse(row[0] if row and row[0] else None)
        except pymysql.MySQLError:
            return cls()
        finally:
            conn.close()

    def add_mariadb(self, domain: int, server: int, seq: int) -> None:
        self.mariadb[domain] = (server, seq)

    def add_mysql(self, gtid: str) -> None:
        if self.mysql is None:
            self.mysql = GtidSet(gtid)
        else:
            self.mysql = self.mysql + Gtid(gtid)

    def text(self) -> str | None:
        if self.mariadb:
            return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(self.mariadb.items()))
        if self.mysql is not None:
            return str(self.mysql)
        return None


# -- comparing a committed position with a server's --------------------------------------------


@dataclass(frozen=True)
class GtidVerdict:
    """How a server's GTID position stands to the position the pipeline committed.

    ``missing``: committed transactions the server does not have (resuming there would skip them).
    ``diverged``: where the server's history is not a continuation of the committed one (MariaDB:
    the same domain and sequence number written by another server; or GTID forms of two kinds).
    """

    missing: tuple[str, ...] = ()
    diverged: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.missing and not self.diverged


def _mariadb_positions(text: str) -> dict[int, tuple[int, int]]:
    return GtidState.parse(text).mariadb


def _mysql_intervals(text: str) -> dict[str, list[tuple[int, int]]]:
    """``uuid:1-5:7,uuid2:3`` → {uuid: [(1, 5), (7, 7)], ...} (closed intervals, merged, sorted)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for part in text.replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        sid, *ranges = part.split(":")
        if not ranges:
            raise ValueError(f"GTID set member {part!r} has no transaction numbers (expected 'uuid:1-5')")
        spans = out.setdefault(sid.strip().lower(), [])
        for r in ranges:
            lo, _, hi = r.strip().partition("-")
            spans.append((int(lo), int(hi or lo)))
    for sid, spans in out.items():
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        out[sid] = merged
    return out


def _uncovered(spans: list[tuple[int, int]], cover: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``spans`` that ``cover`` (merged, sorted) does not hold."""
    left: list[tuple[int, int]] = []
    for lo, hi in spans:
        at = lo
        for c_lo, c_hi in cover:
            if c_hi < at:
                continue
            if c_lo > hi:
                break
            if c_lo > at:
                left.append((at, c_lo - 1))
            at = max(at, c_hi + 1)
            if at > hi:
                break
        if at <= hi:
            left.append((at, hi))
    return left


def compare_positions(committed: str, server: str | None) -> GtidVerdict:
    """Does ``server`` (its ``gtid_binlog_pos`` / ``gtid_executed``) hold every transaction of
    ``committed``, on the same history?

    MariaDB positions keep the last GTID per replication domain, and sequence numbers grow within
    a domain: the server holds ``d-s-n`` when its domain ``d`` is at ``n`` or beyond; at ``n``
    written by another server id, the two histories forked. MySQL sets are sets: every committed
    interval must be in the server's set.
    """
    server = (server or "").strip()
    if is_mariadb_gtid(committed):
        if server and not is_mariadb_gtid(server):
            return GtidVerdict(diverged=(f"committed {committed} is a MariaDB position, the server's {server} is not",))
        have = _mariadb_positions(server)
        missing: list[str] = []
        diverged: list[str] = []
        for domain, (server_id, seq) in sorted(_mariadb_positions(committed).items()):
            theirs = have.get(domain)
            if theirs is None or theirs[1] < seq:
                missing.append(f"{domain}-{server_id}-{seq}")
            elif theirs[1] == seq and theirs[0] != server_id:
                diverged.append(f"domain {domain}: committed {domain}-{server_id}-{seq}, the server has "
                                f"{domain}-{theirs[0]}-{theirs[1]}")
        return GtidVerdict(tuple(missing), tuple(diverged))
    if server and is_mariadb_gtid(server):
        return GtidVerdict(diverged=(f"committed {committed} is a MySQL GTID set, the server's {server} is not",))
    have_sets = _mysql_intervals(server)
    missing = []
    for sid, spans in sorted(_mysql_intervals(committed).items()):
        for lo, hi in _uncovered(spans, have_sets.get(sid, [])):
            missing.append(f"{sid}:{lo}" if lo == hi else f"{sid}:{lo}-{hi}")
    return GtidVerdict(tuple(missing))
