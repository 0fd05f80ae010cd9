-- The Copilot CLI's session store (the tables harvest reads), as of
-- 2026-11-24. Loaded by TestHarvestCopilotCLI into a WAL-mode database.
CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, repository TEXT, branch TEXT, summary TEXT, created_at TEXT, updated_at TEXT, host_type TEXT);
CREATE TABLE turns (id INTEGER PRIMARY KEY, session_id TEXT, turn_index INTEGER, user_message TEXT, assistant_response TEXT, timestamp TEXT);
CREATE TABLE session_files (session_id TEXT, file_path TEXT, tool_name TEXT);

-- Begun before the lookback, resumed inside it: read whole.
INSERT INTO sessions VALUES ('c1', '/home/dev/webapp', 'dev/webapp', 'main', 'CI bump', '2026-11-20 08:00:00', '2026-11-24 09:00:00', 'cli');
INSERT INTO turns VALUES (1, 'c1', 0, 'Bump the Go version in CI; the deploy key is AKIAIOSFODNN7EXAMPLE', 'Updated .github/workflows/ci.yml.', '2026-11-20 08:00:00');
INSERT INTO turns VALUES (2, 'c1', 2, 'still failing on arm64', 'Pinned the arm64 runner image.', '2026-11-24 09:00:00');
INSERT INTO turns VALUES (3, 'c1', 1, '/clear', NULL, '2026-11-20 08:10:00');
INSERT INTO session_files VALUES ('c1', '/home/dev/webapp/.github/workflows/ci.yml', 'edit');
INSERT INTO session_files VALUES ('c1', '/home/dev/webapp/go.mod', 'view');
-- Another project.
INSERT INTO sessions VALUES ('c2', '/home/dev/other', NULL, NULL, NULL, '2026-11-24 07:00:00', '2026-11-24 07:30:00', 'cli');
INSERT INTO turns VALUES (4, 'c2', 0, 'OTHER-PROJECT prompt', 'ok', '2026-11-24 07:00:00');
-- Ended before the lookback.
INSERT INTO sessions VALUES ('c3', '/home/dev/webapp', NULL, 'main', NULL, '2026-11-19 07:00:00', '2026-11-19T07:30:00Z', 'cli');
INSERT INTO turns VALUES (5, 'c3', 0, 'OLD-SESSION prompt', 'ok', '2026-11-19 07:00:00');
-- An engine call (copilot -p with a miner prompt): headless.
INSERT INTO sessions VALUES ('c4', '/home/dev/webapp', NULL, 'main', NULL, '2026-11-24 10:00:00', '2026-11-24 10:00:01', 'cli');
INSERT INTO turns VALUES (6, 'c4', 0, 'You are a task miner. Return ONLY a JSON array.', '[]', '2026-11-24 10:00:00');
-- No working directory: it cannot be scoped to a project.
INSERT INTO sessions VALUES ('c5', NULL, NULL, NULL, NULL, '2026-11-24 10:00:00', '2026-11-24 10:30:00', 'cli');
