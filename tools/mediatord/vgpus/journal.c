/* A vGPU's journal in state_dir; see journal.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/journal.h"

#include "common/error.h"
#include "tools/mediatord/config/state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER "vgpu-mediatord journal 1"
/* More records than any mediator writes (slots, and admitted processes
 * without one, bounded by its connections): a file past it is not ours. */
#define MAX_PROCS (1 << 20)

static void file_name(char *out, size_t len, const char *name, const char *suffix)
{
    snprintf(out, len, "%s.journal%s", name, suffix);
}

/*
 * No fsync: the journal is worth something only while processes that map
 * the vGPU's window run, and none survives the kernel; a mediator that
 * crashes finds the renamed file whole in the page cache.  Syncing would
 * put a disk's latency on every admission in the one loop.
 */
int med_journal_write(int dir, const char *name, const struct med_journal *j, char *err, size_t errlen)
{
    char tmp[64], final[64];
    file_name(tmp, sizeof(tmp), name, ".new");
    file_name(final, sizeof(final), name, "");
    unlinkat(dir, tmp, 0); /* a crashed write's, never followed (O_EXCL below) */
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        vgpu_fail(err, errlen, "cannot write %s's journal: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, HEADER "\nepoch %" PRIu32 "\nguest %d\nstatus %" PRIu64 " %" PRIu64 "\n", j->epoch, j->guest ? 1 : 0,
            j->status_dev, j->status_ino);
    for (uint32_t d = 0; d < j->regs.device_count && d < VGPU_MAX_DEVICES; d++)
        fprintf(f, "device %s %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", j->regs.device[d].physical,
                (uint64_t)atomic_load(&j->regs.device[d].memory_limit), j->regs.device[d].compute_share,
                j->regs.device[d].compute_mode);
    for (int i = 0; i < j->nprocs; i++)
        fprintf(f, "process %d %" PRIu64 " %u %d\n", (int)j->procs[i].pid, j->procs[i].start_time,
                (unsigned)j->procs[i].uid, j->procs[i].slot);
    if (j->cgroup[0])
        fprintf(f, "cgroup %s\n", j->cgroup);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || renameat(dir, tmp, dir, final) != 0) {
        vgpu_fail(err, errlen, "cannot write %s's journal: %s", name, strerror(errno));
        unlinkat(dir, tmp, 0);
        return -1;
    }
    return 0;
}

/* One line into j; false when it is not a journal line. */
static bool parse_line(char *line, struct med_journal *j, int *cap)
{
    char word[16], uuid[VGPU_DEVICE_TOKEN_LEN];
    int pid, slot, guest;
    unsigned uid, share, mode = 0;
    uint64_t a, b;
    if (sscanf(line, "%15s", word) != 1)
        return false;
    if (strcmp(word, "epoch") == 0)
        return sscanf(line, "epoch %" SCNu32, &j->epoch) == 1;
    if (strcmp(word, "guest") == 0 && sscanf(line, "guest %d", &guest) == 1)
        return j->guest = guest != 0, true;
    if (strcmp(word, "status") == 0)
        return sscanf(line, "status %" SCNu64 " %" SCNu64, &j->status_dev, &j->status_ino) == 2;
    if (strcmp(word, "device") == 0) {
        /* The compute mode came with the compute share's scheduler: an older journal has none. */
        if (j->regs.device_count >= VGPU_MAX_DEVICES ||
            sscanf(line, "device %47s %" SCNu64 " %u %u", uuid, &a, &share, &mode) < 3 || share == 0 || share > 100 ||
            mode > VGPU_COMPUTE_CAP)
            return false;
        struct vgpu_bar0_device_config *d = &j->regs.device[j->regs.device_count++];
        snprintf(d->physical, sizeof(d->physical), "%s", uuid);
        atomic_store(&d->memory_limit, a);
        d->compute_share = share;
        d->compute_mode = mode;
        return true;
    }
    if (strcmp(word, "cgroup") == 0) {
        const char *path = line + strlen("cgroup ");
        size_t n = strcspn(path, "\n");
        if (strncmp(line, "cgroup /", 8) != 0 || n >= sizeof(j->cgroup))
            return false;
        snprintf(j->cgroup, sizeof(j->cgroup), "%.*s", (int)n, path);
        return true;
    }
    if (strcmp(word, "process") == 0) {
        if (sscanf(line, "process %d %" SCNu64 " %u %d", &pid, &b, &uid, &slot) != 4 || pid <= 0 || slot < -1 ||
            slot >= VGPU_BAR0_MAX_PROCS || j->nprocs == MAX_PROCS)
            return false;
        if (j->nprocs == *cap) {
            int grown_cap = *cap ? *cap * 2 : 64;
            struct med_journal_proc *grown = realloc(j->procs, sizeof(*grown) * (size_t)grown_cap);
            if (!grown)
                return false;
            j->procs = grown;
            *cap = grown_cap;
        }
        j->procs[j->nprocs++] = (struct med_journal_proc){ .pid = pid, .start_time = b, .uid = uid, .slot = slot };
        return true;
    }
    return false;
}

int med_journal_read(int dir, const char *dir_path, const char *name, struct med_journal *j, char *err,
                     size_t errlen)
{
    char file[64];
    file_name(file, sizeof(file), name, "");
    memset(j, 0, sizeof(*j));
    int fd = med_state_open(dir, dir_path, file, O_RDONLY, MED_STATE_PRIVATE, err, errlen);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return vgpu_fail(err, errlen, "cannot read %s/%s: %s", dir_path, file, strerror(errno));
    }
    char line[VGPU_CGROUP_LEN + 32];
    int cap = 0, n = 0;
    bool ok = fgets(line, sizeof(line), f) && strcmp(line, HEADER "\n") == 0;
    while (ok && fgets(line, sizeof(line), f)) {
        n++;
        ok = strchr(line, '\n') && parse_line(line, j, &cap);
    }
    ok = ok && !ferror(f);
    fclose(f);
    if (!ok) {
        med_journal_free(j);
        vgpu_fail(err, errlen, "%s/%s is not a vgpu-mediatord journal (line %d)", dir_path, file, n + 1);
        return -2;
    }
    return 1;
}

void med_journal_free(struct med_journal *j)
{
    free(j->procs);
    j->procs = NULL;
    j->nprocs = 0;
}

void med_journal_remove(int dir, const char *name)
{
    char file[64];
    file_name(file, sizeof(file), name, "");
    unlinkat(dir, file, 0);
}
