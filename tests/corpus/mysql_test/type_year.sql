-- Extracted from mysql-test/t/type_year.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 23 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 66, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (y year,y2 year(2));;;;
insert into t1 values (0,0),(1999,1999),(2000,2000),(2001,2001),(70,70),(69,69);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (y year);;;;
insert into t1 values (now());;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1(a year);;;;
insert into t1 values (2000.5), ('2000.5'), ('2001a'), ('2.001E3');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t2(yy YEAR(2), c2 CHAR(4));;;;
CREATE TABLE t4(yyyy YEAR(4), c4 CHAR(4));;;;
INSERT INTO t2 (c2) VALUES (NULL),(1970),(1999),(2000),(2001),(2069);;;;
INSERT INTO t4 (c4) SELECT c2 FROM t2;;;;
UPDATE t2 SET yy = c2;;;;
UPDATE t4 SET yyyy = c4;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
RENAME TABLE `t4` TO `t4__1`;;;;
CREATE TABLE t1 (y YEAR NOT NULL, s VARCHAR(4));;;;
INSERT INTO t1 (s) VALUES ('bad');;;;
INSERT INTO t1 (y, s) VALUES (0, 0), (2000, 2000), (2001, 2001);;;;
RENAME TABLE `t1` TO `t1__4`;;;;
