#include <sqlite3.h>

/// SQLITE_TRANSIENT is a computed macro Swift cannot import.
static inline sqlite3_destructor_type perch_sqlite_transient(void) { return SQLITE_TRANSIENT; }
