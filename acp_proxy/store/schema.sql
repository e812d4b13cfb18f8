-- acp-proxy recordings schema. Numbered migrations, applied in order, each once; the
-- number reached is kept in schema_version. Never edit a released migration: add one.
-- Documented in docs/storage.md.

-- migration: 1
CREATE TABLE captures (
    id              INTEGER PRIMARY KEY,
    uid             TEXT NOT NULL UNIQUE,      -- stable id (spill files refer to it)
    transport       TEXT NOT NULL,             -- 'stdio', 'ws', 'ws-stdio', 'stdio-ws'
    agent_command   TEXT,                      -- JSON array of argv
    cwd             TEXT,
    upstream_url    TEXT,
    listen_url      TEXT,
    pid             INTEGER,                   -- the agent's pid (stdio)
    proxy_pid       INTEGER,
    started_at      TEXT NOT NULL,             -- ISO 8601 UTC wall time
    started_ns      INTEGER NOT NULL,          -- monotonic ns at start (t_ns is relative to it)
    ended_at        TEXT,
    ended_ns        INTEGER,
    exit_code       INTEGER,
    exit_signal     INTEGER,
    protocol_version INTEGER,
    client_info     TEXT,                      -- JSON: clientInfo (v1) / info (v2)
    agent_info      TEXT,                      -- JSON: agentInfo (v1) / info (v2)
    client_capabilities TEXT,
    agent_capabilities TEXT,
    proxy_version   TEXT NOT NULL,
    label           TEXT,
    message_count   INTEGER NOT NULL DEFAULT 0,
    lost_count      INTEGER NOT NULL DEFAULT 0  -- frames known lost (see events 'gap')
);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    capture_id      INTEGER NOT NULL REFERENCES captures(id),
    seq             INTEGER NOT NULL,          -- arrival order at the proxy, both directions
    direction       TEXT NOT NULL,             -- 'c2a' client→agent, 'a2c' agent→client
    t_ns            INTEGER NOT NULL,          -- monotonic ns since the capture started
    raw             BLOB NOT NULL,             -- exact bytes, without the '\n' terminator
    terminated      INTEGER NOT NULL,          -- 1 when a '\n' followed it (stdio)
    opcode          TEXT,                      -- 'text' / 'binary' (WebSocket), NULL (stdio)
    size            INTEGER NOT NULL,
    kind            TEXT NOT NULL,             -- request notification response error batch invalid
    method          TEXT,
    msg_id          TEXT,                      -- the id as JSON text: 1 and "1" differ
    session_id      TEXT,
    update_kind     TEXT,                      -- params.update.sessionUpdate
    tool_call_id    TEXT,
    terminal_id     TEXT,
    error_code      INTEGER,
    anomalies       TEXT,                      -- comma-separated, NULL when none
    request_seq     INTEGER,                   -- on a response: the seq of its request
    latency_ns      INTEGER,                   -- on a response: time since its request
    UNIQUE (capture_id, seq)
);

-- Entries of JSON-RPC batch frames (v2, docs/protocol.md §2.2); the frame itself is in messages.
CREATE TABLE batch_items (
    capture_id      INTEGER NOT NULL,
    seq             INTEGER NOT NULL,
    idx             INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    method          TEXT,
    msg_id          TEXT,
    session_id      TEXT,
    update_kind     TEXT,
    tool_call_id    TEXT,
    terminal_id     TEXT,
    error_code      INTEGER,
    request_seq     INTEGER,
    latency_ns      INTEGER,
    PRIMARY KEY (capture_id, seq, idx)
);

CREATE TABLE stderr (
    id              INTEGER PRIMARY KEY,
    capture_id      INTEGER NOT NULL REFERENCES captures(id),
    t_ns            INTEGER NOT NULL,
    data            BLOB NOT NULL              -- exact bytes as read from the agent's stderr
);

CREATE TABLE events (
    id              INTEGER PRIMARY KEY,
    capture_id      INTEGER NOT NULL REFERENCES captures(id),
    t_ns            INTEGER NOT NULL,
    kind            TEXT NOT NULL,             -- spawn exit signal eof close connect spill gap ...
    detail          TEXT                       -- JSON
);

