-- Extracted from mysql-test/t/type_timestamp_hires.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 17 statements; tables renamed: 6; dropped: failed on MariaDB 10.11 (1050): 1, mysqltest command: 1, not kept (kind): 1, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
set time_zone='+03:00';;;;
set timestamp=unix_timestamp('2011-01-01 01:01:01') + 0.123456;;;;
create table t1 (a timestamp(5) DEFAULT CURRENT_TIMESTAMP);;;;
insert t1 values ();;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (a timestamp(5) default current_timestamp);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (a timestamp(5) default current_timestamp());;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (a timestamp(5) default current_timestamp(2));;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (a timestamp(5) default current_timestamp(6));;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (a timestamp(5) on update current_timestamp);;;;
RENAME TABLE `t1` TO `t1__6`;;;;
