/*
 * The mediator protocol (docs/reference/protocol.md): versioned, length-prefixed
 * binary messages on vgpu-mediatord's Unix stream socket.
 *
 *   frame    u32 magic "VGPM", u16 version, u16 type, u32 payload length
 *   payload  a fixed struct per type; STATUS: a header and two arrays
 *
 * Integers are little-endian (x86-64 only, as the rest of vgpu).  Every
 * message is validated here (magic, version, type, exact sizes, counts,
 * NUL-terminated strings) before anyone reads a field: the mediator closes a
 * connection whose message fails, and a client treats it as no answer.  The
 * parser is the libFuzzer target's subject (test/fuzz/).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define VGPU_PROTO_MAGIC 0x4d504756u /* "VGPM" */
#define VGPU_PROTO_VERSION 1
#define VGPU_PROTO_HEADER_SIZE 12
/* Largest payload the mediator reads from a client (its messages are small). */
#define VGPU_PROTO_MAX_REQUEST 256
/* Largest payload a client reads (a STATUS of many vGPUs and processes). */
#define VGPU_PROTO_MAX_REPLY (4u << 20)

#define VGPU_NAME_LEN 32        /* a vGPU's name, NUL included */
#define VGPU_REASON_LEN 492     /* a refusal's text, NUL included */
#define VGPU_STATUS_MAX_VGPUS 256
#define VGPU_STATUS_MAX_PROCS 16384
#define VGPU_STATUS_MAX_DEVICES 16
#define VGPU_WATCH_MAX_CASES 16384

enum vgpu_msg_type {
    VGPU_MSG_HELLO = 1,          /* client: admit me (or take me back after a restart) */
    VGPU_MSG_ADMIT = 2,          /* mediator: admitted; BAR0's two descriptors ride along */
    VGPU_MSG_REFUSE = 3,         /* mediator: not admitted, and why; the connection closes */
    VGPU_MSG_ENTER = 4,          /* client: give me a process slot (CUDA is in use) */
    VGPU_MSG_ENTERED = 5,        /* mediator: this slot */
    VGPU_MSG_STATUS_REQUEST = 6, /* tool: what is there */
    VGPU_MSG_STATUS = 7,         /* mediator: vGPUs and processes */
    VGPU_MSG_WATCH_REQUEST = 8,  /* tool: what the watch found (asked only of a mediator whose STATUS
                                    says VGPU_STATUS_HAS_WATCH: an older one refuses the type) */
    VGPU_MSG_WATCH = 9,          /* mediator: processes that escaped their vGPU, or hold too much */
    VGPU_MSG_COMPUTE_REQUEST = 10, /* tool: the compute share's views (asked only of a mediator whose
                                      STATUS says VGPU_STATUS_HAS_COMPUTE) */
    VGPU_MSG_COMPUTE = 11,       /* mediator: each vGPU device's share, GPU time and utilization, and
                                    each process's utilization */
    VGPU_MSG_REMOTE = 12,        /* client with no GPU: carry my CUDA calls to an executor of my vGPU
                                    (docs/design/remote.md); payload as HELLO's, flags 0 */
    VGPU_MSG_REMOTE_READY = 13,  /* mediator: an executor serves this connection from here on, in the
                                    remote driver's protocol; payload as ADMIT's */
    VGPU_MSG_BIND = 14,          /* a container runtime's hook, the device plugin (root, the host's
                                    namespaces): this vGPU is that process's cgroup's (pid 0: no one's yet) */
    VGPU_MSG_BOUND = 15,         /* mediator: the cgroup now bound */
    VGPU_MSG_CLUSTER_REQUEST = 16, /* device plugin: the vGPUs made for containers, their bindings and health
                                      (asked only of a mediator whose STATUS has VGPU_STATUS_HAS_CLUSTER) */
    VGPU_MSG_CLUSTER = 17,       /* mediator: a header and a record per vGPU */
    VGPU_MSG_PIN = 18,           /* an executor the mediator started: may its guest's page-locked memory
                                    grow (or shrink) by this much (docs/guide/remote.md, "Executors' limits") */
    VGPU_MSG_PINNED = 19,        /* mediator: granted or not, against the vGPU's pinned = */
};

