-- Extracted from mysql-test/t/type_newdecimal.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 22 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 20, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (a decimal(6,3));;;;
insert into t1 values (1.0), (NULL), (0.1);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 select if(1, 1.1, 1.2), if(0, 1.1, 1.2), if(0.1, 1.1, 1.2), if(0, 1, 1.1), if(0, NULL, 1.2), if(1, 0.22e1, 1.1), if(1E0, 1.1, 1.2);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 select nullif(1.1, 1.1), nullif(1.1, 1.2), nullif(1.1, 0.11e1), nullif(1.0, 1), nullif(1, 1.0), nullif(1, 1.1);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (a decimal(4,2));;;;
insert into t1 value (10000), (1.1e10), ("11111"), (100000.1);;;;
insert into t1 value (-10000), (-1.1e10), ("-11111"), (-100000.1);;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (a decimal(4,2) unsigned);;;;
insert into t1 value (10000), (1.1e10), ("11111"), (100000.1);;;;
insert into t1 value (-10000), (-1.1e10), ("-11111"), (-100000.1);;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (a bigint);;;;
insert into t1 values (18446744073709551615.0);;;;
insert into t1 values (9223372036854775808.0);;;;
insert into t1 values (-18446744073709551615.0);;;;
RENAME TABLE `t1` TO `t1__6`;;;;
