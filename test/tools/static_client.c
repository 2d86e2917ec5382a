/* A statically linked program: vgpu-run must refuse it unless --allow-static. */
#include <stdio.h>

int main(void)
{
    puts("static_prog ran");
    return 0;
}
