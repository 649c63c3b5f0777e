"""MySQL's side of chunk parity computed during the chunks' commits (``cdc_core/pipeline/parity/overlap.py``):
the same run's check uses it and agrees with reading MySQL again; another run, a moved binlog or a
changed checksum statement make the check read MySQL itself."""

from __future__ import annotations

import time
from dataclasses import replace

from cdc_core.pipeline.parity import overlap
from cdc_core.pipeline.parity.row_checksum import KeyRange, Segment
from cdc_core.state.keys import PARITY_MYSQL_SIDE
from tests.jobs.test_verify import write_pipeline


def snapshot_prepared(path: str):
    from cdc_core.config import load_pipeline
    from jobs.spark_executor import spark_service

    service = spark_service(load_pipeline(path))
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    return service, keys


def slow_commits(service, monkeypatch, seconds: float) -> None:
    """Each chunk's commit takes a while, as a Doris merging a big load does: the overlap has time to work."""
    sink = service.context.sink
    real = sink.commit_surviving

    def commit_surviving(transactions):
        time.sleep(seconds)
        return real(transactions)

    monkeypatch.setattr(sink, "commit_surviving", commit_surviving)


def stored_segments(service) -> dict:
    with service.store.transaction(readonly=True) as tx:
        return dict(PARITY_MYSQL_SIDE.items(tx))


def count_tables_asked(monkeypatch, module, function: str = "mysql_wholes") -> list[int]:
    """How many tables each whole-table statement of ``module`` (its ``function``: ``mysql_wholes``,
    or ``doris_wholes`` for Doris's side) asked for, appended as they are asked."""
    asked: list[int] = []
    real = getattr(module, function)

    def counted(conn, plans):
        asked.append(len(plans))
        return real(conn, plans)

    monkeypatch.setattr(module, function, counted)
    return asked


def during_commit(results) -> int:
    return sum(1 for r in results if r.detail.get("mysql_side_during_commit"))


def test_the_check_of_the_same_run_uses_what_the_commits_computed(mysql_server, doris_standin, root_conn, fresh_db,
                                                                   tmp_path, spark_session, monkeypatch):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.big (id BIGINT PRIMARY KEY, v VARCHAR(20), d DECIMAL(8,2), "
                    "t DATETIME(3))")
        cur.execute(f"INSERT INTO `{fresh_db}`.big SELECT seq, CONCAT('v', seq), IF(seq % 7 = 0, NULL, seq / 100), "
                    f"'2026-01-01' + INTERVAL seq SECOND FROM `{fresh_db}`.seq_1_to_3000")
        cur.execute(f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)")
    path = write_pipeline(mysql_server, doris_standin, tmp_path / "state", f"{fresh_db}.big")
    service, keys = snapshot_prepared(path)
    assert len(keys) >= 10
    slow_commits(service, monkeypatch, 0.3)
    assert service.commit_chunks(keys, parity_run_id="run-1") == []
    stored = stored_segments(service)
    assert len(stored) >= 3, "the commits took 3 s: MySQL's side of several chunks was computed meanwhile"

    # the same run's check: those chunks are not read from MySQL again, and every chunk agrees
    with service.session():
        first = service.chunks_parity(keys, "run-1")
    assert all(r.ok for r in first) and sum(r.mysql_rows for r in first) == 3000
    assert during_commit(first) == len(stored)
    # they are used once: the next check (any run) reads MySQL
    assert during_commit(service.chunks_parity(keys, "run-1")) == 0

    # planning MySQL's side failing never fails a commit (the check reads MySQL itself)
    from cdc_core.pipeline.parity import chunk_parity

    def unreachable(ctx, chunk_keys):
        raise ConnectionError("MySQL went away")

    monkeypatch.setattr(chunk_parity, "range_work", unreachable)
    assert service.commit_chunks(keys, parity_run_id="run-1") == []
    monkeypatch.undo()

    # another run's check, or a binlog that moved since, reads MySQL itself
    assert stored_segments(service) == {}
    work = parity_overlap_work(service, keys)
    with overlap.alongside(service.context, "run-2", work):
        time.sleep(3)
    assert len(stored_segments(service)) == len(keys)
    assert during_commit(service.chunks_parity(keys, "run-3")) == 0
    with overlap.alongside(service.context, "run-2", work):
        time.sleep(3)
    assert len(stored_segments(service)) == len(keys)
    with root_conn.cursor() as cur:  # any binlogged write, even to a table not captured
        cur.execute(f"INSERT INTO `{fresh_db}`.other VALUES (1)")
    assert during_commit(service.chunks_parity(keys, "run-2")) == 0
    service.close()


def parity_overlap_work(service, keys):
    from cdc_core.pipeline.parity.chunk_parity import range_work

    return range_work(service.context, keys)


