-- Extracted from mysql-test/t/ctype_utf16le.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 33 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 21, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET TIME_ZONE='+03:00';;;;
SET NAMES utf8mb4, collation_connection=utf16le_general_ci;;;;
CREATE TABLE t1 (word VARCHAR(64), word2 CHAR(64)) CHARACTER SET utf16le;;;;
INSERT INTO t1 VALUES (_koi8r 0xF2, _koi8r 0xF2), (_ucs2 X'2004',_ucs2 X'2004');;;;
DELETE FROM t1;;;;
INSERT INTO t1 VALUES (_ucs2 X'042000200020', _ucs2 X'042000200020');;;;
INSERT INTO t1 VALUES (_ucs2 X'200400200020', _ucs2 X'200400200020');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a VARCHAR(10), pad INT, b VARCHAR(10)) CHARACTER SET utf16le;;;;
INSERT INTO t1 VALUES (_ucs2 X'0420', 10, _ucs2 X'0421');;;;
INSERT INTO t1 VALUES (_ucs2 X'0420', 10, _ucs2 X'04210422');;;;
INSERT INTO t1 VALUES (_ucs2 X'0420', 10, _ucs2 X'042104220423');;;;
INSERT INTO t1 VALUES (_ucs2 X'0420042104220423042404250426042704280429042A042B',10,_ucs2 X'042104220423');;;;
INSERT INTO t1 VALUES (_utf32 X'010000', 10, _ucs2 X'0421');;;;
INSERT INTO t1 VALUES (_ucs2 X'0421', 10, _utf32 X'010000');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 SELECT
LPAD(_utf16le X'2004',10,_utf16le X'2104') l,
RPAD(_utf16le X'2004',10,_utf16le X'2104') r;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 (f1 CHAR(30));;;;
INSERT INTO t1 VALUES ("103000"), ("22720000"), ("3401200"), ("78000");;;;
RENAME TABLE `t1` TO `t1__4`;;;;
SET NAMES utf8, collation_connection=utf16le_general_ci;;;;
CREATE TABLE t1 (a VARCHAR(10) CHARACTER SET utf16le);;;;
INSERT INTO t1 VALUES ('фыва'),('Фыва'),('фЫва'),('фыВа'),('фывА'),('ФЫВА');;;;
INSERT INTO t1 VALUES ('фывапролдж'),('Фывапролдж'),('фЫвапролдж'),('фыВапролдж');;;;
INSERT INTO t1 VALUES ('фывАпролдж'),('фываПролдж'),('фывапРолдж'),('фывапрОлдж');;;;
INSERT INTO t1 VALUES ('фывапроЛдж'),('фывапролДж'),('фывапролдЖ'),('ФЫВАПРОЛДЖ');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
CREATE TABLE t1 (word VARCHAR(64) NOT NULL, PRIMARY KEY (word))
ENGINE=MyISAM CHARACTER SET utf16le;;;;
INSERT INTO t1 (word) VALUES ("cat");;;;
RENAME TABLE `t1` TO `t1__6`;;;;
