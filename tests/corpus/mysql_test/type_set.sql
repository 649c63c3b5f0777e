-- Extracted from mysql-test/t/type_set.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 20 statements; tables renamed: 6; dropped: drop of no table: 2, failed on MariaDB 10.11 (1097): 1, failed on MariaDB 10.11 (1146): 1, mysqltest command: 6, not kept (kind): 9, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (a set (' ','a','b') not null);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (a set (' ','a','b ') not null default 'b ');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (   user varchar(64) NOT NULL default '',   path varchar(255) NOT NULL default '',   privilege   set('select','RESERVED30','RESERVED29','RESERVED28','RESERVED27','RESERVED26',   'RESERVED25','RESERVED24','data.delete','RESERVED22','RESERVED21',   'RESERVED20','data.insert.none','data.insert.approve',   'data.insert.delete','data.insert.move','data.insert.propose',   'data.insert.reject','RESERVED13','RESERVED12','RESERVED11','RESERVED10',   'RESERVED09','data.update','RESERVED07','RESERVED06','RESERVED05',   'RESERVED04','metadata.delete','metadata.put','RESERVED01','RESERVED00')   NOT NULL default '',   KEY user (user)   ) ENGINE=MyISAM CHARSET=utf8;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
set names latin1;;;;
create table t1 (s set ('a','A') character set latin1 collate latin1_bin);;;;
insert into t1 values ('a'),('a,A'),('A,a'),('A');;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (c set('ae','oe','ue','ss') collate latin1_german2_ci);;;;
INSERT INTO t1 VALUES ('ä'),('ö'),('ü'),('ß');;;;
INSERT INTO t1 VALUES ('ae'),('oe'),('ue'),('ss');;;;
INSERT INTO t1 VALUES ('ä,ö,ü,ß');;;;
INSERT INTO t1 VALUES ('ae,oe,ue,ss');;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1(f1
set('1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17',
'18','19','20','21','22','23','24','25','26','27','28','29','30','31','32','33',
'34','35','36','37','38','39','40','41','42','43','44','45','46','47','48','49',
'50','51','52','53','54','55','56','57','58','59','60','61','62','63','64','1'));;;;
RENAME TABLE `t1` TO `t1__6`;;;;
