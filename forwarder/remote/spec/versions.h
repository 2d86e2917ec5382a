/*
 * The fields a driver struct shares with its other versions, as
 * designated initializers from another version's p, for the sides that
 * turn one version into another (the guest widening a call of CUDA 3.x or
 * a peer copy, the executor making a v2 call's node of a v1 driver call).
 */
#pragma once

/* A CUDA_MEMCPY3D's fields that CUDA_MEMCPY3D_v1 and CUDA_MEMCPY3D_PEER
 * have too (the guest's copies/legacy.c, copies/peer.c). */
#define VGPU_REMOTE_COPY_3D_FIELDS(c)                                                                                  \
    .srcXInBytes = (c)->srcXInBytes, .srcY = (c)->srcY, .srcZ = (c)->srcZ, .srcLOD = (c)->srcLOD,                      \
    .srcMemoryType = (c)->srcMemoryType, .srcHost = (c)->srcHost, .srcDevice = (c)->srcDevice,                         \
    .srcArray = (c)->srcArray, .srcPitch = (c)->srcPitch, .srcHeight = (c)->srcHeight,                                 \
    .dstXInBytes = (c)->dstXInBytes, .dstY = (c)->dstY, .dstZ = (c)->dstZ, .dstLOD = (c)->dstLOD,                      \
    .dstMemoryType = (c)->dstMemoryType, .dstHost = (c)->dstHost, .dstDevice = (c)->dstDevice,                         \
    .dstArray = (c)->dstArray, .dstPitch = (c)->dstPitch, .dstHeight = (c)->dstHeight,                                 \
    .WidthInBytes = (c)->WidthInBytes, .Height = (c)->Height, .Depth = (c)->Depth

/* A kernel node's launch, which CUDA_KERNEL_NODE_PARAMS and its _v1 both
 * have (the guest's graphs/nodes.c, the executor's): its function, shape
 * and parameters, but no `extra`, which each side sets as it must (a v2
 * node got as a v1 in the guest too). */
#define VGPU_REMOTE_KERNEL_NODE_FIELDS(p)                                                                              \
    .func = (p)->func, .gridDimX = (p)->gridDimX, .gridDimY = (p)->gridDimY, .gridDimZ = (p)->gridDimZ,                \
    .blockDimX = (p)->blockDimX, .blockDimY = (p)->blockDimY, .blockDimZ = (p)->blockDimZ,                             \
    .sharedMemBytes = (p)->sharedMemBytes, .kernelParams = (p)->kernelParams
