-- Extracted from mysql-test/t/ctype_utf16.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 37 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 38, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET TIME_ZONE='+03:00';;;;
SET NAMES latin1;;;;
SET character_set_connection=utf16;;;;
CREATE TABLE t1 (word VARCHAR(64), word2 CHAR(64)) CHARACTER SET utf16;;;;
INSERT INTO t1 VALUES (_koi8r 0xF2, _koi8r 0xF2), (X'2004',X'2004');;;;
DELETE FROM t1;;;;
INSERT INTO t1 VALUES (X'042000200020',X'042000200020'), (X'200400200020', X'200400200020');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 SELECT 
LPAD(_utf16 X'0420',10,_utf16 X'0421') l,
RPAD(_utf16 X'0420',10,_utf16 X'0421') r;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (f1 char(30));;;;
insert into t1 values ("103000"), ("22720000"), ("3401200"), ("78000");;;;
RENAME TABLE `t1` TO `t1__3`;;;;
SET NAMES latin1;;;;
SET character_set_connection=utf16;;;;
SET NAMES utf8;;;;
SET character_set_connection=utf16;;;;
CREATE TABLE t1 (a VARCHAR(10) CHARACTER SET utf16);;;;
INSERT INTO t1 VALUES ('фыва'),('Фыва'),('фЫва'),('фыВа'),('фывА'),('ФЫВА');;;;
INSERT INTO t1 VALUES ('фывапролдж'),('Фывапролдж'),('фЫвапролдж'),('фыВапролдж');;;;
INSERT INTO t1 VALUES ('фывАпролдж'),('фываПролдж'),('фывапРолдж'),('фывапрОлдж');;;;
INSERT INTO t1 VALUES ('фывапроЛдж'),('фывапролДж'),('фывапролдЖ'),('ФЫВАПРОЛДЖ');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (word varchar(64) NOT NULL, PRIMARY KEY (word))
ENGINE=MyISAM CHARACTER SET utf16;;;;
INSERT INTO t1 (word) VALUES ("cat");;;;
RENAME TABLE `t1` TO `t1__5`;;;;
SET NAMES latin1;;;;
CREATE TABLE t1 (
   word VARCHAR(64),
   bar INT(11) default 0,
   PRIMARY KEY (word))
   ENGINE=MyISAM
   CHARSET utf16
   COLLATE utf16_general_ci;;;;
INSERT INTO t1 (word) VALUES ("aar");;;;
INSERT INTO t1 (word) VALUES ("a");;;;
INSERT INTO t1 (word) VALUES ("aardvar");;;;
INSERT INTO t1 (word) VALUES ("aardvark");;;;
INSERT INTO t1 (word) VALUES ("aardvara");;;;
INSERT INTO t1 (word) VALUES ("aardvarz");;;;
RENAME TABLE `t1` TO `t1__6`;;;;
