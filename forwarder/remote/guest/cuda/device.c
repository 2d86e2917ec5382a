/*
 * What a device and the driver say that needs more than a generated call,
 * the guest's side (forwarder/remote/executor/cuda/device.c is the other;
 * the messages: forwarder/remote/spec/cuda.remote): a device's SMs split
 * into groups for green contexts, the driver's logs, and a LUID, which is
 * Windows'.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* The driver on Linux has no LUID (a WDDM adapter's) to give. */
CUresult vgpu_remote_guest_cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev)
{
    (void)luid, (void)deviceNodeMask, (void)dev;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The groups come back into the caller's result[] (room for *nbGroups of
 * them), or, with no result, only how many there would be. */
CUresult vgpu_remote_guest_cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                                       const CUdevResource *input, CUdevResource *remaining,
                                                       unsigned int useFlags, unsigned int minCount)
{
    if (!nbGroups || !input)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned room = result ? *nbGroups : 0;
    if (room > VGPU_IN_cuDevSmResourceSplitByCount_room_MAX)
        return (CUresult)vgpu_remote_refuse(SLOT(cuDevSmResourceSplitByCount));
    struct vgpu_in_cuDevSmResourceSplitByCount in = {
        .room = room, .input = *input, .useFlags = useFlags, .minCount = minCount
    };
    struct vgpu_out_cuDevSmResourceSplitByCount out = { .result = result };
    CUresult r =
        (CUresult)vgpu_remote_call_cuDevSmResourceSplitByCount(SLOT(cuDevSmResourceSplitByCount), 0, &in, &out);
    if (r != CUDA_SUCCESS)
        return r;
    *nbGroups = out.nbGroups;
    if (remaining)
        *remaining = out.remaining;
    return CUDA_SUCCESS;
}

/* The executor's driver's logs, from *iterator, into buffer (*size bytes
 * at most, NUL-ended); *iterator and *size as the driver leaves them. */
CUresult vgpu_remote_guest_cuLogsDumpToMemory(CUlogIterator *iterator, char *buffer, size_t *size, unsigned int flags)
{
    if (!buffer || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (*size > VGPU_IN_cuLogsDumpToMemory_size_MAX)
        return (CUresult)vgpu_remote_refuse(SLOT(cuLogsDumpToMemory));
    struct vgpu_in_cuLogsDumpToMemory in = { .iterator = iterator ? *iterator : 0, .flags = flags, .size = *size };
    struct vgpu_out_cuLogsDumpToMemory out = { .tail = buffer, .tail_size = *size };
    CUresult r = (CUresult)vgpu_remote_call_cuLogsDumpToMemory(SLOT(cuLogsDumpToMemory), 0, &in, &out);
    if (iterator)
        *iterator = out.iterator_out;
    *size = out.size_out;
    if (r == CUDA_SUCCESS && out.buffer != buffer)
        memmove(buffer, out.buffer, out.buffer_size);
    return r;
}

/* The same logs, written by the guest into the caller's file (created, or
 * appended to, as the driver does). */
CUresult vgpu_remote_guest_cuLogsDumpToFile(CUlogIterator *iterator, const char *path, unsigned int flags)
{
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    size_t size = VGPU_IN_cuLogsDumpToMemory_size_MAX;
    char *logs = malloc(size);
    if (!logs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = vgpu_remote_guest_cuLogsDumpToMemory(iterator, logs, &size, flags);
    if (r == CUDA_SUCCESS) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        size_t n = strnlen(logs, size);
        if (fd < 0 || write(fd, logs, n) != (ssize_t)n)
            r = CUDA_ERROR_INVALID_VALUE;
        if (fd >= 0)
            close(fd);
    }
    free(logs);
    return r;
}
