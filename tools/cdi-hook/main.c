/*
 * vgpu-cdi-hook: what a container runtime runs, as a CDI device's
 * createRuntime hook, to give a vGPU made for containers to the
 * container being created.  It reads the OCI state on standard input (the
 * container's pid) and asks the mediator to bind the vGPU to that
 * process's cgroup (BIND, docs/reference/protocol.md): from the container's first
 * process on, its processes are admitted to that vGPU, and only to it,
 * whatever user they run as (docs/guide/containers.md).
 *
 *   vgpu-cdi-hook bind --vgpu NAME [--socket PATH] [--pid PID]
 *
 * The runtime stops the container from starting when the hook fails: the
 * message says why on standard error.
 */
#define _GNU_SOURCE
#include "tools/lib/mediator_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STATE (1 << 20)

static int usage(FILE *to, int code)
{
    fprintf(to, "usage: vgpu-cdi-hook bind --vgpu NAME [--socket PATH] [--pid PID]\n"
                "  Binds vGPU NAME (made by containers = N in the mediator's config) to the cgroup of the\n"
                "  container whose OCI state is on standard input (a createRuntime hook), or of PID.\n"
                "  --socket: the mediator's socket (default /run/vgpu/mediator.sock).\n");
    return code;
}

/* Past a JSON string that starts at s (its opening quote); NULL if it never ends. */
static const char *skip_string(const char *s, char *key, size_t keylen)
{
    size_t n = 0;
    for (s++; *s && *s != '"'; s++) {
        if (*s == '\\' && !*++s)
            return NULL;
        if (key && n + 1 < keylen)
            key[n++] = *s;
    }
    if (key)
        key[n] = '\0';
    return *s ? s + 1 : NULL;
}

/* The state's own "pid" (a key of the outermost object, not one of its
 * annotations): the container's process.  0 when there is none. */
static long state_pid(const char *s)
{
    int depth = 0;
    while (*s) {
        if (*s == '"') {
            char key[8];
            const char *after = skip_string(s, key, sizeof(key));
            if (!after)
                return 0;
            const char *colon = after + strspn(after, " \t\r\n");
            if (depth == 1 && *colon == ':' && strcmp(key, "pid") == 0) {
                char *end;
                long pid = strtol(colon + 1, &end, 10);
                return end != colon + 1 && pid > 0 ? pid : 0;
            }
            s = after;
            continue;
        }
        depth += *s == '{' || *s == '[';
        depth -= *s == '}' || *s == ']';
        s++;
    }
    return 0;
}

static char *read_all(FILE *f)
{
    char *buf = malloc(MAX_STATE + 1);
    size_t n = buf ? fread(buf, 1, MAX_STATE, f) : 0;
    if (buf)
        buf[n] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    const char *vgpu = NULL, *sock = "/run/vgpu/mediator.sock";
    long pid = 0;
    if (argc < 2)
        return usage(stderr, 2);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return usage(stdout, 0);
    if (strcmp(argv[1], "bind") != 0)
        return usage(stderr, 2);
    for (int i = 2; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--vgpu") == 0)
            vgpu = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--socket") == 0)
            sock = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--pid") == 0)
            pid = strtol(argv[++i], NULL, 10);
        else
            return usage(stderr, 2);
    }
    if (!vgpu)
        return usage(stderr, 2);
    if (pid <= 0) {
        char *state = read_all(stdin);
        pid = state ? state_pid(state) : 0;
        free(state);
        if (pid <= 0) {
            fprintf(stderr, "vgpu-cdi-hook: no container pid in the OCI state on standard input: run it as a "
                            "createRuntime hook (CDI), or give --pid\n");
            return 1;
        }
    }
    char err[768], cgroup[VGPU_CGROUP_LEN];
    int fd = vgpu_tool_dial(sock, err, sizeof(err));
    if (fd < 0 || vgpu_tool_bind(fd, sock, vgpu, (uint32_t)pid, cgroup, sizeof(cgroup), err, sizeof(err)) != 0) {
        fprintf(stderr, "vgpu-cdi-hook: vGPU %s for pid %ld: %s\n", vgpu, pid, err);
        return 1;
    }
    close(fd);
    return 0;
}
