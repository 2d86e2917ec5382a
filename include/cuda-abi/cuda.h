/*
 * <cuda.h> of the default build (meson option cudaheader=bundled): vgpu's own
 * declarations of the driver API it uses, so that no CUDA toolkit is needed.
 * Only this directory is put on the include path, never the rest of include/,
 * so sources keep `#include <cuda.h>` and the build chooses which one they get.
 */
#include "../vgpu/cuda_abi.h"
