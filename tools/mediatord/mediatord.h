/*
 * vgpu-mediatord's state, as its parts see it: the config in force, the
 * vGPUs, the connections, the watch and the compute views.  main.c owns
 * it (one loop thread); each part takes what it needs from here, so that
 * none of them has to include another's header for it.
 */
#pragma once

struct med_client;
struct med_config;
struct med_executors;
struct med_health;
struct med_vgpus;
struct med_views;
struct med_watch;

struct med_world {
    const struct med_config *config;
    struct med_vgpus *vgpus;
    struct med_watch *watch;     /* what the watch found (watch.h) */
    struct med_views *views;     /* the compute share's views (utilization.h) */
    struct med_health *health;   /* the GPUs' health (health/xid.h) */
    struct med_client **clients; /* every connection, for STATUS and the caps */
    struct med_executors *executors; /* the executors started, for the caps (remote/executors.h) */
    int nclients;
    int max_connections;         /* in force: the config's, or what the descriptor limit allows */
    int fd_limit;                /* RLIMIT_NOFILE, for messages */
};
