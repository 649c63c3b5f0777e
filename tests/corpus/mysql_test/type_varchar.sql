-- Extracted from mysql-test/t/type_varchar.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 41 statements; tables renamed: 5; dropped: drop of no table: 1, failed on MariaDB 10.11 (1062): 1, failed on MariaDB 10.11 (1146): 5, mysqltest command: 15, not kept (kind): 26, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (v varchar(30), c char(3), e enum('abc','def','ghi'), t text);;;;
insert into t1 values ('abc', 'de', 'ghi', 'jkl');;;;
insert into t1 values ('abc ', 'de ', 'ghi', 'jkl ');;;;
insert into t1 values ('abc    ', 'd  ', 'ghi', 'jkl    ');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (v varchar(20));;;;
insert into t1 values('a ');;;;
insert into t1 values('a');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (v varbinary(20));;;;
insert into t1 values('a');;;;
insert into t1 values('a ');;;;
alter table t1 add primary key (v);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (v varchar(254), index (v));;;;
insert into t1 values ("This is a test ");;;;
insert into t1 values ("Some sample data");;;;
insert into t1 values (" garbage ");;;;
insert into t1 values (" This is a test ");;;;
insert into t1 values ("This is a test");;;;
insert into t1 values ("Hello world");;;;
insert into t1 values ("Foo bar");;;;
insert into t1 values ("This is a test");;;;
insert into t1 values ("MySQL varchar test");;;;
insert into t1 values ("test MySQL varchar");;;;
insert into t1 values ("This is a long string to have some random length data included");;;;
insert into t1 values ("Short string");;;;
insert into t1 values ("VSS");;;;
insert into t1 values ("Some samples");;;;
insert into t1 values ("Bar foo");;;;
insert into t1 values ("Bye");;;;
alter table t1 change v v varchar(300), add key (v(10));;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (pkcol varchar(16), othercol varchar(16), primary key (pkcol));;;;
insert into t1 values ('test', 'something');;;;
update t1 set othercol='somethingelse' where pkcol='test';;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (a int, b varchar(12));;;;
insert into t1 values (1, 'A'), (22, NULL);;;;
