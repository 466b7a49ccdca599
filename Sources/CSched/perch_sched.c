// The CPUs the calling thread may run on. In C because glibc's `sched_getaffinity` and `CPU_SET`
// need `_GNU_SOURCE`, which Swift's Glibc module is not built with.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "perch_sched.h"

int perch_thread_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
}

int perch_pin_thread(const int *cpus, int count) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int index = 0; index < count; index++) {
        if (cpus[index] < 0 || cpus[index] >= CPU_SETSIZE) {
            errno = EINVAL;
            return -1;
        }
        CPU_SET(cpus[index], &set);
    }
    return sched_setaffinity(0, sizeof set, &set);
}

int perch_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int perch_process_cpu_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    // The process's own mask (its main thread's), not the calling thread's: a thread pinned to one
    // CPU still has the others' threads to wait for.
    if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return -1;
    return CPU_COUNT(&set);
}

void perch_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void perch_set_up_process_output(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
}

int perch_rename_no_replace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
