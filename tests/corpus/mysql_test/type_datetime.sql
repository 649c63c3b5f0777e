-- Extracted from mysql-test/t/type_datetime.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 29 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 15, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (t datetime);;;;
insert into t1 values (101),(691231),(700101),(991231),(10000101),(99991231),(101000000),(691231000000),(700101000000),(991231235959),(10000101000000),(99991231235959),(20030100000000),(20030000000000);;;;
delete from t1 where t > 0;;;;
delete from t1;;;;
insert into t1 values("000101"),("691231"),("700101"),("991231"),("00000101"),("00010101"),("99991231"),("00101000000"),("691231000000"),("700101000000"),("991231235959"),("10000101000000"),("99991231235959"),("20030100000000"),("20030000000000");;;;
insert into t1 values ("2003-003-03");;;;
insert into t1 values ("20030102T131415"),("2001-01-01T01:01:01"), ("2001-1-1T1:01:01");;;;
truncate table t1;;;;
insert into t1 values("2003-0303 12:13:14");;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (a timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, b date, c time, d datetime);;;;
insert into t1 (b,c,d) values(now(),curtime(),now());;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (a datetime not null);;;;
insert into t1 values (0);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (id int, dt datetime);;;;
insert into t1 values (1,"2001-08-14 00:00:00"),(2,"2001-08-15 00:00:00"),(3,"2001-08-16 00:00:00"),(4,"2003-09-15 01:20:30");;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE `t1` (
  `date` datetime NOT NULL default '0000-00-00 00:00:00',
  `numfacture` int(6) unsigned NOT NULL default '0',
  `expedition` datetime NOT NULL default '0000-00-00 00:00:00',
  PRIMARY KEY  (`numfacture`),
  KEY `date` (`date`),
  KEY `expedition` (`expedition`)
) ENGINE=MyISAM;;;;
INSERT INTO t1 (expedition) VALUES ('0001-00-00 00:00:00');;;;
INSERT INTO t1 (numfacture,expedition) VALUES ('1212','0001-00-00 00:00:00');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (a datetime not null, b datetime not null);;;;
insert into t1 values (now(), now());;;;
insert into t1 values (now(), now());;;;
RENAME TABLE `t1` TO `t1__6`;;;;
