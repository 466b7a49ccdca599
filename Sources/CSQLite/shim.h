#include <sqlite3.h>

/// Turns off SQLite's memory statistics: with them on, every allocation takes a global mutex.
/// Must run before the first connection opens (`sqlite3_config` is variadic: Swift cannot call it).
static inline int perch_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
