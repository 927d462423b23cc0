CREATE TABLE t (name TEXT, score INTEGER);
INSERT INTO t VALUES ('ada', 92), ('brian', 85), ('grace', 97);
SELECT name, score FROM t ORDER BY score DESC;
