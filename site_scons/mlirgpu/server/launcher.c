/* The `mlirgpu` command as a native program (mlirgpu.server.launcher builds this file; tools/bootstrap installs it).

   A Python client costs every command Python's start-up (10 of its 14 ms of CPU), which a build running one
   `mlirgpu compile` per source pays per source. This program does what the Python client (mlirgpu.server.client) does
   when a compile server of this installation runs: it sends the command line, folder, environment, umask and
   resource limits to the server (a request larger than a socket's message in a memfd, as
   mlirgpu.execution.server_protocol.send does), passes its own stdin, stdout and stderr (/dev/null for one that is
   closed) to the runner that took it, on the socket the server's `started` answer carries (so a stopped server
   never holds them), and exits with the command's exit code. For everything else it becomes the Python client,
   which then behaves as always (it starts a server, replaces a stale one, runs other commands, falls back to an
   in-process compile with its warning):
   - a command other than `compile` and `list-outputs`, or one asking for help; MLIRGPU_SERVER=off;
   - no server folder of this user closed to others, or no server card there, or a card whose fingerprint inputs
     (the package's Python files and llvmlite's library, by name, size and time) differ from the files now: the
     server may be stale, which only the Python client can tell;
   - a request with a byte outside printable ASCII (the Python client's JSON carries any text), or too large;
   - no server listening, or one that answers anything but a started run, or whose run ends without an answer.
   Nothing has run when it becomes the Python client, except in the last case, where the Python client runs the
   command again (a compile writes its outputs atomically, so a second run leaves what one run leaves).

   Built with MLIRGPU_PYTHON (the Python to become, with `-P -c CODE`, so the folder the command runs in is never
   searched for modules) and MLIRGPU_SOCKET (the server's socket name for this installation, without `.sock`). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef MLIRGPU_PYTHON
#error "build with -DMLIRGPU_PYTHON=\"/path/to/python\""
#endif
#ifndef MLIRGPU_SOCKET
#error "build with -DMLIRGPU_SOCKET=\"server-XXXXXXXX\""
#endif

extern char **environ;

enum { MAX_REQUEST = 1 << 20, INLINE_REQUEST = 1 << 16, MAX_CARD = 1 << 16, MAX_PY_FILES = 512 };

static char **arguments;
static int argument_count;

/* Become the Python client with the same arguments (never returns). */
static void become_python(void) {
    char **argv = calloc((size_t)argument_count + 4, sizeof(char *));
    if (argv) {
        argv[0] = MLIRGPU_PYTHON;
        argv[1] = "-P";
        argv[2] = "-c";
        argv[3] = "import sys; from mlirgpu.server.client import main; sys.exit(main())";
        for (int i = 1; i < argument_count; i++)
            argv[i + 3] = arguments[i];
        execv(MLIRGPU_PYTHON, argv);
    }
    fprintf(stderr, "mlirgpu: error: cannot run %s: %s (fix: run tools/bootstrap again)\n", MLIRGPU_PYTHON,
            strerror(errno));
    _exit(127);
}

/* A growing buffer for the request's JSON. */
struct text {
    char *data;
    size_t size, capacity;
};

static void put(struct text *text, const char *data, size_t size) {
    if (text->size + size + 1 > text->capacity) {
        size_t capacity = (text->size + size + 1) * 2;
        char *grown = capacity <= 2 * (size_t)MAX_REQUEST ? realloc(text->data, capacity) : NULL;
        if (!grown)
            become_python();
        text->data = grown;
        text->capacity = capacity;
    }
    memcpy(text->data + text->size, data, size);
    text->size += size;
    text->data[text->size] = 0;
}

static void put_text(struct text *text, const char *data) { put(text, data, strlen(data)); }

