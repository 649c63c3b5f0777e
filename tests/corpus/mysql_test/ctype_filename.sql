-- Extracted from mysql-test/t/ctype_filename.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 13 statements; tables renamed: 5; dropped: mysqltest variable: 3, not kept (kind): 2.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table con (a int);;;;
RENAME TABLE `con` TO `con__1`;;;;
create table aux (a int);;;;
RENAME TABLE `aux` TO `aux__1`;;;;
create table nul (a int);;;;
RENAME TABLE `nul` TO `nul__1`;;;;
create table lpt1 (a int);;;;
RENAME TABLE `lpt1` TO `lpt1__1`;;;;
create table com1 (a int);;;;
RENAME TABLE `com1` TO `com1__1`;;;;
SET NAMES utf8;;;;
