"""The extractor keeps what MariaDB runs, in order, and turns a DROP TABLE into a RENAME."""

from __future__ import annotations

import pymysql

from tests.corpus.corpus import Group, GroupKind, load_group
from tests.corpus.extract import extract, render

TEST = b"""# a mysqltest file
--disable_warnings
drop table if exists t1;
--enable_warnings
let $n = 3;
create table t1 (a int primary key, b varchar(10));
insert into t1 values (1, 'x'), (2, 'y');
--error ER_DUP_ENTRY
insert into t1 values (1, 'dup');
select * from t1;
insert into t1 values ($n, 'z');
echo done;
drop table t1;
create table t1 (c char(3)) engine=myisam default charset=koi8r;
set names koi8r;
insert into t1 values ('\xd6\xc9');
create temporary table tt (a int);
"""


def test_extract_keeps_what_runs_and_renames_dropped_tables(mysql_server, tmp_path):
    conn = pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", autocommit=True,
                           charset="latin1")
    try:
        ex = extract(TEST, conn, "x_extract_test")
        assert ex.kept == [b"SET NAMES latin1", b"SET SESSION sql_mode = ''",
                           b"create table t1 (a int primary key, b varchar(10))",
                           b"insert into t1 values (1, 'x'), (2, 'y')",
                           b"RENAME TABLE `t1` TO `t1__1`",
                           b"create table t1 (c char(3)) engine=myisam default charset=koi8r", b"set names koi8r",
                           b"insert into t1 values ('\xd6\xc9')"]
        assert ex.dropped["failed on MariaDB 10.11 (1062)"] == 1
        assert ex.dropped["mysqltest command"] == 2 and ex.dropped["mysqltest variable"] == 1
        assert ex.dropped["drop of no table"] == 1 and ex.dropped["not kept (kind)"] == 2
        # the rendered file replays as it ran: the same tables and bytes
        out = tmp_path / "mysql_test" / "x.sql"
        out.parent.mkdir()
        out.write_bytes(render(ex, test_path="x.test", source="here", license_="n/a"))
        load_group(conn, Group("x_replayed", GroupKind.MYSQL_TEST, ("mysql_test/x.sql",)), root=tmp_path)
        with conn.cursor() as cur:
            cur.execute("SELECT HEX(c), HEX(CONVERT(c USING utf8mb4)) FROM x_replayed.t1")
            assert cur.fetchall() == (("D6C9", "\u0436\u0438".encode().hex().upper()),)
            cur.execute("SELECT COUNT(*) FROM x_replayed.t1__1")
            assert cur.fetchone() == (2,)
            cur.execute("DROP DATABASE x_replayed")
            cur.execute("DROP DATABASE x_extract_test")
    finally:
        conn.close()
