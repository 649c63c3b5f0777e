-- Extracted from mysql-test/t/ctype_cp1250_ch.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 29 statements; tables renamed: 4; dropped: drop of no table: 2, not kept (kind): 7.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @test_character_set= 'cp1250';;;;
SET @test_collation= 'cp1250_general_ci';;;;
SET @test_character_set= 'cp1250';;;;
SET @test_collation= 'cp1250_czech_cs';;;;
CREATE TABLE t1 (a char(16)) character set cp1250 collate cp1250_czech_cs;;;;
INSERT INTO t1 VALUES ('');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (
  popisek varchar(30) collate cp1250_general_ci NOT NULL default '',
 PRIMARY KEY  (`popisek`)
);;;;
INSERT INTO t1 VALUES ('2005-01-1');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
set names cp1250;;;;
CREATE TABLE t1
(
 id  INT AUTO_INCREMENT PRIMARY KEY,
 str VARCHAR(32)  CHARACTER SET cp1250 COLLATE cp1250_czech_cs NOT NULL default '',
 UNIQUE KEY (str)
);;;;
INSERT INTO t1 VALUES (NULL, 'a');;;;
INSERT INTO t1 VALUES (NULL, 'aa');;;;
INSERT INTO t1 VALUES (NULL, 'aaa');;;;
INSERT INTO t1 VALUES (NULL, 'aaaa');;;;
INSERT INTO t1 VALUES (NULL, 'aaaaa');;;;
INSERT INTO t1 VALUES (NULL, 'aaaaaa');;;;
INSERT INTO t1 VALUES (NULL, 'aaaaaaa');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
set names cp1250;;;;
create table t1 (a varchar(15) collate cp1250_czech_cs NOT NULL, primary key(a));;;;
insert into t1 values("abcdefgh·");;;;
insert into t1 values("··ËË");;;;
RENAME TABLE `t1` TO `t1__4`;;;;
set names cp1250 collate cp1250_czech_cs;;;;
set names cp1250 collate cp1250_czech_cs;;;;