struct vgpu_proto_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
};

#define VGPU_HELLO_REATTACH 1u /* the process already holds slot `slot` of vGPU `vgpu` */

struct vgpu_msg_hello {
    uint32_t flags;
    uint32_t slot;             /* VGPU_HELLO_REATTACH: the slot it holds; else ~0 */
    char vgpu[VGPU_NAME_LEN];  /* the vGPU asked for (VGPU_NAME); "" = the mediator picks */
};

struct vgpu_msg_admit {
    uint32_t slot;             /* a reattached process's slot; else ~0 */
    uint32_t epoch;            /* the mediator's start count (BAR0 status mediator_epoch) */
    char vgpu[VGPU_NAME_LEN];
};

enum vgpu_refusal {
    VGPU_REFUSE_NOT_ADMITTED = 1, /* no vGPU admits this uid/gid, or not the one asked for */
    VGPU_REFUSE_NO_SLOT = 2,      /* the vGPU's process table is full */
    VGPU_REFUSE_BAD_REQUEST = 3,  /* a message out of order */
    VGPU_REFUSE_UNAVAILABLE = 4,  /* the vGPU cannot be used now (its GPU is gone) */
};

struct vgpu_msg_refuse {
    uint32_t code;             /* enum vgpu_refusal */
    char reason[VGPU_REASON_LEN];
};

struct vgpu_msg_entered {
    uint32_t slot;
    uint32_t reserved;
};

/* A cgroup v2 path as /proc/PID/cgroup gives it (in the mediator's cgroup
 * namespace), NUL included. */
#define VGPU_CGROUP_LEN 480

struct vgpu_msg_bind {
    char vgpu[VGPU_NAME_LEN];  /* a vGPU made for containers (containers = N) */
    uint32_t pid;              /* a process of the container, as the mediator sees it; 0: unbind */
    uint32_t flags;            /* 0 */
};

struct vgpu_msg_bound {
    char vgpu[VGPU_NAME_LEN];
    char cgroup[VGPU_CGROUP_LEN]; /* "" when unbound */
};

#define VGPU_PIN_RELEASE 1u /* the bytes are given back, not asked for */

struct vgpu_msg_pin {
    uint64_t bytes;
    uint32_t flags;            /* VGPU_PIN_RELEASE, or 0 */
    uint32_t reserved;         /* 0 */
};

struct vgpu_msg_pinned {
    uint32_t granted;          /* 1: the executor may pin the bytes; 0: they would pass the vGPU's pinned = */
    uint32_t reserved;
    uint64_t held;             /* this connection's bytes now */
    uint64_t vgpu_held;        /* the vGPU's guests' bytes now */
    uint64_t limit;            /* the vGPU's pinned = */
};

/* ---- CLUSTER: a header, then n records ---- */

#define VGPU_CLUSTER_MAX 256
#define VGPU_CLUSTER_CONTAINERS 1u /* made for containers: class is its section's name */
#define VGPU_CLUSTER_BOUND 2u      /* bound to a container's cgroup */
#define VGPU_CLUSTER_UNHEALTHY 4u  /* one of its GPUs had a critical XID (xid), or is lost */
#define VGPU_CLUSTER_RETIRED 8u    /* gone from the config */
#define VGPU_CLUSTER_GUEST 16u     /* a VM's */

struct vgpu_cluster_header {
    uint32_t n;
    uint32_t flags;              /* 0 */
    uint64_t generation;         /* changes whenever a record does */
};

struct vgpu_cluster_vgpu {
    char name[VGPU_NAME_LEN];
    char cls[VGPU_NAME_LEN];     /* its [vgpu.CLASS] section, "" when not made for containers */
    uint32_t flags;              /* VGPU_CLUSTER_* */
    uint32_t xid;                /* the XID that made it unhealthy; 0 */
    uint32_t ndev;
    uint32_t reserved;
    uint64_t memory;             /* the quota on each device; 0: the whole GPU */
    uint32_t compute;            /* percent of each device */
    uint32_t reserved2;
};

