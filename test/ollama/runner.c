/*
 * The stand-in runner: what Ollama starts to load a model.  It links the
 * CUDA backend stand-in (runner -> libggml-cuda.so -> libcuda.so.1), looks at
 * CUDA device 0 of what it was given (CUDA_VISIBLE_DEVICES), and allocates
 * layer-sized buffers until the device refuses, as a model's layers are
 * offloaded until memory runs out.
 *
 *   ollama-runner --label NAME [--layer-mib N] [--max-layers N]
 *
 * Prints one line of KEY=VALUE words (strings quoted):
 *   runner label=NAME devices=N name="..." pci=... total=BYTES free=BYTES
 *          layer_bytes=BYTES layers=N stop=CUDA_ERROR_... driver=PATH
 * Exits 0 once it has allocated what it could, 1 if the device could not
 * be used at all, 2 for a usage error.
 */
#include "ggml_standin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *label = NULL;
    size_t layer_mib = 256;
    long max_layers = 4096; /* a bound on a driver that never refuses */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--label") == 0)
            label = argv[i + 1];
        else if (strcmp(argv[i], "--layer-mib") == 0)
            layer_mib = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--max-layers") == 0)
            max_layers = strtol(argv[i + 1], NULL, 10);
    }
    if (!label || layer_mib == 0 || argc % 2 == 0) {
        fprintf(stderr, "usage: ollama-runner --label NAME [--layer-mib N] [--max-layers N]\n");
        return 2;
    }

    const struct ggml_standin_reg *reg = ggml_backend_init();
    struct ggml_standin_props p = { .name = "", .pci = "" };
    int count = 0, r = reg->device_count(&count);
    if (r == 0 && count < 1)
        r = 100; /* CUDA_ERROR_NO_DEVICE */
    if (r == 0)
        r = reg->device_props(0, &p);
    size_t layer = layer_mib << 20;
    long layers = 0;
    int stop = r;
    while (r == 0 && layers < max_layers && (stop = reg->alloc(0, layer)) == 0)
        layers++;
    printf("runner label=%s devices=%d name=\"%s\" pci=%s total=%zu free=%zu layer_bytes=%zu layers=%ld stop=%s "
           "driver=%s\n",
           label, count, p.name, p.pci[0] ? p.pci : "none", p.total_mem, p.free, layer, layers,
           stop ? reg->error_name(stop) : "none", reg->driver_path());
    return r == 0 ? 0 : 1;
}
