"""What one orchestration step prepared, kept in the pipeline's state store.

Before a step prepares Doris transactions it writes down what it is about to prepare (chunk
keys) and afterwards what it prepared (the batch id). Its hooks read that back, so the success
hook commits and the failure hook aborts exactly that work, even when the step died before
producing output metadata. Steps are named by the orchestrator's run id and step key; nothing
here knows Dagster.
"""

from __future__ import annotations

import logging
from typing import Any

from cdc_core.state import StateStore
from cdc_core.state.keys import STEP_LEDGER, StateKey

logger = logging.getLogger(__name__)

class StepLedger:
    """What one step prepared, keyed by run id and step key."""

    def __init__(self, store: StateStore):
        self._store = store

    @staticmethod
    def _key(run_id: str, step_key: str) -> StateKey[dict[str, Any]]:
        return STEP_LEDGER.key(f"{run_id}/{step_key}")

    def record(self, run_id: str, step_key: str, **entry: Any) -> None:
        with self._store.transaction() as tx:
            key = self._key(run_id, step_key)
            current = key.get_or(tx, {}) or {}
            current.update(entry)
            key.put(tx, current)
        logger.debug("step %s of run %s recorded %s", step_key, run_id, entry)

    def read(self, run_id: str, step_key: str) -> dict[str, Any]:
        return self._key(run_id, step_key).get_or(self._store, {}) or {}

    def forget(self, run_id: str, step_key: str) -> None:
        with self._store.transaction() as tx:
            self._key(run_id, step_key).delete(tx)
