"""The corpus harness reads a stopped stream's message as a user would: the tables it names and the
`tidemark resnapshot --table` way out (tests/corpus/harness.py)."""

from __future__ import annotations

from tests.corpus.harness import _is_refusal, _named_in


def test_the_tables_a_stop_names_are_found_whether_mysql_still_has_them_or_not():
    text = ("the primary key of mt_type_uint_b.t2 changed to (a), but Doris table mt_type_uint_b.t2 is a "
            "DUPLICATE table ... `tidemark resnapshot PIPELINE.yaml --table mt_type_uint_b.t2` ... "
            "CREATE TABLE `mt_type_uint_b`.`t 3` ... mt_type_uint.t9, xmt_type_uint_b.t7, mt_type_uint_b.t2.a")
    assert _named_in(text, ["mt_type_uint", "mt_type_uint_b"]) == [
        "mt_type_uint.t9", "mt_type_uint_b.t2", "mt_type_uint_b.t 3"]


def test_the_table_a_way_out_names_is_taken_whole():
    text = ("Doris cannot take these names: mt_create_b.a/a -> Doris mt_create_b.a/a: table name 'a/a' ... "
            "(or leave mt_create_b.a/a out of the pipeline: source tables.exclude)")
    assert _named_in(text, ["mt_create", "mt_create_b"]) == ["mt_create_b.a/a"]
    assert _named_in("... (source tables.exclude: d.t-1), then run again", ["d"]) == ["d.t-1"]


def test_a_way_out_by_exclusion_is_a_refusal_and_a_doris_error_is_not():
    assert _is_refusal("d.t cannot be read again: ... leave it out of the pipeline (source tables.exclude: d.t)")
    assert not _is_refusal("Doris refused: ALTER TABLE `d`.`t` ... Failed to execute sql")
    assert _is_refusal("Doris refused create.table → d.t-1 under 'evolve': Doris cannot take these names: ...")
