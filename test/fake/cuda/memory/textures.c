/*
 * Texture and surface objects: handles (1, 2, ...) of what was described,
 * the resource checked as the driver checks it: a live array (a surface:
 * an array alone), a live mipmapped array, or device memory of an
 * allocation wide enough (linear: its size; pitched: its pitch times its
 * height, a pitch at least its width).  The descriptors are given back as
 * they were given.  Nothing samples them: no built-in kernel reads a
 * texture.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

#define MAX_OBJECTS 1024

/* Owned by this file, under fake_lock: the live objects. */
static struct object {
    unsigned long long id; /* 0: free */
    int surface;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex;
    CUDA_RESOURCE_VIEW_DESC view;
} g_objects[MAX_OBJECTS];
static unsigned long long g_next_id = 1;

static unsigned element_bytes(CUarray_format f, unsigned channels)
{
    unsigned b = f == CU_AD_FORMAT_UNSIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT8       ? 1
                 : f == CU_AD_FORMAT_UNSIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT16 ||
                           f == CU_AD_FORMAT_HALF                                    ? 2
                                                                                     : 4;
    return b * channels;
}

static CUresult resource_ok(const CUDA_RESOURCE_DESC *r, int surface)
{
    size_t row, rows, layers;
    if (!r || r->flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (surface && r->resType != CU_RESOURCE_TYPE_ARRAY)
        return CUDA_ERROR_INVALID_VALUE;
    switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
        return fake_array_bytes(r->res.array.hArray, &row, &rows, &layers) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        return fake_mipmapped_array_valid(r->res.mipmap.hMipmappedArray) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
        int linear = r->resType == CU_RESOURCE_TYPE_LINEAR;
        CUdeviceptr p = linear ? r->res.linear.devPtr : r->res.pitch2D.devPtr;
        unsigned channels = linear ? r->res.linear.numChannels : r->res.pitch2D.numChannels;
        CUarray_format f = linear ? r->res.linear.format : r->res.pitch2D.format;
        size_t n;
        if (channels != 1 && channels != 2 && channels != 4)
            return CUDA_ERROR_INVALID_VALUE;
        if (linear)
            n = r->res.linear.sizeInBytes;
        else if (r->res.pitch2D.pitchInBytes < r->res.pitch2D.width * element_bytes(f, channels) ||
                 __builtin_mul_overflow(r->res.pitch2D.pitchInBytes, r->res.pitch2D.height, &n))
            return CUDA_ERROR_INVALID_VALUE;
        LOCK();
        int in = n && fake_find_containing_locked((uintptr_t)p, n, (1u << A_DEVICE) | (1u << A_POOL)) != NULL;
        UNLOCK();
        return in ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult create(unsigned long long *handle, int surface, const CUDA_RESOURCE_DESC *res,
                       const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view)
{
    if (!handle || (!surface && !tex))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = resource_ok(res, surface);
    if (r != CUDA_SUCCESS)
        return r;
    r = CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    for (int i = 0; i < MAX_OBJECTS; i++)
        if (!g_objects[i].id) {
            struct object *o = &g_objects[i];
            memset(o, 0, sizeof(*o));
            o->id = g_next_id++;
            o->surface = surface;
            o->res = *res;
            if (tex)
                o->tex = *tex;
            if (view)
                o->view = *view;
            *handle = o->id;
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    return r;
}

/* The object id of that kind, copied out under the lock; 0 when none. */
static int find(unsigned long long id, int surface, struct object *out)
{
    int found = 0;
    LOCK();
    for (int i = 0; i < MAX_OBJECTS && !found; i++)
        if (id && g_objects[i].id == id && g_objects[i].surface == surface) {
            *out = g_objects[i];
            found = 1;
        }
    UNLOCK();
    return found;
}

static CUresult destroy(unsigned long long id, int surface)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (int i = 0; i < MAX_OBJECTS; i++)
        if (id && g_objects[i].id == id && g_objects[i].surface == surface) {
            g_objects[i].id = 0;
            r = CUDA_SUCCESS;
        }
    UNLOCK();
    return r;
}

CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                           const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    ENTER();
    return create(pTexObject, 0, pResDesc, pTexDesc, pResViewDesc);
}

CUresult cuTexObjectDestroy(CUtexObject texObject)
{
    ENTER();
    return destroy(texObject, 0);
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
    ENTER();
    struct object o;
    if (!pResDesc || !find(texObject, 0, &o))
        return CUDA_ERROR_INVALID_VALUE;
    *pResDesc = o.res;
    return CUDA_SUCCESS;
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
    ENTER();
    struct object o;
    if (!pTexDesc || !find(texObject, 0, &o))
        return CUDA_ERROR_INVALID_VALUE;
    *pTexDesc = o.tex;
    return CUDA_SUCCESS;
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc, CUtexObject texObject)
{
    ENTER();
    struct object o;
    if (!pResViewDesc || !find(texObject, 0, &o))
        return CUDA_ERROR_INVALID_VALUE;
    *pResViewDesc = o.view;
    return CUDA_SUCCESS;
}

CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    ENTER();
    return create(pSurfObject, 1, pResDesc, NULL, NULL);
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
    ENTER();
    return destroy(surfObject, 1);
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
    ENTER();
    struct object o;
    if (!pResDesc || !find(surfObject, 1, &o))
        return CUDA_ERROR_INVALID_VALUE;
    *pResDesc = o.res;
    return CUDA_SUCCESS;
}
