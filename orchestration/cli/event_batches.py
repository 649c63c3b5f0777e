"""Dagster's batched asset events turned on for Tidemark's processes (no Dagster import: the CLI
sets it first thing). Why: ``orchestration/defs/event_storage.py``."""

from __future__ import annotations

import os

BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"
BATCH_SIZE = "1000"
"""Events Dagster buffers per batch before handing them over (a batch's end flushes it sooner)."""


def enable_event_batches(env: dict[str, str] | None = None) -> None:
    """In this process (or in ``env``, for the processes ``tidemark dev`` starts), unless the user
    set their own size."""
    target = os.environ if env is None else env
    target.setdefault(BATCH_SIZE_ENV, BATCH_SIZE)
