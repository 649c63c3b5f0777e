-- Extracted from mysql-test/t/type_num.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 21 statements; tables renamed: 6; dropped: over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET sql_mode='STRICT_ALL_TABLES';;;;
CREATE TABLE t1 (a FLOAT);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a DOUBLE);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (a TINYINT);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 (a SMALLINT);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (a INT);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
CREATE TABLE t1 (a BIGINT);;;;
INSERT INTO t1 VALUES ('1 ');;;;
RENAME TABLE `t1` TO `t1__6`;;;;
