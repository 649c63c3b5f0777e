-- Extracted from mysql-test/t/create.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 17 statements; tables renamed: 6; dropped: drop of no table: 3, failed on MariaDB 10.11 (1049): 1, failed on MariaDB 10.11 (1059): 1, failed on MariaDB 10.11 (1075): 1, failed on MariaDB 10.11 (1103): 1, failed on MariaDB 10.11 (1146): 2, failed on MariaDB 10.11 (1163): 1, failed on MariaDB 10.11 (1167): 1, not kept (kind): 6, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (b char(0));;;;
insert into t1 values (""),(null);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (b char(0) not null);;;;
create table if not exists t1 (b char(0) not null);;;;
insert into t1 values (""),(null);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (a int not null auto_increment,primary key (a)) engine=heap;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table `a/a` (a int);;;;
create table t1 like `a/a`;;;;
RENAME TABLE `a/a` TO `a/a__1`;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (a datetime default now());;;;
RENAME TABLE `t1` TO `t1__5`;;;;
