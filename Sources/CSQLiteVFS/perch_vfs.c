// The VFS "perch": SQLite's default VFS, except that appends to a write-ahead log are gathered and
// written with one write(2) per commit instead of two per page.
//
// SQLite writes each WAL frame as two writes, its 24-byte header and its page, so a commit that
// changes eight pages costs sixteen system calls, each straddling two file pages (a frame is a
// page and its header: 4,120 bytes at 4 KiB pages). Here the writes that extend a log collect in a buffer, which goes to the file:
//   - right after the page of a commit frame (its header carries the database size, bytes 4..7),
//     inside that xWrite, so a failure fails the commit exactly as an unbuffered write would, and
//     the commit returns only after its bytes are in the file (a kill -9 loses nothing
//     acknowledged);
//   - before anything else touches the log: a read of buffered bytes, a sync, the size, a
//     truncate, a file control, closing it, a write that does not extend the buffer, and the
//     database's xShmBarrier (which SQLite calls before it publishes a new log header to readers).
//     Readers see a commit only through that header, so they never look for frames still in the
//     buffer.
// A write to bytes the log already holds (SQLite rewrites the headers of a transaction's frames
// after its commit frame when that transaction overwrote a spilled frame) goes straight to the
// file, so its failure fails the commit too. Frames of an uncommitted transaction may sit in the
// buffer; they are not part of the database until their commit frame, exactly as frames in the
// file would not be. Every other file, and every other method, goes straight to the default VFS.

#include "perch_vfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

// The unix VFS writes at most 128 KiB - 1 bytes per call (it masks the length to 17 bits: SQLite
// itself never asks for more than a page), so a buffer is written before it grows past that.
enum { FRAME_HEADER = 24, BUFFER_CAPACITY = 120 * 1024 };

typedef struct PerchFile PerchFile;
struct PerchFile {
    sqlite3_file base;
    sqlite3_file *real;     // the default VFS's file, allocated right after this struct
    int isWal;
    PerchFile *wal;         // a database file: its connection's open log (for xShmBarrier)
    PerchFile *database;    // a log: the database file it belongs to
    unsigned char *buffer;  // a log: bytes not yet written, for offsets [start, start + length)
    int length;
    sqlite3_int64 start;
    int commitPage;         // a log: the next write is the page of a commit frame
    sqlite3_int64 end;      // a log: the end of what this handle wrote to the current log
    long long issued;       // a log: writes made to the file, and writes SQLite asked for
    long long requested;
    long long rewrites;     // a log: writes to bytes already in the file, written through
};

static sqlite3_vfs *realVfs;
static sqlite3_vfs perchVfs;
static sqlite3_io_methods perchMethods;

static int realWrite(PerchFile *p, const void *data, int amount, sqlite3_int64 offset) {
    p->issued += 1;
    return p->real->pMethods->xWrite(p->real, data, amount, offset);
}

static int flush(PerchFile *p) {
    if (p->length == 0) return SQLITE_OK;
    int length = p->length;
    p->length = 0;
    return realWrite(p, p->buffer, length, p->start);
}

static int perchClose(sqlite3_file *file) {
    PerchFile *p = (PerchFile *)file;
    int rc = flush(p);
    if (p->database) p->database->wal = NULL;
    if (p->wal) p->wal->database = NULL;
    sqlite3_free(p->buffer);
    p->buffer = NULL;
    int closed = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
    return rc != SQLITE_OK ? rc : closed;
}

static int perchRead(sqlite3_file *file, void *data, int amount, sqlite3_int64 offset) {
    PerchFile *p = (PerchFile *)file;
    if (p->length > 0 && offset < p->start + p->length && offset + amount > p->start) {
        int rc = flush(p);
        if (rc != SQLITE_OK) return rc;
    }
    return p->real->pMethods->xRead(p->real, data, amount, offset);
}

