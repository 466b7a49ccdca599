#ifndef PERCH_NET_H
#define PERCH_NET_H

#include <stdint.h>

/// A non-blocking, close-on-exec TCP socket listening on `host` (an IPv4 literal) and `port` (0
/// picks a free one). Returns the descriptor, or -1 with `errno` set.
int perch_listen(const char *host, uint16_t port, int backlog);

/// The port a listening socket is bound to, or 0.
uint16_t perch_bound_port(int fd);

/// Accepts one connection (non-blocking, close-on-exec) and writes its client's address as text
/// (at most `size` bytes with its NUL) to `buffer`. Returns the descriptor, or -1 with `errno` set
/// (EAGAIN: none is waiting).
int perch_accept(int listening, char *buffer, int size);

/// What an epoll wait reports of a descriptor.
enum { PERCH_READABLE = 1, PERCH_HUNG_UP = 2 };

/// A close-on-exec epoll instance, or -1 with `errno` set.
int perch_epoll_create(void);

/// Watches `fd` for input and hang-ups; `edge`: once per arrival (edge-triggered), for a socket
/// read with MSG_PEEK, whose bytes stay. Returns 0, or -1 with `errno` set.
int perch_epoll_add(int epoll, int fd, int edge);

/// Stops watching `fd`. Returns 0, or -1 with `errno` set.
int perch_epoll_remove(int epoll, int fd);

/// Waits up to `milliseconds` for the watched descriptors; writes up to `capacity` (at most 256) of
/// them to `fds`, and to `what` what happened to each (PERCH_READABLE, PERCH_HUNG_UP). Returns how
/// many, or -1 with `errno` set.
int perch_epoll_wait(int epoll, int *fds, int *what, int capacity, int milliseconds);

/// POLLRDHUP (the peer shut its side: a hang-up), which Swift's Glibc module does not declare.
short perch_pollrdhup(void);

#endif