CREATE INDEX stderr_capture ON stderr (capture_id);
CREATE INDEX events_capture ON events (capture_id);

-- A request with its response, latency in milliseconds.
CREATE VIEW requests AS
SELECT q.capture_id, q.seq, q.direction, q.method, q.msg_id, q.session_id,
       r.seq AS response_seq, r.kind AS outcome, r.error_code,
       r.latency_ns / 1e6 AS latency_ms
FROM messages q
LEFT JOIN messages r
  ON r.capture_id = q.capture_id AND r.request_seq = q.seq
WHERE q.kind = 'request';

-- ACP sessions seen in each capture.
CREATE VIEW sessions AS
SELECT capture_id, session_id, MIN(seq) AS first_seq, MAX(seq) AS last_seq,
       COUNT(*) AS messages,
       SUM(method = 'session/prompt' AND kind = 'request') AS prompts
FROM messages WHERE session_id IS NOT NULL
GROUP BY capture_id, session_id;

-- Every frame that carried a tool call id, in order.
CREATE VIEW tool_call_frames AS
SELECT capture_id, session_id, tool_call_id, seq, direction, method, update_kind, t_ns
FROM messages WHERE tool_call_id IS NOT NULL;

-- Text of frames, for ad-hoc queries (json_extract(text, '$.params...')).
CREATE VIEW frames AS
SELECT capture_id, seq, direction, t_ns / 1e6 AS t_ms, kind, method, msg_id, session_id,
       update_kind, anomalies, CAST(raw AS TEXT) AS text
FROM messages;

-- migration: 2
CREATE INDEX messages_request_seq ON messages (capture_id, request_seq)
  WHERE request_seq IS NOT NULL;

-- migration: 3
-- The recorder runs in its own process and may outlive the relay: who wrote a capture,
-- how far each stream got (so another recorder can carry on exactly), and how it ended.
ALTER TABLE captures ADD COLUMN proxy_start TEXT;          -- identity of the relaying process
ALTER TABLE captures ADD COLUMN recorder_pid INTEGER;
ALTER TABLE captures ADD COLUMN recorder_start TEXT;       -- identity of the recorder process
ALTER TABLE captures ADD COLUMN end_reason TEXT;           -- closed, proxy_gone, ...
ALTER TABLE captures ADD COLUMN finished_at TEXT;          -- the recorder wrote all it had
ALTER TABLE captures ADD COLUMN lost_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN c2a_position INTEGER NOT NULL DEFAULT 0;  -- bytes or messages
ALTER TABLE captures ADD COLUMN a2c_position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN stderr_position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN rseq INTEGER NOT NULL DEFAULT 0;          -- last record kept
ALTER TABLE captures ADD COLUMN journal TEXT;              -- the journal its records came in
ALTER TABLE captures ADD COLUMN journal_number INTEGER;    -- its number in that journal
CREATE INDEX captures_journal ON captures (journal, journal_number) WHERE journal IS NOT NULL;
-- How far each journal has been read into the database (docs/recording.md).
CREATE TABLE journals (
    name            TEXT PRIMARY KEY,
    position        INTEGER NOT NULL,          -- (segment << 40) | byte offset
    updated_at      TEXT NOT NULL
);
UPDATE captures SET finished_at = COALESCE(ended_at, started_at), end_reason = 'closed'
  WHERE ended_at IS NOT NULL;

