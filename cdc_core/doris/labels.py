"""Deterministic stream-load labels.

A label is a function of (label prefix, Doris database, Doris table, batch id) and nothing
else, so a retried load of the same batch meets its own earlier attempt in Doris (``Label
Already Exists``) instead of loading the rows twice. Callers choose batch ids that say what the
rows are: ``chunk-<index>-g<generation>`` for a snapshot chunk, ``binlog-<start>-<end>`` for a
binlog batch. Doris accepts ``^[-_A-Za-z0-9:]{1,128}$``; anything outside the alphabet is
replaced, and when the readable form is too long its tail is shortened and a hash of the full
identity keeps it unique.
"""

from __future__ import annotations

import hashlib
import re

LABEL_RE = re.compile(r"^[-_A-Za-z0-9:]{1,128}$")
MAX_LABEL = 128
_BAD = re.compile(r"[^-_A-Za-z0-9:]")
_HASH_LEN = 16


def _clean(text: str) -> str:
    return _BAD.sub("_", text)


def make_label(prefix: str, database: str, table: str, batch_id: str) -> str:
    """``<prefix>__<db>__<table>__<batch>``, or a hashed form that fits 128 characters.

    The hash covers the raw parts, so two identities that clean to the same text (``a.b`` and
    ``a_b``) still get different labels when the label had to be hashed — and when it did not,
    the readable form is kept only if cleaning changed nothing.
    """
    if not batch_id:
        raise ValueError("a batch id is needed to make a stream-load label")
    raw = (prefix, database, table, batch_id)
    cleaned = [_clean(p) for p in raw]
    readable = "__".join(p for p in cleaned if p)
    if len(readable) <= MAX_LABEL and all(c == r for c, r in zip(cleaned, raw, strict=True)):
        return readable
    digest = hashlib.sha256("\x00".join(raw).encode()).hexdigest()[:_HASH_LEN]
    head = "__".join(p for p in cleaned if p)
    keep = MAX_LABEL - _HASH_LEN - 1
    label = f"{head[:keep]}-{digest}" if len(head) > keep else f"{head}-{digest}"
    return label


def label_prefix(configured: str, pipeline: str, epoch: str | None) -> str:
    """The prefix of every label a pipeline's sink makes: ``<base>_<epoch>``.

    ``base`` is ``sink.label-prefix`` as written (``configured``), else ``tidemark_<pipeline>``
    cut to 64 characters, so two pipelines never share labels. ``epoch`` is drawn once per state
    store and kept there (``cdc_core/state/keys.py:LABEL_EPOCH``), so a fresh state (a deleted
    state directory, a second copy of the pipeline) never meets the labels an old one committed;
    None for a sink without a state store (a tool, a test): the base alone.

    Invariant: a function of these three values only. The same state store gives the same prefix
    on every run, in the driver and in every Spark task, so a retried or recovered load meets its
    own earlier label (exactly-once). ``DorisSink.from_pipeline`` is its only caller; everything
    else takes the prefix from the sink.
    """
    base = configured or f"tidemark_{pipeline}"[:64]
    return base if epoch is None else f"{base}_{epoch}"


def validate_label(label: str) -> str:
    if not LABEL_RE.match(label):
        raise ValueError(f"Doris label {label!r} must match {LABEL_RE.pattern}")
    return label


def chunk_batch_id(chunk_index: int, generation: int = 0) -> str:
    """Batch id of a snapshot chunk; the generation moves only when a committed chunk is re-read."""
    return f"chunk-{chunk_index}-g{generation}"


def snapshot_batch_id(source_table: str, chunk_index: int, generation: int = 0) -> str:
    """Batch id of a snapshot chunk's load into any target: the source table and the chunk."""
    return f"{source_table}:{chunk_batch_id(chunk_index, generation)}"


def binlog_batch_id(start_sequence: int, end_sequence: int) -> str:
    """Batch id of a binlog batch ``[start, end)`` given as offset sequences."""
    return f"binlog-{start_sequence}-{end_sequence}"
