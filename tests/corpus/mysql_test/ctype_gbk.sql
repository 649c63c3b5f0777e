-- Extracted from mysql-test/t/ctype_gbk.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 49 statements; tables renamed: 5; dropped: drop of no table: 2, failed on MariaDB 10.11 (1146): 2, mysqltest command: 1, not kept (kind): 25, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'gbk';;;;
SET @test_collation= 'gbk_chinese_ci';;;;
SET NAMES gbk;;;;
SET collation_connection='gbk_chinese_ci';;;;
SET collation_connection='gbk_bin';;;;
SET NAMES gbk;;;;
CREATE TABLE t1 (a text) character set gbk;;;;
INSERT INTO t1 VALUES (0xA3A0),(0xA1A1);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (c1 text not null, c2 text not null) character set gbk;;;;
alter table t1 change c1 c1 mediumtext  character set gbk not null;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1(a MEDIUMTEXT CHARACTER SET gbk,
                b MEDIUMTEXT CHARACTER SET big5);;;;
INSERT INTO t1 VALUES
  (REPEAT(0x1125,200000), REPEAT(0x1125,200000)), ('', ''), ('', '');;;;
DROP TABLES t1;;;;
SET NAMES utf8;;;;
SET collation_connection=gbk_chinese_ci;;;;
CREATE TABLE t1 (b VARCHAR(2));;;;
INSERT INTO t1 VALUES ('0'),('1'),('2'),('3'),('4'),('5'),('6'),('7');;;;
INSERT INTO t1 VALUES ('8'),('9'),('A'),('B'),('C'),('D'),('E'),('F');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
set names gbk;;;;
set collation_connection=gbk_bin;;;;
SET NAMES gbk;;;;
CREATE TABLE t1 (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  b VARBINARY(16),
  type SET('ascii','bad','head','tail','mb2','unassigned')
);;;;
INSERT INTO t1 (b, type) VALUES (0x40,   'ascii,tail');;;;
INSERT INTO t1 (b, type) VALUES (0x80,   'tail');;;;
INSERT INTO t1 (b, type) VALUES (0x81,   'head,tail');;;;
INSERT INTO t1 (b, type) VALUES (0xFF,   'bad');;;;
INSERT INTO t1 (b, type) VALUES (0xA140, 'mb2,unassigned');;;;
INSERT INTO t1 (b, type) VALUES (0xA1A3, 'mb2');;;;
INSERT INTO t1 (b, type) VALUES (0xFE40, 'mb2');;;;
CREATE TABLE t2 AS SELECT
  CONCAT(t1.b,t2.b) AS b,
  t1.type AS type1,
  t2.type AS type2,
  CONCAT('[',t1.type,'][',t2.type,']') AS comment
FROM t1, t1 t2;;;;
CREATE TABLE t3
(
  b VARBINARY(16),
  c VARCHAR(16) CHARACTER SET gbk,
  comment VARCHAR(128)
);;;;
INSERT INTO t3 (b,c,comment) SELECT b,b,comment FROM t2
WHERE
  (FIND_IN_SET('ascii',type1) OR FIND_IN_SET('mb2',type1)) AND
  (FIND_IN_SET('ascii',type2) OR FIND_IN_SET('mb2',type2))
ORDER BY b;;;;
DELETE FROM t2 WHERE b IN (SELECT b FROM t3);;;;
DELETE FROM t3;;;;
INSERT INTO t3 (b,c,comment) SELECT b,b,comment FROM t2
WHERE type1='tail' OR type1='bad' OR type2='bad'
ORDER BY b;;;;
DELETE FROM t2 WHERE b IN (SELECT b FROM t3);;;;
DELETE FROM t3;;;;
INSERT INTO t3 (b,c,comment) SELECT b,b,comment FROM t2
WHERE (FIND_IN_SET('mb2',type1) OR FIND_IN_SET('ascii',type1))
      AND (FIND_IN_SET('tail',type2) AND NOT FIND_IN_SET('ascii',type2))
ORDER BY b;;;;
DELETE FROM t2 WHERE b IN (SELECT b FROM t3);;;;
DELETE FROM t3;;;;
INSERT INTO t3 (b,c,comment) SELECT b,b,comment FROM t2 ORDER BY b;;;;
DELETE FROM t3;;;;
RENAME TABLE `t3` TO `t3__1`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
