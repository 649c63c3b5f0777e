-- Extracted from mysql-test/t/ctype_ucs.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 27 statements; tables renamed: 6; dropped: drop of no table: 1, mysqltest command: 4, not kept (kind): 22, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'ucs2';;;;
SET @test_collation= 'ucs2_general_ci';;;;
SET NAMES latin1;;;;
SET character_set_connection=ucs2;;;;
SET CHARACTER SET koi8r;;;;
create table t1 (a varchar(2) character set ucs2 collate ucs2_bin, key(a));;;;
insert into t1 values ('A'),('A'),('B'),('C'),('D'),('A\t');;;;
insert into t1 values ('A\0'),('A\0'),('A\0'),('A\0'),('AZ');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (word VARCHAR(64) CHARACTER SET ucs2, word2 CHAR(64) CHARACTER SET ucs2);;;;
INSERT INTO t1 VALUES (_koi8r'ò',_koi8r'ò'), (X'2004',X'2004');;;;
DELETE FROM t1;;;;
INSERT INTO t1 VALUES (X'042000200020',X'042000200020'), (X'200400200020', X'200400200020');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 SELECT 
LPAD(_ucs2 X'0420',10,_ucs2 X'0421') l,
RPAD(_ucs2 X'0420',10,_ucs2 X'0421') r;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1(a INT);;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1(a INT);;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t2(f1 Char(30));;;;
insert into t2 values ("103000"), ("22720000"), ("3401200"), ("78000");;;;
RENAME TABLE `t2` TO `t2__1`;;;;
SET NAMES koi8r;;;;
SET character_set_connection=ucs2;;;;
