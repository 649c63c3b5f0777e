-- Extracted from mysql-test/t/type_nchar.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 14 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 6, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (c nchar(10));;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (c national char(10));;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (c national varchar(10));;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (c nvarchar(10));;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (c nchar varchar(10));;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (c national character varying(10));;;;
RENAME TABLE `t1` TO `t1__6`;;;;
