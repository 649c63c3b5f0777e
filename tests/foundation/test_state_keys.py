"""The state store's named keys (``cdc_core/state/keys.py``): each round-trips its typed value,
writes exactly the (namespace, key, JSON) an earlier Tidemark wrote, and is the only place that
spells a namespace."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_core.model.offsets import BinlogOffset
from cdc_core.state import StateStore, keys
from cdc_core.state.keys import StateKey, StateMap
from cdc_core.state.store import kv_table

ROOT = Path(__file__).resolve().parents[2]

OFFSET = BinlogOffset("binlog.000003", 4711)
GTID_OFFSET = BinlogOffset("binlog.000004", 12, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5")

# (key, a value of its type, the JSON the store must hold for it) — the on-disk layout of every
# state store written so far.
FIXED = [
    (keys.LABEL_EPOCH, "a1b2c3", "a1b2c3"),
    (keys.ASSIGNER_STATE, {"remaining": ["db.t"], "splitter": None}, {"remaining": ["db.t"], "splitter": None}),
    (keys.PLANNED_TABLES, ["db.a", "db.b"], ["db.a", "db.b"]),
    (keys.CHUNK_SIZE, 8096, 8096),
    (keys.CHUNK_SIZES, {"db.a": 100}, {"db.a": 100}),
    (keys.TABLE_ROWS, {"db.a": 12345}, {"db.a": 12345}),
    (keys.PLAN_NOTES, ["grown"], ["grown"]),
    (keys.COMMITTED_OFFSET, OFFSET, {"file": "binlog.000003", "position": 4711}),
    (keys.EPOCH_REFERENCE, BinlogOffset("replica-bin.000002", 99, "0-1-40", 1, "server_id=2"),
     {"file": "replica-bin.000002", "position": 99, "gtid_set": "0-1-40", "epoch": 1, "server": "server_id=2"}),
    (keys.PLAN_OFFSET, GTID_OFFSET, {"file": "binlog.000004", "position": 12,
                                     "gtid_set": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"}),
    (keys.STARTUP, {"mode": "initial", "snapshot": True}, {"mode": "initial", "snapshot": True}),
    (keys.STARTUP_SCHEMAS, True, True),
    (keys.PENDING_DDL, {"type": "ALTER"}, {"type": "ALTER"}),
    (keys.LAST_BATCH_READ, 1764147600.25, 1764147600.25),
    (keys.BINLOG_PAUSED, {"reason": "schema change"}, {"reason": "schema change"}),
    (keys.SCHEMA_CHANGE_REQUEST, {"status": "APPLYING"}, {"status": "APPLYING"}),
    (keys.SCHEMA_CHANGE_SCAN, {"start": {"file": "b.1", "position": 4}}, {"start": {"file": "b.1", "position": 4}}),
]
LAYOUT = {
    keys.LABEL_EPOCH: ("meta", "label_epoch"),
    keys.ASSIGNER_STATE: ("snapshot", "assigner"),
    keys.PLANNED_TABLES: ("snapshot", "tables"),
    keys.CHUNK_SIZE: ("snapshot", "chunk_size"),
    keys.CHUNK_SIZES: ("snapshot", "chunk_sizes"),
    keys.TABLE_ROWS: ("snapshot", "table_rows"),
    keys.PLAN_NOTES: ("snapshot", "plan_notes"),
    keys.COMMITTED_OFFSET: ("binlog", "committed_offset"),
    keys.EPOCH_REFERENCE: ("binlog", "epoch_reference"),
    keys.PLAN_OFFSET: ("binlog", "plan_offset"),
    keys.STARTUP: ("binlog", "startup"),
    keys.STARTUP_SCHEMAS: ("binlog", "startup_schemas"),
    keys.PENDING_DDL: ("binlog", "pending_ddl"),
    keys.LAST_BATCH_READ: ("binlog", "last_batch_read"),
    keys.BINLOG_PAUSED: ("flags", "binlog_paused"),
    keys.SCHEMA_CHANGE_REQUEST: ("schema_registry", "current"),
    keys.SCHEMA_CHANGE_SCAN: ("schema_registry", "scan"),
}
MAPS = [
    (keys.SCHEMA_CHANGES_DONE, keys.done_name(OFFSET), ("schema_registry", f"done:{OFFSET.sequence:020d}")),
    (keys.EVOLVED_SCHEMAS, "ods.orders", ("schema_registry.evolved", "ods.orders")),
    (keys.RELOAD_REQUESTS, "db.t", ("reload", "db.t")),
    (keys.STALE_IDENTITIES, "db.t", ("stale_identities", "db.t")),
    (keys.SPARK_RESULTS, "snapshot-abc", ("spark_results", "snapshot-abc")),
    (keys.STEP_LEDGER, "run/step", ("orchestration.steps", "run/step")),
    (keys.PARITY_MYSQL_SIDE, "db.t#00001", ("parity_mysql_side", "db.t#00001")),
    (keys.PARITY_DORIS_SIDE, "db.t#00001", ("parity_doris_side", "db.t#00001")),
    (keys.REPAIR_LOADS, "db.t", ("repair", "db.t")),
    (keys.LEASES, "snapshot:db.t", ("lease", "snapshot:db.t")),
]


@pytest.fixture
def store(tmp_path):
    s = StateStore.open(tmp_path / "state")
    yield s
    s.close()


def _raw(store: StateStore) -> dict[tuple[str, str], object]:
    with store.engine.connect() as conn:
        return {(ns, k): json.loads(v) for ns, k, v in conn.execute(sa.select(kv_table))}


def test_every_fixed_key_is_listed_here():
    declared = {v for v in vars(keys).values() if isinstance(v, StateKey)}
    assert declared == {k for k, _, _ in FIXED} == set(LAYOUT)
    assert {v for v in vars(keys).values() if isinstance(v, StateMap)} == {m for m, _, _ in MAPS}
    assert set(keys.NAMESPACES) == {ns for ns, _ in LAYOUT.values()} | {m.namespace for m, _, _ in MAPS}


@pytest.mark.parametrize(("key", "value", "stored"), FIXED, ids=lambda x: getattr(x, "name", None))
def test_a_fixed_key_round_trips_its_value_and_keeps_the_on_disk_layout(store, key, value, stored):
    assert key.get(store) is None
    assert key.get_or(store, value) == value
    key.put(store, value)
    assert key.get(store) == value and type(key.get(store)) is type(value)
    assert (key.namespace, key.name) == LAYOUT[key]
    assert _raw(store) == {LAYOUT[key]: stored}
    with store.transaction() as tx:
        assert key.get(tx) == value
        key.delete(tx)
    assert key.get(store) is None and _raw(store) == {}


def test_a_key_reads_what_an_earlier_tidemark_wrote(store):
    """A store written with bare strings (as before this module) reads through the keys."""
    store.put("binlog", "committed_offset", {"file": "binlog.000009", "position": 77})
    store.put("meta", "label_epoch", "0f0f0f")
    assert keys.COMMITTED_OFFSET.get(store) == BinlogOffset("binlog.000009", 77)
    assert keys.LABEL_EPOCH.get(store) == "0f0f0f"


@pytest.mark.parametrize(("state_map", "name", "layout"), MAPS, ids=lambda x: getattr(x, "namespace", None))
def test_a_map_key_round_trips_and_lists_only_its_own_keys(store, state_map, name, layout):
    value = [{"label": "x"}] if state_map is keys.SPARK_RESULTS else {"n": 1}
    state_map.key(name).put(store, value)
    keys.SCHEMA_CHANGE_REQUEST.put(store, {"status": "APPLYING"})  # shares a namespace with the done map
    assert state_map.key(name).get(store) == value
    assert _raw(store)[layout] == value
    with store.transaction() as tx:
        assert state_map.items(tx) == [(name, value)]
        state_map.key(name).delete(tx)
        assert state_map.items(tx) == []


def test_done_names_sort_by_offset():
    later = BinlogOffset("binlog.000010", 4)
    assert keys.done_name(OFFSET) < keys.done_name(later)


def _spellings(path: Path) -> list[str]:
    """Where a module spells a namespace: a store call with a namespace literal first, a constant
    naming one, or a namespace only the state store has."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    namespaces = set(keys.NAMESPACES)
    only_state = {ns for ns in namespaces if "." in ns or ns in {"spark_results", "parity_mysql_side", "parity_doris_side"}}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in {"get", "put", "delete", "items"} and node.args:
            first = node.args[0]
            key_like = node.func.attr == "items" or (len(node.args) >= 2 and isinstance(node.args[1], ast.Constant | ast.Name
                                                                                            | ast.Call | ast.JoinedStr))
            if isinstance(first, ast.Constant) and first.value in namespaces and key_like:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in namespaces:
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any("NS" in n or "NAMESPACE" in n for n in names):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and node.value in only_state:
            found.append(f"{where}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_but_the_key_module_spells_a_namespace():
    own = ROOT / "cdc_core" / "state" / "keys.py"
    files = [p for package in ("cdc_core", "jobs", "orchestration") for p in sorted((ROOT / package).rglob("*.py"))
             if p != own]
    assert len(files) > 50
    found = [hit for p in files for hit in _spellings(p)]
    assert found == [], "\n".join(found)


def test_the_detector_sees_a_bare_namespace(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('X_NS = "binlog"\n\n\ndef f(tx, d):\n    return tx.get("binlog", "committed_offset"), "spark_results", d.get("binlog", [])\n')
    assert len(_spellings(planted)) == 3