/* The wire contract (docs/reference/protocol.md), which the device plugin's Go reads too. */
_Static_assert(sizeof(struct vgpu_msg_bind) == 40, "BIND is 40 bytes");
_Static_assert(sizeof(struct vgpu_msg_bound) == 512, "BOUND is 512 bytes");
_Static_assert(sizeof(struct vgpu_cluster_header) == 16, "CLUSTER's header is 16 bytes");
_Static_assert(sizeof(struct vgpu_cluster_vgpu) == 96, "a CLUSTER record is 96 bytes");

/* ---- STATUS: a header, then nvgpus vGPU records, then nprocs process records ---- */

#define VGPU_STATUS_GUEST 1u   /* the vGPU is a VM's (ivshmem): its processes are the guest's */
#define VGPU_STATUS_RETIRED 2u /* gone from the config; kept until its processes exit */
#define VGPU_STATUS_WINDOW_LOST 4u /* a VM's window whose file shrank: retired until a reload or restart */

/* The header's features: what else this mediator answers.  An older one
 * sends 0 (the field was reserved), so a newer tool asks it nothing new. */
#define VGPU_STATUS_HAS_WATCH 1u   /* WATCH_REQUEST */
#define VGPU_STATUS_HAS_COMPUTE 2u /* COMPUTE_REQUEST */
#define VGPU_STATUS_HAS_CLUSTER 4u /* BIND and CLUSTER_REQUEST */
#define VGPU_STATUS_HAS_PIN 8u     /* PIN, from the executors it started */

struct vgpu_status_header {
    uint32_t nvgpus;
    uint32_t nprocs;
    uint32_t epoch;
    uint32_t features;           /* VGPU_STATUS_HAS_WATCH, VGPU_STATUS_HAS_COMPUTE */
    uint64_t refused_admissions; /* connections refused since start */
    char version[16];            /* vgpu-mediatord's version */
};

struct vgpu_status_device {
    char uuid[48];
    char gpu_name[64];
    uint64_t physical_total;
    uint64_t limit;     /* bytes; 0 = the GPU's memory */
    uint64_t used;
    uint64_t refusals;  /* allocations refused for the quota */
    uint32_t compute;   /* percent */
    uint32_t reserved;
};

struct vgpu_status_vgpu {
    char name[VGPU_NAME_LEN];
    uint32_t ndev;
    uint32_t flags;
    uint32_t processes;
    uint32_t reserved;
    uint64_t refused_admissions;
    struct vgpu_status_device dev[VGPU_STATUS_MAX_DEVICES];
};

struct vgpu_status_proc {
    uint32_t pid;       /* as the mediator sees it (its PID namespace) */
    uint32_t uid;
    uint32_t vgpu;      /* index into the vGPU records */
    uint32_t slot;
    char comm[16];
    char user[32];
    uint64_t held[VGPU_STATUS_MAX_DEVICES];
};

/* ---- WATCH: a header, then ncases case records ---- */

enum vgpu_watch_rule {
    VGPU_WATCH_UNADMITTED = 1,      /* uses a watched GPU, admitted to no vGPU on it */
    VGPU_WATCH_OVER_QUOTA = 2,      /* holds more than its vGPU's quota there, beyond the tolerance */
    VGPU_WATCH_VGPU_OVER_QUOTA = 3, /* its vGPU's processes there together do */
    VGPU_WATCH_OVER_SHARE = 4,      /* used an arbitrated GPU while its vGPU was given none of it */
};

#define VGPU_WATCH_KILL_UNADMITTED 1u /* header flags: enforce = kill in [mediator] */
#define VGPU_WATCH_KILLED 1u          /* case flags: the mediator sent it SIGKILL */
#define VGPU_WATCH_KILL 2u            /* case flags: the config says to kill it (enforce = kill) */

struct vgpu_watch_header {
    uint32_t ncases;
    uint32_t interval_ms;        /* between readings; 0: the watch is off */
    uint32_t flags;              /* VGPU_WATCH_KILL_UNADMITTED */
    uint32_t tolerance_percent;  /* of the quota, on top of tolerance_bytes */
    uint64_t tolerance_bytes;
    uint64_t gpus;               /* bit i: GPU i (as nvidia-smi numbers them) is watched */
    uint64_t readings;           /* readings of the driver since start */
    uint64_t kills;              /* processes killed since start */
};

