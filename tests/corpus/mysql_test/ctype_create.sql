-- Extracted from mysql-test/t/ctype_create.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 21 statements; tables renamed: 6; dropped: drop of no table: 1, failed on MariaDB 10.11 (1049): 3, failed on MariaDB 10.11 (1253): 1, failed on MariaDB 10.11 (1302): 3, not kept (kind): 28.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @@character_set_server=latin5;;;;
CREATE TABLE t1 (a char(10));;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a char(10)) DEFAULT CHARACTER SET latin1;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (a char(10)) 
DEFAULT CHARACTER SET latin1 COLLATE latin1_german1_ci;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 (a VARCHAR(10)) CHARACTER SET utf8, CHARACTER SET utf8;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (a VARCHAR(10)) CHARACTER SET DEFAULT, CHARACTER SET DEFAULT;;;;
RENAME TABLE `t1` TO `t1__5`;;;;
CREATE TABLE t1 (a VARCHAR(10) CHARACTER SET latin1, b VARCHAR(10) CHARACTER SET utf8);;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET utf8, CHARACTER SET latin1;;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET utf8, CHARACTER SET DEFAULT;;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET latin1, CHARACTER SET utf8;;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET latin1, CHARACTER SET DEFAULT;;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET DEFAULT, CHARACTER SET utf8;;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET DEFAULT, CHARACTER SET latin1;;;;
RENAME TABLE `t1` TO `t1__6`;;;;
