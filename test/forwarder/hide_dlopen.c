/* Preloaded ahead of vgpu: a library that hides the C library's dlopen and
 * dlmopen from dlvsym, the way vgpu looks them up, and passes every other
 * lookup on.  vgpu must then fail with an error, never call through NULL. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

__attribute__((visibility("default"))) void *dlvsym(void *handle, const char *name, const char *version)
{
    void *(*real)(void *, const char *, const char *) =
        (void *(*)(void *, const char *, const char *))dlsym(RTLD_NEXT, "dlvsym");
    if (strcmp(name, "dlopen") == 0 || strcmp(name, "dlmopen") == 0)
        return NULL;
    return real ? real(handle, name, version) : NULL;
}