static int perchWrite(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    PerchFile *p = (PerchFile *)file;
    if (!p->isWal) return p->real->pMethods->xWrite(p->real, data, amount, offset);
    p->requested += 1;
    int commit = p->commitPage;
    p->commitPage = 0;
    if (amount == FRAME_HEADER) {
        const unsigned char *header = data;
        p->commitPage = (header[4] | header[5] | header[6] | header[7]) != 0;
    }
    // The log's 32-byte header at its start: SQLite starts the log over.
    if (offset == 0 && amount == 32) p->end = 0;
    if (p->length > 0 && offset >= p->start && offset + amount <= p->start + p->length) {
        // Rewrites bytes still in the buffer (a frame of the open transaction).
        memcpy(p->buffer + (offset - p->start), data, (size_t)amount);
        return commit ? flush(p) : SQLITE_OK;
    }
    int rc = SQLITE_OK;
    if (offset < p->end) {
        // Rewrites bytes already in the file: written through, its failure reported here.
        rc = flush(p);
        if (rc != SQLITE_OK) return rc;
        if (offset + amount > p->end) p->end = offset + amount;
        p->rewrites += 1;
        return realWrite(p, data, amount, offset);
    }
    if (p->length > 0 && offset == p->start + p->length && p->length + amount <= BUFFER_CAPACITY) {
        memcpy(p->buffer + p->length, data, (size_t)amount);
        p->length += amount;
    } else {
        rc = flush(p);
        if (rc != SQLITE_OK) return rc;
        p->end = offset + amount;
        if (amount > BUFFER_CAPACITY) return realWrite(p, data, amount, offset);
        if (!p->buffer) {
            p->buffer = sqlite3_malloc(BUFFER_CAPACITY);
            if (!p->buffer) return realWrite(p, data, amount, offset);
        }
        memcpy(p->buffer, data, (size_t)amount);
        p->start = offset;
        p->length = amount;
    }
    if (p->start + p->length > p->end) p->end = p->start + p->length;
    return commit ? flush(p) : SQLITE_OK;
}

static int perchTruncate(sqlite3_file *file, sqlite3_int64 size) {
    PerchFile *p = (PerchFile *)file;
    int rc = flush(p);
    if (rc != SQLITE_OK) return rc;
    if (p->end > size) p->end = size;
    return p->real->pMethods->xTruncate(p->real, size);
}

static int perchSync(sqlite3_file *file, int flags) {
    PerchFile *p = (PerchFile *)file;
    int rc = flush(p);
    if (rc != SQLITE_OK) return rc;
    return p->real->pMethods->xSync(p->real, flags);
}

static int perchFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    PerchFile *p = (PerchFile *)file;
    int rc = flush(p);
    if (rc != SQLITE_OK) return rc;
    return p->real->pMethods->xFileSize(p->real, size);
}

static int perchLock(sqlite3_file *file, int level) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xLock(p->real, level);
}

static int perchUnlock(sqlite3_file *file, int level) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xUnlock(p->real, level);
}

static int perchCheckReservedLock(sqlite3_file *file, int *result) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xCheckReservedLock(p->real, result);
}

static int perchFileControl(sqlite3_file *file, int op, void *argument) {
    PerchFile *p = (PerchFile *)file;
    int rc = flush(p);
    if (rc != SQLITE_OK) return rc;
    rc = p->real->pMethods->xFileControl(p->real, op, argument);
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {
        // A shim names itself in front of the VFS it wraps ("perch/unix").
        char **name = argument;
        char *wrapped = sqlite3_mprintf("%s/%s", PERCH_VFS_NAME, *name ? *name : "");
        sqlite3_free(*name);
        *name = wrapped;
    }
    return rc;
}

static int perchSectorSize(sqlite3_file *file) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xSectorSize(p->real);
}

static int perchDeviceCharacteristics(sqlite3_file *file) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xDeviceCharacteristics(p->real);
}

static int perchShmMap(sqlite3_file *file, int page, int size, int extend, void volatile **mapped) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xShmMap(p->real, page, size, extend, mapped);
}

