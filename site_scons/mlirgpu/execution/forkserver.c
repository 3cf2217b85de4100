/* A fork server inside a dynamically linked tool (mlirgpu.execution.forkserver builds this file and preloads it).

   MLIR's tools spend most of a small run loading: libMLIR and libLLVM are resolved and relocated, and their static
   constructors run, before main. With this library preloaded, the tool's process stops just before main and
   serves requests on the socket named by MLIRGPU_FORKSERVER_FD. A request is a working folder, an argument list
   and an environment (NUL-terminated strings: the folder, the number of arguments in decimal, the arguments, then
   the environment's NAME=VALUE entries) and four descriptors (stdin, stdout, stderr, exit status). The server
   forks, and the child runs the tool's own main in that folder, with those arguments, environment and streams,
   as a fresh process would (nothing of main ran before the fork). The reply is the child's pid in decimal, or -1
   for a request it refused (malformed, or too many children).
   The server reaps its children and writes each one's exit status as a shell's `$?` would (128 + signal for a
   signal), then closes the status pipe. It ends when the socket closes and its last child has ended.

   With MLIRGPU_FORKSERVER_AT_PARSE set, the fork comes later: at the tool's first call of LLVM's command-line
   parser (llvm::cl::ParseCommandLineOptions), which mlir-opt, mlir-translate, llc and llvm-mc make once, after
   registering their dialects, passes, translations and targets and before anything reads an argument. The
   server runs main with the program's name alone up to that call and serves from there; a child goes on with its
   request's arguments from the parse on, as a fresh run would from that point (the registrations read no
   argument and no environment). The main's argv[0] is the request's; only a crash's stack dump, which prints the
   argument list the tool began with, names the program alone. A tool whose main never makes that call, or has
   started a thread before it, is not served (no reply: its caller runs it itself). The first reply says where a
   server forks: "ready main" or "ready parse".

   Without MLIRGPU_FORKSERVER_FD the library calls main unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

typedef int (*main_function)(int, char **, char **);
typedef int (*start_function)(main_function, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

extern char **environ;

enum { MAX_REQUEST = 1 << 20, MAX_WORDS = 1 << 14, MAX_CHILDREN = 1024, STREAMS = 4 };

/* llvm::cl::ParseCommandLineOptions(int, const char *const *, StringRef, raw_ostream *, vfs::FileSystem *,
   const char *, bool) of LLVM 22: its arguments after argv are six machine words (the StringRef's two among them),
   passed on as they came. */
#define PARSE_SYMBOL "_ZN4llvm2cl23ParseCommandLineOptionsEiPKPKcNS_9StringRefEPNS_11raw_ostreamEPNS_3vfs10FileSystemES2_b"
typedef _Bool (*parse_function)(int, const char *const *, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                                uintptr_t);

static main_function tool_main;
static int parse_control = -1; /* the socket to serve on at the first parse; -1 once served, or when not at parse */
static char *server_argv[2];   /* the main's argv in a server forking at the parse: the request's argv[0] in a child */
static struct sigaction tool_actions[NSIG]; /* every signal's action where the fork happens: a child's again */
static pid_t child_pids[MAX_CHILDREN];
static int child_status_fds[MAX_CHILDREN];
static int children;

/* Write the exit status of child `pid` on its status pipe and forget it. */
static void report(pid_t pid, int status) {
    for (int i = 0; i < children; i++) {
        if (child_pids[i] != pid)
            continue;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        char text[16];
        int length = snprintf(text, sizeof text, "%d\n", code);
        if (write(child_status_fds[i], text, length) < 0) {
            /* the reader went away: nobody waits for this status */
        }
        close(child_status_fds[i]);
        children--;
        child_pids[i] = child_pids[children];
        child_status_fds[i] = child_status_fds[children];
        return;
    }
}

