#define _GNU_SOURCE
#include "perch_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int perch_listen(const char *host, uint16_t port, int backlog) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *) &address, sizeof(address)) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

uint16_t perch_bound_port(int fd) {
    struct sockaddr_in address;
    socklen_t length = sizeof(address);
    if (getsockname(fd, (struct sockaddr *) &address, &length) != 0) return 0;
    return ntohs(address.sin_port);
}

int perch_accept(int listening, char *buffer, int size) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    int fd = accept4(listening, (struct sockaddr *) &peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -1;
    buffer[0] = 0;
    if (peer.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *) &peer)->sin_addr, buffer, (socklen_t) size);
    } else if (peer.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &peer)->sin6_addr, buffer, (socklen_t) size);
    }
    return fd;
}

int perch_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int perch_epoll_add(int epoll, int fd, int edge) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = EPOLLIN | EPOLLRDHUP | (edge ? EPOLLET : 0);
    event.data.fd = fd;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

int perch_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL); }

int perch_epoll_wait(int epoll, int *fds, int *what, int capacity, int milliseconds) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, events, capacity, milliseconds);
    for (int index = 0; index < count; index += 1) {
        fds[index] = events[index].data.fd;
        what[index] = ((events[index].events & EPOLLIN) ? PERCH_READABLE : 0)
            | ((events[index].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? PERCH_HUNG_UP : 0);
    }
    return count;
}

short perch_pollrdhup(void) { return POLLRDHUP; }
