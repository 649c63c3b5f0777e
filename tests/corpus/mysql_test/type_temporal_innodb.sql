-- Extracted from mysql-test/t/type_temporal_innodb.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 14 statements; tables renamed: 3; dropped: not kept (kind): 27.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
CREATE TABLE t1 (a ENUM('a'), b TIME, c INT, KEY(b)) ENGINE=InnoDB;;;;
INSERT INTO t1 VALUES ('','00:00:00',0);;;;
ALTER TABLE t1 ENGINE=MyISAM;;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a ENUM('a'), b DATE, c INT, KEY(b)) ENGINE=InnoDB;;;;
INSERT INTO t1 VALUES ('','0000-00-00',0);;;;
ALTER TABLE t1 ENGINE=MyISAM;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (a ENUM('a'), b DATETIME, c INT, KEY(b)) ENGINE=InnoDB;;;;
INSERT INTO t1 VALUES ('','0000-00-00 00:00:00',0);;;;
ALTER TABLE t1 ENGINE=MyISAM;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
