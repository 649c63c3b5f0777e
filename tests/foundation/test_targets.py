"""The Doris tables a pipeline writes, from its state store alone (what the code location reads
at load time): routes merge tables, columns get their Doris types with the key first, a transformed
table has no columns until Doris has it, a dropped table is gone, and nothing connects anywhere."""

from pathlib import Path

from cdc_core.config import load_pipeline
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.pipeline.service import PipelineService
from cdc_core.pipeline.targets import TargetColumn

PIPELINE = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: 1
  username: cdc
  password: x
  tables: shop.\\.*
sink:
  type: doris
  fenodes: 127.0.0.1:1
  username: root
  password: ""
route:
  - source-table: shop.orders_\\d+
    sink-table: ods.orders
transform:
  - source-table: shop.notes
    projection: id, UPPER(body) AS body
pipeline:
  name: targets
  tidemark.state.dir: {state}
"""


def _schema(table: str, *columns: Column) -> TableSchema:
    return TableSchema(TableId.parse(table), columns, primary_key=("id",))


ID = Column("id", "bigint(20)", "bigint", nullable=False)


def test_targets_come_from_the_schema_history(tmp_path: Path):
    path = tmp_path / "targets.yaml"
    path.write_text(PIPELINE.format(state=tmp_path / "state"))
    service = PipelineService(load_pipeline(path))
    try:
        assert service.doris_targets() == []
        at = BinlogOffset("binlog.000001", 4)
        later = BinlogOffset("binlog.000001", 900)
        history = [
            (_schema("shop.items", Column("name", "varchar(40)", "varchar", charset="utf8mb4"), ID), at),
            (_schema("shop.orders_1", ID), at),
            (_schema("shop.orders_2", ID), at),
            (_schema("shop.notes", ID, Column("body", "text", "text")), at),
            (_schema("shop.gone", ID), at),
        ]
        with service.store.transaction() as tx:
            for schema, offset in history:
                tx.put_schema(str(schema.table_id), offset.sequence, offset.to_dict(), schema.to_dict())
            tx.put_schema("shop.gone", later.sequence, later.to_dict(), None)  # dropped since
        targets = {t.table_id: t for t in service.doris_targets()}
        assert sorted(targets) == ["ods.orders", "shop.items", "shop.notes"]
        assert targets["shop.items"].columns == (
            TargetColumn("id", "BIGINT", key=True, nullable=False),
            TargetColumn("name", "VARCHAR(160)", key=False, nullable=True),
        )
        assert targets["ods.orders"].sources == ("shop.orders_1", "shop.orders_2")
        assert targets["shop.notes"].columns == (), "a transform's columns are known once Doris has the table"
    finally:
        service.close()