-- migration: 4
-- Full-text search over frame text (acp-proxy search, acp-proxy ui). Contentless: the text
-- stays in messages.raw; frames_fts holds only the index, keyed by messages.id. It is filled
-- after the fact by the readers that search, in short transactions, never by the recorder
-- (docs/ui.md): search_index says how far it got.
CREATE VIRTUAL TABLE frames_fts USING fts5(
    text, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE search_index (
    name            TEXT PRIMARY KEY,
    upto            INTEGER NOT NULL           -- messages.id indexed up to (inclusive)
);
INSERT INTO search_index VALUES ('frames', 0);

-- migration: 5
-- messages is rebuilt with raw as its last column, ids kept (frames_fts is keyed by them).
-- SQLite keeps a zeroblob at the end of a row without building it: a huge frame, written
-- into its row piece by piece, then costs no second copy of itself (docs/performance.md).
-- The views over messages are dropped while it is renamed, then made again as they were.
CREATE TABLE messages_v5 (
    id              INTEGER PRIMARY KEY,
    capture_id      INTEGER NOT NULL REFERENCES captures(id),
    seq             INTEGER NOT NULL,
    direction       TEXT NOT NULL,
    t_ns            INTEGER NOT NULL,
    terminated      INTEGER NOT NULL,
    opcode          TEXT,
    size            INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    method          TEXT,
    msg_id          TEXT,
    session_id      TEXT,
    update_kind     TEXT,
    tool_call_id    TEXT,
    terminal_id     TEXT,
    error_code      INTEGER,
    anomalies       TEXT,
    request_seq     INTEGER,
    latency_ns      INTEGER,
    raw             BLOB NOT NULL,
    UNIQUE (capture_id, seq)
);
INSERT INTO messages_v5 (id, capture_id, seq, direction, t_ns, terminated, opcode, size, kind,
                         method, msg_id, session_id, update_kind, tool_call_id, terminal_id,
                         error_code, anomalies, request_seq, latency_ns, raw)
SELECT id, capture_id, seq, direction, t_ns, terminated, opcode, size, kind, method, msg_id,
       session_id, update_kind, tool_call_id, terminal_id, error_code, anomalies, request_seq,
       latency_ns, raw
FROM messages ORDER BY id;
DROP VIEW requests;
DROP VIEW sessions;
DROP VIEW tool_call_frames;
DROP VIEW frames;
DROP TABLE messages;
ALTER TABLE messages_v5 RENAME TO messages;
CREATE INDEX messages_request_seq ON messages (capture_id, request_seq)
  WHERE request_seq IS NOT NULL;
CREATE VIEW requests AS
SELECT q.capture_id, q.seq, q.direction, q.method, q.msg_id, q.session_id,
       r.seq AS response_seq, r.kind AS outcome, r.error_code,
       r.latency_ns / 1e6 AS latency_ms
FROM messages q
LEFT JOIN messages r
  ON r.capture_id = q.capture_id AND r.request_seq = q.seq
WHERE q.kind = 'request';
CREATE VIEW sessions AS
SELECT capture_id, session_id, MIN(seq) AS first_seq, MAX(seq) AS last_seq,
       COUNT(*) AS messages,
       SUM(method = 'session/prompt' AND kind = 'request') AS prompts
FROM messages WHERE session_id IS NOT NULL
GROUP BY capture_id, session_id;
CREATE VIEW tool_call_frames AS
SELECT capture_id, session_id, tool_call_id, seq, direction, method, update_kind, t_ns
FROM messages WHERE tool_call_id IS NOT NULL;
CREATE VIEW frames AS
SELECT capture_id, seq, direction, t_ns / 1e6 AS t_ms, kind, method, msg_id, session_id,
       update_kind, anomalies, CAST(raw AS TEXT) AS text
FROM messages;

-- migration: 6
-- Full-text search over the agent's stderr and the capture events too: where the cause of a
-- failure usually is (docs/ui.md). notes_fts is contentless like frames_fts, keyed by
-- 2 * stderr.id for stderr and 2 * events.id + 1 for events; search_index says how far each
-- source was indexed.
CREATE VIRTUAL TABLE notes_fts USING fts5(
    text, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO search_index VALUES ('stderr', 0);
INSERT INTO search_index VALUES ('events', 0);

-- migration: 7
-- The search index moves to a file of its own beside the database, <db>.search
-- (acp_proxy/store/index.py), so filling it never takes the database's write lock: the
-- recorder's follower fills it as frames are stored. The tables it had here go; the first
-- search after the upgrade indexes the database again into the new file.
DROP TABLE IF EXISTS frames_fts;
DROP TABLE IF EXISTS notes_fts;
DROP TABLE IF EXISTS search_index;

-- migration: 8
-- Which database this is: a random token made once. The search index beside it
-- (<db>.search) keeps the token of the database it indexes, so an index left by a
-- database deleted and made again, or by another copied over it, is not taken for this
-- one's (its rows would name other frames).
CREATE TABLE IF NOT EXISTS identity (token TEXT NOT NULL);
INSERT INTO identity SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM identity);
