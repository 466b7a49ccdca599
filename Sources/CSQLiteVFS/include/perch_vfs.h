#ifndef PERCH_VFS_H
#define PERCH_VFS_H

/// Registers the VFS "perch" (once; later calls return the first result): the platform's default
/// VFS with the write-ahead log's appends gathered into one write per commit. See perch_vfs.c.
/// Returns an SQLite result code.
int perch_vfs_register(void);

/// The name to pass to sqlite3_open_v2.
#define PERCH_VFS_NAME "perch"

typedef struct sqlite3 sqlite3;

/// How many writes the "perch" VFS made to the write-ahead log of `db`'s main database, how many
/// SQLite asked for, and how many rewrote bytes already in the file (written through) (tests).
/// SQLITE_NOTFOUND when the log is not open through this VFS.
int perch_vfs_log_writes(sqlite3 *db, long long *issued, long long *requested, long long *rewrites);

#endif
