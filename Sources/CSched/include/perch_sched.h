#ifndef PERCH_SCHED_H
#define PERCH_SCHED_H

/// The CPUs the calling thread may run on (`sched_getaffinity`), written to `cpus` in increasing
/// order, at most `capacity` of them. Returns how many, or -1 with `errno` set.
int perch_thread_cpus(int *cpus, int capacity);

/// Lets the calling thread run on the `count` CPUs of `cpus` only (`sched_setaffinity`).
/// Returns 0, or -1 with `errno` set (a CPU out of range is EINVAL).
int perch_pin_thread(const int *cpus, int count);

/// A non-blocking, close-on-exec eventfd (which Swift's Glibc module does not declare). Returns the
/// descriptor, or -1 with `errno` set.
int perch_eventfd(void);

#endif
