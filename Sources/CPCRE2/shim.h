#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/// PCRE2_ZERO_TERMINATED and PCRE2_UNSET are computed macros Swift cannot import.
static inline size_t perch_pcre2_unset(void) { return PCRE2_UNSET; }
