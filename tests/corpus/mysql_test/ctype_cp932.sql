-- Extracted from mysql-test/t/ctype_cp932.test (hans511002/erymysql@8405b16bc793dd9586d452d7da3632f27666ace2, a fork carrying MariaDB Server 10.1.25's suite); licence GPL-2.0.
-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;
-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).
-- kept: 15 statements; tables renamed: 1; dropped: not kept (kind): 6.
-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.
DELIMITER ;;;;
SET NAMES latin1;;;;
SET SESSION sql_mode = '';;;;
SET @old_character_set_client= @@character_set_client;;;;
SET @old_character_set_connection= @@character_set_connection;;;;
SET @old_character_set_results= @@character_set_results;;;;
SET character_set_client= 'utf8';;;;
SET character_set_connection= 'utf8';;;;
SET character_set_results= 'utf8';;;;
CREATE TABLE t1 (a VARCHAR(10) COLLATE cp932_bin);;;;
INSERT INTO t1 VALUES('ｶｶ');;;;
ALTER TABLE t1 MODIFY a VARCHAR(100) COLLATE sjis_bin;;;;
RENAME TABLE `t1` TO `t1__1`;;;;
SET @@character_set_client= @old_character_set_client;;;;
SET @@character_set_connection= @old_character_set_connection;;;;
SET @@character_set_results= @old_character_set_results;;;;
