"""Doris stand-in: a local one-process server speaking Apache Doris' HTTP protocol.

Run ``python -m devstack.doris --data-dir DIR [--host 127.0.0.1] [--fe-port 8030] [--be-port 8040]
[--user root] [--txn-timeout-s 3600] [--max-running-txn-num-per-db 100] [--tls-cert PEM --tls-key PEM]``
(``$DORIS_STANDIN_MAX_RUNNING_TXN_NUM_PER_DB`` when the flag is absent; the password from
``$DORIS_STANDIN_PASSWORD``, default empty; with a certificate both ports speak HTTPS); ready when
``GET /api/health`` on the FE port answers ``{"msg":"success","code":0,"data":{"online_backend_num":1,"total_backend_num":1},"count":0}``.

What it serves (shapes and messages as Doris' own; docs/doris.md describes the behaviour the sink relies on):

* FE port: ``PUT /api/{db}/{t}/_stream_load`` and ``/_stream_load_2pc`` -> 307 to the BE
  (``Expect: 100-continue`` required for loads), ``GET /api/health``, ``GET /api/backends``,
  ``GET /api/{db}/get_load_state?label=``, ``GET /api/{db}/{t}/_schema``,
  ``GET /api/enable_light_schema_change/{db}/{t}`` (JSON body), ``POST /api/query/default_cluster/{db}``.
* BE port: ``PUT /api/{db}/{t}/_stream_load`` (csv / json / arrow / parquet / orc, ``compress_type``),
  ``PUT /api/{db}[/{t}]/_stream_load_2pc``, ``GET /api/_load_error_log?file=``, ``GET /``.
* Either port: the fault-injection admin API ``/_standin/faults`` — exact JSON in
  :mod:`devstack.doris.faults`; running/peak transactions per database ``/_standin/txns`` and FE / BE
  restarts in place ``/_standin/restart`` — :mod:`devstack.doris.admin`, :mod:`devstack.doris.restarts`.

Known deviations from a real Doris (2.1/3.x) — everything else aims to be byte-for-byte in shape:

* One FE and one BE; ``replication_num`` > 1 is rejected as on a one-BE cluster, but a CREATE TABLE
  *without* ``replication_num`` is accepted (a real Doris defaults to 3 replicas and would reject it).
* Only UNIQUE KEY (merge-on-write semantics) and DUPLICATE KEY tables (keyless ones included, with
  Doris's key, distribution and property checks: ``ddl.py``); no AGGREGATE model, a partition
  clause is checked and kept but the rows live in one implicit partition, no rollups/MVs, no complex types (ARRAY/MAP/STRUCT),
  no partial-column update, no group commit, no ``jsonpaths``/``json_root`` (these fail loudly).
* JSON keys are matched to columns case-sensitively; DATETIMEV2(p) values are truncated (not rounded)
  to p digits; JSONB is stored as validated text.
* Messages carry Doris 2.x/3.x prefixes (``[LABEL_ALREADY_EXISTS]TStatus: errCode = 2, detailMessage =``);
  error-log lines and some DDL error texts are close paraphrases of Doris', not verbatim.
* Transaction ids are small sequential numbers starting at 1001; COMMITTED is only observable with the
  ``publish_timeout`` fault (commit publishes synchronously otherwise).
* PREPARE transactions left by a killed process are aborted at start-up (reason ``coordinate BE is
  down``); a load's ``timeout`` header is not enforced.
* The query API always answers the non-streaming JSON (as with ``X-Doris-Stream: false``); DML
  (INSERT/UPDATE/DELETE) there is rejected with ``Unsupported statement type``, as in FE
  ``StatementSubmitter``. SELECT runs on DuckDB after sqlglot translation, so exotic Doris functions may
  be missing. Database and table names are case-sensitive in the catalog but must not differ only by
  case (DuckDB identifiers are case-insensitive).
* The 307 ``Location`` carries ``user%40default_cluster:password@`` userinfo; like Doris the BE still
  needs the Authorization header (clients must keep it across the redirect, e.g. ``curl
  --location-trusted`` or ``requests`` with ``should_strip_auth`` disabled).
"""

from .app import StandIn, main

__all__ = ["StandIn", "main"]