def test_a_stored_segment_stands_only_for_its_run_position_and_statement():
    plan = type("Plan", (), {"mysql_row_hash": lambda self: "CRC32(`a`)"})()
    other = type("Plan", (), {"mysql_row_hash": lambda self: "CRC32(CONCAT_WS('|', `a`, `b`))"})()
    rng = KeyRange("id", 1, 100)
    fp = overlap.fingerprint(plan, rng)
    stored = overlap.Prefetched("r", {"file": "b.000001", "pos": 4}, fp, Segment(3, 12345))
    again = overlap.Prefetched.from_dict(stored.to_dict())
    assert again == stored
    assert again.valid("r", {"file": "b.000001", "pos": 4}, fp)
    assert not again.valid("s", {"file": "b.000001", "pos": 4}, fp)
    assert not again.valid("r", {"file": "b.000001", "pos": 5}, fp)
    assert not again.valid("r", {"file": "b.000001", "pos": 4}, overlap.fingerprint(other, rng))
    assert not again.valid("r", {"file": "b.000001", "pos": 4}, overlap.fingerprint(plan, replace(rng, end=99)))


def test_mysql_side_is_computed_during_the_reads_and_not_again_during_the_commits(
        mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session, monkeypatch):
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline import snapshot
    from jobs.spark_executor import spark_service

    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.big (id BIGINT PRIMARY KEY, v VARCHAR(20))")
        cur.execute(f"INSERT INTO `{fresh_db}`.big SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_3000")
    service = spark_service(load_pipeline(write_pipeline(mysql_server, doris_standin, tmp_path / "state",
                                                         f"{fresh_db}.big")))
    keys = list(service.plan_splits().chunk_keys)
    real = snapshot.run_chunks_bounded

    def slow_reads(*args, **kwargs):  # reads of a large table take a while: the overlap has time to work
        results = real(*args, **kwargs)
        time.sleep(3)
        return results

    monkeypatch.setattr(snapshot, "run_chunks_bounded", slow_reads)
    service.run_chunks(keys, parity_run_id="run-1")
    during_reads = stored_segments(service)
    assert during_reads, "the reads took 3 s: MySQL's side of some chunks was computed meanwhile"
    computed: list[str] = []
    real_segment = overlap.mysql_segment

    def counted(conn, plan, key_range):
        computed.append(str(key_range))
        return real_segment(conn, plan, key_range)

    monkeypatch.setattr(overlap, "mysql_segment", counted)
    assert service.commit_chunks(keys, parity_run_id="run-1") == []
    assert len(computed) <= len(keys) - len(during_reads)  # the commits compute only the others
    assert {k: v for k, v in stored_segments(service).items() if k in during_reads} == during_reads
    with service.session():
        results = service.chunks_parity(keys, "run-1")
    assert all(r.ok for r in results) and sum(r.mysql_rows for r in results) == 3000
    assert during_commit(results) >= len(during_reads)
    service.close()


