/* What the files of graphs/ share: the arrays a node's parameters point
 * to when they come back, kept by the guest (kept.c), and a copy node's
 * parameters as they cross (nodes.c). */
#pragma once

#include <cuda.h>
#include <stddef.h>

/* A block kept for node: head bytes for the caller (pointers into the
 * copy), then a copy of the n bytes at data; the block the node had, where
 * it held the same head and bytes (so that what was given out before
 * stays good), else a new one replacing it.  Its start; NULL when out of
 * memory. */
void *vgpu_remote_graph_keep(CUgraphNode node, size_t head, const void *data, size_t n);

/* A copy node's parameters as they cross: a unified address resolved (the
 * guest's page-locked memory is the host's side, any other the device's),
 * a side of the guest's memory only in a block shared with the executor
 * (else refused, said once).  0, or the code to return. */
CUresult vgpu_remote_graph_copy(const CUDA_MEMCPY3D *given, CUDA_MEMCPY3D *c);
