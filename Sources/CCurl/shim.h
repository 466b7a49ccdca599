#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/// An answer's status and body, the body in a buffer that grows as it comes (free `body` after).
typedef struct {
    long status;
    char *body;
    size_t size;
    size_t capacity;
} perch_curl_answer;

static size_t perch_curl_collect(char *data, size_t size, size_t count, void *context) {
    perch_curl_answer *answer = (perch_curl_answer *) context;
    size_t length = size * count;
    if (answer->size + length > answer->capacity) {
        size_t capacity = answer->capacity ? answer->capacity : 4096;
        while (capacity < answer->size + length) capacity *= 2;
        char *grown = (char *) realloc(answer->body, capacity);
        if (!grown) return 0;
        answer->body = grown;
        answer->capacity = capacity;
    }
    memcpy(answer->body + answer->size, data, length);
    answer->size += length;
    return length;
}

/// Stops a transfer (libcurl calls it at least once a second) once `*cancel` is non-zero.
static int perch_curl_progress(void *cancel, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void) a; (void) b; (void) c; (void) d;
    return *(volatile int *) cancel;
}

/// Initializes libcurl once for the process (before any handle: it is not thread-safe itself).
static inline int perch_curl_global_init(void) { return (int) curl_global_init(CURL_GLOBAL_DEFAULT); }

static inline CURL *perch_curl_new(void) { return curl_easy_init(); }

static inline void perch_curl_free(CURL *handle) { curl_easy_cleanup(handle); }

/// One request on `handle`, which keeps its connection to the server alive between requests.
/// `body` may be NULL; `extra` holds more header lines ("Name: value"), each ended by '\n', or is
/// NULL. Returns libcurl's code (CURLE_OK when an answer came, whatever its status), with `error`
/// (CURL_ERROR_SIZE bytes) saying why otherwise.
static inline int perch_curl_perform(
    CURL *handle, const char *method, const char *url, const char *extra, const char *body,
    size_t length, long timeout_ms, volatile int *cancel, perch_curl_answer *answer, char *error) {
    curl_easy_reset(handle);
    struct curl_slist *headers = NULL;
    char line[4096];
    for (const char *start = extra; start && *start;) {
        const char *end = strchr(start, '\n');
        size_t size = end ? (size_t) (end - start) : strlen(start);
        if (size > 0 && size < sizeof(line)) {
            memcpy(line, start, size);
            line[size] = 0;
            headers = curl_slist_append(headers, line);
        }
        start = end ? end + 1 : start + size;
    }
    if (body) headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(handle, CURLOPT_URL, url);
    curl_easy_setopt(handle, CURLOPT_USERAGENT, "Perch");
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, perch_curl_collect);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, perch_curl_progress);
    curl_easy_setopt(handle, CURLOPT_XFERINFODATA, (void *) cancel);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) length);
        }
    }
    error[0] = 0;
    CURLcode code = curl_easy_perform(handle);
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &answer->status);
    curl_slist_free_all(headers);
    if (code != CURLE_OK && error[0] == 0) snprintf(error, CURL_ERROR_SIZE, "%s", curl_easy_strerror(code));
    return (int) code;
}