def test_whole_tables_mysql_side_is_computed_during_the_reads_many_tables_a_statement(
        mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session, monkeypatch):
    """Small tables (one chunk each, compared whole, many a statement): MySQL's side is computed
    during the reads as the check computes it, and the same run's check asks MySQL nothing more."""
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline import snapshot
    from cdc_core.pipeline.parity import whole_tables
    from jobs.spark_executor import spark_service

    with root_conn.cursor() as cur:
        for n in range(4):
            cur.execute(f"CREATE TABLE `{fresh_db}`.s{n} (id BIGINT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO `{fresh_db}`.s{n} SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_{10 + n}")
    service = spark_service(load_pipeline(write_pipeline(mysql_server, doris_standin, tmp_path / "state",
                                                         f"{fresh_db}.s\\.*")))
    keys = list(service.plan_splits().chunk_keys)
    assert len(keys) == 4
    real = snapshot.run_chunks_bounded

    def slow_reads(*args, **kwargs):
        results = real(*args, **kwargs)
        time.sleep(3)
        return results

    statements = count_tables_asked(monkeypatch, overlap)
    monkeypatch.setattr(snapshot, "run_chunks_bounded", slow_reads)
    service.run_chunks(keys, parity_run_id="run-1")
    assert statements == [4], "one statement for the four tables, during the reads"
    assert sorted(stored_segments(service)) == sorted(keys)
    assert service.commit_chunks(keys, parity_run_id="run-1") == []
    assert statements == [4], "not again during the commits"

    asked = count_tables_asked(monkeypatch, whole_tables)
    with service.session():
        results = service.chunks_parity(keys, "run-1")
    assert all(r.ok for r in results) and sum(r.mysql_rows for r in results) == 46
    assert during_commit(results) == 4 and asked == []
    with service.session():  # used once: the next check reads MySQL itself, and agrees
        again = service.chunks_parity(keys, "run-1")
    assert all(r.ok for r in again) and during_commit(again) == 0 and asked == [4]

    # a binlogged write after they were computed: the check reads MySQL itself
    with overlap.alongside(service.context, "run-2", [], {k: k.rpartition("#")[0] for k in keys}):
        time.sleep(3)
    assert sorted(stored_segments(service)) == sorted(keys)
    with root_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{fresh_db}`.s0 VALUES (1000, 'late')")
    with service.session():
        late = service.chunks_parity(keys, "run-2")
    assert during_commit(late) == 0 and asked == [4, 4]
    assert [r.ok for r in late].count(False) == 1  # s0's new row is not in Doris
    service.close()


def test_a_whole_table_segment_names_its_table():
    def plan(table: str):
        schema = type("Schema", (), {"table_id": table})()
        return type("Plan", (), {"mysql_row_hash": lambda self: "CRC32(`a`)", "schema": schema})()

    assert overlap.fingerprint(plan("d.a"), None) != overlap.fingerprint(plan("d.b"), None)
    assert overlap.fingerprint(plan("d.a"), None) == overlap.fingerprint(plan("d.a"), None)
    assert overlap.fingerprint(plan("d.a"), None) != overlap.fingerprint(plan("d.a"), KeyRange("a"))


def test_doris_side_of_early_groups_is_computed_after_their_commit_and_used_by_the_same_runs_check(
        mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session, monkeypatch):
    """Small tables read in groups (``tidemark.doris.max-running-txns-per-db``): Doris's side of each
    group committed early is computed while the next groups are read; the same run's check asks
    Doris only for the last group's tables, still catches a difference, and a binlogged write or
    another run makes it ask Doris itself."""
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline.parity import doris_ahead, whole_tables
    from cdc_core.state.keys import PARITY_DORIS_SIDE
    from devstack.pipeline_file import write_pipeline as write_pipeline_file
    from jobs.spark_executor import spark_service

    with root_conn.cursor() as cur:
        for n in range(5):
            cur.execute(f"CREATE TABLE `{fresh_db}`.s{n} (id BIGINT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO `{fresh_db}`.s{n} SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_{10 + n}")
    state = tmp_path / "state"
    state.mkdir()
    path = write_pipeline_file(state / "pipeline.yaml", host="127.0.0.1", port=mysql_server.endpoint.port,
                               fe=doris_standin.fe_http, tables=f"{fresh_db}.s\\.*", name="test_doris_ahead",
                               state_dir=state, pipeline={"tidemark.doris.max-running-txns-per-db": 2})
    service = spark_service(load_pipeline(path))
    keys = list(service.plan_splits().chunk_keys)
    assert len(keys) == 5

    def doris_side() -> dict:
        with service.store.transaction(readonly=True) as tx:
            return dict(PARITY_DORIS_SIDE.items(tx))

    asked = count_tables_asked(monkeypatch, whole_tables, "doris_wholes")
    service.run_chunks(keys, parity_run_id="run-1")  # groups of 2: two committed early, the last prepared
    early = sorted(doris_side())
    assert len(early) == 4 and set(early) < set(keys)
    assert service.commit_chunks(keys, parity_run_id="run-1") == []
    asked.clear()
    with service.session():
        results = service.chunks_parity(keys, "run-1")
    assert all(r.ok for r in results) and sum(r.doris_rows for r in results) == 60
    assert sorted(r.table_id for r in results if r.detail["doris_side_after_group_commit"]) == \
        sorted(k.rpartition("#")[0] for k in early)
    assert asked == [1], "Doris was asked for the last group's table only"
    assert doris_side() == {}, "used once"

    # a difference is still caught, chunk by chunk: Doris's side as stored says a row is missing
    offset = service.context.server_offset().to_dict()
    plans = whole_tables.whole_plans(service.context, [k.rpartition("#")[0] for k in keys])
    with service.store.transaction() as tx:
        for key in keys:
            plan = plans[key.rpartition("#")[0]]
            segment = whole_tables.doris_wholes(service.sink.catalog, {"t": plan})["t"]
            wrong = Segment(segment.count - 1, segment.total) if key == keys[0] else segment
            PARITY_DORIS_SIDE.key(key).put(tx, doris_ahead.DorisAhead(
                "run-2", offset, doris_ahead.committed_offset(service.context), doris_ahead.fingerprint(plan),
                wrong).to_dict())
    asked.clear()
    with service.session():
        checked = service.chunks_parity(keys, "run-2")
    assert [r.ok for r in checked] == [False, True, True, True, True] and asked == []

    # another run, or a binlogged write since: the check asks Doris itself

    def store_wrong_sides_of_run_3() -> None:
        with service.store.transaction() as tx:
            for key in keys:
                plan = plans[key.rpartition("#")[0]]
                PARITY_DORIS_SIDE.key(key).put(tx, doris_ahead.DorisAhead(
                    "run-3", offset, doris_ahead.committed_offset(service.context), doris_ahead.fingerprint(plan),
                    Segment(0, 0)).to_dict())

    store_wrong_sides_of_run_3()
    with service.session():
        assert all(r.ok for r in service.chunks_parity(keys, "run-4"))
    store_wrong_sides_of_run_3()
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO `{fresh_db}`.other VALUES (1)")
    asked.clear()
    with service.session():
        again = service.chunks_parity(keys, "run-3")
    assert all(r.ok for r in again) and not any(r.detail["doris_side_after_group_commit"] for r in again)
    assert asked == [5]
    service.close()
