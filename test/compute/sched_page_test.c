/*
 * The standalone compute-share page (common/contract/arbiter/sched_page.h) from
 * outside, for test/compute/compute.sh:
 *
 *   sched_page_test show PAGE
 *       one line per entry: index, BAR0 dev:ino, share, mode, waiting, busy ms
 *   sched_page_test add-waiting PAGE BAR0-FILE N
 *       counts N more threads waiting in the entry of that vGPU, as a
 *       process killed while it waited leaves them
 *   sched_page_test age PAGE BAR0-FILE SECONDS
 *       dates that vGPU's last launch SECONDS earlier, as if its processes
 *       had been gone that long
 */
#include "common/contract/arbiter/sched_page.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct vgpu_sched_page *map_page(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    struct vgpu_sched_page *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED || p->magic != VGPU_SCHED_PAGE_MAGIC || p->size != sizeof(*p)) {
        fprintf(stderr, "%s: not a compute-share page of this build\n", path);
        exit(2);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "show") == 0) {
        struct vgpu_sched_page *p = map_page(argv[2]);
        printf("holder %d%s\n", p->state.holder, vgpu_sched_open(&p->state) ? ", open" : "");
        for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++)
            if (p->state.e[i].used)
                printf("%d %llu:%llu share %u mode %u waiting %u running %u (floor %u) busy %.1f ms fill %u\n", i,
                       (unsigned long long)p->who[i].dev, (unsigned long long)p->who[i].ino, p->state.e[i].share,
                       p->state.e[i].mode, atomic_load(&p->who[i].waiting), atomic_load(&p->who[i].running), p->who[i].demand.running_floor,
                       (double)p->state.e[i].busy_ns / 1e6, p->state.e[i].fill);
        return 0;
    }
    bool add = argc == 5 && strcmp(argv[1], "add-waiting") == 0, age = argc == 5 && strcmp(argv[1], "age") == 0;
    if (add || age) {
        struct vgpu_sched_page *p = map_page(argv[2]);
        struct stat st;
        if (stat(argv[3], &st) != 0) {
            perror(argv[3]);
            return 2;
        }
        for (int i = 0; i < VGPU_SCHED_MAX_ENTRIES; i++) {
            if (!p->state.e[i].used || p->who[i].dev != (uint64_t)st.st_dev || p->who[i].ino != (uint64_t)st.st_ino)
                continue;
            if (add) {
                atomic_fetch_add(&p->who[i].waiting, (uint32_t)atoi(argv[4]));
            } else {
                uint64_t back = strtoull(argv[4], NULL, 10) * 1000000000ull, at = atomic_load(&p->who[i].active_ns);
                atomic_store(&p->who[i].active_ns, at > back ? at - back : 0);
            }
            return 0;
        }
        fprintf(stderr, "%s has no entry in %s\n", argv[3], argv[2]);
        return 1;
    }
    fprintf(stderr, "usage: sched_page_test show PAGE | add-waiting PAGE BAR0-FILE N | age PAGE BAR0-FILE SECONDS\n");
    return 2;
}