/* `data` (`size` bytes) as a JSON string; anything but printable ASCII and tabs / line breaks goes to Python. */
static void put_string(struct text *text, const char *data, size_t size) {
    put_text(text, "\"");
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            put(text, escaped, 2);
        } else if (c == '\n') {
            put_text(text, "\\n");
        } else if (c == '\t') {
            put_text(text, "\\t");
        } else if (c == '\r') {
            put_text(text, "\\r");
        } else if (c < 0x20 || c >= 0x7f) {
            become_python();
        } else {
            put(text, data + i, 1);
        }
    }
    put_text(text, "\"");
}

/* True unless the environment variable `name` is unset, empty or says on (1, on, true, yes; blanks and case
   ignored): off words run in process, and any other word is left to the Python client, which says it is no
   boolean (mlirgpu.util.environment). */
static int server_off(const char *name) {
    const char *value = getenv(name);
    if (!value)
        return 0;
    while (*value == ' ' || *value == '\t' || *value == '\n')
        value++;
    size_t length = strlen(value);
    while (length && (value[length - 1] == ' ' || value[length - 1] == '\t' || value[length - 1] == '\n'))
        length--;
    const char *words[] = {"on", "1", "yes", "true"};
    for (int i = 0; i < 4; i++)
        if (strlen(words[i]) == length && strncasecmp(value, words[i], length) == 0)
            return 0;
    return length != 0;
}

/* The server folder as mlirgpu.execution.rendezvous.folder names it, if it is this user's and closed to others. */
static int server_folder(char *folder, size_t size) {
    const char *named = getenv("MLIRGPU_SERVER_DIR");
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    int written = named && *named ? snprintf(folder, size, "%s", named)
                  : runtime && *runtime ? snprintf(folder, size, "%s/mlirgpu", runtime)
                                        : snprintf(folder, size, "/tmp/mlirgpu-%u", (unsigned)getuid());
    struct stat info;
    return written > 0 && (size_t)written < size && lstat(folder, &info) == 0 && S_ISDIR(info.st_mode) &&
           info.st_uid == getuid() && (info.st_mode & 077) == 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether the `.py` files of `folder` are exactly those the card lists next (lines "P SIZE MTIME_NS NAME", in
   name order), each of that size and time; `line` is advanced past them. */
static int same_python_files(const char *folder, char **line) {
    DIR *dir = opendir(folder);
    if (!dir)
        return 0;
    char *names[MAX_PY_FILES];
    int count = 0, same = 1;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        size_t length = strlen(entry->d_name);
        if (length >= 3 && strcmp(entry->d_name + length - 3, ".py") == 0) {
            if (count == MAX_PY_FILES) {
                same = 0;
                break;
            }
            if ((names[count] = strdup(entry->d_name)) == NULL) {
                same = 0;
                break;
            }
            count++;
        }
    }
    closedir(dir);
    qsort(names, (size_t)count, sizeof(char *), by_name);
    for (int i = 0; i < count && same; i++) {
        long long size, mtime;
        int name_at = 0;
        if (sscanf(*line, "P %lld %lld %n", &size, &mtime, &name_at) != 2 || !name_at) {
            same = 0;
            break;
        }
        char *name = *line + name_at;
        char *end = strchr(name, '\n');
        if (!end || (size_t)(end - name) != strlen(names[i]) || strncmp(name, names[i], (size_t)(end - name)) != 0) {
            same = 0;
            break;
        }
        char path[4096];
        struct stat info;
        if (snprintf(path, sizeof path, "%s/%s", folder, names[i]) >= (int)sizeof path || stat(path, &info) != 0 ||
            info.st_size != size || (long long)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec != mtime)
            same = 0;
        *line = end + 1;
    }
    if (same && strncmp(*line, "P ", 2) == 0)
        same = 0; /* a file the card lists is gone */
    for (int i = 0; i < count; i++)
        free(names[i]);
    return same;
}

/* The fingerprint the server's card holds, if the files it was made from are as they were (else NULL). The card
   (written by the server, mlirgpu.server.launcher.write_card):
       mlirgpu-card 1
       F FINGERPRINT
       D FOLDER          then its .py files: P SIZE MTIME_NS NAME
       L SIZE MTIME_NS PATH   (llvmlite's library), or L none */
