"""The Doris tables as Dagster assets, on the real stack: the definitions loaded before and after
the split plan, a snapshot and a binlog batch run in process (as ``tidemark run --once`` runs them),
each committed table materialized with its column schema and row count, and a downstream asset
defined here that Dagster's automation requests once the Doris table it depends on is loaded.
Also, without the stack: how they are keyed and grouped for the asset graph (issue 30, build 5)."""

import warnings

import dagster as dg
from rich.console import Console

from cdc_core.pipeline.targets import DorisTarget
from orchestration.cli.run_once import OnceRun
from orchestration.definitions import build_definitions
from orchestration.defs.doris_tables import doris_table_key, doris_table_specs
from orchestration.defs.pipelines import PipelineHandle
from tests.orchestration.fakes import write_pipeline
from tests.orchestration.test_e2e_dagster import _create_tables, write_e2e_pipeline

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)


def _doris_keys(defs: dg.Definitions) -> set[dg.AssetKey]:
    return {k for k in defs.resolve_all_asset_keys() if k.path[0] == "doris"}


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict:
    event = instance.get_latest_materialization_event(key)
    assert event is not None, f"{key.to_user_string()} was never materialized"
    return dict(event.asset_materialization.metadata)


def test_table_assets_are_named_db_table_and_grouped_by_database(tmp_path):
    """The graph writes the last key component on a node: ``shop.orders``, not ``orders``. Each table
    is in ``<pipeline>__<db>``, a group beside its pipeline's: two pipelines writing databases of one
    name get a group each, and a database name Dagster would refuse as a group segment is made one."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alpha = PipelineHandle.load(write_pipeline(tmp_path / "a", "alpha"))
    beta = PipelineHandle.load(write_pipeline(tmp_path / "b", "beta"))
    specs = [*doris_table_specs(alpha, [DorisTarget("shop.orders", ("shop.orders",), ()),
                                        DorisTarget("shop.items", ("shop.items",), ()),
                                        DorisTarget("web-logs.hits", ("web-logs.hits",), ())]),
             *doris_table_specs(beta, [DorisTarget("shop.refunds", ("shop.refunds",), ())])]
    defs = dg.Definitions(assets=specs)  # Dagster validates the group names here
    by_key = {s.key: s for s in defs.resolve_all_asset_specs() if s.key.path[0] == "doris"}
    assert set(by_key) == {dg.AssetKey(["doris", "shop.orders"]), dg.AssetKey(["doris", "shop.items"]),
                           dg.AssetKey(["doris", "web-logs.hits"]), dg.AssetKey(["doris", "shop.refunds"])}
    assert by_key[doris_table_key("shop.orders")].key.path[-1] == "shop.orders"  # what the node shows
    assert {k.to_user_string(): s.group_name for k, s in by_key.items()} == {
        "doris/shop.orders": "alpha__shop", "doris/shop.items": "alpha__shop",
        "doris/web-logs.hits": "alpha__web_logs", "doris/shop.refunds": "beta__shop"}
    # one edge per table, from the stream (which depends on the snapshot): 300 tables, 300 edges
    assert {d.asset_key for d in by_key[doris_table_key("shop.orders")].deps} == {alpha.binlog_key}
    assert alpha.group_name == "alpha" and beta.database_group_name("shop") == "beta__shop"
    assert by_key[doris_table_key("shop.orders")].metadata["dagster/table_name"] == "shop.orders"


def test_doris_tables_are_assets_the_commits_materialize(mysql_server, root_conn, fresh_db, doris_standin, tmp_path,
                                                         spark_session):
    _create_tables(root_conn, fresh_db)
    path = tmp_path / f"assets_{fresh_db}.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, f"assets_{fresh_db}",
                       tmp_path / "state")
    handle = PipelineHandle.load(path)
    items, logs = doris_table_key(f"{fresh_db}.items"), doris_table_key(f"{fresh_db}.logs")

    # The downstream asset a user would write: it reads what the Doris table's last commit reported.
    @dg.asset(key=["reports", fresh_db, "item_count"], deps=[items],
              automation_condition=dg.AutomationCondition.eager())
    def item_count(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        upstream = context.instance.get_latest_materialization_event(items).asset_materialization
        return dg.MaterializeResult(metadata={"upstream_rows": upstream.metadata["dagster/row_count"].value})

    def location() -> dg.Definitions:
        """What a (re)load of the code location builds, plus the user's asset."""
        return dg.Definitions.merge(build_definitions([handle]), dg.Definitions(assets=[item_count]))

    assert _doris_keys(build_definitions([handle])) == set(), "no Doris table is known before the split plan"
    with dg.instance_for_test() as instance:
        # 1. the split plan discovers the tables; the reloaded location has one asset per Doris table
        location().resolve_job_def(handle.splits_job_name).execute_in_process(instance=instance)
        defs = location()
        assert _doris_keys(build_definitions([handle])) == {items, logs}
        spec = next(s for s in defs.resolve_all_asset_specs() if s.key == items)
        assert {d.asset_key for d in spec.deps} == {handle.binlog_key}
        assert spec.group_name == f"{handle.slug}__{fresh_db}"
        assert items == dg.AssetKey(["doris", f"{fresh_db}.items"])
        schema = spec.metadata["dagster/column_schema"]
        assert [(c.name, c.type) for c in schema.columns] == [
            ("id", "BIGINT"), ("name", "VARCHAR(160)"), ("qty", "INT"), ("price", "DECIMALV3(10,2)"),
            ("updated", "DATETIMEV2(3)")]
        assert spec.freshness_policy is not None and spec.kinds == {"doris"}
        assert spec.metadata["dagster/table_name"] == f"{fresh_db}.items"
        assert not defs.resolve_assets_def(items).is_executable, "loaded by the pipeline's assets, not by Dagster"
        # the user's asset waits: its upstream Doris table was never loaded
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0

        # 2. the snapshot (and a first binlog batch): every table it committed rows into is materialized
        OnceRun(handle, instance, console=Console(stderr=True, quiet=True)).run()
        meta = _latest(instance, items)
        assert meta["dagster/row_count"].value == 2000
        assert [c.name for c in meta["dagster/column_schema"].schema.columns] == [
            "id", "name", "qty", "price", "updated"]
        assert _latest(instance, logs)["dagster/row_count"].value == 1200
        assert "snapshot chunks" in meta["committed_by"].value

        # 3. the user's asset is requested by the automation, and materializes on the new rows
        second = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        assert second.total_requested == 1
        assert dg.materialize([item_count], instance=instance).success
        assert _latest(instance, item_count.key)["upstream_rows"].value == 2000
        handled = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=second.cursor)
        assert handled.total_requested == 0, "nothing new upstream since it materialized"

        # 4. a binlog batch materializes the tables it changed, and only those
        logs_before = len(instance.fetch_materializations(logs, limit=100).records)
        with root_conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{fresh_db}`.items VALUES (5001, 'late', 1, 1.00, '2026-11-23 00:00:00.000')")
            cur.execute(f"DELETE FROM `{fresh_db}`.items WHERE id <= 10")
        OnceRun(handle, instance, console=Console(stderr=True, quiet=True)).run()
        meta = _latest(instance, items)
        assert meta["dagster/row_count"].value == 1991
        assert "binlog batch" in meta["committed_by"].value
        assert len(instance.fetch_materializations(logs, limit=100).records) == logs_before
        third = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=handled.cursor)
        assert third.total_requested == 1, "the user's asset follows the stream too"
