"""``tidemark sql PIPELINE.yaml "SELECT …"``: one statement on the pipeline's Doris, as a table.

The statement goes through the FE's query API (``POST /api/query/default_cluster/<db>``, the
same call the sink makes, ``cdc_core/doris/catalog.py``), so it works wherever the pipeline's
``sink.fenodes`` points: the demo's stand-in (which answers only HTTP, no MySQL protocol) and a
real Doris alike, with the sink's user and password and nothing else to configure.

The query API returns at most ``limit`` rows of a result (Doris: 1000 by default, 10000 at most,
more are cut silently — ``docs/doris.md``). The command asks for one row more than it shows, so
it can say when a result was cut rather than show a partial answer as if it were whole.

Exit codes (the CLI's table, ``docs/cli.md``): 0 the answer is printed; 1 Doris does not answer
or refused the login; 2 bad input: a missing or invalid pipeline file, or a statement Doris
refused (a syntax error, an unknown table or column).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.catalog import DorisCatalog
from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisAuthError, DorisError, QueryError
from cdc_core.doris.row_identity import is_identity_column
from cdc_core.pipeline.preflight import connection_gist

logger = logging.getLogger(__name__)

# The query API's own cap on the rows of one answer (Doris FE); asking for more is refused or cut.
QUERY_API_MAX_ROWS = 10_000
DEFAULT_ROWS = 1_000
# The database in the request path when the pipeline does not name one: it exists in every Doris.
FALLBACK_DATABASE = "information_schema"


class SqlError(RuntimeError):
    """The statement could not be answered; ``str()`` is one line for the user, ``code`` the exit status."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SqlAnswer:
    """A statement's answer: its columns, the rows shown, and whether Doris had more rows."""

    database: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    limit: int

    def to_dict(self) -> dict[str, Any]:
        return {"database": self.database, "columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "row_count": len(self.rows), "truncated": self.truncated, "limit": self.limit}

    @property
    def cut_note(self) -> str | None:
        """The line that says the result was cut (None: it is whole)."""
        if not self.truncated:
            return None
        more = ("raise --limit (at most 10000, the query API's cap) or narrow the query" if self.limit <
                QUERY_API_MAX_ROWS else "the query API returns at most 10000 rows: narrow the query, or aggregate")
        return f"the result has more than {self.limit:,} rows; the first {self.limit:,} are shown ({more})"


def default_database(definition: PipelineDefinition) -> str:
    """The Doris database the pipeline writes when it writes one (so ``SELECT … FROM customers``
    works), read from the state store alone; else ``information_schema`` (qualify the tables)."""
    from pathlib import Path

    from cdc_core.pipeline.context import PipelineContext
    from cdc_core.pipeline.targets import doris_targets

    if not Path(definition.state_dir).exists():  # never ran: nothing to read, and nothing is created
        return FALLBACK_DATABASE
    try:
        context = PipelineContext(definition)
        try:
            databases = {t.database for t in doris_targets(context)}
        finally:
            context.close()
    except Exception as exc:  # noqa: BLE001 - no state yet, or unreadable: the fallback still answers
        logger.debug("no default Doris database from the state store of %s: %r", definition.name, exc)
        return FALLBACK_DATABASE
    return databases.pop() if len(databases) == 1 else FALLBACK_DATABASE


def run_sql(definition: PipelineDefinition, statement: str, *, database: str | None = None,
            limit: int = DEFAULT_ROWS) -> SqlAnswer:
    """Run ``statement`` on the pipeline's Doris; raise :class:`SqlError` with one line and the exit code."""
    if not 1 <= limit <= QUERY_API_MAX_ROWS:
        raise SqlError(f"--limit must be between 1 and {QUERY_API_MAX_ROWS} (the query API's cap), got {limit}", 2)
    if not statement.strip():
        raise SqlError("the statement is empty", 2)
    sink = definition.sink
    database = database or default_database(definition)
    client = DorisHttpClient.from_options(sink, max_retries=1)
    try:
        # one row more than shown tells a whole result from a cut one (10000 is the cap: then only "maybe")
        result = DorisCatalog(client).execute(database, statement, limit=min(limit + 1, QUERY_API_MAX_ROWS))
    except QueryError as exc:
        reason = " ".join(exc.reason.split()) or "no reason given"
        raise SqlError(f"Doris refused the statement (database {database}): {reason}", 2) from exc
    except DorisAuthError as exc:
        raise SqlError(f"Doris (fenodes {sink.fenodes}) refused user '{sink.username}': check sink.username and "
                       f"sink.password in {definition.path}", 1) from exc
    except DorisError as exc:
        raise SqlError(f"the Doris FE at {sink.fenodes} does not answer: check sink.fenodes in {definition.path} "
                       f"(the FE's HTTP address, host:8030), and that the FE is up ({_last_line(exc)})", 1) from exc
    finally:
        client.close()
    rows = result.rows
    truncated = len(rows) > limit or (limit == QUERY_API_MAX_ROWS and len(rows) >= QUERY_API_MAX_ROWS)
    columns = result.columns
    # a keyless table's hidden row identity (cdc_core/doris/row_identity.py) is bookkeeping: shown
    # only when the statement names it
    hidden = [i for i, c in enumerate(columns) if is_identity_column(c) and c.lower() not in statement.lower()]
    if hidden:
        keep = [i for i in range(len(columns)) if i not in hidden]
        columns = tuple(columns[i] for i in keep)
        rows = tuple(tuple(r[i] for i in keep) for r in rows)
    return SqlAnswer(database, columns, tuple(rows[:limit]), truncated, limit)


def _last_line(exc: BaseException) -> str:
    """What the socket (or the FE) said, for the one line: "connection refused", "HTTP 503"."""
    return connection_gist(str(exc)) or type(exc).__name__


def answer_table(answer: SqlAnswer) -> Any:
    """The answer as a rich table (NULL for a null, every value as Doris sent it)."""
    from rich.table import Table

    table = Table()
    for column in answer.columns:
        table.add_column(column, overflow="fold")
    for row in answer.rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    return table
