-- Extracted from mysql-test/t/ctype_big5.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 41 statements; tables renamed: 6; dropped: drop of no table: 2, failed on MariaDB 10.11 (1146): 2, mysqltest command: 2, not kept (kind): 19, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'big5';;;;
SET @test_collation= 'big5_chinese_ci';;;;
SET NAMES big5;;;;
SET collation_connection='big5_chinese_ci';;;;
SET collation_connection='big5_bin';;;;
SET NAMES big5;;;;
CREATE TABLE t1 (a text) character set big5;;;;
INSERT INTO t1 VALUES ('ùØ');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a CHAR(50) CHARACTER SET big5 NOT NULL, FULLTEXT(a));;;;
INSERT INTO t1 VALUES(0xA741ADCCA66EB6DC20A7DAADCCABDCA66E);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
set names big5;;;;
create table t1 (a char character set big5);;;;
insert into t1 values (0xF9D6),(0xF9D7),(0xF9D8),(0xF9D9);;;;
insert into t1 values (0xF9DA),(0xF9DB),(0xF9DC);;;;
alter table t1 convert to character set utf8;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
set names big5;;;;
create table t1 (a blob);;;;
insert into t1 values (0xEE00);;;;
delete from t1;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
SET NAMES utf8;;;;
SET collation_connection=big5_chinese_ci;;;;
CREATE TABLE t1 (b VARCHAR(2));;;;
INSERT INTO t1 VALUES ('0'),('1'),('2'),('3'),('4'),('5'),('6'),('7');;;;
INSERT INTO t1 VALUES ('8'),('9'),('A'),('B'),('C'),('D'),('E'),('F');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
set names big5;;;;
set collation_connection=big5_bin;;;;
SET NAMES big5;;;;
SET NAMES big5;;;;
CREATE TABLE t1 (a ENUM('È@') CHARACTER SET big5);;;;
INSERT INTO t1 VALUES ('È@');;;;
INSERT INTO t1 VALUES (_big5 0xC840);;;;
INSERT INTO t1 VALUES (0xC840);;;;
RENAME TABLE `t1` TO `t1__6`;;;;
SET NAMES binary;;;;
