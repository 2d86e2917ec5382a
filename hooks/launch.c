/*
 * Launch hooks: every way work reaches the GPU (kernels, the CUDA 12+
 * cuLaunchKernelEx, cooperative kernels, graphs) passes the backend's
 * compute-share gate first.  The _ptsz variants share the body.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **);
typedef CUresult (*graph_fn)(CUgraphExec, CUstream);

static CUresult launch(const char *name, bool ptsz, launch_fn real, CUfunction f, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                       void **extra)
{
    CUresult r = vgpu_backend_launch_admit(s, ptsz);
    if (r == CUDA_SUCCESS) {
        r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
        vgpu_backend_launch_done(r);
    }
    vgpu_trace(name, r, "%p, grid %ux%ux%u, block %ux%ux%u, shmem %u, stream %p", (void *)f, gx, gy, gz, bx, by,
               bz, shmem, (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra)
{
    return launch("cuLaunchKernel", false, VGPU_REAL_CUDA(cuLaunchKernel), f, gx, gy, gz, bx, by, bz, shmem, s, params,
                  extra);
}

VGPU_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
    return launch("cuLaunchKernel_ptsz", true, VGPU_REAL_CUDA(cuLaunchKernel_ptsz), f, gx, gy, gz, bx, by, bz, shmem, s,
                  params, extra);
}

static CUresult launch_ex(const char *name, bool ptsz, launch_ex_fn real, const CUlaunchConfig *cfg, CUfunction f,
                          void **params, void **extra)
{
    CUstream s = cfg ? cfg->hStream : NULL;
    CUresult r = vgpu_backend_launch_admit(s, ptsz);
    if (r == CUDA_SUCCESS) {
        r = real(cfg, f, params, extra);
        vgpu_backend_launch_done(r);
    }
    if (cfg)
        vgpu_trace(name, r, "%p, grid %ux%ux%u, block %ux%ux%u, shmem %u, stream %p, %u attrs", (void *)f,
                   cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ,
                   cfg->sharedMemBytes, (void *)cfg->hStream, cfg->numAttrs);
    else
        vgpu_trace(name, r, "%p, config NULL", (void *)f);
    return r;
}

VGPU_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex("cuLaunchKernelEx", false, VGPU_REAL_CUDA(cuLaunchKernelEx), config, f, kernelParams, extra);
}

VGPU_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex("cuLaunchKernelEx_ptsz", true, VGPU_REAL_CUDA(cuLaunchKernelEx_ptsz), config, f, kernelParams,
                     extra);
}

static CUresult coop(const char *name, bool ptsz, coop_fn real, CUfunction f, unsigned gx, unsigned gy,
                     unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)
{
    CUresult r = vgpu_backend_launch_admit(s, ptsz);
    if (r == CUDA_SUCCESS) {
        r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
        vgpu_backend_launch_done(r);
    }
    vgpu_trace(name, r, "%p, grid %ux%ux%u, block %ux%ux%u, shmem %u, stream %p", (void *)f, gx, gy, gz, bx, by,
               bz, shmem, (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shmem, CUstream s, void **params)
{
    return coop("cuLaunchCooperativeKernel", false, VGPU_REAL_CUDA(cuLaunchCooperativeKernel), f, gx, gy, gz, bx, by, bz,
                shmem, s, params);
}

VGPU_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)
{
    return coop("cuLaunchCooperativeKernel_ptsz", true, VGPU_REAL_CUDA(cuLaunchCooperativeKernel_ptsz), f, gx, gy, gz,
                bx, by, bz, shmem, s, params);
}

/* A graph launch asks the compute share's gate, and claims what the graph's
 * memory nodes may add to the device's graph memory (graph_mem.c). */
static CUresult graph(const char *name, bool ptsz, graph_fn real, CUgraphExec g, CUstream s)
{
    struct vgpu_graph_claim claim;
    CUresult r = vgpu_backend_graph_launch_claim(g, &claim);
    if (r == CUDA_SUCCESS) {
        r = vgpu_backend_launch_admit(s, ptsz);
        if (r == CUDA_SUCCESS) {
            r = real(g, s);
            vgpu_backend_launch_done(r);
        }
        vgpu_backend_graph_launch_settle(&claim);
    }
    vgpu_trace(name, r, "%p, stream %p", (void *)g, (void *)s);
    return r;
}

VGPU_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph("cuGraphLaunch", false, VGPU_REAL_CUDA(cuGraphLaunch), hGraphExec, hStream);
}

VGPU_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph("cuGraphLaunch_ptsz", true, VGPU_REAL_CUDA(cuGraphLaunch_ptsz), hGraphExec, hStream);
}
