/* The library the program links; it links the one that links libcuda.so.1. */
#include <stddef.h>

int chain_bottom_probe(char *driver, size_t driver_len, int *count, size_t *total);

__attribute__((visibility("default"))) int chain_middle_probe(char *driver, size_t driver_len, int *count,
                                                          size_t *total)
{
    return chain_bottom_probe(driver, driver_len, count, total);
}
