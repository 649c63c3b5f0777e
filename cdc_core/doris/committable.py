"""The value a precommitted stream load hands back: enough to commit or abort it later, anywhere."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Committable:
    """A PRECOMMITTED Doris transaction: invisible rows waiting for commit or abort.

    It is what the state store records as PREPARED (``to_dict``) before anything is committed,
    and what the commit and abort hooks take back (``from_dict``). ``txn_id`` may be ``None``
    when only the label is known; commit and abort then go by label.
    """

    database: str
    table: str
    label: str
    txn_id: int | None
    rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``{"db", "table", "label", "txn_id", "rows"}`` — the shape the state store records."""
        return {"db": self.database, "table": self.table, "label": self.label, "txn_id": self.txn_id,
                "rows": self.rows}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Committable:
        txn = data.get("txn_id")
        return cls(
            database=str(data["db"] if "db" in data else data["database"]),
            table=str(data["table"]),
            label=str(data["label"]),
            txn_id=int(txn) if txn is not None and int(txn) > 0 else None,
            rows=int(data.get("rows", 0)),
        )

    def describe(self) -> str:
        txn = f"txn {self.txn_id}" if self.txn_id is not None else "txn ?"
        return f"{txn} (label {self.label}, {self.database}.{self.table})"