static int perchShmLock(sqlite3_file *file, int offset, int n, int flags) {
    PerchFile *p = (PerchFile *)file;
    if (p->wal) {
        int rc = flush(p->wal);
        if (rc != SQLITE_OK) return rc;
    }
    return p->real->pMethods->xShmLock(p->real, offset, n, flags);
}

static void perchShmBarrier(sqlite3_file *file) {
    PerchFile *p = (PerchFile *)file;
    // Normally empty here (the commit frame flushed it); a failure would already have failed the
    // commit's write.
    if (p->wal) (void)flush(p->wal);
    p->real->pMethods->xShmBarrier(p->real);
}

static int perchShmUnmap(sqlite3_file *file, int deleteFlag) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xShmUnmap(p->real, deleteFlag);
}

static int perchFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **pointer) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xFetch(p->real, offset, amount, pointer);
}

static int perchUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    PerchFile *p = (PerchFile *)file;
    return p->real->pMethods->xUnfetch(p->real, offset, pointer);
}

static int perchOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    PerchFile *p = (PerchFile *)file;
    memset(p, 0, sizeof(*p));
    p->real = (sqlite3_file *)&p[1];
    int rc = realVfs->xOpen(realVfs, name, p->real, flags, outFlags);
    if (!p->real->pMethods) {
        p->base.pMethods = NULL;
        return rc;
    }
    // The wrapper offers every method of version 3 (shared memory, memory maps): so must the file.
    if (p->real->pMethods->iVersion < 3) {
        p->real->pMethods->xClose(p->real);
        p->base.pMethods = NULL;
        return SQLITE_CANTOPEN;
    }
    p->base.pMethods = &perchMethods;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && name) {
        sqlite3_file *database = sqlite3_database_file_object(name);
        if (database && database->pMethods == &perchMethods) {
            p->isWal = 1;
            p->database = (PerchFile *)database;
            p->database->wal = p;
        }
    }
    return rc;
}

static int registered = -1;

static void registerOnce(void) {
    realVfs = sqlite3_vfs_find(NULL);
    if (!realVfs || realVfs->iVersion < 2) {
        registered = SQLITE_ERROR;
        return;
    }
    perchMethods = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = perchClose,
        .xRead = perchRead,
        .xWrite = perchWrite,
        .xTruncate = perchTruncate,
        .xSync = perchSync,
        .xFileSize = perchFileSize,
        .xLock = perchLock,
        .xUnlock = perchUnlock,
        .xCheckReservedLock = perchCheckReservedLock,
        .xFileControl = perchFileControl,
        .xSectorSize = perchSectorSize,
        .xDeviceCharacteristics = perchDeviceCharacteristics,
        .xShmMap = perchShmMap,
        .xShmLock = perchShmLock,
        .xShmBarrier = perchShmBarrier,
        .xShmUnmap = perchShmUnmap,
        .xFetch = perchFetch,
        .xUnfetch = perchUnfetch,
    };
    // Every VFS-level method is SQLite's own (they act on paths, the clock and the default VFS's
    // own data, never on our files); only opening a file differs, so that its methods are ours.
    perchVfs = *realVfs;
    perchVfs.pNext = NULL;
    perchVfs.szOsFile = (int)sizeof(PerchFile) + realVfs->szOsFile;
    perchVfs.zName = PERCH_VFS_NAME;
    perchVfs.xOpen = perchOpen;
    registered = sqlite3_vfs_register(&perchVfs, 0);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

int perch_vfs_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}

int perch_vfs_log_writes(sqlite3 *db, long long *issued, long long *requested, long long *rewrites) {
    sqlite3_file *log = NULL;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log);
    if (rc != SQLITE_OK) return rc;
    if (!log || log->pMethods != &perchMethods || !((PerchFile *)log)->isWal) return SQLITE_NOTFOUND;
    *issued = ((PerchFile *)log)->issued;
    *requested = ((PerchFile *)log)->requested;
    *rewrites = ((PerchFile *)log)->rewrites;
    return SQLITE_OK;
}
