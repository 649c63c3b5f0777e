-- Extracted from mysql-test/t/ctype_sjis.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 25 statements; tables renamed: 3; dropped: drop of no table: 2, failed on MariaDB 10.11 (1146): 1, not kept (kind): 18.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
set names sjis;;;;
set @sjis1= _sjis   0xa1a2a3a4a5a6a7a8a9aaabacadaeaf;;;;
set @sjis2= _sjis 0xb0b1b2b3b4b5b6b7b8b9babbbcbdbebf;;;;
set @sjis3= _sjis 0xc0c1c2c3c4c5c6c7c8c9cacbcccdcecf;;;;
set @sjis4= _sjis 0xd0d1d2d3d4d5d6d7d8d9dadbdcdddedf;;;;
set @utf81= CONVERT(@sjis1 USING utf8);;;;
set @utf82= CONVERT(@sjis2 USING utf8);;;;
set @utf83= CONVERT(@sjis3 USING utf8);;;;
set @utf84= CONVERT(@sjis4 USING utf8);;;;
create table t1 (a char(10) character set sjis);;;;
insert into t1 values (0x878A);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1(c enum(0x9353,0x9373) character set sjis);;;;
insert into t1 values (0x9353);;;;
insert into t1 values (0x9373);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
SET NAMES sjis;;;;
CREATE TABLE t1 (
 c char(16) default NULL
) ENGINE=MyISAM DEFAULT CHARSET=sjis;;;;
insert into t1 values(0xb1),(0xb2),(0xb3);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
SET collation_connection='sjis_japanese_ci';;;;
SET collation_connection='sjis_bin';;;;
SET NAMES sjis;;;;
