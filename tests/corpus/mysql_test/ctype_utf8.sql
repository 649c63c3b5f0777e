-- Extracted from mysql-test/t/ctype_utf8.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 33 statements; tables renamed: 6; dropped: drop of no table: 2, mysqltest command: 1, not kept (kind): 46, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET TIME_ZONE='+03:00';;;;
set names utf8;;;;
CREATE TABLE t1 (a char(10) character set utf8 not null);;;;
INSERT INTO t1 VALUES ('a'),('a\0'),('a\t'),('a ');;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 select date_format("2004-01-19 10:10:10", "%Y-%m-%d");;;;
RENAME TABLE `t1` TO `t1__2`;;;;
set names utf8;;;;
set LC_TIME_NAMES='fr_FR';;;;
create table t1 (s1 char(20) character set latin1);;;;
insert into t1 values (date_format('2004-02-02','%M'));;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (s1 char(20) character set koi8r);;;;
set LC_TIME_NAMES='ru_RU';;;;
insert into t1 values (date_format('2004-02-02','%M'));;;;
insert into t1 values (date_format('2004-02-02','%b'));;;;
insert into t1 values (date_format('2004-02-02','%W'));;;;
insert into t1 values (date_format('2004-02-02','%a'));;;;
RENAME TABLE `t1` TO `t1__4`;;;;
set LC_TIME_NAMES='en_US';;;;
set names koi8r;;;;
create table t1 (s1 char(1) character set utf8);;;;
insert into t1 values (_koi8r'ÁÂ');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (s1 tinytext character set utf8);;;;
insert into t1 select repeat('a',300);;;;
insert into t1 select repeat('Ñ',300);;;;
insert into t1 select repeat('aÑ',300);;;;
insert into t1 select repeat('Ña',300);;;;
insert into t1 select repeat('ÑÑ',300);;;;
RENAME TABLE `t1` TO `t1__6`;;;;
