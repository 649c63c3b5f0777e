"""The peers Tidemark is compared with, on the same MariaDB and tables in the same bench run.

* ``pipelinewise-tap-mysql`` (a Singer tap): ``FULL_TABLE`` over the snapshot table and
  ``LOG_BASED`` over the binlog range of ``bench/binlog_throughput.py``. It pins older libraries
  (mysql-replication 0.43, PyMySQL 1.1), so it gets its own venv under
  ``.tidemark/bench/peers/tap-mysql``, created on first use. Its target is a null one: the
  records it writes to stdout are counted, and the time is from exec to exit.
* The naive full reload a user might write instead of a CDC tool: ``bench/naive_reload.py``
  (pandas ``read_sql`` → CSV → one Doris stream load per table).

Each runs as a subprocess whose peak RSS is sampled like Tidemark's processes.

    .venv/bin/python bench/peers.py --port 3307 --fe 127.0.0.1:8030 --db shop --table t
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from snapshot_e2e import MemorySampler, run_sampled  # noqa: E402

log = logging.getLogger(__name__)

TAP_PACKAGE = "pipelinewise-tap-mysql==1.6.0"
PEERS_DIR = ROOT / ".tidemark" / "bench" / "peers"


def tap_venv(base: Path = PEERS_DIR) -> Path:
    """The tap's own venv (created and installed once); returns its ``tap-mysql`` executable."""
    venv = base / "tap-mysql"
    exe = venv / "bin" / "tap-mysql"
    if exe.exists():
        return exe
    log.info("creating %s and installing %s (once)", venv, TAP_PACKAGE)
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", TAP_PACKAGE],
                          capture_output=True, text=True)
    if done.returncode != 0 or not exe.exists():
        raise RuntimeError(f"pip install {TAP_PACKAGE} into {venv} failed ({done.returncode}); "
                           f"remove {venv} and retry:\n{done.stderr[-2000:]}")
    return exe


def _catalog(exe: Path, config: Path, db: str, table: str, method: str, work: Path) -> Path:
    """Discover, then select ``db.table`` alone with replication method ``method``."""
    found = subprocess.run([str(exe), "--config", str(config), "--discover"], capture_output=True, text=True,
                           check=False)
    if found.returncode != 0:
        raise RuntimeError(f"tap-mysql --discover failed ({found.returncode}):\n{found.stderr[-2000:]}")
    catalog = json.loads(found.stdout)
    wanted = f"{db}-{table}"
    streams = [s for s in catalog["streams"] if s["tap_stream_id"] == wanted]
    if not streams:
        raise RuntimeError(f"tap-mysql did not discover {wanted}: {[s['tap_stream_id'] for s in catalog['streams']]}")
    for entry in streams[0]["metadata"]:
        if entry["breadcrumb"] == []:
            entry["metadata"].update({"selected": True, "replication-method": method})
    path = work / f"catalog-{method}.json"
    path.write_text(json.dumps({"streams": streams}))
    return path


def _run_tap(cmd: list[str], servers: list[int], work: Path, name: str) -> dict:
    """Run the tap with its stdout as the null target: count RECORD messages; time exec → exit."""
    err = (work / f"{name}.stderr").open("wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=work)
    sampler = MemorySampler([proc.pid, *servers], kinds={"tap-mysql": "peer_tap_mysql"})
    sampler.start()
    records = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        if b'"type": "RECORD"' in line:
            records += 1
    proc.wait()
    wall = time.perf_counter() - t0
    memory = sampler.stop()
    err.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed ({proc.returncode}); see {work / (name + '.stderr')}:\n"
                           + (work / f"{name}.stderr").read_text()[-2000:])
    return {"records": records, "wall_s": round(wall, 2), "rows_per_s": round(records / wall) if wall else None,
            "peak_rss_mib": memory}


def _config(work: Path, port: int, db: str) -> Path:
    path = work / "tap-config.json"
    path.write_text(json.dumps({"host": "127.0.0.1", "port": port, "user": "cdc", "password": "cdc",
                                "filter_dbs": db, "server_id": 9950}))
    return path


def tap_full_table(port: int, db: str, table: str, servers: list[int]) -> dict:
    """``FULL_TABLE``: every row of ``db.table`` as Singer RECORD messages, to a null target."""
    exe = tap_venv()
    with tempfile.TemporaryDirectory(prefix="tap-full-") as tmp:
        work = Path(tmp)
        config = _config(work, port, db)
        catalog = _catalog(exe, config, db, table, "FULL_TABLE", work)
        return {"mode": "FULL_TABLE", "package": TAP_PACKAGE,
                **_run_tap([str(exe), "--config", str(config), "--catalog", str(catalog)], servers, work,
                           "tap-full-table")}


def tap_log_based(port: int, db: str, table: str, log_file: str, log_pos: int, servers: list[int]) -> dict:
    """``LOG_BASED`` from a bookmark at (``log_file``, ``log_pos``) to the server's current position
    (the tap stops there by itself): the row events of ``db.table`` as RECORD messages."""
    exe = tap_venv()
    with tempfile.TemporaryDirectory(prefix="tap-binlog-") as tmp:
        work = Path(tmp)
        config = _config(work, port, db)
        catalog = _catalog(exe, config, db, table, "LOG_BASED", work)
        state = work / "state.json"
        state.write_text(json.dumps({"bookmarks": {f"{db}-{table}": {"log_file": log_file, "log_pos": log_pos,
                                                                     "version": 1}}}))
        return {"mode": "LOG_BASED", "package": TAP_PACKAGE,
                **_run_tap([str(exe), "--config", str(config), "--catalog", str(catalog), "--state", str(state)],
                           servers, work, "tap-log-based")}


def naive_reload(port: int, fe: str, db: str, table: str, servers: list[int]) -> dict:
    """``bench/naive_reload.py`` as a subprocess; its JSON report plus its peak RSS."""
    cmd = [sys.executable, str(ROOT / "bench" / "naive_reload.py"), "--port", str(port), "--fe", fe,
           "--db", db, "--table", table]
    done, wall, memory, _cpu = run_sampled(cmd, servers, kinds={"naive_reload": "peer_naive_reload"})
    if done.returncode != 0:
        raise RuntimeError(f"the naive reload failed ({done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {**report, "process_wall_s": round(wall, 2), "peak_rss_mib": memory}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="MariaDB port (user cdc/cdc)")
    parser.add_argument("--fe", required=True, help="Doris FE host:port for the naive reload")
    parser.add_argument("--db", default="shop")
    parser.add_argument("--table", default="t")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    print(json.dumps({"tap_full_table": tap_full_table(args.port, args.db, args.table, []),
                      "naive_reload": naive_reload(args.port, args.fe, args.db, args.table, [])}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
