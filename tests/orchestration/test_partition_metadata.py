"""``add_partition_metadata`` (orchestration/defs/assets.py) puts each chunk's metadata on its own
partition's materialization, as Dagster's public ``add_asset_metadata(md, partition_key=key)``
does: checked here against a real run of a partition range, on both of its paths (Dagster's step
state, and the public call it falls back to when that state is missing)."""

from __future__ import annotations

from typing import Any

import pytest
from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from orchestration.defs.assets import add_partition_metadata

KEYS = ["c001", "c002", "c003"]


class _PublicOnly:
    """A context offering only the public API: no Dagster step state to add metadata to."""

    def __init__(self, context: AssetExecutionContext) -> None:
        self._context = context
        self.assets_def = context.assets_def

    def add_asset_metadata(self, metadata: dict[str, Any], partition_key: str) -> None:
        self._context.add_asset_metadata(metadata, partition_key=partition_key)


def _materialized(public_only: bool, metadata: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    @asset(partitions_def=StaticPartitionsDefinition(KEYS), backfill_policy=BackfillPolicy.single_run())
    def chunks(context) -> None:  # noqa: ANN001 - Dagster reads the annotation, a string here
        if not public_only:  # the fast path is the one taken on the pinned Dagster
            assert getattr(context._step_execution_context, "_metadata_accumulator", None) is not None
        target = _PublicOnly(context) if public_only else context
        add_partition_metadata(target, list(context.partition_keys), metadata)  # type: ignore[arg-type]

    with DagsterInstance.ephemeral() as instance:
        result = materialize([chunks], instance=instance,
                             tags={ASSET_PARTITION_RANGE_START_TAG: KEYS[0], ASSET_PARTITION_RANGE_END_TAG: KEYS[-1]})
        assert result.success
        return {m.partition: {k: v.value for k, v in m.metadata.items()}
                for m in result.asset_materializations_for_node("chunks")}


def test_each_partition_gets_its_own_metadata_on_both_paths():
    metadata = {key: {"rows": 1000 * n, "label": f"chunk {key}"} for n, key in enumerate(KEYS, 1)}
    fast, public = _materialized(False, metadata), _materialized(True, metadata)
    assert fast == public
    assert set(fast) == set(KEYS)
    for key in KEYS:
        assert fast[key]["rows"] == metadata[key]["rows"] and fast[key]["label"] == metadata[key]["label"]


def test_metadata_for_a_partition_outside_the_run_is_refused():
    with pytest.raises(Exception, match="c009"):
        _materialized(False, {"c009": {"rows": 1}})
