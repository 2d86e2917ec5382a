/*
 * Vulkan reaches the GPU through the driver's Vulkan ICD, without libcuda:
 * a process under a vGPU that can see NVIDIA's ICD can use the GPU past the
 * vGPU's limits (Ollama's Vulkan backend is on by default).  The loader
 * finds ICDs in VK_DRIVER_FILES / VK_ICD_FILENAMES, else in the icd.d
 * directories.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const icd_dirs[] = { "/etc/vulkan/icd.d", "/usr/share/vulkan/icd.d" };

/* An ICD manifest whose library is NVIDIA's (nvidia_icd.json: "libGLX_nvidia.so.0"). */
static bool is_nvidia(const struct doc_fs *fs, const char *path)
{
    char *text;
    size_t len;
    if (doc_fs_read(fs, path, &text, &len) != 0)
        return false;
    const char *lib = strstr(text, "\"library_path\"");
    bool nvidia = false;
    if (lib) {
        const char *end = strchr(lib + 14, ',');
        const char *brace = strchr(lib + 14, '}');
        if (!end || (brace && brace < end))
            end = brace;
        size_t n = end ? (size_t)(end - lib) : strlen(lib);
        char value[512];
        snprintf(value, sizeof(value), "%.*s", (int)n, lib);
        nvidia = strcasestr(value, "nvidia") != NULL;
    }
    free(text);
    return nvidia;
}

/* The first NVIDIA manifest among list (':'-separated files or directories), or among the icd.d dirs. */
static bool find_icd(const struct doc_fs *fs, const char *list, char *found, size_t len)
{
    char *copy = strdup(list ? list : ""), *rest = copy, *entry;
    bool any = false;
    while (copy && (entry = strsep(&rest, ":"))) {
        if (!*entry)
            continue;
        any = true;
        char full[PATH_MAX * 2];
        struct stat st;
        if (stat(doc_fs_path(fs, entry, full, sizeof(full)), &st) == 0 && !S_ISDIR(st.st_mode) &&
            is_nvidia(fs, entry)) {
            snprintf(found, len, "%s", entry);
            free(copy);
            return true;
        }
    }
    free(copy);
    if (any)
        return false; /* a list replaces the directories */
    for (size_t i = 0; i < sizeof(icd_dirs) / sizeof(*icd_dirs); i++) {
        char full[PATH_MAX * 2];
        DIR *d = opendir(doc_fs_path(fs, icd_dirs[i], full, sizeof(full)));
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[PATH_MAX];
            size_t n = strlen(e->d_name);
            snprintf(path, sizeof(path), "%s/%s", icd_dirs[i], e->d_name);
            if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0 && is_nvidia(fs, path)) {
                snprintf(found, len, "%s", path);
                closedir(d);
                return true;
            }
        }
        if (d)
            closedir(d);
    }
    return false;
}

/* Under a vGPU: its record says so, or (no record yet) vgpu is in and a vGPU is configured. */
static bool under_vgpu(const struct doc_ctx *c)
{
    if (c->have_record)
        return strcmp(c->record.mode, "on") == 0;
    if (!c->proc)
        return c->service_uses_vgpu;
    bool vgpu_in = c->preload_has_vgpu || c->vgpu_mapped[DOC_CUDA] || c->vgpu_mapped[DOC_NVML];
    bool configured = c->mediator_answers || doc_proc_getenv(c->proc, "VGPU_MEMORY_LIMIT") ||
                      doc_proc_getenv(c->proc, "VGPU_VISIBLE_DEVICES") || doc_proc_getenv(c->proc, "VGPU_BAR0");
    return vgpu_in && configured;
}

void doc_check_vulkan(struct doc_ctx *c)
{
    if (!under_vgpu(c))
        return;
    const char *list = NULL;
    if (c->proc) {
        list = doc_proc_getenv(c->proc, "VK_DRIVER_FILES");
        if (!list || !*list)
            list = doc_proc_getenv(c->proc, "VK_ICD_FILENAMES");
    }
    char icd[PATH_MAX];
    if (!find_icd(&c->fs, list, icd, sizeof(icd)))
        return;
    const char *off = c->proc ? doc_proc_getenv(c->proc, "OLLAMA_VULKAN") : NULL;
    if ((off && strcmp(off, "0") == 0) || (!c->proc && c->service_vulkan_off)) {
        doc_add(&c->report, DOC_INFO, "vulkan", "NVIDIA's Vulkan driver is visible (%s), and OLLAMA_VULKAN=0 keeps "
                "Ollama off it", icd);
        return;
    }
    doc_fix(doc_add(&c->report, DOC_WARNING, "vulkan",
                    "NVIDIA's Vulkan driver is visible to it (%s): Vulkan reaches the GPU without libcuda, so the "
                    "vGPU's limits do not apply to what it does through Vulkan", icd),
            "keep it off Vulkan: for Ollama, OLLAMA_VULKAN=0 in its environment (sudo vgpu-setup enable --service "
            "ollama sets it); for other programs, VK_DRIVER_FILES=/nonexistent.json, or leave %s out of the "
            "container", icd);
}
