/// The database schema, as an ordered list of migrations. `PRAGMA user_version` holds how many
/// have run; a database with a higher version was written by a newer Perch and is refused.
enum Schema {
    /// Marks a Perch database (`PRAGMA application_id`), so another SQLite file is never written to.
    static let applicationID: Int32 = 0x5045_5243  // "PERC"

    /// The page size of a new file. A send touches eight to ten b-trees, and a commit writes a
    /// whole page of each to the log (11 pages is typical): at 2 KiB it writes half the bytes of
    /// SQLite's default 4 KiB and the checkpoint copies half as many back, while a message's row and
    /// its event still fit one page (a table row spills at about 2,000 bytes).
    static let pageSize = 2_048

    static let migrations: [String] = [
        // 1: users, groups, messages, mentions, the event log and consumer cursors.
        """
        CREATE TABLE users (
            uid TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            role TEXT NOT NULL,
            metadata TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE groups (
            guid TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            owner TEXT NOT NULL,
            metadata TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE members (
            guid TEXT NOT NULL,
            uid TEXT NOT NULL,
            scope TEXT NOT NULL,
            joined_at INTEGER NOT NULL,
            PRIMARY KEY (guid, uid)
        ) WITHOUT ROWID;
        CREATE INDEX members_by_user ON members (uid, guid);
        CREATE TABLE bans (
            guid TEXT NOT NULL,
            uid TEXT NOT NULL,
            banned_at INTEGER NOT NULL,
            PRIMARY KEY (guid, uid)
        ) WITHOUT ROWID;
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            muid TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            sender TEXT NOT NULL,
            receiver_type TEXT NOT NULL,
            receiver TEXT NOT NULL,
            type TEXT NOT NULL,
            category TEXT NOT NULL,
            text TEXT,
            data TEXT,
            attachments TEXT,
            metadata TEXT,
            tags TEXT,
            mentions TEXT,
            parent_id INTEGER NOT NULL,
            quoted_id INTEGER NOT NULL,
            reply_count INTEGER NOT NULL,
            sent_at INTEGER NOT NULL,
            edited_at INTEGER NOT NULL,
            edited_by TEXT NOT NULL,
            deleted_at INTEGER NOT NULL,
            deleted_by TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            pinned_at INTEGER NOT NULL,
            pinned_by TEXT NOT NULL
        );
        CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
        CREATE INDEX messages_top_level ON messages (conversation_id, id) WHERE parent_id = 0;
        CREATE INDEX messages_by_thread ON messages (parent_id, id) WHERE parent_id != 0;
        CREATE INDEX messages_by_quote ON messages (quoted_id) WHERE quoted_id != 0;
        CREATE UNIQUE INDEX messages_by_muid ON messages (sender, muid) WHERE muid != '';
        CREATE TABLE mentions (
            uid TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            PRIMARY KEY (uid, message_id)
        ) WITHOUT ROWID;
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            audience_group TEXT,
            excluded_session TEXT,
            payload TEXT NOT NULL
        );
        CREATE INDEX events_by_group ON events (audience_group, seq) WHERE audience_group IS NOT NULL;
        CREATE TABLE event_users (
            uid TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (uid, seq)
        ) WITHOUT ROWID;
        CREATE TABLE cursors (
            consumer TEXT PRIMARY KEY,
            seq INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: pins (on messages) and saves.
        """
        CREATE INDEX messages_pinned ON messages (conversation_id, pinned_at, id) WHERE pinned_at != 0;
        CREATE TABLE saves (
            uid TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            saved_at INTEGER NOT NULL,
            PRIMARY KEY (uid, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX saves_by_time ON saves (uid, saved_at, message_id);
        CREATE INDEX saves_by_message ON saves (message_id);
        """,
        // 3: thread subscriptions (the threads inbox), notification preferences and the outbox.
        """
        ALTER TABLE messages ADD COLUMN last_reply_at INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX messages_threads ON messages (conversation_id, last_reply_at, id) WHERE last_reply_at != 0;
        CREATE TABLE thread_subscriptions (
            uid TEXT NOT NULL,
            parent_id INTEGER NOT NULL,
            conversation_id TEXT NOT NULL,
            guid TEXT,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (uid, parent_id)
        ) WITHOUT ROWID;
        CREATE INDEX subscriptions_inbox ON thread_subscriptions (uid, updated_at, parent_id);
        CREATE INDEX subscriptions_inbox_by_conversation
            ON thread_subscriptions (uid, conversation_id, updated_at, parent_id);
        CREATE INDEX subscriptions_by_thread ON thread_subscriptions (parent_id);
        CREATE TABLE notification_preferences (
            uid TEXT PRIMARY KEY,
            preferences TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            uid TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            reason TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX outbox_by_user ON outbox (uid, seq);
        """,
        // 4: the bot host's per-bot key-value store for plugins.
        """
        CREATE TABLE plugin_state (
            bot TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (bot, key)
        ) WITHOUT ROWID;
        """,
        // 5: user auth tokens of the HTTP API, stored as SHA-256 hashes only.
        """
        CREATE TABLE auth_tokens (
            hash TEXT PRIMARY KEY,
            uid TEXT NOT NULL,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 6: uploaded media and the messages that carry them (who may download a file).
        """
        CREATE TABLE media (
            id TEXT PRIMARY KEY,
            uploader TEXT NOT NULL,
            name TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            extension TEXT NOT NULL,
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE media_refs (
            media_id TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            PRIMARY KEY (media_id, message_id)
        ) WITHOUT ROWID;
        """,
        // 7: messages, events and the outbox without AUTOINCREMENT. No message row is ever deleted,
        // and the retention (9) never deletes the newest event or outbox row, so a new row's id (the
        // largest plus one) is never one used before; AUTOINCREMENT only added an `sqlite_sequence`
        // lookup and update per insert and a page to every commit.
        // Rebuilt as SQLite's documented way to change a table: same columns in the same order.
        """
        CREATE TABLE messages_new (
            id INTEGER PRIMARY KEY,
            muid TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            sender TEXT NOT NULL,
            receiver_type TEXT NOT NULL,
            receiver TEXT NOT NULL,
            type TEXT NOT NULL,
            category TEXT NOT NULL,
            text TEXT,
            data TEXT,
            attachments TEXT,
            metadata TEXT,
            tags TEXT,
            mentions TEXT,
            parent_id INTEGER NOT NULL,
            quoted_id INTEGER NOT NULL,
            reply_count INTEGER NOT NULL,
            sent_at INTEGER NOT NULL,
            edited_at INTEGER NOT NULL,
            edited_by TEXT NOT NULL,
            deleted_at INTEGER NOT NULL,
            deleted_by TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            pinned_at INTEGER NOT NULL,
            pinned_by TEXT NOT NULL,
            last_reply_at INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO messages_new SELECT * FROM messages;
        DROP TABLE messages;
        ALTER TABLE messages_new RENAME TO messages;
        CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
        CREATE INDEX messages_top_level ON messages (conversation_id, id) WHERE parent_id = 0;
        CREATE INDEX messages_by_thread ON messages (parent_id, id) WHERE parent_id != 0;
        CREATE INDEX messages_by_quote ON messages (quoted_id) WHERE quoted_id != 0;
        CREATE UNIQUE INDEX messages_by_muid ON messages (sender, muid) WHERE muid != '';
        CREATE INDEX messages_pinned ON messages (conversation_id, pinned_at, id) WHERE pinned_at != 0;
        CREATE INDEX messages_threads ON messages (conversation_id, last_reply_at, id) WHERE last_reply_at != 0;
        CREATE TABLE events_new (
            seq INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            audience_group TEXT,
            excluded_session TEXT,
            payload TEXT NOT NULL
        );
        INSERT INTO events_new SELECT * FROM events;
        DROP TABLE events;
        ALTER TABLE events_new RENAME TO events;
        CREATE INDEX events_by_group ON events (audience_group, seq) WHERE audience_group IS NOT NULL;
        CREATE TABLE outbox_new (
            seq INTEGER PRIMARY KEY,
            uid TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            reason TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        INSERT INTO outbox_new SELECT * FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_new RENAME TO outbox;
        CREATE INDEX outbox_by_user ON outbox (uid, seq);
        DELETE FROM sqlite_sequence;
        """,
        // 8: the memberships config.yaml's seed last applied, with their scope: a seed is applied
        // again only when it changes, so a leave, a kick or a scope change made since stays.
        """
        CREATE TABLE seeded_members (
            guid TEXT NOT NULL,
            uid TEXT NOT NULL,
            scope TEXT NOT NULL,
            PRIMARY KEY (guid, uid)
        ) WITHOUT ROWID;
        """,
        // 9: the event log's retention. The pruner writes a mark at every pass (the newest event
        // and outbox row at that time), so "older than the retention" is a range of sequences
        // without a time on every row; `log_starts` holds the last sequence pruned from each log
        // (a reader after an earlier one is told what it missed); a cursor says when it was last
        // saved, so a consumer gone for longer than the retention no longer holds the log back.
        """
        CREATE TABLE log_marks (
            at INTEGER PRIMARY KEY,
            events INTEGER NOT NULL,
            outbox INTEGER NOT NULL
        );
        CREATE TABLE log_starts (
            log TEXT PRIMARY KEY,
            pruned_through INTEGER NOT NULL
        ) WITHOUT ROWID;
        ALTER TABLE cursors ADD COLUMN saved_at INTEGER NOT NULL DEFAULT 0;
        """,
        // 10: every message in one conversation index, not two. `messages_by_conversation` held
        // every message and `messages_top_level` the top-level ones again, so a top-level send
        // wrote both. Now the top level and the thread replies each have their own, and a whole
        // conversation's page merges the two (`SQLiteTransaction.pageSQL`): a page still reads
        // O(limit) rows, and a send changes one b-tree less.
        """
        DROP INDEX messages_by_conversation;
        CREATE INDEX messages_replies_by_conversation ON messages (conversation_id, id) WHERE parent_id != 0;
        """,
        // 11: muted conversations (CometChat's `muteConversations`): a user's, and a conversation's
        // for the routing of each send.
        """
        CREATE TABLE muted_conversations (
            uid TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            receiver_type TEXT NOT NULL,
            receiver TEXT NOT NULL,
            until INTEGER NOT NULL,
            PRIMARY KEY (uid, conversation_id)
        ) WITHOUT ROWID;
        CREATE INDEX muted_by_conversation ON muted_conversations (conversation_id, uid, until);
        """,
        // 12: reactions (CometChat's `addReaction`): one row per user and reaction of a message,
        // read per message (a page's counts, a message's list), in the order added (`id`).
        """
        CREATE TABLE reactions (
            id INTEGER PRIMARY KEY,
            message_id INTEGER NOT NULL,
            reaction TEXT NOT NULL,
            uid TEXT NOT NULL,
            reacted_at INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX reactions_by_message ON reactions (message_id, reaction, uid);
        """,
        // 13: notification delivery. Read state: a row's own `read_at` (marked one by one) and a
        // read cursor per user ("mark all read": one row, and the unread count reads only the rows
        // after it). The adding of a column with a constant default rewrites nothing, and the
        // routing's inserts do not name it. Delivery consumers (webhooks) keep their own cursor
        // over the outbox, apart from the event log's `cursors`, and the rows they gave up on.
        """
        ALTER TABLE outbox ADD COLUMN read_at INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE notification_reads (
            uid TEXT PRIMARY KEY,
            through INTEGER NOT NULL,
            at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE delivery_cursors (
            consumer TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            saved_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE dead_letters (
            id INTEGER PRIMARY KEY,
            consumer TEXT NOT NULL,
            outbox_seq INTEGER NOT NULL,
            uid TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            reason TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            last_error TEXT NOT NULL,
            at INTEGER NOT NULL
        );
        """,
        // 14: explicit unsubscriptions from threads: the user hears nothing of the thread's replies
        // until they reply or are mentioned there (or subscribe again), whatever their
        // conversation-level preference. Read per reply by its thread.
        """
        CREATE TABLE thread_mutes (
            parent_id INTEGER NOT NULL,
            uid TEXT NOT NULL,
            PRIMARY KEY (parent_id, uid)
        ) WITHOUT ROWID;
        """,
        // 15: plugin storage with JSON values and expiry. A row written as JSON says so
        // (`is_json`); the rows written before, and by the string API, stay plain text. An expiry
        // of 0 is none.
        """
        ALTER TABLE plugin_state ADD COLUMN is_json INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE plugin_state ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
        """,
    ]
}
