// Signals as bytes on a pipe (the self-pipe trick), in C because a signal handler may only make
// async-signal-safe calls, and Swift code guarantees none.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "perch_sched.h"

static volatile sig_atomic_t perch_signal_write_end = -1;

static void perch_signal_handler(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    // Non-blocking: a full pipe (64 KiB of signals unread) drops this one; the reader has plenty.
    ssize_t written = write(perch_signal_write_end, &byte, 1);
    (void)written;
    errno = saved;
}

int perch_signal_pipe(const int *signals, int count) {
    if (perch_signal_write_end >= 0) {
        errno = EBUSY;
        return -1;
    }
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return -1;
    if (fcntl(ends[1], F_SETFL, O_NONBLOCK) != 0) {
        int saved = errno;
        close(ends[0]);
        close(ends[1]);
        errno = saved;
        return -1;
    }
    perch_signal_write_end = ends[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = perch_signal_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int index = 0; index < count; index++) {
        if (sigaction(signals[index], &action, NULL) != 0) return -1;
    }
    return ends[0];
}
