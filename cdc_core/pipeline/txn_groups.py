"""Doris's ``max_running_txn_num_per_db``: split a run's loads into groups that fit it.

Doris refuses a load once a database holds ``max_running_txn_num_per_db`` running transactions
(begun or precommitted, not yet committed or aborted; 100 by default), and a snapshot run (one
load per chunk and target) or a binlog batch (one per table and target) keeps every load
precommitted until it commits. So a run whose loads would pass
``tidemark.doris.max-running-txns-per-db`` in some database is cut into groups, in order, each
within the bound in every database; the caller precommits a group, commits it, then starts the
next (``snapshot.run_chunks_bounded``, ``binlog_batch.run_batch``). The last group is left
precommitted for the run's commit, as a run within the bound is whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def check_bound(limit: int) -> int:
    """``limit`` when it is a usable bound (≥ 1), else ValueError."""
    if limit < 1:
        raise ValueError(f"the running-transaction bound must be ≥ 1, got {limit}")
    return limit


def loads_of(item: object, databases: Iterable[str], limit: int) -> Counter[str]:
    """The loads per database that ``item`` begins (``databases``: one per target table); an item
    that alone needs more than ``limit`` in one database cannot be bounded and is refused with the fix."""
    needs = Counter(databases)
    if any(n > limit for n in needs.values()):
        raise ValueError(f"{item} loads {max(needs.values())} Doris tables of one database at once, more than "
                         f"tidemark.doris.max-running-txns-per-db ({limit}); raise it (within Doris's "
                         "max_running_txn_num_per_db) or route the table to fewer targets")
    return needs


def txn_groups(items: Sequence[T], databases: Callable[[T], Iterable[str]], limit: int) -> list[list[T]]:
    """``items`` in order, cut into groups whose loads stay within ``limit`` per database.

    ``databases(item)``: the Doris database of each load the item begins (one per target table).
    One group when everything fits. An item that alone needs more than ``limit`` loads in one
    database is refused (:func:`loads_of`)."""
    check_bound(limit)
    groups: list[list[T]] = []
    current: list[T] = []
    running: Counter[str] = Counter()
    for item in items:
        needs = loads_of(item, databases(item), limit)
        if current and any(running[db] + n > limit for db, n in needs.items()):
            groups.append(current)
            current, running = [], Counter()
        current.append(item)
        running.update(needs)
    if current:
        groups.append(current)
    return groups


def peak_per_database(items: Iterable[T], databases: Callable[[T], Iterable[str]]) -> int:
    """The most loads these items begin in one database (what precommitting them all would hold)."""
    counts = Counter(db for item in items for db in databases(item))
    return max(counts.values(), default=0)