/* The streams an SCM_RIGHTS message carried (at most STREAMS; any beyond are closed); their number. */
static int received_fds(struct msghdr *message, int *fds) {
    int count = 0;
    for (struct cmsghdr *part = CMSG_FIRSTHDR(message); part; part = CMSG_NXTHDR(message, part)) {
        if (part->cmsg_level != SOL_SOCKET || part->cmsg_type != SCM_RIGHTS)
            continue;
        int carried = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *data = (int *)CMSG_DATA(part);
        for (int i = 0; i < carried; i++) {
            if (count < STREAMS)
                fds[count++] = data[i];
            else
                close(data[i]);
        }
    }
    return count;
}

static void save_actions(void) {
    for (int signal_number = 1; signal_number < NSIG; signal_number++)
        sigaction(signal_number, NULL, &tool_actions[signal_number]);
}

static void restore_actions(void) {
    for (int signal_number = 1; signal_number < NSIG; signal_number++)
        if (signal_number != SIGKILL && signal_number != SIGSTOP)
            sigaction(signal_number, &tool_actions[signal_number], NULL);
}

/* Make this child the run of `fds` in `folder` with `envp`, in a new session (a caller's time limit kills it as
   a group): then it runs the tool's main with `argv` or, forking at the parse, returns to the parse. A folder
   that cannot be entered is said as a shell would, with its exit status 127. */
static void enter_child(int control, int signals, sigset_t *blocked, const char *folder, char **argv, int argc,
                        char **envp, int *fds) {
    close(signals);
    close(control);
    restore_actions();
    sigprocmask(SIG_UNBLOCK, blocked, NULL);
    setsid();
    for (int i = 0; i < 3; i++)
        dup2(fds[i], i);
    for (int i = 0; i < STREAMS; i++)
        close(fds[i]);
    if (chdir(folder) != 0) {
        dprintf(2, "%s: cannot enter %s: %s\n", argv[0], folder, strerror(errno));
        _exit(127);
    }
    environ = envp;
    if (server_argv[0] != NULL) {
        server_argv[0] = argv[0];
        return;
    }
    exit(tool_main(argc, argv, envp));
}

static char **child_argv;
static int child_argc;

/* Answer one request on `control`; 0 when the socket has closed, CHILD in a child that goes on to the parse (its
   arguments in child_argc and child_argv). */
enum { CHILD = 2 };
static int serve_request(int control, int signals, sigset_t *blocked) {
    static char request[MAX_REQUEST + 1];
    char ancillary[CMSG_SPACE(STREAMS * sizeof(int))];
    struct iovec part = {request, MAX_REQUEST};
    struct msghdr message = {0};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = ancillary;
    message.msg_controllen = sizeof ancillary;
    ssize_t length = recvmsg(control, &message, MSG_CMSG_CLOEXEC);
    if (length <= 0)
        return length < 0 && errno == EINTR;
    int fds[STREAMS];
    int count = received_fds(&message, fds);
    request[length] = 0;
    static char *words[MAX_WORDS + 2];
    int count_words = 0;
    for (char *word = request; word < request + length && count_words <= MAX_WORDS; word += strlen(word) + 1)
        words[count_words++] = word;
    /* words: folder, argc, argv[0..argc), environment..., then two NULLs (argv's end, overwritten below, and
       the environment's) */
    int argc = count_words >= 2 ? atoi(words[1]) : 0;
    int complete = count == STREAMS && length > 0 && request[length - 1] == 0 && count_words <= MAX_WORDS &&
                   !(message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && children < MAX_CHILDREN &&
                   argc > 0 && argc <= count_words - 2;
    pid_t pid = -1;
    if (complete) {
        char **argv = words + 2, **envp = words + 3 + argc;
        /* the environment moves up one place to leave argv its terminating NULL */
        memmove(envp, envp - 1, (count_words - 2 - argc) * sizeof(char *));
        envp[count_words - 2 - argc] = NULL;
        argv[argc] = NULL;
        pid = fork();
        if (pid == 0) {
            enter_child(control, signals, blocked, words[0], argv, argc, envp, fds);
            child_argc = argc;
            child_argv = argv;
            return CHILD;
        }
    }
    if (pid > 0) {
        child_pids[children] = pid;
        child_status_fds[children++] = fds[3];
    }
    for (int i = 0; i < count; i++)
        if (pid <= 0 || i < 3)
            close(fds[i]);
    char reply[32];
    int size = snprintf(reply, sizeof reply, "%d", (int)pid);
    if (send(control, reply, size, MSG_NOSIGNAL) < 0) {
        /* the server went away: the next receive says so */
    }
    return 1;
}

/* Serve until the socket closes and the last child has ended: 0, 1 on a failure, CHILD in a child going on to
   the parse. `ready`: what the caller is told first. */
static int serve(int control, const char *ready) {
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGCHLD);
    signal(SIGCHLD, SIG_DFL); /* an ignored SIGCHLD (inherited) would reap the children before we could */
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    signal(SIGPIPE, SIG_IGN);
    int signals = signalfd(-1, &blocked, SFD_CLOEXEC);
    if (signals < 0 || send(control, ready, strlen(ready), MSG_NOSIGNAL) < 0)
        return 1;
    int listening = 1;
    while (listening || children) {
        struct pollfd events[2] = {{signals, POLLIN, 0}, {control, POLLIN, 0}};
        if (poll(events, listening ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (events[0].revents) {
            struct signalfd_siginfo info;
            if (read(signals, &info, sizeof info) < 0) {
                /* several children may share one signal: waitpid below finds them all */
            }
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                report(pid, status);
        }
        if (listening && events[1].revents) {
            int served = serve_request(control, signals, &blocked);
            if (served == CHILD)
                return CHILD;
            if (!served) {
                listening = 0;
                close(control);
            }
        }
    }
    return 0;
}

/* Whether this process runs one thread (a fork copies only the calling one). */
static int single_threaded(void) {
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL)
        return 0;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(tasks)) != NULL;)
        count += entry->d_name[0] != '.';
    closedir(tasks);
    return count == 1;
}

