/* Memory a guest and its executor share (shm.h). */
#define _GNU_SOURCE
#include "forwarder/remote/transport/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define RESERVED (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

void *vgpu_shm_sealed(const char *name, size_t length, void *at, int *fd)
{
    int f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0)
        return MAP_FAILED;
    void *m = MAP_FAILED;
    if (ftruncate(f, (off_t)length) != 0 ||
        (m = mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), f, 0)) == MAP_FAILED ||
        fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        if (m != MAP_FAILED)
            munmap(m, length);
        close(f);
        errno = e;
        return MAP_FAILED;
    }
    *fd = f;
    return m;
}

bool vgpu_shm_reserve_at(void *at, size_t length)
{
    void *got = mmap(at, length, PROT_NONE, RESERVED | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == at)
        return true;
    if (got != MAP_FAILED) /* a kernel that took the address as a hint */
        munmap(got, length);
    return false;
}

int vgpu_shm_reserve(void *at, size_t length)
{
    return mmap(at, length, PROT_NONE, RESERVED | MAP_FIXED, -1, 0) == MAP_FAILED ? -1 : 0;
}
