/* Finding the program a command runs; see find_program.h. */
#define _GNU_SOURCE
#include "tools/lib/find_program.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kernel's limit on nested #! interpreters (BINPRM_MAX_RECURSION). */
#define MAX_SCRIPT_DEPTH 4

/* 0 if path is a file this process may execute, else the errno execve would give. */
static int check_executable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0)
        return errno;
    return 0;
}

/* Searches PATH as execvp does: an empty entry is the current directory,
 * and a match that cannot be executed only counts if nothing later can. */
static int search_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    char default_path[256];
    if (!path) {
        size_t n = confstr(_CS_PATH, default_path, sizeof(default_path));
        path = n > 0 && n <= sizeof(default_path) ? default_path : "/bin:/usr/bin";
    }
    if (!*name)
        return ENOENT;
    int err = ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        int dirlen = (int)(end - p);
        if ((size_t)snprintf(out, len, "%.*s%s%s", dirlen, p, dirlen ? "/" : "", name) < len) {
            int e = check_executable(out);
            if (e == 0)
                return 0;
            if (e == EACCES)
                err = EACCES;
        }
        if (!*end)
            return err;
        p = end;
    }
}

/* Finds the file execvp would run for name: 0, or an errno. */
int vgpu_find_program(const char *name, char *out, size_t len)
{
    if (!strchr(name, '/'))
        return search_path(name, out, len);
    if ((size_t)snprintf(out, len, "%s", name) >= len)
        return ENAMETOOLONG;
    return check_executable(out);
}

/* Reads path's "#!INTERP [ARG]" line as the kernel does (fs/binfmt_script.c):
 * INTERP is the first word, ARG the trimmed rest of the line, one string. */
static bool read_shebang(const char *path, char *interp, size_t interp_len, char *arg, size_t arg_len)
{
    char head[257];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, head, sizeof(head) - 1);
    close(fd);
    if (n < 2 || head[0] != '#' || head[1] != '!')
        return false;
    head[n] = '\0';
    char *line = head + 2;
    line[strcspn(line, "\n")] = '\0';
    line += strspn(line, " \t");
    size_t word = strcspn(line, " \t");
    if (word == 0 || word >= interp_len)
        return false;
    memcpy(interp, line, word);
    interp[word] = '\0';
    char *rest = line + word + strspn(line + word, " \t");
    size_t rest_len = strlen(rest);
    while (rest_len && (rest[rest_len - 1] == ' ' || rest[rest_len - 1] == '\t'))
        rest_len--;
    snprintf(arg, arg_len, "%.*s", (int)rest_len, rest);
    return true;
}

/* The PROGRAM of "env [OPTION]... [NAME=VALUE]... PROGRAM [ARG]...", from
 * the words of a #! argument; NULL if there is none. */
static const char *env_program(char *words)
{
    char *save = NULL;
    for (char *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (strcmp(w, "-u") == 0 || strcmp(w, "--unset") == 0 || strcmp(w, "-C") == 0 || strcmp(w, "--chdir") == 0)
            strtok_r(NULL, " \t", &save); /* the option's argument */
        else if (w[0] != '-' && !strchr(w, '='))
            return w;
    }
    return NULL;
}

/* Follows #! lines from prog to the program that really runs: the kernel
 * starts a script's interpreter, and "#!/usr/bin/env NAME" starts NAME from
 * PATH.  LD_PRELOAD only matters to that last program. */
void vgpu_follow_interpreters(char *prog, size_t len)
{
    for (int depth = 0; depth < MAX_SCRIPT_DEPTH; depth++) {
        char interp[PATH_MAX], arg[256], found[PATH_MAX];
        if (!read_shebang(prog, interp, sizeof(interp), arg, sizeof(arg)))
            return;
        const char *base = strrchr(interp, '/');
        const char *name = strcmp(base ? base + 1 : interp, "env") == 0 ? env_program(arg) : NULL;
        snprintf(prog, len, "%s", name && vgpu_find_program(name, found, sizeof(found)) == 0 ? found : interp);
    }
}

