-- Extracted from mysql-test/t/ctype_collate.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 61 statements; tables renamed: 6; dropped: drop of no table: 2, failed on MariaDB 10.11 (1115): 1, failed on MariaDB 10.11 (1253): 1, failed on MariaDB 10.11 (1273): 1, not kept (kind): 55, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
CREATE TABLE t1 (
  latin1_f CHAR(32) CHARACTER SET latin1 NOT NULL
);;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'A');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'a');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'AD');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ad');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'AE');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ae');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'AF');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'af');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'Ä');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ä');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'Å');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'å');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'B');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'b');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'U');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'u');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'UE');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ue');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'Ü');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ü');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'SS');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ss');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'ß');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'Y');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'y');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'Z');;;;
INSERT INTO t1 (latin1_f) VALUES (_latin1'z');;;;
ALTER TABLE t1 CHANGE latin1_f 
latin1_f CHAR(32) CHARACTER SET latin1 COLLATE latin1_bin;;;;
ALTER TABLE t1 CHARACTER SET latin1 COLLATE latin1_bin;;;;
SET CHARACTER SET 'latin1';;;;
SET CHARACTER SET koi8r;;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 
(s1 CHAR(5) COLLATE latin1_german1_ci,
 s2 CHAR(5) COLLATE latin1_swedish_ci);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1
(s1 CHAR(5) COLLATE latin1_german1_ci,
 s2 CHAR(5) COLLATE latin1_swedish_ci,
 s3 CHAR(5) COLLATE latin1_bin);;;;
INSERT INTO t1 VALUES ('a','A','A');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (a varchar(1) character set latin1 collate latin1_general_ci);;;;
insert into t1 values ('A'),('a'),('B'),('b'),('C'),('c');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
SET NAMES latin1;;;;
CREATE TABLE t1 
(s1 char(10) COLLATE latin1_german1_ci,
 s2 char(10) COLLATE latin1_swedish_ci,
 KEY(s1),
 KEY(s2));;;;
INSERT INTO t1 VALUES ('a','a');;;;
INSERT INTO t1 VALUES ('b','b');;;;
INSERT INTO t1 VALUES ('c','c');;;;
INSERT INTO t1 VALUES ('d','d');;;;
INSERT INTO t1 VALUES ('e','e');;;;
INSERT INTO t1 VALUES ('f','f');;;;
INSERT INTO t1 VALUES ('g','g');;;;
INSERT INTO t1 VALUES ('h','h');;;;
INSERT INTO t1 VALUES ('i','i');;;;
INSERT INTO t1 VALUES ('j','j');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1(f1 varchar(10) character set latin2 collate latin2_hungarian_ci, key(f1));;;;
insert into t1 set f1=0x3F3F9DC73F;;;;
insert into t1 set f1=0x3F3F1E563F;;;;
insert into t1 set f1=0x3F3F;;;;
RENAME TABLE `t1` TO `t1__6`;;;;
