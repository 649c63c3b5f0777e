-- Extracted from mysql-test/t/type_date.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 31 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 9, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (a char(16), b date, c datetime);;;;
insert into t1 SET a='test 2000-01-01', b='2000-01-01', c='2000-01-01';;;;
RENAME TABLE `t1` TO `t1__1`;;;;
CREATE TABLE t1 (name char(6),cdate date);;;;
INSERT INTO t1 VALUES ('name1','1998-01-01');;;;
INSERT INTO t1 VALUES ('name2','1998-01-01');;;;
INSERT INTO t1 VALUES ('name1','1998-01-02');;;;
INSERT INTO t1 VALUES ('name2','1998-01-02');;;;
CREATE TABLE t2 (cdate date, note char(6));;;;
INSERT INTO t2 VALUES ('1998-01-01','note01');;;;
INSERT INTO t2 VALUES ('1998-01-02','note02');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
CREATE TABLE t1(a INT);;;;
INSERT INTO t1 VALUES(1);;;;
RENAME TABLE `t1` TO `t1__3`;;;;
CREATE TABLE t1 ( datum DATE );;;;
INSERT INTO t1 VALUES ( "2000-1-1" );;;;
INSERT INTO t1 VALUES ( "2000-1-2" );;;;
INSERT INTO t1 VALUES ( "2000-1-3" );;;;
INSERT INTO t1 VALUES ( "2000-1-4" );;;;
INSERT INTO t1 VALUES ( "2000-1-5" );;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (
  user_id char(10),
  summa int(11),
  rdate date
);;;;
INSERT INTO t1 VALUES ('aaa',100,'1998-01-01');;;;
INSERT INTO t1 VALUES ('aaa',200,'1998-01-03');;;;
INSERT INTO t1 VALUES ('bbb',50,'1998-01-02');;;;
INSERT INTO t1 VALUES ('bbb',200,'1998-01-04');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