static char *card_fingerprint(const char *folder) {
    static char card[MAX_CARD + 1], fingerprint[64];
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.card", folder, MLIRGPU_SOCKET) >= (int)sizeof path)
        return NULL;
    FILE *file = fopen(path, "re");
    if (!file)
        return NULL;
    size_t size = fread(card, 1, MAX_CARD, file);
    fclose(file);
    card[size] = 0;
    char *line = card;
    if (strncmp(line, "mlirgpu-card 1\n", 15) != 0)
        return NULL;
    line += 15;
    if (sscanf(line, "F %63[0-9a-f]", fingerprint) != 1 || !strchr(line, '\n'))
        return NULL;
    line = strchr(line, '\n') + 1;
    while (*line) {
        char *end = strchr(line, '\n');
        if (!end)
            return NULL;
        if (line[0] == 'D' && line[1] == ' ') {
            *end = 0;
            char *name = line + 2;
            line = end + 1;
            if (!same_python_files(name, &line))
                return NULL;
        } else if (strncmp(line, "L none\n", 7) == 0) {
            line = end + 1;
        } else if (line[0] == 'L' && line[1] == ' ') {
            long long bytes, mtime;
            int name_at = 0;
            struct stat info;
            *end = 0;
            if (sscanf(line, "L %lld %lld %n", &bytes, &mtime, &name_at) != 2 || !name_at ||
                stat(line + name_at, &info) != 0 || info.st_size != bytes ||
                (long long)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec != mtime)
                return NULL;
            line = end + 1;
        } else {
            return NULL;
        }
    }
    return fingerprint;
}

/* The request, as mlirgpu.server.client sends it (mlirgpu.execution.server_protocol.run_request): {"kind": "run",
   "fingerprint", "argv", "cwd", "env", "umask", "limits"}. */
static void request_text(struct text *text, const char *fingerprint) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        become_python();
    put_text(text, "{\"kind\": \"run\", \"fingerprint\": ");
    put_string(text, fingerprint, strlen(fingerprint));
    put_text(text, ", \"argv\": [");
    for (int i = 1; i < argument_count; i++) {
        if (i > 1)
            put_text(text, ", ");
        put_string(text, arguments[i], strlen(arguments[i]));
    }
    put_text(text, "], \"cwd\": ");
    put_string(text, cwd, strlen(cwd));
    put_text(text, ", \"env\": {");
    int first = 1;
    for (char **entry = environ; *entry; entry++) {
        const char *equals = strchr(*entry, '=');
        if (!equals || equals == *entry)
            continue; /* as Python's os.environ */
        size_t name_length = (size_t)(equals - *entry);
        int seen = 0; /* the first of a name counts, as in os.environ and getenv */
        for (char **earlier = environ; earlier < entry && !seen; earlier++)
            seen = strncmp(*earlier, *entry, name_length + 1) == 0;
        if (seen)
            continue;
        if (!first)
            put_text(text, ", ");
        first = 0;
        put_string(text, *entry, name_length);
        put_text(text, ": ");
        put_string(text, equals + 1, strlen(equals + 1));
    }
    mode_t mask = umask(0);
    umask(mask);
    char item[96];
    snprintf(item, sizeof item, "}, \"umask\": %u, \"limits\": {", (unsigned)mask);
    put_text(text, item);
    /* The resource limits the command runs with (mlirgpu.llvm.process.LIMITS), soft and hard, -1 for none. */
    static const struct {
        const char *name;
        int resource;
    } limits[] = {{"FSIZE", RLIMIT_FSIZE}, {"NOFILE", RLIMIT_NOFILE}, {"CORE", RLIMIT_CORE},
                  {"AS", RLIMIT_AS},       {"DATA", RLIMIT_DATA},     {"CPU", RLIMIT_CPU}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit limit;
        if (getrlimit(limits[i].resource, &limit) != 0)
            become_python();
        snprintf(item, sizeof item, "%s\"%s\": [%lld, %lld]", i ? ", " : "", limits[i].name,
                 limit.rlim_cur == RLIM_INFINITY ? -1LL : (long long)limit.rlim_cur,
                 limit.rlim_max == RLIM_INFINITY ? -1LL : (long long)limit.rlim_max);
        put_text(text, item);
    }
    put_text(text, "}}");
    if (text->size > MAX_REQUEST)
        become_python();
}

