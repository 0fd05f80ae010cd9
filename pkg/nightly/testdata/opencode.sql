-- opencode's database (the tables harvest reads), as of 2026-11-24.
-- Loaded by TestHarvestOpencode. Times are milliseconds since the epoch.
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, directory TEXT, title TEXT, time_created INTEGER, time_updated INTEGER, agent TEXT, metadata TEXT);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);

-- A root session begun before the lookback and resumed inside it.
INSERT INTO session VALUES ('o1', 'p', NULL, '/home/dev/webapp', 'resize', 1795165200000, 1795514400000, 'build', '{"gitBranch":"perf"}');
INSERT INTO message VALUES ('m1', 'o1', 1795165200000, 1795165200000, '{"role":"user","time":{"created":1}}');
INSERT INTO part VALUES ('a1', 'm1', 'o1', 1795165200000, 1795165200000, '{"type":"text","text":"Speed up the image resize; my OpenAI key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123456"}');
INSERT INTO part VALUES ('a2', 'm1', 'o1', 1795165200000, 1795165200000, '{"type":"text","synthetic":true,"text":"SYNTHETIC-CONTEXT: the file resize.go holds"}');
INSERT INTO message VALUES ('m2', 'o1', 1795165210000, 1795165210000, '{"role":"assistant","modelID":"x"}');
INSERT INTO part VALUES ('b1', 'm2', 'o1', 1795165210000, 1795165210000, '{"type":"reasoning","text":"REASONING-TEXT"}');
INSERT INTO part VALUES ('b2', 'm2', 'o1', 1795165211000, 1795165211000, '{"type":"tool","tool":"bash","state":{"input":{"command":"TOOL-ARGUMENT"},"output":"TOOL-RESULT"}}');
INSERT INTO part VALUES ('b3', 'm2', 'o1', 1795165212000, 1795165212000, '{"type":"text","text":"Switched to a worker pool."}');
INSERT INTO message VALUES ('m3', 'o1', 1795514340000, 1795514340000, '{"role":"user"}');
INSERT INTO part VALUES ('c1', 'm3', 'o1', 1795514340000, 1795514340000, '{"type":"text","text":"thanks, perfect"}');
INSERT INTO part VALUES ('c2', 'm3', 'o1', 1795514340000, 1795514340000, '{"type":"text","ignored":true,"text":"IGNORED-PART"}');
INSERT INTO message VALUES ('m4', 'o1', 1795514400000, 1795514400000, '{"role":"assistant"}');
INSERT INTO part VALUES ('d1', 'm4', 'o1', 1795514400000, 1795514400000, '{"type":"text","text":"Done."}');
-- A sub-agent's task: a child of o1.
INSERT INTO session VALUES ('o2', 'p', 'o1', '/home/dev/webapp', 'subtask', 1795510800000, 1795511400000, 'general', NULL);
INSERT INTO message VALUES ('m5', 'o2', 1795510800000, 1795510800000, '{"role":"user"}');
INSERT INTO part VALUES ('e1', 'm5', 'o2', 1795510800000, 1795510800000, '{"type":"text","text":"SUBAGENT-PROMPT"}');
-- Another project.
INSERT INTO session VALUES ('o3', 'q', NULL, '/home/dev/other', 't', 1795510800000, 1795511400000, 'build', NULL);
-- A message that is not JSON: the session is left out whole.
INSERT INTO session VALUES ('o4', 'p', NULL, '/home/dev/webapp', 't', 1795507200000, 1795507800000, 'build', NULL);
INSERT INTO message VALUES ('m6', 'o4', 1795507200000, 1795507200000, '{"role":');
INSERT INTO part VALUES ('f1', 'm6', 'o4', 1795507200000, 1795507200000, '{"type":"text","text":"DAMAGED-SESSION"}');
