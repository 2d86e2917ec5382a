/*
 * Device memory accounting: every allocation takes its bytes from the
 * vGPU's quota in BAR0 before the driver call, and gives them back when it
 * fails or is freed.  See docs/design/memory.md for what is counted how.
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_backend/backend.h"
#include "vgpu_backend/join/cuda_devices.h"
#include "vgpu_backend/join/current.h"
#include "vgpu_backend/memory/alloc_table.h"
#include "vgpu_backend/memory/quota.h"
#include "vgpu_cuda_slots.h"

/* The driver hands out device memory in units of at least this. */
#define ALLOC_ALIGN 512u

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static const char *kind_name(enum vgpu_mem_kind k)
{
    static const char *const names[] = { "allocation", "managed allocation", "stream-ordered allocation",
                                         "cuMemCreate", "array" };
    return names[k];
}

static enum vgpu_alloc_class class_of(enum vgpu_mem_kind k)
{
    return k == VGPU_MEM_PHYSICAL ? VGPU_ALLOC_PHYSICAL : k == VGPU_MEM_ARRAY ? VGPU_ALLOC_ARRAY : VGPU_ALLOC_POINTER;
}


CUresult vgpu_backend_mem_claim(struct vgpu_mem_claim *c)
{
    c->vdev = -1;
    c->taken = 0;
    c->ctx = NULL;
    struct vgpu_self *self = vgpu_self_on();
    if (!self)
        return CUDA_SUCCESS;
    /* A device given (cuMemCreate's) needs no context; else the current
     * context's device, and the context: the allocation goes with it. */
    CUdevice dev = c->device;
    CUcontext ctx = NULL;
    int vdev = dev < 0 ? vgpu_current_vdev(&ctx, &dev) : vgpu_cuda_vgpu_index(dev);
    if (vdev < 0)
        return CUDA_SUCCESS; /* no context (the driver will say so), or not the vGPU's device */
    c->device = dev;
    uint64_t bytes = round_up(c->bytes ? c->bytes : 1, ALLOC_ALIGN);
    if (c->kind == VGPU_MEM_ASYNC)
        bytes = vgpu_pool_growth(c->pool, dev, bytes);
    if (!vgpu_quota_take(self, vdev, bytes, kind_name(c->kind)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->ctx = ctx;
    c->vdev = vdev;
    c->taken = bytes;
    return CUDA_SUCCESS;
}

/* Records an allocation, so its free gives back exactly what it took. */
static void record(struct vgpu_self *self, const struct vgpu_alloc *a)
{
    struct vgpu_alloc stale;
    switch (vgpu_alloc_put(a, &stale)) {
    case 1:
        /* One under the same handle was freed behind vgpu's back (a path it
         * does not hook): not held any more. */
        vgpu_bar0_give(&self->bar0, stale.dev, stale.bytes);
        break;
    case -1:
        vgpu_warn("out of memory recording an allocation; its %llu bytes stay counted until exit",
                  (unsigned long long)a->bytes);
        break;
    default:
        break;
    }
}

CUresult vgpu_backend_mem_settle(struct vgpu_mem_claim *c, CUresult r, uintptr_t handle)
{
    struct vgpu_self *self = vgpu_self_on();
    if (!self || c->vdev < 0)
        return r;
    if (r != CUDA_SUCCESS) {
        vgpu_bar0_give(&self->bar0, c->vdev, c->taken);
        return r;
    }
    if (c->kind == VGPU_MEM_ASYNC) {
        /* Count the pool's reserve as it is now, then drop the claim. */
        vgpu_pool_settle(self, c->pool, c->device, c->vdev);
        vgpu_bar0_give(&self->bar0, c->vdev, c->taken);
        return r;
    }
    /* The driver may have taken more than claimed (pitch padding): that
     * must fit too, or the allocation is refused after all. */
    uint64_t bytes = round_up(c->bytes ? c->bytes : 1, ALLOC_ALIGN);
    if (bytes > c->taken && !vgpu_quota_take(self, c->vdev, bytes - c->taken, kind_name(c->kind))) {
        vgpu_bar0_give(&self->bar0, c->vdev, c->taken);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (bytes < c->taken)
        vgpu_bar0_give(&self->bar0, c->vdev, c->taken - bytes);
    struct vgpu_alloc a = { .handle = handle, .bytes = bytes, .ctx = c->ctx, .dev = (int16_t)c->vdev,
                            .cls = (uint8_t)class_of(c->kind) };
    record(self, &a);
    return r;
}

void vgpu_backend_mem_free_begin(struct vgpu_mem_free *f, enum vgpu_mem_kind kind, uintptr_t handle)
{
    f->counted = vgpu_self_on() && vgpu_alloc_take(class_of(kind), handle, &f->rec);
}

void vgpu_backend_mem_free_end(struct vgpu_mem_free *f, CUresult r)
{
    if (!f->counted)
        return;
    struct vgpu_self *self = vgpu_self_on();
    if (r == CUDA_SUCCESS)
        vgpu_bar0_give(&self->bar0, f->rec.dev, f->rec.bytes);
    else
        record(self, &f->rec); /* the driver kept it */
}