/* The value of "KEY": in a reply (a string into `out`, or a number), as mlirgpu.execution.server_protocol.encode
   writes them. */
static int reply_string(const char *reply, const char *key, char *out, size_t size) {
    char pattern[32];
    snprintf(pattern, sizeof pattern, "\"%s\": \"", key);
    const char *at = strstr(reply, pattern);
    if (!at)
        return 0;
    at += strlen(pattern);
    const char *end = strchr(at, '"');
    if (!end || (size_t)(end - at) >= size)
        return 0;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = 0;
    return 1;
}

static int reply_number(const char *reply, const char *key, long *out) {
    char pattern[32];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *at = strstr(reply, pattern);
    if (!at)
        return 0;
    char *end;
    errno = 0;
    *out = strtol(at + strlen(pattern), &end, 10);
    return errno == 0 && end != at + strlen(pattern);
}

/* The server's next reply (NUL-terminated in `buffer`): its length, 0 when the server closed the connection, -1
   when none came within the socket's time limit. `*passed`: the descriptor it carries, else -1 (more than one
   are closed). */
static ssize_t receive(int connection, char *buffer, size_t size, int *passed) {
    *passed = -1;
    for (;;) {
        char control[CMSG_SPACE(2 * sizeof(int))];
        struct iovec data = {buffer, size - 1};
        struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control,
                                 .msg_controllen = sizeof control};
        ssize_t got = recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
        if (got >= 0) {
            buffer[got] = 0;
            for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
                if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS)
                    continue;
                size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; i++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
                    if (*passed < 0 && count == 1)
                        *passed = fd;
                    else
                        close(fd);
                }
            }
            return got;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return -1;
        if (errno != EINTR)
            return 0;
    }
}

/* Send `size` bytes of `data` with the descriptors `fds` as one message; whether it went. */
static int send_with(int connection, const char *data, size_t size, const int *fds, int count) {
    char control[CMSG_SPACE(4 * sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec part = {(void *)data, size};
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1};
    if (count) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE((size_t)count * sizeof(int));
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN((size_t)count * sizeof(int));
        memcpy(CMSG_DATA(header), fds, (size_t)count * sizeof(int));
    }
    ssize_t sent;
    do
        sent = sendmsg(connection, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == (ssize_t)size; /* a message is sent whole or not at all */
}

/* Send the request: as one message, or beyond INLINE_REQUEST bytes in a memfd named by an attached message
   (mlirgpu.execution.server_protocol.send: its size, kind and fingerprint); whether it went. */
static int send_request(int connection, const struct text *request, const char *fingerprint) {
    if (request->size <= INLINE_REQUEST)
        return send_with(connection, request->data, request->size, NULL, 0);
    int body = memfd_create("mlirgpu-request", MFD_CLOEXEC);
    if (body < 0)
        return 0;
    size_t written = 0;
    while (written < request->size) {
        ssize_t done = write(body, request->data + written, request->size - written);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            close(body);
            return 0;
        }
        written += (size_t)done;
    }
    char header[160];
    int length = snprintf(header, sizeof header, "{\"attached\": %zu, \"kind\": \"run\", \"fingerprint\": \"%s\"}",
                          request->size, fingerprint);
    int sent = length > 0 && (size_t)length < sizeof header && send_with(connection, header, (size_t)length, &body, 1);
    close(body);
    return sent;
}

