#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
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

/// Hands a connected socket to the daemon, which owns (and closes) it from then on, whatever it
/// answers. Returns 1 when the daemon took it, 0 when it refused it (and closed it), -1 when the
/// socket's peer is gone (the caller still owns it).
static inline int perch_mhd_add_connection(struct MHD_Daemon *daemon, int fd) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    if (getpeername(fd, (struct sockaddr *) &peer, &length) != 0) return -1;
    return MHD_add_connection(daemon, fd, (const struct sockaddr *) &peer, length) == MHD_YES ? 1 : 0;
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

/// Has the kernel give up on a connection once what was sent on it went unacknowledged for
/// `milliseconds` (TCP_USER_TIMEOUT). Returns 0, or -1 when the option could not be set.
static inline int perch_mhd_give_up_unacknowledged(struct MHD_Connection *connection, unsigned int milliseconds) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) return -1;
    return setsockopt(info->connect_fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &milliseconds, sizeof(milliseconds));
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
