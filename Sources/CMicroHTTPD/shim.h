#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>

/// Called with a request's URI as it came on the request line, before libmicrohttpd decodes it;
/// its answer is the request's state (`*req_cls`) in the access handler's calls.
typedef void *(*perch_mhd_uri_logger)(void *context, const char *uri, struct MHD_Connection *connection);

/// Told when libmicrohttpd starts and ends a connection (`MHD_OPTION_NOTIFY_CONNECTION`).
typedef void (*perch_mhd_connection_notifier)(void *context, struct MHD_Connection *connection, void **socketContext,
    enum MHD_ConnectionNotificationCode code);

/// MHD_start_daemon is variadic; this starts a thread-per-connection daemon with no listening
/// socket of its own: the connections come through `MHD_add_connection` (the server's gate hands
/// them over once their first request's head is in). A handler may answer 101 and take the
/// connection's socket over (a WebSocket). libmicrohttpd's own error messages go to `logger` (with
/// `context`), not to standard error; `uriLogger` sees each request's raw URI first; `notifier`
/// each connection's start and end.
static inline struct MHD_Daemon *perch_mhd_start(MHD_AccessHandlerCallback handler, void *context,
    MHD_RequestCompletedCallback completed, unsigned int connectionLimit, unsigned int timeoutSeconds,
    MHD_LogCallback logger, perch_mhd_uri_logger uriLogger, perch_mhd_connection_notifier notifier) {
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL
        | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    // The logger first: libmicrohttpd prints what comes before it on standard error.
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context,
        MHD_OPTION_EXTERNAL_LOGGER, logger, context,
        MHD_OPTION_NOTIFY_COMPLETED, completed, context,
        MHD_OPTION_URI_LOG_CALLBACK, uriLogger, context,
        MHD_OPTION_NOTIFY_CONNECTION, notifier, context,
        MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
        MHD_OPTION_END);
}

/// Hands a connected socket to the daemon, which owns (and closes) it from then on, whatever the
/// answer. Returns 1 when the daemon took it.
static inline int perch_mhd_add_connection(struct MHD_Daemon *daemon, int fd) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    if (getpeername(fd, (struct sockaddr *) &peer, &length) != 0) {
        close(fd);
        return 0;
    }
    return MHD_add_connection(daemon, fd, (const struct sockaddr *) &peer, length) == MHD_YES;
}

/// Writes a connection's client address (an IP address as text) to `buffer`; 0, or -1.
static inline int perch_mhd_client_address(struct MHD_Connection *connection, char *buffer, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *) address)->sin_addr, buffer, size) ? 0 : -1;
    if (address->sa_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) address)->sin6_addr, buffer, size) ? 0 : -1;
    return -1;
}

/// A non-blocking, close-on-exec TCP socket listening on `host` (an IPv4 literal) and `port` (0
/// picks a free one). Returns the descriptor, or -1 with `errno` set.
static inline int perch_listen(const char *host, uint16_t port, int backlog) {
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

/// The port a listening socket is bound to.
static inline uint16_t perch_bound_port(int fd) {
    struct sockaddr_in address;
    socklen_t length = sizeof(address);
    if (getsockname(fd, (struct sockaddr *) &address, &length) != 0) return 0;
    return ntohs(address.sin_port);
}

/// Accepts one connection (non-blocking, close-on-exec) and writes its client's address as text to
/// `buffer`. Returns the descriptor, or -1 with `errno` set (EAGAIN: none is waiting).
static inline int perch_accept(int listening, char *buffer, socklen_t size) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    int fd = accept(listening, (struct sockaddr *) &peer, &length);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    buffer[0] = 0;
    if (peer.ss_family == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in *) &peer)->sin_addr, buffer, size);
    else if (peer.ss_family == AF_INET6) inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &peer)->sin6_addr, buffer, size);
    return fd;
}

/// What an epoll wait reports of a descriptor.
enum { PERCH_READABLE = 1, PERCH_HUNG_UP = 2 };

static inline int perch_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// A non-blocking, close-on-exec eventfd.
static inline int perch_eventfd_descriptor(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/// Watches `fd` for input and hang-ups; `edge`: reported once per arrival (edge-triggered), for a
/// socket read with MSG_PEEK, whose bytes stay. Returns 0, or -1 with `errno` set.
static inline int perch_epoll_add(int epoll, int fd, int edge) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = EPOLLIN | EPOLLRDHUP | (edge ? EPOLLET : 0);
    event.data.fd = fd;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

static inline int perch_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL); }

/// Waits up to `milliseconds` for the watched descriptors; writes up to `capacity` of them and
/// what happened to each (PERCH_READABLE, PERCH_HUNG_UP). Returns how many, or -1 with `errno` set.
static inline int perch_epoll_wait(int epoll, int *fds, int *what, int capacity, int milliseconds) {
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

/// Has the kernel give up on a connection once what was sent on it went unacknowledged for
/// `milliseconds` (TCP_USER_TIMEOUT). Returns 0, or -1 when the option could not be set.
static inline int perch_mhd_give_up_unacknowledged(struct MHD_Connection *connection, unsigned int milliseconds) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) return -1;
    return setsockopt(info->connect_fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &milliseconds, sizeof(milliseconds));
}

/// POLLRDHUP (the peer shut its side: a hang-up), which Glibc declares only with _GNU_SOURCE.
static inline short perch_pollrdhup(void) {
#ifdef POLLRDHUP
    return POLLRDHUP;
#else
    return 0x2000;
#endif
}

/// The socket of a connection, or -1.
static inline int perch_mhd_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

static inline ssize_t perch_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline uint64_t perch_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

static inline enum MHD_Result perch_mhd_upgrade_close(struct MHD_UpgradeResponseHandle *urh) {
    return MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}
