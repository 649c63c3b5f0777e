"""Stream Load execution: headers -> transaction -> parse -> convert/filter in SQL -> stage -> commit.

The request and the reply (in the shape of BE ``StreamLoadContext::to_json``) are
:mod:`devstack.doris.load_request`.

Conversion and row filtering run as one DuckDB query over the Arrow source: values that fail
conversion become NULL (non-strict) or filter the row (strict), NOT NULL violations and over-long
strings always filter it, exactly the cases Doris counts in ``NumberFilteredRows``. The rows kept
are staged as a file (:meth:`Storage.write_staging`) until the transaction is committed or aborted.
The query reads only the request's rows, so it runs outside the storage's write lock: concurrent
loads convert in parallel, as BEs do.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot

from . import loads
from .catalog import DELETE_SIGN, SEQUENCE_COL, Table
from .fast_stage import fast_staged_rows
from .load_request import LoadContext, LoadResult, header_flag, parse_columns
from .storage import Storage
from .transactions import (
    LABEL_RE,
    BackendRestarted,
    FrontendUnreachable,
    LabelAlreadyUsed,
    RunningTxnLimitExceeded,
    TxnError,
    TxnManager,
    fe_error,
)
from .types import STRING_LIMIT_BYTES, DorisType, quote_ident, quote_str

_ERR_PREFIX = "error_log_insert_stmt_"


def _translate(expr: str) -> str:
    try:
        return sqlglot.transpile(expr, read="doris", write="duckdb")[0]
    except sqlglot.errors.ParseError as e:
        raise loads.LoadError(f"[ANALYSIS_ERROR]errCode = 2, detailMessage = Syntax error in '{expr}': {e}") from e


class StreamLoader:
    """Runs stream loads against the shared storage and transaction manager."""

    def __init__(self, storage: Storage, txns: TxnManager, error_dir: Path, *, arrow: bool = True) -> None:
        self.st = storage
        self.txns = txns
        self.arrow = arrow  # False: a Doris before 2.1, which knows no arrow format (devstack/doris/version.py)
        # loads begun per database and body format (GET /_standin/txns: which format a client chose)
        self.formats: dict[str, dict[str, int]] = {}
        self._formats_lock = threading.Lock()
        # loads staged by Arrow's kernels (devstack/doris/fast_stage.py) and by the DuckDB query
        self.staged_by: dict[str, int] = {"arrow_kernels": 0, "query": 0}
        self.error_dir = error_dir
        error_dir.mkdir(parents=True, exist_ok=True)

    # ---- entry --------------------------------------------------------------------------------
    def run(self, ctx: LoadContext, publish_delay_ms: int = 0, hold_s: float = 0.0,
            be_epoch: int | None = None, after_begin: Callable[[], None] | None = None) -> LoadResult:
        """Execute one load; ``hold_s`` keeps it in PREPARE that long (a slow load, for fault tests);
        ``be_epoch`` is the BE's incarnation when the request arrived (see :meth:`TxnManager.begin`);
        ``after_begin`` runs once the transaction has begun (a BE restart under the load)."""
        h = ctx.headers
        two_pc = h.get("two_phase_commit", "") == "true"
        label = h.get("label", "").strip()
        group_commit = h.get("group_commit", "").strip().lower()
        res = LoadResult(label, two_pc)
        res.load_bytes = len(ctx.body)
        if group_commit and group_commit != "off_mode":
            if label:
                return res.fail("[INVALID_ARGUMENT]label and group_commit can't be set at the same time")
            return res.fail("[NOT_IMPLEMENTED_ERROR]group commit is not supported by the Doris stand-in")
        if not label:
            label = str(uuid.uuid4())
            res.label = label
        if not LABEL_RE.match(label):
            return res.fail(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = Label format error. regex: "
                            f"^[-_A-Za-z0-9:]{{1,128}}$, label: {label}")
        fmt = h.get("format", "csv").strip().lower() or "csv"
        if fmt not in loads.FORMATS or (fmt == "arrow" and not self.arrow):
            return res.fail(f"[INVALID_ARGUMENT]unknown data format, format={h.get('format')}")
        if not self.st.db_exists(ctx.db):
            return res.fail(f"[ANALYSIS_ERROR]TStatus: errCode = 7, detailMessage = unknown databases, dbName={ctx.db}")
        with self._formats_lock:
            per_db = self.formats.setdefault(ctx.db, {})
            per_db[fmt] = per_db.get(fmt, 0) + 1
        table = self.st.table(ctx.db, ctx.table)
        if table is None:
            return res.fail(f"[ANALYSIS_ERROR]TStatus: errCode = 7, detailMessage = unknown table, tableName={ctx.table}")
        merge_type = h.get("merge_type", "APPEND").strip().upper() or "APPEND"
        if merge_type not in ("APPEND", "DELETE", "MERGE"):
            return res.fail(f"[ANALYSIS_ERROR]Invalid merge type {h.get('merge_type')}")
        if h.get("delete") and merge_type != "MERGE":
            return res.fail("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = Not support DELETE ON clause when "
                            "merge type is not MERGE.")
        if merge_type == "MERGE" and not h.get("delete"):
            return res.fail("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = Excepted DELETE ON clause when "
                            "merge type is MERGE.")
        if merge_type != "APPEND" and not table.is_unique:
            return res.fail("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = load by MERGE or DELETE need to "
                            "upgrade table to support batch delete.")
        if h.get("jsonpaths") or h.get("json_root"):
            return res.fail("[NOT_IMPLEMENTED_ERROR]jsonpaths / json_root are not supported by the Doris stand-in")
        if header_flag(h, "partial_columns") or h.get("unique_key_update_mode", "UPSERT").upper() != "UPSERT":
            return res.fail("[NOT_IMPLEMENTED_ERROR]partial column update is not supported by the Doris stand-in")

        t0 = time.monotonic()
        try:
            txn = self.txns.begin(ctx.db, label, table.name, two_pc, be_epoch)
        except LabelAlreadyUsed as e:
            self.st.sync_journal()  # the reply names the holder, maybe a begin not yet synced (TxnManager.begin)
            res.status = "Label Already Exists"
            res.existing = e.txn.job_status()
            res.message = f"[LABEL_ALREADY_EXISTS]{fe_error(str(e))}"
            return res
        except RunningTxnLimitExceeded as e:
            # FE loadTxnBegin turns the BeginTransactionException (a UserException) into ANALYSIS_ERROR.
            return res.fail(f"[ANALYSIS_ERROR]{fe_error(str(e))}")
        except BackendRestarted:
            return res.fail("[INTERNAL_ERROR]the BE restarted while the load was in flight")
        except FrontendUnreachable as e:
            return res.fail(f"[THRIFT_RPC_ERROR]{e}")
        res.txn_id = txn.txn_id
        res.begin_ms = int((time.monotonic() - t0) * 1000)
        staged = False
        if after_begin is not None:
            after_begin()
        if hold_s > 0:
            time.sleep(hold_s)
        try:
            staged = self._load(ctx, table, txn.txn_id, res, merge_type)
            if res.status != "Success":
                self.st.discard_staging(txn.txn_id)
                self.txns.fail(txn, res.message)
                return res
            t1 = time.monotonic()
            if two_pc:
                self.txns.precommit(txn, staged)
            else:
                self.txns.commit_now(txn, staged, publish_delay_ms)
                if publish_delay_ms > 0:
                    res.status = "Publish Timeout"
                    res.message = "transaction commit successfully, BUT data will be visible later"
            res.commit_ms = int((time.monotonic() - t1) * 1000)
            return res
        except loads.LoadError as e:
            self.st.discard_staging(txn.txn_id)
            self.txns.fail(txn, str(e))
            return res.fail(str(e))
        except TxnError as e:  # aborted while the load ran
            self.st.discard_staging(txn.txn_id)
            return res.fail(f"[ANALYSIS_ERROR]{fe_error(str(e))}")
        except FrontendUnreachable as e:  # its precommit/commit RPC failed; the txn stays PREPARE
            self.st.discard_staging(txn.txn_id)
            return res.fail(f"[THRIFT_RPC_ERROR]{e}")
        except Exception as e:
            self.st.discard_staging(txn.txn_id)
            self.txns.fail(txn, f"[INTERNAL_ERROR]{e}")
            return res.fail(f"[INTERNAL_ERROR]{e}")

    # ---- the work -----------------------------------------------------------------------------
    def _source_names(self, table: Table, columns: list[tuple[str, str | None]] | None,
                      hidden: list[str], seq_src: str | None) -> list[str]:
        if columns:
            return [n for n, e in columns if e is None]
        names = table.column_names()
        if table.is_unique:
            names += [hc for hc in hidden if hc in (DELETE_SIGN, SEQUENCE_COL)]
        if seq_src and seq_src not in names:
            names.append(seq_src)
        return names

    def _load(self, ctx: LoadContext, table: Table, txn_id: int, res: LoadResult, merge_type: str) -> bool:
        h = ctx.headers
        fmt = h.get("format", "csv").strip().lower() or "csv"
        t_read = time.monotonic()
        body = loads.decompress(ctx.body, h.get("compress_type", ""))
        columns = parse_columns(h["columns"]) if h.get("columns", "").strip() else None
        hidden = [x.strip().upper() for x in h.get("hidden_columns", "").split(",") if x.strip()]
        seq_src = h.get("function_column.sequence_col", "").strip() or None
        names = self._source_names(table, columns, hidden, seq_src)
        hints: dict[str, pa.DataType] = {}
        for n in names:
            c = table.column(n)
            if c is not None:
                hints[n] = c.dtype.arrow_hint()
        if fmt == "json":
            parsed = loads.parse_json(body, names, hints, header_flag(h, "read_json_by_line"), header_flag(h, "strip_outer_array"))
        elif fmt.startswith("csv"):
            skip = int(h.get("skip_lines", "0") or 0)
            if fmt == "csv_with_names":
                skip = max(skip, 1)
            elif fmt == "csv_with_names_and_types":
                skip = max(skip, 2)
            parsed = loads.parse_csv(
                body, names, loads.unescape_separator(h.get("column_separator", "\t")),
                loads.unescape_separator(h.get("line_delimiter", "\n")), skip, h.get("enclose", ""),
                header_flag(h, "trim_double_quotes"),
            )
        elif fmt == "arrow":
            parsed = loads.parse_arrow(body)
            for field in parsed.table.schema:
                column = table.column(field.name)
                dtype = column.dtype if column is not None else (
                    DorisType.parse("TINYINT") if field.name.upper() == DELETE_SIGN else None)
                why = loads.arrow_type_error(field.name, dtype, field.type) if dtype is not None else None
                if why is not None:
                    raise loads.LoadError(f"[INTERNAL_ERROR]Failed to convert from arrow to block: {why}")
            parsed = loads.arrow_datetimes(parsed, {c.name.lower() for c in table.columns if c.dtype.name == "DATETIMEV2"})
        elif fmt == "parquet":
            parsed = loads.parse_parquet(body)
        else:
            parsed = loads.parse_orc(body)
        res.read_ms = int((time.monotonic() - t_read) * 1000)
        t_write = time.monotonic()
        res.total = parsed.total
        if parsed.total == 0:
            return False
        staged = self._stage(ctx, table, txn_id, parsed, columns, hidden, seq_src, merge_type, res)
        res.write_ms = int((time.monotonic() - t_write) * 1000)
        return staged

    def _stage(self, ctx: LoadContext, table: Table, txn_id: int, parsed: loads.Parsed,
               columns: list[tuple[str, str | None]] | None, hidden: list[str], seq_src: str | None,
               merge_type: str, res: LoadResult) -> bool:
        h = ctx.headers
        fast = fast_staged_rows(table, parsed, h, h.get("format", "csv").strip().lower() or "csv", columns, hidden,
                                merge_type)
        with self._formats_lock:
            self.staged_by["arrow_kernels" if fast is not None else "query"] += 1
        if fast is not None:  # every row converts and passes every check: none filtered, none unselected
            res.filtered = res.unselected = 0
            res.loaded = res.total
            two_pc = h.get("two_phase_commit", "") == "true"
            self.st.write_staging(txn_id, fast, table, ahead=two_pc, inline=two_pc)
            return True
        rows = self._query_rows(table, txn_id, parsed, columns, hidden, seq_src, merge_type, h)
        return self._filter_and_write(ctx, table, txn_id, parsed, rows, res)

    def _query_rows(self, table: Table, txn_id: int, parsed: loads.Parsed, columns: list[tuple[str, str | None]] | None,
                    hidden: list[str], seq_src: str | None, merge_type: str, h: dict[str, str]) -> pa.Table:
        """The load converted by one DuckDB query: ``__ord``, the table's columns, ``__sign`` and
        ``__seq`` (unique tables), ``__err`` (why a row is filtered) and ``__unsel`` (``where``)."""
        strict = header_flag(h, "strict_mode")
        src_names = [n for n in parsed.table.column_names if n != "__ord"]
        src_lookup = {n.lower(): n for n in src_names}
        # 1. mapped source values (name -> SQL over the raw source)
        mapped: dict[str, str] = {}
        src_types: dict[str, pa.DataType] = {}  # mapped name -> Arrow type when it is a plain source column
        schema = parsed.table.schema
        if columns:
            for name, expr in columns:
                if expr is None:
                    src = src_lookup.get(name.lower())
                    mapped[name.lower()] = f"src.{quote_ident(src)}" if src else "NULL"
                    if src:
                        src_types[name.lower()] = schema.field(src).type
            for name, expr in columns:
                if expr is not None:
                    mapped[name.lower()] = f"({_translate(expr)})"
        else:
            for n in src_names:
                mapped[n.lower()] = f"src.{quote_ident(n)}"
                src_types[n.lower()] = schema.field(n).type
        mapped_cols = ", ".join(f"{v} AS {quote_ident(k)}" for k, v in mapped.items())
        inner = f"SELECT src.__ord{', ' if mapped_cols else ''}{mapped_cols} FROM src_{txn_id} AS src"

        # 2. conversion + per-row error reason
        select: list[str] = ["m.__ord AS __ord"]
        values: dict[str, str] = {}  # column (lower) -> SQL of its stored value
        reasons: list[str] = []
        for c in table.columns:
            d = c.dtype
            key = c.name.lower()
            if key in mapped:
                raw = f"m.{quote_ident(key)}"
                conv = d.convert_sql(raw, src_types.get(key))
                if strict:
                    reasons.append(
                        f"WHEN {raw} IS NOT NULL AND ({conv}) IS NULL THEN 'column({c.name}) value is incorrect "
                        f"while strict mode is true, src value is ' || CAST({raw} AS VARCHAR)")
                if not c.nullable:
                    reasons.append(
                        f"WHEN ({conv}) IS NULL THEN 'column({c.name}) values is null while columns is not "
                        f"nullable. src value is ' || COALESCE(CAST({raw} AS VARCHAR), 'NULL')")
                if d.name == "STRING":  # Doris BE's string_type_length_soft_limit_bytes, at its default
                    reasons.append(
                        f"WHEN strlen(CAST({conv} AS VARCHAR)) > {STRING_LIMIT_BYTES} THEN 'column_name[{c.name}], "
                        f"the length of input is too long than schema. first 32 bytes of input str: [' || "
                        f"left(CAST({raw} AS VARCHAR), 32) || '] schema length: {STRING_LIMIT_BYTES}; actual length: ' "
                        f"|| strlen(CAST({conv} AS VARCHAR)) || '; '")
                if d.name in ("CHAR", "VARCHAR"):
                    reasons.append(
                        f"WHEN strlen(CAST({conv} AS VARCHAR)) > {d.length} THEN 'the length of input is too long "
                        f"than schema. column_name: {c.name}; input str: [' || CAST({raw} AS VARCHAR) || '] schema "
                        f"length: {d.length}; actual length: ' || strlen(CAST({conv} AS VARCHAR)) || '; '")
                values[key] = conv
                select.append(f"{conv} AS {quote_ident(c.name)}")
            else:
                if c.default is not None:
                    dflt = "CURRENT_TIMESTAMP::TIMESTAMP" if c.default.upper() == "CURRENT_TIMESTAMP" else \
                        d.convert_sql(quote_str(c.default))
                    values[key] = dflt
                    select.append(f"{dflt} AS {quote_ident(c.name)}")
                elif not c.nullable:
                    raise loads.LoadError(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = Column has no "
                                          f"default value. column: {c.name}")
                else:
                    values[key] = f"CAST(NULL AS {d.duck()})"
                    select.append(f"{values[key]} AS {quote_ident(c.name)}")
        if table.is_unique:
            if merge_type == "DELETE":
                sign = "CAST(1 AS TINYINT)"
            elif merge_type == "MERGE":
                sign = f"CAST(CASE WHEN ({_translate(h['delete'])}) THEN 1 ELSE 0 END AS TINYINT)"
            elif DELETE_SIGN.lower() in mapped and (DELETE_SIGN in hidden or columns):
                raw = f"m.{quote_ident(DELETE_SIGN.lower())}"
                # Doris reads the sign as a number: "1", 1, 1.0 and true all delete.
                text = f"lower(trim(CAST({raw} AS VARCHAR)))"
                sign = (f"CAST(CASE WHEN {text} IN ('1', 'true') OR TRY_CAST({text} AS DOUBLE) = 1 THEN 1 "
                        f"ELSE 0 END AS TINYINT)")
            else:
                sign = "CAST(0 AS TINYINT)"
            select.append(f"{sign} AS __sign")
            seq_type = table.sequence_type
            if seq_type:
                st = DorisType.parse(seq_type)
                if table.sequence_col:
                    seq_expr = values[table.sequence_col.lower()]
                elif seq_src and seq_src.lower() in mapped:
                    seq_expr = st.convert_sql(f"m.{quote_ident(seq_src.lower())}")
                elif SEQUENCE_COL.lower() in mapped:
                    seq_expr = st.convert_sql(f"m.{quote_ident(SEQUENCE_COL.lower())}")
                else:
                    raise loads.LoadError(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = Table {table.name} "
                                          "has sequence column, need to specify the sequence column")
                select.append(f"{seq_expr} AS __seq")
        err = f"CASE {' '.join(reasons)} END" if reasons else "CAST(NULL AS VARCHAR)"
        select.append(f"{err} AS __err")
        conv_sql = f"SELECT {', '.join(select)} FROM ({inner}) AS m"
        where = h.get("where", "").strip()
        unsel = f"NOT COALESCE(({_translate(where)}), FALSE)" if where else "FALSE"
        final = f"SELECT x.*, {unsel} AS __unsel FROM ({conv_sql}) AS x"
        view = f"src_{txn_id}"
        with self.st.cursor() as cur:
            cur.register(view, parsed.table)
            try:
                rows = cur.sql(final).to_arrow_table()
            except Exception as e:
                raise loads.LoadError(f"[INTERNAL_ERROR]{e}") from e
            finally:
                cur.unregister(view)
        return rows

    def _filter_and_write(self, ctx: LoadContext, table: Table, txn_id: int, parsed: loads.Parsed, rows: pa.Table,
                          res: LoadResult) -> bool:
        h = ctx.headers
        failed = pc.is_valid(rows.column("__err"))
        unselected_mask = pc.and_(pc.invert(failed), rows.column("__unsel"))
        filtered = pc.sum(failed).as_py() or 0
        unselected = pc.sum(unselected_mask).as_py() or 0
        errors: list[tuple[str, str]] = list(parsed.bad)
        if filtered:
            rejected = rows.filter(failed).sort_by("__ord").slice(0, 50)
            for ordinal, reason in zip(rejected.column("__ord").to_pylist(), rejected.column("__err").to_pylist(),
                                       strict=True):
                src_row = parsed.table.slice(ordinal, 1).drop(["__ord"]).to_pylist()[0]
                errors.append((reason, str(src_row)))
        if filtered or unselected:
            rows = rows.filter(pc.invert(pc.or_(failed, unselected_mask)))
        res.filtered = filtered + len(parsed.bad)
        res.unselected = unselected
        res.loaded = res.total - res.filtered - res.unselected
        if errors:
            res.error_url = self._write_error_log(ctx, errors)
        ratio = float(h.get("max_filter_ratio", "0") or 0)
        if res.filtered and res.filtered / max(res.total, 1) > ratio:
            res.status = "Fail"
            res.message = "[DATA_QUALITY_ERROR]too many filtered rows"
            return False
        two_pc = h.get("two_phase_commit", "") == "true"
        self.st.write_staging(txn_id, rows.drop_columns(["__err", "__unsel"]), table, ahead=two_pc, inline=two_pc)
        return True

    def _write_error_log(self, ctx: LoadContext, errors: list[tuple[str, str]]) -> str:
        name = f"{_ERR_PREFIX}{uuid.uuid4().hex}"
        lines = [f"Reason: {reason}. src line [{raw}]; " for reason, raw in errors[:1000]]
        (self.error_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return f"{ctx.be_scheme}://{ctx.be_host}:{ctx.be_port}/api/_load_error_log?file=__shard_0/{name}"

    def error_log(self, file_param: str) -> str | None:
        name = file_param.rsplit("/", 1)[-1]
        if not name.startswith(_ERR_PREFIX) or "/" in name or ".." in name:
            return None
        path = self.error_dir / name
        return path.read_text(encoding="utf-8") if path.exists() else None