struct vgpu_watch_case {
    uint32_t pid;                /* as the mediator sees it (the host's PID namespace) */
    uint32_t uid;                /* 0xffffffff: unknown */
    uint32_t gpu;                /* as nvidia-smi numbers it */
    uint32_t rule;               /* enum vgpu_watch_rule */
    uint32_t flags;              /* VGPU_WATCH_KILLED, VGPU_WATCH_KILL */
    uint32_t reported_ms;        /* since it was reported (found so in two readings running) */
    uint64_t used;               /* what the driver says it holds on the GPU (OVER_SHARE: its utilization
                                  * there, permille, in the latest reading that found it) */
    uint64_t quota;              /* its vGPU's quota there; 0 when unadmitted (OVER_SHARE: its vGPU's
                                  * compute share there, permille) */
    uint64_t vgpu_used;          /* VGPU_OVER_QUOTA: what the vGPU's processes hold there together */
    uint64_t seen_ms;            /* since it was first found so */
    char uuid[48];               /* the GPU's */
    char comm[16];
    char user[32];
    char vgpu[VGPU_NAME_LEN];    /* "" when unadmitted */
};

/* ---- COMPUTE: a header, then ndevs device records, then nprocs process records ---- */

#define VGPU_COMPUTE_MAX_DEVICES (VGPU_STATUS_MAX_VGPUS * VGPU_STATUS_MAX_DEVICES)
#define VGPU_COMPUTE_MAX_PROCS 16384

/* A device's mode, as the views name it. */
enum vgpu_compute_view_mode {
    VGPU_COMPUTE_VIEW_NONE = 0,  /* no share (100%, work-conserving): nothing to hold it to */
    VGPU_COMPUTE_VIEW_SHARE = 1, /* work-conserving: the share is guaranteed, idle time is lent out */
    VGPU_COMPUTE_VIEW_CAP = 2,   /* a hard cap */
};

#define VGPU_COMPUTE_ARBITRATED 1u /* device flags: the mediator arbitrates its GPU now */
#define VGPU_COMPUTE_HOLDING 2u    /* device flags: it holds the GPU now */
#define VGPU_COMPUTE_MEASURED 4u   /* device and process flags: the driver's per-process utilization is known
                                      (held is known whenever the interval has passed once) */
#define VGPU_COMPUTE_BESIDE 8u     /* device flags: it may launch beside the holder now, which leaves the GPU open */

struct vgpu_compute_header {
    uint32_t ndevs;
    uint32_t nprocs;
    uint32_t interval_ms;        /* what held and utilization are measured over; 0: not yet measured */
    uint32_t reserved;
    uint64_t intervals;          /* intervals measured since start */
    uint64_t reserved2;
};

/* One device of a vGPU.  held and utilization are permille of the last interval's wall time. */
struct vgpu_compute_device {
    char vgpu[VGPU_NAME_LEN];
    uint32_t device;             /* the vGPU's device index */
    uint32_t gpu;                /* as nvidia-smi numbers it; 0xffffffff: not on this machine */
    uint32_t share;              /* percent, 1-100 */
    uint32_t mode;               /* enum vgpu_compute_view_mode */
    uint32_t flags;              /* VGPU_COMPUTE_ARBITRATED, _HOLDING, _MEASURED */
    uint32_t held;               /* GPU time the arbiter charged it over the last interval */
    uint32_t utilization;        /* its processes' utilization (the driver's samples, summed; at most 1000) */
    uint32_t reserved;
    uint64_t busy_ns;            /* GPU time the arbiter charged it, in all (BAR0 sched_busy_ns) */
    uint64_t launch_ms;          /* process-milliseconds in which its processes launched (sched_launches) */
};

/* One admitted process on one device of its vGPU. */
struct vgpu_compute_proc {
    char vgpu[VGPU_NAME_LEN];
    uint32_t pid;                /* the host's, as the driver and the mediator see it */
    uint32_t device;             /* its vGPU's device index */
    uint32_t gpu;                /* as nvidia-smi numbers it */
    uint32_t flags;              /* VGPU_COMPUTE_MEASURED */
    uint32_t utilization;        /* permille, over the last interval */
    uint32_t reserved;
};

