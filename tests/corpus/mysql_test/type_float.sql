-- Extracted from mysql-test/t/type_float.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 20 statements; tables renamed: 6; dropped: drop of no table: 1, not kept (kind): 18, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (f1 float(24),f2 float(52));;;;
insert into t1 values(10,10),(1e+5,1e+5),(1234567890,1234567890),(1e+10,1e+10),(1e+15,1e+15),(1e+20,1e+20),(1e+50,1e+50),(1e+150,1e+150);;;;
insert into t1 values(-10,-10),(1e-5,1e-5),(1e-10,1e-10),(1e-15,1e-15),(1e-20,1e-20),(1e-50,1e-50),(1e-150,1e-150);;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (datum double);;;;
insert into t1 values (0.5),(1.0),(1.5),(2.0),(2.5);;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (a  decimal(7,3) not null, key (a));;;;
insert into t1 values ("0"),("-0.00"),("-0.01"),("-0.002"),("1");;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (c1 double, c2 varchar(20));;;;
insert t1 values (121,"16");;;;
create table t2 select c1 + c1 * (c2 / 100) as col1, round(c1, 5) as col2, round(c1, 35) as col3, sqrt(c1*1e-15) col4 from t1;;;;
RENAME TABLE `t1` TO `t1__4`;;;;
RENAME TABLE `t2` TO `t2__1`;;;;
create table t1 (a float);;;;
insert into t1 values (1);;;;
RENAME TABLE `t1` TO `t1__5`;;;;
