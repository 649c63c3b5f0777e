-- Extracted from mysql-test/t/type_bit.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 21 statements; tables renamed: 6; dropped: drop of no table: 1, failed on MariaDB 10.11 (1062): 1, failed on MariaDB 10.11 (1439): 1, not kept (kind): 41, over the table cap: 1.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
create table t1 (a bit(0));;;;
RENAME TABLE `t1` TO `t1__1`;;;;
create table t1 (a bit(64));;;;
insert into t1 values 
(b'1111111111111111111111111111111111111111111111111111111111111111'),
(b'1000000000000000000000000000000000000000000000000000000000000000'),
(b'0000000000000000000000000000000000000000000000000000000000000001'),
(b'1010101010101010101010101010101010101010101010101010101010101010'),
(b'0101010101010101010101010101010101010101010101010101010101010101');;;;
RENAME TABLE `t1` TO `t1__2`;;;;
create table t1 (a bit);;;;
insert into t1 values (b'0'), (b'1'), (b'000'), (b'100'), (b'001');;;;
RENAME TABLE `t1` TO `t1__3`;;;;
create table t1 (a bit(2));;;;
insert into t1 values (b'00'), (b'01'), (b'10'), (b'100');;;;
alter table t1 add key (a);;;;
RENAME TABLE `t1` TO `t1__4`;;;;
create table t1 (a bit(7), b bit(9), key(a, b));;;;
insert into t1 values 
(94, 46), (31, 438), (61, 152), (78, 123), (88, 411), (122, 118), (0, 177),    
(75, 42), (108, 67), (79, 349), (59, 188), (68, 206), (49, 345), (118, 380),   
(111, 368), (94, 468), (56, 379), (77, 133), (29, 399), (9, 363), (23, 36),    
(116, 390), (119, 368), (87, 351), (123, 411), (24, 398), (34, 202), (28, 499),
(30, 83), (5, 178), (60, 343), (4, 245), (104, 280), (106, 446), (127, 403),   
(44, 307), (68, 454), (57, 135);;;;
set @@max_length_for_sort_data=0;;;;
RENAME TABLE `t1` TO `t1__5`;;;;
create table t1 (a int not null, b bit, c bit(9), key(a, b, c));;;;
insert into t1 values
(4, NULL, 1), (4, 0, 3), (2, 1, 4), (1, 1, 100), (4, 0, 23), (4, 0, 54),
(56, 0, 22), (4, 1, 100), (23, 0, 1), (4, 0, 34);;;;
RENAME TABLE `t1` TO `t1__6`;;;;
