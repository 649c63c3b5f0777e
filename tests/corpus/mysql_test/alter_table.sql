-- Extracted from mysql-test/t/alter_table.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 25 statements; tables renamed: 6; dropped: mysqltest command: 1, not kept (kind): 9, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (
col1 int not null auto_increment primary key,
col2 varchar(30) not null,
col3 varchar (20) not null,
col4 varchar(4) not null,
col5 enum('PENDING', 'ACTIVE', 'DISABLED') not null,
col6 int not null, to_be_deleted int);;;;
insert into t1 values (2,4,3,5,"PENDING",1,7);;;;
alter table t1
add column col4_5 varchar(20) not null after col4,
add column col7 varchar(30) not null after col5,
add column col8 datetime not null, drop column to_be_deleted,
change column col2 fourth varchar(30) not null after col3,
modify column col6 int not null first;;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (bandID MEDIUMINT UNSIGNED NOT NULL PRIMARY KEY, payoutID SMALLINT UNSIGNED NOT NULL);;;;
insert into t1 (bandID,payoutID) VALUES (1,6),(2,6),(3,4),(4,9),(5,10),(6,1),(7,12),(8,12);;;;
alter table t1 add column new_col int, order by payoutid,bandid;;;;
alter table t1 order by bandid,payoutid;;;;
RENAME TABLE `t1` TO `t1__2`;;;;
CREATE TABLE t1 (
GROUP_ID int(10) unsigned DEFAULT '0' NOT NULL,
LANG_ID smallint(5) unsigned DEFAULT '0' NOT NULL,
NAME varchar(80) DEFAULT '' NOT NULL,
PRIMARY KEY (GROUP_ID,LANG_ID),
KEY NAME (NAME));;;;
ALTER TABLE t1 CHANGE NAME NAME CHAR(80) not null;;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (n int);;;;
insert into t1 values(9),(3),(12),(10);;;;
alter table t1 order by n;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
CREATE TABLE t1 (
  id int(11) unsigned NOT NULL default '0',
  category_id tinyint(4) unsigned NOT NULL default '0',
  type_id tinyint(4) unsigned NOT NULL default '0',
  body text NOT NULL,
  user_id int(11) unsigned NOT NULL default '0',
  status enum('new','old') NOT NULL default 'new',
  PRIMARY KEY (id)
) ENGINE=MyISAM;;;;
ALTER TABLE t1 ORDER BY t1.id, t1.status, t1.type_id, t1.user_id, t1.body;;;;
RENAME TABLE `t1` TO `t1__5`;;;;
CREATE TABLE t1 (AnamneseId int(10) unsigned NOT NULL auto_increment,B BLOB,PRIMARY KEY (AnamneseId)) engine=myisam;;;;
insert into t1 values (null,"hello");;;;
ALTER TABLE t1 ADD Column new_col int not null;;;;
RENAME TABLE `t1` TO `t1__6`;;;;
