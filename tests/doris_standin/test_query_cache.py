"""The query API's translations are cached by exact text and by shape (devstack/doris/sql_query.py), never stale."""

from __future__ import annotations

import pytest

from devstack.doris import sql_query
from devstack.doris.sql_lexer import SqlError


def test_a_cached_translation_still_asks_about_its_tables_and_the_cache_is_bounded() -> None:
    tables = {("d", "t")}
    asked: list[tuple[str, str]] = []

    def resolve(db: str, name: str) -> tuple[str, str]:
        asked.append((db, name))
        if (db, name) not in tables:
            raise SqlError(f"Table [{name}] does not exist in database [{db}].")
        return db, name

    sql = "SELECT count(*) FROM t WHERE id > 1"
    first = sql_query.translate_query(sql, "d", resolve)
    assert first[1] == [("d", "t")] and '"d"."t"' in first[0]
    assert sql_query.translate_query(sql, "d", resolve) == first
    assert asked == [("d", "t"), ("d", "t")]  # the hit asked again
    tables.clear()  # the table is dropped: the cached text must not answer
    with pytest.raises(SqlError, match="does not exist"):
        sql_query.translate_query(sql, "d", resolve)
    with pytest.raises(SqlError, match="No database selected"):
        sql_query.translate_query(sql, "", resolve)
    for i in range(sql_query.CACHE_SIZE + 10):
        sql_query.translate_query(f"SELECT {i}", "d", resolve)
    assert len(sql_query._cache) == sql_query.CACHE_SIZE


def _parity(first: int, columns: tuple[str, ...] = ("id", "name")) -> str:
    """A whole-table parity statement's shape (cdc_core/pipeline/parity/whole_tables.py), 5 tables."""
    hash_ = ", ".join(f"COALESCE(CAST(`{c}` AS STRING), 'n')" for c in columns)
    return " UNION ALL ".join(f"SELECT {n} AS n, COUNT(*) AS c, COALESCE(SUM(CAST(CRC32(CONCAT_WS('|', {hash_})) "
                              f"AS DECIMAL(38, 0))), 0) AS s FROM `t{first + n}`" for n in range(5))


def test_statements_of_one_shape_translate_as_each_would_alone() -> None:
    """Names and top-level integers differ; the translation by shape is the plain one, tables asked left to right."""
    asked: list[tuple[str, str]] = []

    def resolve(db: str, name: str) -> tuple[str, str]:
        asked.append((db, name))
        return db, name

    statements = [_parity(0), _parity(5), _parity(10, ("k", "v", "w")), "SELECT COUNT(*) FROM `t1` WHERE `id` > 5",
                  "SELECT COUNT(*) FROM `t2` WHERE `x` > 7", "SELECT `a`, count(`b`) FROM `t3` WHERE `a` > 'q`z' "
                  "GROUP BY `a` ORDER BY 1 LIMIT 10", "SELECT 7", "SELECT CAST(`a` AS DECIMAL(12, 3)) FROM `t4`"]
    for sql in statements:
        asked.clear()
        out, refs = sql_query.translate_query(sql, "d", resolve)
        plain = sql_query._translate(sql, "d", lambda db, n: (db, n))
        assert out == plain[0] and sorted(refs) == sorted(plain[1])
        assert refs == asked
    assert asked == [("d", "t4")]
    assert [r[1] for r in sql_query.translate_query(_parity(20), "d", resolve)[1]] == [f"t{20 + n}" for n in range(5)]


def test_a_shape_still_asks_about_its_tables_and_some_statements_are_translated_whole() -> None:
    def resolve(db: str, name: str) -> tuple[str, str]:
        if name == "gone":
            raise SqlError(f"Table [{name}] does not exist in database [{db}].")
        return db, name

    sql_query.translate_query("SELECT COUNT(*) FROM `here`", "d", resolve)
    with pytest.raises(SqlError, match=r"Table \[gone\]"):
        sql_query.translate_query("SELECT COUNT(*) FROM `gone`", "d", resolve)
    for sql in ["SELECT * FROM `t1` UNION SELECT * FROM `t2`", "WITH `q` AS (SELECT 1) SELECT * FROM `q`",
                "SELECT * FROM `t1` UNION ALL SELECT * FROM `t2` ORDER BY 1", "SELECT * FROM `a-b` -- note",
                "SELECT `TABLE_NAME` FROM `information_schema`.`TABLES`"]:
        if "information_schema" not in sql:
            assert sql_query._branches(sql) is None or sql_query._branches(sql)[0][1] == []
        out = sql_query.translate_query(sql, "d", resolve)[0]
        assert out == sql_query._translate(sql, "d", resolve)[0]


def test_the_start_up_warm_up_translates_without_caching_anything() -> None:
    """``warm_up`` (started by the query executor) sets up sqlglot's dialects on a thread of its own
    and leaves both caches as they were: no answer comes from it."""
    with sql_query._cache_lock:
        before = (list(sql_query._cache), list(sql_query._shapes))
    thread = sql_query.warm_up()
    thread.join(timeout=60)
    assert not thread.is_alive()
    with sql_query._cache_lock:
        assert (list(sql_query._cache), list(sql_query._shapes)) == before
