/*
 * The store against its limit (BENCHMARKS.md, "The store against plain SQLite"): plain SQLite
 * doing the writes of a Perch send and nothing else. It copies the schema of a database Perch just
 * filled (same tables, same indexes),
 * opens a fresh file with the same pragmas (page size, WAL, synchronous NORMAL), and inserts per
 * "send" the rows a send wrote there on average (one message, one event with a payload of the same
 * size, the outbox rows), `batch` sends per transaction as Perch's group commit does with 64
 * senders.
 *
 *   insert PERCH_DATABASE NEW_DATABASE SENDS BATCH   -> prints {"sends_per_s": ...}
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: insert PERCH_DATABASE NEW_DATABASE SENDS BATCH\n");
        return 64;
    }
    int sends = atoi(argv[3]), batch = atoi(argv[4]);
    sqlite3 *source, *db;
    check(sqlite3_open_v2(argv[1], &source, SQLITE_OPEN_READONLY, NULL), source, "open source");
    check(sqlite3_open(argv[2], &db), db, "open target");
    /* The page size of Perch's file, set before the first write. */
    sqlite3_stmt *size;
    check(sqlite3_prepare_v2(source, "PRAGMA page_size", -1, &size, NULL), source, "page size");
    check(sqlite3_step(size), source, "page size");
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA page_size = %d", sqlite3_column_int(size, 0));
    sqlite3_finalize(size);
    check(sqlite3_exec(db, pragma, NULL, NULL, NULL), db, "page size");
    check(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF",
                       NULL, NULL, NULL), db, "pragmas");
    /* The schema, as Perch created it. */
    sqlite3_stmt *schema;
    check(sqlite3_prepare_v2(source,
                             "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                             "ORDER BY type = 'index', rowid", -1, &schema, NULL), source, "schema");
    while (sqlite3_step(schema) == SQLITE_ROW)
        check(sqlite3_exec(db, (const char *)sqlite3_column_text(schema, 0), NULL, NULL, NULL), db, "create");
    sqlite3_finalize(schema);
    /* What one send wrote there on average, and a real event payload. */
    sqlite3_stmt *facts;
    check(sqlite3_prepare_v2(source,
                             "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM outbox), "
                             "(SELECT payload FROM events WHERE name = 'onTextMessageReceived' ORDER BY seq DESC LIMIT 1)",
                             -1, &facts, NULL), source, "facts");
    check(sqlite3_step(facts), source, "facts");
    if (sqlite3_column_int64(facts, 0) == 0 || sqlite3_column_type(facts, 2) == SQLITE_NULL) {
        fprintf(stderr, "%s holds no text message to copy the rows of; fill it first\n", argv[1]);
        return 1;
    }
    double outboxPerSend = (double)sqlite3_column_int64(facts, 1) / (double)sqlite3_column_int64(facts, 0);
    char *payload = strdup((const char *)sqlite3_column_text(facts, 2));
    sqlite3_finalize(facts);
    sqlite3_close(source);

    sqlite3_stmt *message, *event, *outbox, *begin, *commit;
    check(sqlite3_prepare_v2(db,
                             "INSERT INTO messages (muid, conversation_id, sender, receiver_type, receiver, type, "
                             "category, text, attachments, tags, mentions, parent_id, quoted_id, reply_count, sent_at, "
                             "edited_at, edited_by, deleted_at, deleted_by, updated_at, pinned_at, pinned_by) "
                             "VALUES ('', 'group_g', 'a', 'group', 'g', 'text', 'message', ?, '[]', '[]', '[]', 0, 0, 0, "
                             "?, 0, '', 0, '', ?, 0, '')", -1, &message, NULL), db, "message");
    check(sqlite3_prepare_v2(db, "INSERT INTO events (name, audience_group, excluded_session, payload) "
                                 "VALUES ('onTextMessageReceived', 'g', NULL, ?)", -1, &event, NULL), db, "event");
    check(sqlite3_prepare_v2(db, "INSERT INTO outbox (uid, message_id, reason, created_at) VALUES (?, ?, 'message', ?)",
                             -1, &outbox, NULL), db, "outbox");
    check(sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL), db, "begin");
    check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL), db, "commit");
    char text[64], uid[16];
    double owed = 0;
    double started = now();
    for (int i = 0; i < sends; i++) {
        if (i % batch == 0) {
            check(sqlite3_step(begin), db, "begin");
            sqlite3_reset(begin);
        }
        snprintf(text, sizeof text, "message %d", i);
        sqlite3_bind_text(message, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(message, 2, 1700000000 + i);
        sqlite3_bind_int64(message, 3, 1700000000 + i);
        check(sqlite3_step(message), db, "insert message");
        sqlite3_reset(message);
        sqlite3_int64 id = sqlite3_last_insert_rowid(db);
        sqlite3_bind_text(event, 1, payload, -1, SQLITE_STATIC);
        check(sqlite3_step(event), db, "insert event");
        sqlite3_reset(event);
        for (owed += outboxPerSend; owed >= 1; owed -= 1) {
            snprintf(uid, sizeof uid, "u%d", (int)owed);
            sqlite3_bind_text(outbox, 1, uid, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(outbox, 2, id);
            sqlite3_bind_int64(outbox, 3, 1700000000 + i);
            check(sqlite3_step(outbox), db, "insert outbox");
            sqlite3_reset(outbox);
        }
        if (i % batch == batch - 1 || i == sends - 1) {
            check(sqlite3_step(commit), db, "commit");
            sqlite3_reset(commit);
        }
    }
    double seconds = now() - started;
    printf("{\"scenario\":\"sqlite-limit\",\"sends\":%d,\"batch\":%d,\"outbox_rows_per_send\":%.2f,"
           "\"payload_bytes\":%zu,\"sends_per_s\":%.0f}\n", sends, batch, outboxPerSend, strlen(payload),
           sends / seconds);
    sqlite3_close(db);
    free(payload);
    return 0;
}
