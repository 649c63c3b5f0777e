-- Extracted from mysql-test/t/type_uint.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 21 statements; tables renamed: 5; dropped: drop of no table: 1, not kept (kind): 9.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET SQL_WARNINGS=1;;;;
create table t1 (this int unsigned);;;;
insert into t1 values (1);;;;
insert into t1 values (-1);;;;
insert into t1 values ('5000000000');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (a bigint unsigned, b mediumint unsigned);;;;
insert t1 values (1,2),(0xffffffffffffffff,0xffffff);;;;
create table t2 as select a from t1 union select b from t1;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
CREATE TABLE t1 (a DATE PRIMARY KEY);;;;
INSERT INTO t1 VALUES ('1999-01-01');;;;
CREATE TABLE t2 (a INT UNSIGNED);;;;
INSERT INTO t2 VALUES (19990101);;;;
INSERT INTO t2 VALUES (990101);;;;
ALTER TABLE t2 ADD PRIMARY KEY(a);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
RENAME TABLE `t2` TO `t2__2`;;;;
