"""The demo: a sample shop database in the local MariaDB, and a MySQL-vs-Doris comparison.

``tidemark demo load`` (re)creates ``tidemark_demo`` with related tables that use most MySQL
types, including ``events`` without a primary key (the pipeline splits it on its chunk key
``event_id``); ``tidemark demo compare`` prints, per table, row counts and a numeric checksum
from both sides. The comparison queries Doris through its own HTTP query API, independently of
the pipeline's code, so it checks the pipeline rather than repeating it.

The CLI (``cli.py``) finds the local stack's endpoints and passes them in, so this module does
not import ``devstack``.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pymysql
import requests
from rich.console import Console
from rich.table import Table

from cdc_core.config import load_pipeline

DATABASE = "tidemark_demo"
DEFAULT_PIPELINE = Path("pipelines/demo.yaml")

SCHEMA = [
    """CREATE TABLE customers (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        name VARCHAR(64) NOT NULL,
        email VARCHAR(128) NOT NULL,
        country CHAR(2) NOT NULL,
        birthday DATE NULL,
        vip TINYINT(1) NOT NULL DEFAULT 0,
        balance DECIMAL(12,2) NOT NULL DEFAULT 0,
        score FLOAT NULL,
        lifetime_value DOUBLE NULL,
        signup_year YEAR NULL,
        created_at DATETIME(3) NOT NULL,
        updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        notes TEXT NULL,
        UNIQUE KEY uk_email (email)
    ) COMMENT 'shop customers'""",
    """CREATE TABLE products (
        sku VARCHAR(32) NOT NULL PRIMARY KEY,
        title VARCHAR(200) NOT NULL,
        price DECIMAL(10,2) NOT NULL,
        weight_g MEDIUMINT UNSIGNED NULL,
        stock SMALLINT NOT NULL DEFAULT 0,
        status ENUM('active','retired','draft') NOT NULL DEFAULT 'active',
        tags SET('new','sale','eco','gift') NULL,
        attrs JSON NULL,
        thumbnail VARBINARY(64) NULL,
        in_stock BIT(1) NOT NULL DEFAULT b'1',
        launched DATE NULL
    ) COMMENT 'the catalogue'""",
    """CREATE TABLE orders (
        id BIGINT NOT NULL PRIMARY KEY,
        customer_id INT UNSIGNED NOT NULL,
        ordered_at DATETIME NOT NULL,
        delivery_window TIME NULL,
        status ENUM('new','paid','shipped','cancelled') NOT NULL,
        total DECIMAL(14,2) NOT NULL,
        discount DECIMAL(5,4) NULL,
        items TINYINT UNSIGNED NOT NULL,
        big_counter BIGINT UNSIGNED NULL,
        KEY ix_customer (customer_id)
    )""",
    """CREATE TABLE order_items (
        order_id BIGINT NOT NULL,
        line_no TINYINT NOT NULL,
        sku VARCHAR(32) NOT NULL,
        qty SMALLINT UNSIGNED NOT NULL,
        unit_price DECIMAL(10,2) NOT NULL,
        PRIMARY KEY (order_id, line_no)
    )""",
    """CREATE TABLE events (
        event_id BIGINT NOT NULL,
        kind VARCHAR(32) NOT NULL,
        customer_id INT UNSIGNED NULL,
        payload JSON NULL,
        happened_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        source_ip VARBINARY(16) NULL,
        KEY ix_event (event_id)
    ) COMMENT 'no primary key: split on event_id'""",
]

# Per table: the column whose sum is compared (an integer or decimal column on both sides).
CHECKSUM_COLUMNS = {
    "customers": "balance",
    "products": "price",
    "orders": "total",
    "order_items": "qty",
    "events": "event_id",
}

WORDS = ["tide", "mark", "river", "delta", "harbor", "north", "amber", "cobalt", "maple", "quartz", "zephyr", "lumen"]
COUNTRIES = ["DE", "FR", "US", "JP", "BR", "IN", "NL", "SE", "ES", "IT"]


@dataclass(frozen=True)
class DemoSizes:
    customers: int = 1000
    products: int = 300
    orders: int = 3000
    events: int = 4000


def _rows(rng: random.Random, sizes: DemoSizes) -> dict[str, list[tuple]]:
    customers = []
    for i in range(1, sizes.customers + 1):
        name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
        customers.append((
            i, name, f"user{i}@example.com", rng.choice(COUNTRIES),
            None if i % 17 == 0 else f"19{rng.randint(50, 99)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            int(i % 9 == 0), Decimal(rng.randint(0, 10_000_00)) / 100, round(rng.random() * 100, 3),
            None if i % 11 == 0 else rng.random() * 1e6, 2000 + i % 26,
            f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 12:{i % 60:02d}:{i % 60:02d}.{i % 1000:03d}",
            "🌊 likes tides" if i % 50 == 0 else (None if i % 3 else f"note {i}"),
        ))
    products = []
    for i in range(1, sizes.products + 1):
        products.append((
            f"SKU-{i:05d}", f"{rng.choice(WORDS)} {rng.choice(WORDS)} №{i}", Decimal(rng.randint(100, 99_999)) / 100,
            None if i % 13 == 0 else rng.randint(10, 50_000), rng.randint(-5, 500),
            rng.choice(["active", "retired", "draft"]), ",".join(sorted(rng.sample(["new", "sale", "eco", "gift"], i % 3))),
            json.dumps({"color": rng.choice(WORDS), "size": rng.randint(1, 5), "fragile": i % 2 == 0}),
            bytes(rng.getrandbits(8) for _ in range(i % 16)) or None, i % 7 != 0,
            f"20{rng.randint(15, 25)}-{rng.randint(1, 12):02d}-01",
        ))
    orders, items = [], []
    for i in range(1, sizes.orders + 1):
        lines = rng.randint(1, 4)
        total = Decimal(0)
        for line in range(1, lines + 1):
            qty, price = rng.randint(1, 5), Decimal(rng.randint(100, 20_000)) / 100
            total += qty * price
            items.append((i, line, f"SKU-{rng.randint(1, sizes.products):05d}", qty, price))
        orders.append((
            i, rng.randint(1, sizes.customers), f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
            None if i % 5 else f"{rng.randint(8, 20):02d}:00:00", rng.choice(["new", "paid", "shipped", "cancelled"]),
            total, None if i % 4 else Decimal(rng.randint(0, 3000)) / 10000, lines,
            rng.randint(0, 2**64 - 1) if i % 10 == 0 else None,
        ))
    events = []
    for i in range(1, sizes.events + 1):
        events.append((
            i * 3, rng.choice(["view", "click", "cart", "checkout"]), rng.randint(1, sizes.customers),
            json.dumps({"page": f"/p/{rng.randint(1, 300)}", "ms": rng.randint(5, 900)}),
            f"2026-11-{rng.randint(1, 20):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00.{i % 1000:03d}",
            bytes([127, 0, 0, rng.randint(1, 254)]),
        ))
    return {"customers": customers, "products": products, "orders": orders, "order_items": items, "events": events}


INSERTS = {
    "customers": "INSERT INTO customers (id, name, email, country, birthday, vip, balance, score, lifetime_value, "
                 "signup_year, created_at, notes) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
    "products": "INSERT INTO products (sku, title, price, weight_g, stock, status, tags, attrs, thumbnail, in_stock, "
                "launched) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
    "orders": "INSERT INTO orders VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
    "order_items": "INSERT INTO order_items VALUES (%s,%s,%s,%s,%s)",
    "events": "INSERT INTO events (event_id, kind, customer_id, payload, happened_at, source_ip) "
              "VALUES (%s,%s,%s,%s,%s,%s)",
}


def demo_exists(conn: pymysql.connections.Connection) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = %s", (DATABASE,))
        return cur.fetchone()[0] >= len(SCHEMA)


def load_demo(conn: pymysql.connections.Connection, sizes: DemoSizes | None = None, seed: int = 7) -> dict[str, int]:
    """Drop and recreate ``tidemark_demo`` with fresh sample rows; returns rows per table."""
    rows = _rows(random.Random(seed), sizes or DemoSizes())
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        cur.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        cur.execute(f"USE {DATABASE}")
        for ddl in SCHEMA:
            cur.execute(ddl)
        for table, values in rows.items():
            for start in range(0, len(values), 500):
                cur.executemany(INSERTS[table], values[start:start + 500])
    conn.commit()
    return {t: len(v) for t, v in rows.items()}


def mysql_summary(conn: pymysql.connections.Connection) -> dict[str, tuple[int, str]]:
    out = {}
    with conn.cursor() as cur:
        for table, column in CHECKSUM_COLUMNS.items():
            cur.execute(f"SELECT COUNT(*), COALESCE(SUM({column}), 0) FROM {DATABASE}.{table}")
            count, total = cur.fetchone()
            out[table] = (int(count), _norm(total))
    return out


def doris_summary(fe_http: str, user: str = "root", password: str = "") -> dict[str, tuple[int, str] | str]:
    out: dict[str, tuple[int, str] | str] = {}
    for table, column in CHECKSUM_COLUMNS.items():
        response = requests.post(
            f"http://{fe_http}/api/query/default_cluster/{DATABASE}",
            json={"stmt": f"SELECT COUNT(*), COALESCE(SUM({column}), 0) FROM {DATABASE}.{table}"},
            auth=(user, password), timeout=30,
        )
        body = response.json()
        if body.get("code") != 0:
            out[table] = f"error: {body.get('msg')} {str(body.get('data'))[:120]}"
            continue
        count, total = body["data"]["data"][0]
        out[table] = (int(count), _norm(total))
    return out


def drop_doris_database(fe_http: str, user: str = "root", password: str = "") -> None:
    body = requests.post(f"http://{fe_http}/api/query/default_cluster/{DATABASE}", auth=(user, password), timeout=30,
                         json={"stmt": f"DROP DATABASE IF EXISTS {DATABASE}"}).json()
    if body.get("code") != 0:
        raise RuntimeError(f"could not drop {DATABASE} in Doris: {body.get('msg')}")


def reset_pipeline_state(pipeline_file: Path) -> Path:
    """Delete the demo pipeline's state (and its Dagster home under it): a fresh database needs a
    fresh pipeline (a new state store also draws a new label epoch, so its loads never meet the
    old pipeline's labels in Doris)."""
    state_dir = load_pipeline(pipeline_file).state_dir
    shutil.rmtree(state_dir, ignore_errors=True)
    return state_dir


def _norm(value: object) -> str:
    number = Decimal(str(value))
    return format(number.normalize(), "f") if number else "0"


def compare(conn: pymysql.connections.Connection, fe_http: str) -> bool:
    mysql, doris = mysql_summary(conn), doris_summary(fe_http)
    table = Table(title=f"{DATABASE}: MySQL vs Doris")
    for header in ("table", "MySQL rows", "Doris rows", "checksum column", "MySQL sum", "Doris sum", ""):
        table.add_column(header)
    all_ok = True
    for name, column in CHECKSUM_COLUMNS.items():
        m, d = mysql[name], doris[name]
        if isinstance(d, str):
            table.add_row(name, str(m[0]), d, column, m[1], "-", "[red]✗[/]")
            all_ok = False
            continue
        ok = m == d
        all_ok &= ok
        table.add_row(name, f"{m[0]:,}", f"{d[0]:,}", column, m[1], d[1], "[green]✓[/]" if ok else "[red]✗[/]")
    Console(width=max(100, Console().width)).print(table)
    return all_ok


def run_demo(action: str, mysql_root_socket: str, doris_fe_http: str | None, *, reset: bool = False,
             pipeline: Path = DEFAULT_PIPELINE) -> int:
    """``tidemark demo load|compare`` against the local stack's endpoints (the CLI finds them)."""
    conn = pymysql.connect(unix_socket=mysql_root_socket, user="root", charset="utf8mb4", autocommit=False)
    try:
        if action == "load":
            if demo_exists(conn) and not reset:
                print(f"{DATABASE} already exists; keeping it (and the pipeline's progress). --reset recreates it.")
                return 0
            if reset:
                if doris_fe_http is not None:
                    drop_doris_database(doris_fe_http)
                print(f"Reset: deleted the pipeline state in {reset_pipeline_state(pipeline)}")
            counts = load_demo(conn)
            print(f"Created {DATABASE}: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()) + " rows")
            return 0
        if doris_fe_http is None:
            print("The Doris stand-in is not part of this build; nothing to compare.", file=sys.stderr)
            return 1
        return 0 if compare(conn, doris_fe_http) else 1
    finally:
        conn.close()
