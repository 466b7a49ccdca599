#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Called with a request's URI as it came on the request line, before libmicrohttpd decodes it;
/// its answer is the request's state (`*req_cls`) in the access handler's calls.
typedef void *(*perch_mhd_uri_logger)(void *context, const char *uri, struct MHD_Connection *connection);

/// MHD_start_daemon is variadic; this starts a thread-per-connection daemon bound to `host`
/// (an IPv4 literal) and `port` (0 picks a free one), with a completion callback; a handler may
/// answer 101 and take the connection's socket over (a WebSocket). libmicrohttpd's own error
/// messages go to `logger` (with `context`), not to standard error. `uriLogger` sees each request's
/// raw URI first.
static inline struct MHD_Daemon *perch_mhd_start(const char *host, uint16_t port, MHD_AccessHandlerCallback handler,
    void *context, MHD_RequestCompletedCallback completed, unsigned int connectionLimit, unsigned int timeoutSeconds,
    MHD_LogCallback logger, perch_mhd_uri_logger uriLogger) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) return NULL;
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL
        | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
    // The logger first: libmicrohttpd prints what comes before it on standard error.
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
        MHD_OPTION_EXTERNAL_LOGGER, logger, context,
        MHD_OPTION_NOTIFY_COMPLETED, completed, context,
        MHD_OPTION_URI_LOG_CALLBACK, uriLogger, context,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &address,
        MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
        MHD_OPTION_END);
}

/// The port a daemon listens on (after binding port 0).
static inline uint16_t perch_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
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
