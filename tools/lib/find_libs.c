/* Finding vgpu's libraries; see find_libs.h. */
#define _GNU_SOURCE
#include "tools/lib/find_libs.h"

#include "common/error.h"
#include "vgpu_install_dirs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note_tried(char *tried, size_t len, const char *dir, const char *why)
{
    size_t used = strlen(tried);
    snprintf(tried + used, len - used, "%s%s%s%s%s", used ? ", " : "", dir, why ? " (" : "", why ? why : "",
             why ? ")" : "");
}

/* True if dir holds libvgpu-cuda.so; canon is then dir's absolute, canonical path. */
static bool try_lib_dir(const char *dir, char *canon, char *tried, size_t tried_len)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/" VGPU_CUDA_LIB, dir) >= sizeof(path) || access(path, F_OK) != 0) {
        note_tried(tried, tried_len, dir, NULL);
        return false;
    }
    if (!realpath(dir, canon)) {
        note_tried(tried, tried_len, dir, strerror(errno));
        return false;
    }
    /* The loader splits LD_PRELOAD at both, with no way to quote them. */
    if (strpbrk(canon, " :")) {
        note_tried(tried, tried_len, dir, "a space or colon in its path, which LD_PRELOAD cannot hold");
        return false;
    }
    return true;
}

/* The directory above this executable's: build/ in the build tree (the
 * tools are build/tools/NAME), the install prefix once installed.
 * /proc/self/exe, unlike argv[0], has symlinks to the tool resolved. */
static int exe_prefix(char *prefix, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", prefix, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return -1;
    prefix[n] = '\0';
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(prefix, '/');
        if (!slash)
            return -1;
        slash[slash == prefix] = '\0'; /* keeps "/" for the root */
    }
    return 0;
}

static bool search_lib_dirs(char *dir, char *tried, size_t tried_len)
{
    const char *env = getenv("VGPU_LIB_DIR");
    if (env && *env && try_lib_dir(env, dir, tried, tried_len))
        return true;

    char prefix[PATH_MAX];
    if (exe_prefix(prefix, sizeof(prefix)) == 0) {
        static const char *const subdirs[] = { "", "/lib/x86_64-linux-gnu", "/lib64", "/lib" };
        for (size_t i = 0; i < sizeof(subdirs) / sizeof(*subdirs); i++) {
            char candidate[PATH_MAX];
            if ((size_t)snprintf(candidate, sizeof(candidate), "%s%s", prefix, subdirs[i]) < sizeof(candidate) &&
                try_lib_dir(candidate, dir, tried, tried_len))
                return true;
        }
    } else {
        note_tried(tried, tried_len, "the directories next to this program", "/proc/self/exe cannot be read");
    }
    return try_lib_dir(VGPU_LIBDIR, dir, tried, tried_len);
}

int vgpu_find_libs(const char *lib_dir, bool with_nvml, struct vgpu_libs *libs, char *err, size_t errlen)
{
    char tried[8192] = "";
    bool found = lib_dir ? try_lib_dir(lib_dir, libs->dir, tried, sizeof(tried))
                         : search_lib_dirs(libs->dir, tried, sizeof(tried));
    if (!found) {
        libs->dir[0] = '\0';
        return vgpu_fail(err, errlen, "cannot find " VGPU_CUDA_LIB "; looked in %s. Name its directory with "
                         "--lib-dir or VGPU_LIB_DIR.", tried);
    }
    snprintf(libs->cuda, sizeof(libs->cuda), "%s/" VGPU_CUDA_LIB, libs->dir);
    libs->nvml[0] = '\0';
    if (!with_nvml)
        return 0;
    snprintf(libs->nvml, sizeof(libs->nvml), "%s/" VGPU_NVML_LIB, libs->dir);
    if (access(libs->nvml, F_OK) != 0)
        return vgpu_fail(err, errlen, "%s holds " VGPU_CUDA_LIB " but not " VGPU_NVML_LIB, libs->dir);
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Appends word to the space-separated list s, which has room for it. */
static void append_word(char *s, const char *word)
{
    if (*s)
        strcat(s, " ");
    strcat(s, word);
}

char *vgpu_preload_list(const struct vgpu_libs *libs, const char *old)
{
    if (!old)
        old = "";
    char *copy = strdup(old);
    char *out = malloc(strlen(libs->cuda) + strlen(libs->nvml) + strlen(old) + 3);
    if (!copy || !out) {
        free(copy);
        free(out);
        return NULL;
    }
    *out = '\0';
    append_word(out, libs->cuda);
    if (libs->nvml[0])
        append_word(out, libs->nvml);

    char *rest = copy, *entry;
    while ((entry = strsep(&rest, " :"))) { /* the loader's separators */
        const char *base = base_name(entry);
        if (*entry && strcmp(base, base_name(libs->cuda)) != 0 &&
            !(libs->nvml[0] && strcmp(base, base_name(libs->nvml)) == 0))
            append_word(out, entry);
    }
    free(copy);
    return out;
}