/* A message as parsed: its type and, for fixed-size types, its payload. */
struct vgpu_msg {
    uint16_t type;
    uint32_t length;
    union {
        struct vgpu_msg_hello hello;
        struct vgpu_msg_admit admit;
        struct vgpu_msg_refuse refuse;
        struct vgpu_msg_entered entered;
        struct vgpu_msg_bind bind;
        struct vgpu_msg_bound bound;
        struct vgpu_msg_pin pin;
        struct vgpu_msg_pinned pinned;
    } u;
    /* STATUS: validated, pointing into the parsed buffer (may be unaligned:
     * copy records out with vgpu_proto_status_vgpu/_proc). */
    const uint8_t *status;
    const uint8_t *watch;        /* WATCH, likewise */
    const uint8_t *compute;      /* COMPUTE, likewise */
    const uint8_t *cluster;      /* CLUSTER, likewise */
};

/*
 * Parses one message at buf[0..len).  Returns its size (header + payload)
 * when a whole valid message is there, 0 when more bytes are needed, or -1
 * with the reason in err when it is not a valid message (the connection
 * should close).  A payload over max_payload is invalid.
 */
ssize_t vgpu_proto_parse(const uint8_t *buf, size_t len, size_t max_payload, struct vgpu_msg *msg, char *err,
                         size_t errlen);

/* Record i of a parsed STATUS (bounds already validated). */
void vgpu_proto_status_header(const struct vgpu_msg *m, struct vgpu_status_header *h);
void vgpu_proto_status_vgpu(const struct vgpu_msg *m, uint32_t i, struct vgpu_status_vgpu *v);
void vgpu_proto_status_proc(const struct vgpu_msg *m, uint32_t i, struct vgpu_status_proc *p);

/* The header and case i of a parsed WATCH (bounds already validated). */
void vgpu_proto_watch_header(const struct vgpu_msg *m, struct vgpu_watch_header *h);
void vgpu_proto_watch_case(const struct vgpu_msg *m, uint32_t i, struct vgpu_watch_case *c);

/* The header, device record i and process record i of a parsed COMPUTE (bounds already validated). */
void vgpu_proto_compute_header(const struct vgpu_msg *m, struct vgpu_compute_header *h);
void vgpu_proto_compute_device(const struct vgpu_msg *m, uint32_t i, struct vgpu_compute_device *d);
void vgpu_proto_compute_proc(const struct vgpu_msg *m, uint32_t i, struct vgpu_compute_proc *p);

/* The header and record i of a parsed CLUSTER (bounds already validated). */
void vgpu_proto_cluster_header(const struct vgpu_msg *m, struct vgpu_cluster_header *h);
void vgpu_proto_cluster_vgpu(const struct vgpu_msg *m, uint32_t i, struct vgpu_cluster_vgpu *v);

/* Writes a frame header for a payload of len bytes of type into out. */
void vgpu_proto_frame(struct vgpu_proto_header *out, uint16_t type, uint32_t len);

/* Room for a control message of up to 4 descriptors, aligned as one. */
union vgpu_proto_control {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int) * 4)];
};

/* Puts nfds descriptors (1 to 4) into mh as SCM_RIGHTS, in control. */
void vgpu_proto_attach_fds(struct msghdr *mh, union vgpu_proto_control *control, const int *fds, int nfds);

/*
 * Sends one message, with nfds descriptors as SCM_RIGHTS.  Blocking; 0 or
 * -errno.
 */
int vgpu_proto_send(int sock, uint16_t type, const void *payload, uint32_t len, const int *fds, int nfds);

/*
 * Receives one message within timeout_ms, into *buf (grown with realloc up
 * to max_payload + header) and msg; descriptors that came with it go to
 * fds (at most *nfds; *nfds is set to how many, extra ones are closed).
 * Returns 0, or -1 with the reason in err.
 */
int vgpu_proto_recv(int sock, uint8_t **buf, size_t *cap, size_t max_payload, int timeout_ms, struct vgpu_msg *msg,
                    int *fds, int *nfds, char *err, size_t errlen);

/* Copies a string into a fixed field, NUL-terminated (truncating). */
void vgpu_proto_copy_string(char *dst, size_t size, const char *src);
