"""The query API's translations are cached by exact text (devstack/doris/sql_query.py), never stale."""

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
