-- Extracted from mysql-test/t/type_binary.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 27 statements; tables renamed: 6; dropped: failed on MariaDB 10.11 (1062): 1, not kept (kind): 26, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (s1 binary(3));;;;
insert into t1 values (0x61), (0x6120), (0x612020);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (s1 binary(2), s2 varbinary(2));;;;
insert into t1 values (0x4100,0x4100);;;;
delete from t1;;;;
insert into t1 values (0x4120,0x4120);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (s1 varbinary(20), s2 varbinary(20));;;;
insert into t1 values (0x41,0x4100),(0x41,0x4120),(0x4100,0x4120);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (s1 varbinary(2), s2 varchar(1));;;;
insert into t1 values (0x41,'a'), (0x4100,'b'), (0x41,'c'), (0x4100,'d');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (s1 binary(2) primary key);;;;
insert into t1 values (0x01);;;;
insert into t1 values (0x0120);;;;
alter table t1 drop primary key;;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (s1 varbinary(2) primary key);;;;
insert into t1 values (0x01);;;;
insert into t1 values (0x0120);;;;
insert into t1 values (0x0100);;;;
alter table t1 drop primary key;;;;
RENAME TABLE `t1` TO `t1__6`;;;;
