"""``txn_groups``: a run's loads cut into groups within the running-transaction bound per database."""

from __future__ import annotations

import pytest

from cdc_core.config.pipeline_options import PipelineOptions
from cdc_core.pipeline.txn_groups import peak_per_database, txn_groups


def one_db(item: str) -> list[str]:
    return ["d"]


def test_everything_within_the_bound_is_one_group():
    assert txn_groups(["a", "b", "c"], one_db, 3) == [["a", "b", "c"]]
    assert txn_groups([], one_db, 3) == []


def test_groups_keep_the_order_and_fill_up_to_the_bound():
    items = [f"t{i}" for i in range(150)]
    groups = txn_groups(items, one_db, 80)
    assert [len(g) for g in groups] == [80, 70]
    assert [x for g in groups for x in g] == items
    assert all(peak_per_database(g, one_db) <= 80 for g in groups)


def test_the_bound_is_per_database_and_counts_every_target():
    targets = {"a": ["d1", "d2"], "b": ["d1"], "c": ["d2", "d2"], "d": ["d1"], "e": ["d3"]}
    groups = txn_groups(list(targets), targets.__getitem__, 2)
    assert groups == [["a", "b"], ["c", "d", "e"]]
    assert all(peak_per_database(g, targets.__getitem__) <= 2 for g in groups)


def test_an_item_past_the_bound_alone_is_refused_with_the_option_to_change():
    with pytest.raises(ValueError, match="tidemark.doris.max-running-txns-per-db"):
        txn_groups(["a"], lambda _: ["d", "d", "d"], 2)
    with pytest.raises(ValueError, match="≥ 1"):
        txn_groups(["a"], one_db, 0)


def test_the_option_defaults_below_doris_default_limit():
    options = PipelineOptions(name="p")
    assert options.doris_max_running_txns_per_db == 80
    assert PipelineOptions.model_validate(
        {"name": "p", "tidemark.doris.max-running-txns-per-db": 5}).doris_max_running_txns_per_db == 5
    with pytest.raises(ValueError):
        PipelineOptions.model_validate({"name": "p", "tidemark.doris.max-running-txns-per-db": 0})
