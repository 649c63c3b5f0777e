-- Extracted from mysql-test/t/ctype_euckr.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 44 statements; tables renamed: 6; dropped: drop of no table: 1, mysqltest command: 3, not kept (kind): 11, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'euckr';;;;
SET @test_collation= 'euckr_korean_ci';;;;
SET NAMES euckr;;;;
SET collation_connection='euckr_korean_ci';;;;
SET collation_connection='euckr_bin';;;;
SET NAMES euckr;;;;
CREATE TABLE t1 (a text) character set euckr;;;;
INSERT INTO t1 VALUES (0xA2E6),(0xFEF7);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (s1 varchar(5) character set euckr);;;;
insert into t1 values (0xA141);;;;
insert into t1 values (0xA15A);;;;
insert into t1 values (0xA161);;;;
insert into t1 values (0xA17A);;;;
insert into t1 values (0xA181);;;;
insert into t1 values (0xA1FE);;;;
insert into t1 values (0xA140);;;;
insert into t1 values (0xA15B);;;;
insert into t1 values (0xA160);;;;
insert into t1 values (0xA17B);;;;
insert into t1 values (0xA180);;;;
insert into t1 values (0xA1FF);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
SET NAMES utf8;;;;
CREATE TABLE t1 (a varchar(10) character set euckr);;;;
INSERT INTO t1 VALUES (0xA2E6), (0xA2E7);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 (a binary(1), key(a));;;;
CREATE TABLE t2 (s VARCHAR(4), a VARCHAR(1) CHARACTER SET euckr);;;;
INSERT INTO t2
SELECT hex(concat(t11.a, t12.a)), concat(t11.a, t12.a)
FROM t1 t11, t1 t12
WHERE t11.a >= 0x81 AND t11.a <= 0xFE
AND   t12.a >= 0x41 AND t12.a <= 0xFE
ORDER BY t11.a, t12.a;;;;
DELETE FROM t2 WHERE a='?';;;;
ALTER TABLE t2 ADD u VARCHAR(1) CHARACTER SET utf8, ADD a2 VARCHAR(1) CHARACTER SET euckr;;;;
UPDATE t2 SET u=a, a2=u;;;;
DELETE FROM t2 WHERE u='?';;;;
RENAME TABLE `t1` TO `t1__4`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
SET NAMES utf8;;;;
SET collation_connection=euckr_korean_ci;;;;
CREATE TABLE t1 (b VARCHAR(2));;;;
INSERT INTO t1 VALUES ('0'),('1'),('2'),('3'),('4'),('5'),('6'),('7');;;;
INSERT INTO t1 VALUES ('8'),('9'),('A'),('B'),('C'),('D'),('E'),('F');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