static int main_or_serve(int argc, char **argv, char **envp) {
    const char *number = getenv("MLIRGPU_FORKSERVER_FD");
    if (number == NULL)
        return tool_main(argc, argv, envp);
    int control = atoi(number);
    int at_parse = getenv("MLIRGPU_FORKSERVER_AT_PARSE") != NULL && dlsym(RTLD_NEXT, PARSE_SYMBOL) != NULL;
    unsetenv("MLIRGPU_FORKSERVER_FD"); /* the children's environment is the one the tool was started with */
    unsetenv("MLIRGPU_FORKSERVER_AT_PARSE");
    unsetenv("LD_PRELOAD");
    if (!at_parse) {
        save_actions();
        return serve(control, "ready main");
    }
    parse_control = control;
    server_argv[0] = argv[0];
    int status = tool_main(1, server_argv, envp); /* returns in a child, which served from the parse */
    if (parse_control >= 0)
        _exit(1); /* main ended without parsing: no ready, and the caller runs the tool itself */
    return status;
}

/* The tool's command-line parse: in a server forking at the parse, its first call serves (and the server ends
   there); in a child, and at every later call, LLVM's own. */
_Bool _ZN4llvm2cl23ParseCommandLineOptionsEiPKPKcNS_9StringRefEPNS_11raw_ostreamEPNS_3vfs10FileSystemES2_b(
    int argc, const char *const *argv, uintptr_t overview, uintptr_t overview_size, uintptr_t errors,
    uintptr_t file_system, uintptr_t environment_variable, uintptr_t long_options) {
    static parse_function parse;
    if (parse == NULL)
        parse = (parse_function)dlsym(RTLD_NEXT, PARSE_SYMBOL);
    if (parse_control >= 0) {
        int control = parse_control;
        parse_control = -1;
        if (!single_threaded())
            _exit(1); /* a fork would copy this thread alone: no ready, and the caller runs the tool itself */
        save_actions();
        int served = serve(control, "ready parse");
        if (served != CHILD)
            _exit(served);
        argc = child_argc;
        argv = (const char *const *)child_argv;
    }
    return parse(argc, argv, overview, overview_size, errors, file_system, environment_variable, long_options);
}

int __libc_start_main(main_function main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    start_function start = (start_function)dlsym(RTLD_NEXT, "__libc_start_main");
    tool_main = main;
    return start(main_or_serve, argc, argv, init, fini, rtld_fini, stack_end);
}
