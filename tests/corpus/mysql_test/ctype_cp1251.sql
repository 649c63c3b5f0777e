-- Extracted from mysql-test/t/ctype_cp1251.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 20 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 19, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET NAMES cp1251;;;;
create table t1 (a varchar(10) not null) character set cp1251;;;;
insert into t1 values ("a"),("ab"),("abc");;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (a char(3) binary, b binary(3)) character set cp1251;;;;
insert into t1 values ('aaa','bbb'),('AAA','BBB');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (
 a varchar(16) character set cp1251 collate cp1251_bin not null,
 b int(10) default null,
 primary key(a)
) charset=cp1251;;;;
insert into t1 (a) values ('air'),
  ('we'),('g'),('we_toshko'), ('s0urce'),('we_ivo'),('we_iliyan'),
  ('we_martin'),('vw_grado'),('vw_vasko'),('tn_vili'),('tn_kalina'),
  ('tn_fakira'),('vw_silvia'),('vw_starshi'),('vw_geo'),('vw_b0x1');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 (
  e1 enum('ябълка'),
  e2 enum('мляко')
) ENGINE=MYISAM character set cp1251;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (test1 INT, test2 VARCHAR(255));;;;
RENAME TABLE `t1` TO `t1__5`;;;;
SET NAMES cp1251;;;;
CREATE TABLE t1 (dt DATETIME);;;;
INSERT INTO t1 VALUES ('2014-01-02 10:20:30');;;;
RENAME TABLE `t1` TO `t1__6`;;;;
