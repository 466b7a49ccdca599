// A counter of glibc allocations, preloaded into a benchmark (`LD_PRELOAD`): it counts the calls
// to malloc, calloc, realloc, the aligned allocations (posix_memalign, aligned_alloc, memalign:
// Swift's runtime makes `UnsafeMutablePointer.allocate`'s through posix_memalign) and free, and
// prints them when the process exits normally, as one line on standard error:
// `malloc-count <program> malloc=N calloc=N realloc=N aligned=N free=N`.
// scripts/bench runs the closed loop twice, at two lengths, and divides the difference by the
// extra round trips, so the allocations of starting and stopping cancel out.
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_long mallocs, callocs, reallocs, aligned, frees;

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&callocs, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&reallocs, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}

int posix_memalign(void **pointer, size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&aligned, 1, memory_order_relaxed);
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *made = __libc_memalign(alignment, size);
    if (!made) return ENOMEM;
    *pointer = made;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&aligned, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&aligned, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

void free(void *pointer) {
    if (pointer) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(pointer);
}

__attribute__((destructor)) static void report(void) {
    char line[256];
    int length = snprintf(line, sizeof line,
                          "malloc-count %s malloc=%ld calloc=%ld realloc=%ld aligned=%ld free=%ld\n",
                          program_invocation_short_name, atomic_load(&mallocs), atomic_load(&callocs),
                          atomic_load(&reallocs), atomic_load(&aligned), atomic_load(&frees));
    if (length > 0) (void)!write(2, line, (size_t)length);
}
