/*
 * Pids named as the caller sees them (common/contract/window/pid_ns.c), on procfs
 * trees made up in a temp dir: pid_ns_test SCENARIO DIR.
 *
 *   own-namespace       the procfs is the caller's: a recorded pid of it is itself
 *   other-namespace     a pid recorded in another namespace is found by its start time
 *   same-tick           two processes started in one tick cannot be told apart: 0
 *   same-tick-nspid     ... unless the recorded pid is one of exactly one of theirs (NSpid)
 *   same-tick-joined    ... or exactly one of them joined a vGPU (holds its status record)
 *   exited              a process that no longer runs: 0
 *   outer-procfs        the caller unshared its PID namespace but kept /proc: NSpid gives its pid
 *   outer-procfs-other  ... and a process of the outer or a sibling namespace is not its to see: 0
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"
#include "common/contract/window/pid_ns.h"

#include <errno.h>
#include <sys/stat.h>

static const char *root;

static void write_file(const char *who, const char *leaf, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, who);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/ns", root, who);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%s", root, who, leaf);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/*
 * A process as a procfs shows it: who ("self" or a pid), its start time,
 * its NSpid line (outermost first) and its PID namespace's link.  The
 * command name holds ") " to keep the stat parser honest.
 */
static void process(const char *who, unsigned long long start, const char *nspid, const char *ns)
{
    char text[512];
    snprintf(text, sizeof(text), "%s (a) b) S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %llu 1000 100\n",
             strcmp(who, "self") ? who : "1", start);
    write_file(who, "stat", text);
    snprintf(text, sizeof(text), "Name:\ta\nTgid:\t%s\nNgid:\t0\nPid:\t%s\nNSpid:\t%s\nNSpgid:\t1\n", who, who, nspid);
    write_file(who, "status", text);
    char link[512];
    snprintf(link, sizeof(link), "%s/%s/ns/pid", root, who);
    unlink(link);
    if (symlink(ns, link) != 0) {
        fprintf(stderr, "cannot link %s: %s\n", link, strerror(errno));
        exit(1);
    }
}

static int visible(int pid, unsigned long long start)
{
    struct vgpu_pid_ns ns;
    vgpu_pid_ns_open(&ns, root);
    int p = vgpu_pid_ns_visible(&ns, pid, start);
    vgpu_pid_ns_close(&ns);
    return p;
}

#define HOST "pid:[4026531836]"
#define CONTAINER "pid:[4026532500]"
#define SIBLING "pid:[4026532600]"

/* The procfs's own process: a recorded pid of it is itself. */
static void own_namespace(void)
{
    process("self", 500, "7", CONTAINER);
    process("7", 500, "7", CONTAINER);
    process("12", 9000, "12", CONTAINER);
    CHECK(visible(12, 9000) == 12, "pid 12 recorded here: %d, want 12", visible(12, 9000));
    CHECK(visible(12, 0) == 12, "pid 12 with no start time recorded: %d, want 12", visible(12, 0));
}

/* Recorded by the mediator as host pid 4242; here it is pid 12, and this
 * procfs's 4242 is none, or another process. */
static void other_namespace(void)
{
    process("self", 500, "7", CONTAINER);
    process("12", 9000, "12", CONTAINER);
    process("13", 9100, "13", CONTAINER);
    CHECK(visible(4242, 9000) == 12, "host pid 4242: %d, want 12", visible(4242, 9000));
    process("4242", 7000, "4242", CONTAINER);
    CHECK(visible(4242, 9000) == 12, "host pid 4242, another process here: %d, want 12", visible(4242, 9000));
}

static void same_tick(void)
{
    process("self", 500, "7", CONTAINER);
    process("12", 9000, "12", CONTAINER);
    process("13", 9000, "13", CONTAINER);
    CHECK(visible(4242, 9000) == 0, "host pid 4242 when 12 and 13 started in its tick: %d, want 0",
          visible(4242, 9000));
}

/* unshare (4000) and the container's first process (4001, its own pid 1,
 * as it recorded itself standalone) fork in one tick. */
static void same_tick_nspid(void)
{
    process("self", 500, "7", HOST);
    process("4000", 9000, "4000", HOST);
    process("4001", 9000, "4001\t1", CONTAINER);
    CHECK(visible(1, 9000) == 4001, "its own pid 1 in the tick of its parent: %d, want 4001", visible(1, 9000));
}

/* A container's shell (1) and the process it forks first (2), in one tick;
 * the mediator recorded the second as host pid 4242. */
static void same_tick_joined(void)
{
    process("self", 500, "7", CONTAINER);
    process("1", 9000, "1", CONTAINER);
    process("2", 9000, "2", CONTAINER);
    CHECK(visible(4242, 9000) == 0, "neither has joined: %d, want 0", visible(4242, 9000));
    char fd[512];
    snprintf(fd, sizeof(fd), "%s/2/fd", root);
    mkdir(fd, 0755);
    snprintf(fd, sizeof(fd), "%s/2/fd/5", root);
    if (symlink("/memfd:vgpu-status (deleted)", fd) != 0) {
        fprintf(stderr, "cannot link %s: %s\n", fd, strerror(errno));
        exit(1);
    }
    CHECK(visible(4242, 9000) == 2, "the one that joined a vGPU: %d, want 2", visible(4242, 9000));
}

static void exited(void)
{
    process("self", 500, "7", CONTAINER);
    CHECK(visible(4242, 9000) == 0, "an exited process: %d, want 0", visible(4242, 9000));
    CHECK(visible(4242, 0) == 0, "an exited process with no start time: %d, want 0", visible(4242, 0));
}

/* The host's /proc, seen from a process of a container (host pid 100, its own 1). */
static void outer_procfs(void)
{
    process("self", 500, "100\t1", CONTAINER);
    process("200", 9000, "200\t5", CONTAINER);
    CHECK(visible(200, 9000) == 5, "host pid 200 of the caller's namespace: %d, want 5", visible(200, 9000));
    /* Recorded standalone by the process itself, as its own pid 5. */
    process("5", 10, "5", HOST);
    CHECK(visible(5, 9000) == 5, "its own pid 5 (the host's 5 is another process): %d, want 5", visible(5, 9000));
}

static void outer_procfs_other(void)
{
    process("self", 500, "100\t1", CONTAINER);
    process("300", 9000, "300", HOST);
    process("400", 9100, "400\t5", SIBLING);
    process("500", 9200, "500\t6\t2", CONTAINER); /* one level down: cannot be told from a sibling's child */
    CHECK(visible(300, 9000) == 0, "a host process: %d, want 0", visible(300, 9000));
    CHECK(visible(400, 9100) == 0, "a sibling container's process: %d, want 0", visible(400, 9100));
    CHECK(visible(500, 9200) == 0, "a nested namespace's process: %d, want 0", visible(500, 9200));
}

static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    { "own-namespace", own_namespace },     { "other-namespace", other_namespace },       { "same-tick", same_tick },
    { "same-tick-nspid", same_tick_nspid }, { "same-tick-joined", same_tick_joined },     { "exited", exited },
    { "outer-procfs", outer_procfs },       { "outer-procfs-other", outer_procfs_other },
};

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pid_ns_test SCENARIO DIR\n");
        return 2;
    }
    root = argv[2];
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(*scenarios); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].run();
            if (atomic_load(&failures)) {
                fprintf(stderr, "pid_ns_test %s: %d check(s) failed\n", argv[1], atomic_load(&failures));
                return 1;
            }
            printf("ok - %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
