-- Extracted from mysql-test/t/ctype_gb2312.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 19 statements; tables renamed: 2; dropped: drop of no table: 2, failed on MariaDB 10.11 (1146): 2, mysqltest command: 1, not kept (kind): 9.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'gb2312';;;;
SET @test_collation= 'gb2312_chinese_ci';;;;
SET NAMES gb2312;;;;
SET collation_connection='gb2312_chinese_ci';;;;
SET collation_connection='gb2312_bin';;;;
SET NAMES gb2312;;;;
CREATE TABLE t1 (a text) character set gb2312;;;;
INSERT INTO t1 VALUES (0xA2A1),(0xD7FE);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
SET NAMES utf8;;;;
SET collation_connection=gb2312_chinese_ci;;;;
CREATE TABLE t1 (b VARCHAR(2));;;;
INSERT INTO t1 VALUES ('0'),('1'),('2'),('3'),('4'),('5'),('6'),('7');;;;
INSERT INTO t1 VALUES ('8'),('9'),('A'),('B'),('C'),('D'),('E'),('F');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
set names gb2312;;;;
set collation_connection=gb2312_bin;;;;
