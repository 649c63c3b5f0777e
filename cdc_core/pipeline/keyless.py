"""A binlog batch's changes of a keyless table, as rows keyed by the hidden row identity.

A table without a primary key is a multiset of row images; its Doris table (exact form,
``cdc_core/doris/table_creation.py``) keys each row by (hash of its image, copy ordinal)
(``cdc_core/doris/row_identity.py``). A change names its row only by its image, so the batch must
know how many copies of each image it touches Doris holds:

* one query per Doris table per batch (``SELECT hash, COUNT(*), MAX(copy) … WHERE hash IN (…)``,
  2000 hashes a query) gives the copies of the images the batch's changes name;
* then, in binlog order, an INSERT of image R adds copy ``n`` (``n`` = the copies of R now), a
  DELETE removes copy ``n-1``, an UPDATE is the DELETE of its old image and the INSERT of its new
  one; the counts move with each change, and stay for the batch's later loads into the same table
  (two source tables routed to one Doris table).

Why this is exactly-once: every batch is committed before the next one reads Doris
(``cdc_core/pipeline/stream_run.py``), so Doris's counts are those of every change before the
batch's start. A batch that crashed before its commit is aborted and read again from the same
counts; one whose loads committed in part is read again over exactly its range under the same
labels (``binlog_batch._partly_committed``), and Doris answers the committed ones as committed,
whatever counts the second reading saw. The copies in Doris stay ``0 .. n-1``; should they not
(a table written by hand), the copies are read one by one and an insert takes the next free one,
a delete the highest, so no row is ever overwritten.

A delete of an image Doris holds no copy of means Doris and MySQL differ already (rows changed
where no binlog saw them, or a column change that altered the images): it is counted and named in
one warning with the way out (``tidemark resnapshot --table``), never silently dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from cdc_core.doris.catalog import DorisCatalog, qualified, quote_ident, quote_string
from cdc_core.doris.row_identity import ROW_COPY, ROW_HASH, image_hashes, salt_of
from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import doris_arrow_type
from cdc_core.pipeline.changes import ChangeRow

logger = logging.getLogger(__name__)

QUERY_HASHES = 2000  # hashes per count query: the FE returns at most 10000 rows

HASH_COLUMN = Column(ROW_HASH, "varchar(32)", "varchar", nullable=False, char_length=32)
COPY_COLUMN = Column(ROW_COPY, "bigint(20)", "bigint", nullable=False)


def identity_schema(schema: TableSchema) -> TableSchema:
    """``schema`` with the identity columns first and as its key: the rows the binlog path loads
    into a keyless table's exact form (compacted, typed and loaded like any keyed table's)."""
    return schema.with_columns((HASH_COLUMN, COPY_COLUMN, *schema.columns), primary_key=(ROW_HASH, ROW_COPY))


@dataclass
class CopyCounts:
    """The copies of each image per Doris table, for one batch: Doris's, then moved by the batch's changes.

    Per hash an ``int`` (the copies are ``0 .. n-1``) or the sorted list of the copies Doris holds
    when they are not contiguous."""

    catalog: DorisCatalog
    _copies: dict[TableId, dict[str, int | list[int]]] = field(default_factory=dict)
    queries: int = 0

    def prefetch(self, target: TableId, hashes: Iterable[str]) -> None:
        known = self._copies.setdefault(target, {})
        todo = sorted({h for h in hashes if h not in known})
        ragged: list[str] = []
        for i in range(0, len(todo), QUERY_HASHES):
            part = todo[i:i + QUERY_HASHES]
            result = self.catalog.execute(
                target.database,
                f"SELECT {quote_ident(ROW_HASH)}, COUNT(*), MAX({quote_ident(ROW_COPY)}) FROM "
                f"{qualified(target.database, target.table)} WHERE {quote_ident(ROW_HASH)} IN "
                f"({', '.join(quote_string(h) for h in part)}) GROUP BY {quote_ident(ROW_HASH)}",
                limit=len(part))
            self.queries += 1
            for h in part:
                known[h] = 0
            for h, count, top in result.rows:
                known[str(h)] = int(count)
                if int(top) != int(count) - 1:
                    ragged.append(str(h))
        for i in range(0, len(ragged), 10):  # not 0..n-1: each of those images' copies, one by one
            part = ragged[i:i + 10]
            result = self.catalog.execute(
                target.database,
                f"SELECT {quote_ident(ROW_HASH)}, {quote_ident(ROW_COPY)} FROM {qualified(target.database, target.table)}"
                f" WHERE {quote_ident(ROW_HASH)} IN ({', '.join(quote_string(h) for h in part)})", limit=10000)
            self.queries += 1
            lists: dict[str, list[int]] = {h: [] for h in part}
            for h, copy in result.rows:
                lists[str(h)].append(int(copy))
            for h, copies in lists.items():
                known[h] = sorted(copies)

    def insert(self, target: TableId, h: str) -> int:
        known = self._copies[target]
        state = known[h]
        if isinstance(state, int):
            known[h] = state + 1
            return state
        n = state[-1] + 1 if state else 0
        state.append(n)
        return n

    def delete(self, target: TableId, h: str) -> int | None:
        known = self._copies[target]
        state = known[h]
        if isinstance(state, int):
            if state == 0:
                return None
            known[h] = state - 1
            return state - 1
        return state.pop() if state else None


def identity_rows(events: Sequence[DataChangeEvent], schema: TableSchema, target: TableId, counts: CopyCounts, *,
                  tinyint1_as_boolean: bool = True, salted: bool = False) -> list[ChangeRow]:
    """The rows one batch's changes of a keyless table make in ``target``, keyed by (hash, copy),
    in binlog order, before compaction (:func:`cdc_core.pipeline.changes.compact`)."""
    arrow_schema = pa.schema([pa.field(c.name, doris_arrow_type(c, tinyint1_as_boolean=tinyint1_as_boolean))
                              for c in schema.columns])
    befores = [e.before if e.op in (Op.UPDATE, Op.DELETE) else None for e in events]
    afters = [e.after if e.op in (Op.UPDATE, Op.INSERT) else None for e in events]
    salt = salt_of(schema.table_id) if salted else b""
    before_hashes = image_hashes(befores, arrow_schema, salt)
    after_hashes = image_hashes(afters, arrow_schema, salt)
    counts.prefetch(target, [h for h in (*before_hashes, *after_hashes) if h is not None])
    names = schema.column_names
    out: list[ChangeRow] = []
    missing = 0
    for order, (event, bh, ah) in enumerate(zip(events, before_hashes, after_hashes, strict=True)):
        seq = event.offset.sequence
        if bh is not None:
            copy = counts.delete(target, bh)
            if copy is None:
                missing += 1
            else:
                image = {n: event.before.get(n) for n in names}  # type: ignore[union-attr]
                out.append(ChangeRow((bh, copy), {ROW_HASH: bh, ROW_COPY: copy, **image}, True, seq, order))
        if ah is not None:
            copy = counts.insert(target, ah)
            image = {n: event.after.get(n) for n in names}  # type: ignore[union-attr]
            out.append(ChangeRow((ah, copy), {ROW_HASH: ah, ROW_COPY: copy, **image}, False, seq, order))
    if missing:
        logger.warning("%s: %d change(s) of %s remove a row Doris does not hold (Doris and MySQL differed before "
                       "them); `tidemark verify` shows the difference, `tidemark resnapshot --table %s` mends it",
                       target, missing, schema.table_id, schema.table_id)
    return out