static void time_limit(int connection, double seconds) {
    struct timeval limit = {(time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};
    setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

int main(int argc, char **argv) {
    arguments = argv;
    argument_count = argc;
    if (argc < 2 || (strcmp(argv[1], "compile") != 0 && strcmp(argv[1], "list-outputs") != 0) ||
        server_off("MLIRGPU_SERVER"))
        become_python();
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            become_python();
    char folder[4096];
    if (!server_folder(folder, sizeof folder))
        become_python();
    const char *fingerprint = card_fingerprint(folder);
    if (!fingerprint)
        become_python();
    for (int fd = 0; fd < 3; fd++) /* a closed stream (`<&- >&- 2>&-`) is /dev/null, as in mlirgpu.server.client */
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
            become_python();
    struct text request = {0};
    request_text(&request, fingerprint);

    const char *limit_text = getenv("MLIRGPU_SERVER_TIMEOUT");
    char *parsed_end = NULL;
    double limit = limit_text && *limit_text ? strtod(limit_text, &parsed_end) : 10.0;
    if (parsed_end && (parsed_end == limit_text || *parsed_end || !(limit >= 0)))
        become_python(); /* no number of seconds (nan, negative, a word): the Python client says so */
    limit = limit < 0.1 ? 0.1 : limit > 86400 ? 86400 : limit; /* as mlirgpu.execution.rendezvous.timeout: inf waits a day */
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (snprintf(address.sun_path, sizeof address.sun_path, "%s/%s.sock", folder, MLIRGPU_SOCKET) >=
        (int)sizeof address.sun_path)
        become_python();
    int connection = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (connection < 0)
        become_python();
    time_limit(connection, limit);
    struct ucred server;
    socklen_t server_size = sizeof server;
    if (connect(connection, (struct sockaddr *)&address, sizeof address) != 0 ||
        getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &server, &server_size) != 0 || server.uid != getuid())
        become_python(); /* another user's socket (planted while the folder was open) is sent nothing */

    if (!send_request(connection, &request, fingerprint))
        become_python(); /* nothing was taken */

    char reply[1 << 16], kind[32];
    long runner = 0;
    int runner_socket = -1;
    if (receive(connection, reply, sizeof reply, &runner_socket) <= 0 ||
        !reply_string(reply, "kind", kind, sizeof kind) || strcmp(kind, "started") != 0 ||
        !reply_number(reply, "pid", &runner) || runner_socket < 0)
        become_python();
    static const int streams[3] = {0, 1, 2};
    int passed = send_with(runner_socket, "streams", 7, streams, 3);
    close(runner_socket);
    if (!passed)
        become_python(); /* the runner ended before it took them: nothing has run */
    time_limit(connection, 1.0); /* then, each second without an answer, whether the runner still lives */
    if (server.pid == 0)
        runner = 0; /* in a pid namespace of its own, this process cannot see the runner: its end closes the
                       connection (the server, or the runner itself, answers) */
    for (;;) {
        int stray;
        ssize_t got = receive(connection, reply, sizeof reply, &stray);
        if (stray >= 0)
            close(stray);
        if (got == 0)
            become_python(); /* the server went away before the command ended */
        if (got < 0) {
            if (runner && kill((pid_t)runner, 0) != 0 && errno == ESRCH)
                become_python();
            continue;
        }
        long code, killed;
        if (!reply_string(reply, "kind", kind, sizeof kind) || strcmp(kind, "exit") != 0 ||
            !reply_number(reply, "code", &code))
            become_python();
        if (reply_number(reply, "signal", &killed)) /* its runner was killed: as mlirgpu.server.client says it */
            fprintf(stderr, "mlirgpu: error: internal error: the compile ended by signal %ld (fix: please report it; "
                            "MLIRGPU_SERVER=off compiles without the server)\n", killed);
        _exit((int)code);
    }
}
