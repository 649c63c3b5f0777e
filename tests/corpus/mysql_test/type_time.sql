-- Extracted from mysql-test/t/type_time.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 26 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 14, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (t time);;;;
insert into t1 values("10:22:33"),("12:34:56.78"),(10),(1234),(123456.78),(1234559.99),("1"),("1:23"),("1:23:45"), ("10.22"), ("-10  1:22:33.45"),("20 10:22:33"),("1999-02-03 20:33:34");;;;
insert t1 values (30),(1230),("1230"),("12:30"),("12:30:35"),("1 12:30:31.32");;;;
insert into t1 values("10.22.22"),(1234567),(123456789),(123456789.10),("10 22:22"),("12.45a");;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (t time);;;;
insert into t1 values ('09:00:00'),('13:00:00'),('19:38:34'), ('13:00:00'),('09:00:00'),('09:00:00'),('13:00:00'),('13:00:00'),('13:00:00'),('09:00:00');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (f1 time);;;;
insert into t1 values ('24:00:00');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1(f1 time, f2 time);;;;
insert into t1 values('20:00:00','150:00:00');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE  t1 (
  f2 date NOT NULL,
  f3 int(11) unsigned NOT NULL default '0',
  PRIMARY KEY  (f3, f2)
);;;;
insert into t1 values('2007-07-01', 1);;;;
insert into t1 values('2007-07-01', 2);;;;
insert into t1 values('2007-07-02', 1);;;;
insert into t1 values('2007-07-02', 2);;;;
RENAME TABLE `t1` TO `t1__5`;;;;
CREATE TABLE t1 (c TIME);;;;
INSERT INTO t1 VALUES ('0:00:00');;;;
RENAME TABLE `t1` TO `t1__6`;;;;
SET timestamp=unix_timestamp('2001-02-03 10:20:30');;;;
