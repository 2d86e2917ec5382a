/* The library the program links; it links the one that links libcuda.so.1. */
int chain_bottom_probe(void);

__attribute__((visibility("default"))) int chain_middle_probe(void);
__attribute__((visibility("default"))) int chain_middle_probe(void)
{
    return chain_bottom_probe();
}
