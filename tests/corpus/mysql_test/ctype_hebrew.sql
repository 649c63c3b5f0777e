-- Extracted from mysql-test/t/ctype_hebrew.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 7 statements; tables renamed: 1; dropped: drop of no table: 1, not kept (kind): 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET NAMES hebrew;;;;
CREATE TABLE t1 (a char(1)) DEFAULT CHARSET=hebrew;;;;
INSERT INTO t1 VALUES (0xFD),(0xFE);;;;
ALTER TABLE t1 CONVERT TO CHARACTER SET utf8;;;;
RENAME TABLE `t1` TO `t1__1`;;;;
