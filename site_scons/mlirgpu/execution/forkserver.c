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

   Without MLIRGPU_FORKSERVER_FD the library calls main unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*main_function)(int, char **, char **);
typedef int (*start_function)(main_function, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

extern char **environ;

enum { MAX_REQUEST = 1 << 20, MAX_WORDS = 1 << 14, MAX_CHILDREN = 1024, STREAMS = 4 };

static main_function tool_main;
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

/* Run the tool's main on `fds` in `folder` with `argv` and `envp`, in a new session (a caller's time limit
   kills it as a group). A folder that cannot be entered is said as a shell would, with its exit status 127. */
static void run_child(int control, int signals, sigset_t *blocked, const char *folder, char **argv, int argc,
                      char **envp, int *fds) {
    close(signals);
    close(control);
    signal(SIGPIPE, SIG_DFL);
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
    exit(tool_main(argc, argv, envp));
}

/* Answer one request on `control`; 0 when the socket has closed. */
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
        if (pid == 0)
            run_child(control, signals, blocked, words[0], argv, argc, envp, fds);
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

static int serve(int control) {
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGCHLD);
    signal(SIGCHLD, SIG_DFL); /* an ignored SIGCHLD (inherited) would reap the children before we could */
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    signal(SIGPIPE, SIG_IGN);
    int signals = signalfd(-1, &blocked, SFD_CLOEXEC);
    if (signals < 0 || send(control, "ready", 5, MSG_NOSIGNAL) < 0)
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
        if (listening && events[1].revents && !serve_request(control, signals, &blocked)) {
            listening = 0;
            close(control);
        }
    }
    return 0;
}

static int main_or_serve(int argc, char **argv, char **envp) {
    const char *number = getenv("MLIRGPU_FORKSERVER_FD");
    if (number == NULL)
        return tool_main(argc, argv, envp);
    int control = atoi(number);
    unsetenv("MLIRGPU_FORKSERVER_FD"); /* the children's environment is the one the tool was started with */
    unsetenv("LD_PRELOAD");
    return serve(control);
}

int __libc_start_main(main_function main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    start_function start = (start_function)dlsym(RTLD_NEXT, "__libc_start_main");
    tool_main = main;
    return start(main_or_serve, argc, argv, init, fini, rtld_fini, stack_end);
}
