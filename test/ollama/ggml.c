/* libggml.so stand-in: loads backends by path (ggml_backend_load). */
#include "ggml_standin.h"

#include <dlfcn.h>

GGML_STANDIN_EXPORT const struct ggml_standin_reg *ggml_backend_load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        ggml_log_error("failed to load %s: %s", path, dlerror());
        return NULL;
    }
    const struct ggml_standin_reg *(*init)(void) = (const struct ggml_standin_reg *(*)(void))dlsym(lib, "ggml_backend_init");
    if (!init) {
        ggml_log_error("%s has no ggml_backend_init: %s", path, dlerror());
        return NULL;
    }
    return init();
}
