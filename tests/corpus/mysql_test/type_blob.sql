-- Extracted from mysql-test/t/type_blob.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 14 statements; tables renamed: 6; dropped: drop of no table: 1, failed on MariaDB 10.11 (1074): 2, not kept (kind): 4, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
CREATE TABLE t1 (a blob, b text, c blob(250), d text(70000), e text(70000000));;;;
CREATE TABLE t2 (a char(255), b varbinary(70000), c varchar(70000000));;;;
CREATE TABLE t4 (c varchar(65530) character set utf8 not null);;;;
create table t3 (a long, b long byte);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
RENAME TABLE `t3` TO `t3__1`;;;;
RENAME TABLE `t4` TO `t4__1`;;;;
CREATE TABLE t1 (a varchar(70000) default "hello");;;;
CREATE TABLE t2 (a blob default "hello");;;;
RENAME TABLE `t1` TO `t1__2`;;;;
RENAME TABLE `t2` TO `t2__2`;;;;
