/*
 * vgpu-mediatord as the process would meet it: its socket (the operator's,
 * where /etc/vgpu/vgpu.conf requires the mediator; else the process's
 * VGPU_MEDIATOR_SOCKET, else the default), whether a mediator answers on
 * it, and whether the process's user may use any of its vGPUs.  The
 * mediator's STATUS lists the vGPUs the asking user may see, so the
 * question is asked with the process's credentials: root asks from a child
 * that takes them.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "common/error.h"
#include "common/operator.h"
#include "tools/lib/mediator_query.h"
#include "common/contract/protocol/mediator_client.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SEEN VGPU_STATUS_MAX_VGPUS

struct seen {
    int n;
    char names[MAX_SEEN][VGPU_NAME_LEN];
};

/* Asks STATUS at path: 0 with the vGPU names, or -1 with err. */
static int ask(const char *path, struct seen *s, char *err, size_t errlen)
{
    int fd = vgpu_tool_dial(path, err, errlen);
    if (fd < 0)
        return -1;
    uint8_t *buf = NULL;
    size_t cap = 0;
    struct vgpu_msg m;
    int r = vgpu_tool_status(fd, path, &buf, &cap, &m, err, errlen);
    if (r == 0) {
        struct vgpu_status_header h;
        vgpu_proto_status_header(&m, &h);
        s->n = 0;
        for (uint32_t i = 0; i < h.nvgpus && s->n < MAX_SEEN; i++) {
            struct vgpu_status_vgpu v;
            vgpu_proto_status_vgpu(&m, i, &v);
            if (!(v.flags & VGPU_STATUS_RETIRED))
                snprintf(s->names[s->n++], VGPU_NAME_LEN, "%s", v.name);
        }
    }
    free(buf);
    close(fd);
    return r;
}

/* ask() as the process's user: a child takes its uid, gid and groups
 * (the mediator reads them from the connection) and sends back the names. */
static int ask_as(const struct doc_proc *p, const char *path, struct seen *s, char *err, size_t errlen)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return vgpu_fail(err, errlen, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return vgpu_fail(err, errlen, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(pipefd[0]);
        int r = -1;
        if (setgroups((size_t)p->ngroups, p->groups) != 0 || setgid(p->egid) != 0 || setuid(p->euid) != 0)
            snprintf(err, errlen, "cannot take uid %u's credentials: %s", (unsigned)p->euid, strerror(errno));
        else
            r = ask(path, s, err, errlen);
        FILE *out = fdopen(pipefd[1], "w");
        if (!out)
            _exit(1);
        if (r == 0) {
            fputs("ok\n", out);
            for (int i = 0; i < s->n; i++)
                fprintf(out, "vgpu %s\n", s->names[i]);
        } else
            fprintf(out, "error %s\n", err);
        fclose(out);
        _exit(0);
    }
    close(pipefd[1]);
    FILE *in = fdopen(pipefd[0], "r");
    int r = -1;
    char line[1024];
    s->n = 0;
    vgpu_fail(err, errlen, "the child asking as uid %u said nothing", (unsigned)p->euid);
    while (in && fgets(line, sizeof(line), in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "ok") == 0)
            r = 0;
        else if (strncmp(line, "vgpu ", 5) == 0 && s->n < MAX_SEEN)
            vgpu_proto_copy_string(s->names[s->n++], VGPU_NAME_LEN, line + 5);
        else if (strncmp(line, "error ", 6) == 0)
            vgpu_fail(err, errlen, "%s", line + 6);
    }
    if (in)
        fclose(in);
    else
        close(pipefd[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return r;
}

/* owner: the socket's owner, normally the mediator's user, who sees every vGPU as root does. */
static void report_admission(struct doc_ctx *c, const char *socket, const char *path, uid_t owner)
{
    struct seen *s = calloc(1, sizeof(*s));
    if (!s)
        return;
    char err[1024];
    uid_t uid = c->proc ? c->proc->euid : geteuid();
    int r;
    if (!c->proc || c->proc->euid == geteuid())
        r = ask(path, s, err, sizeof(err));
    else if (geteuid() == 0)
        r = ask_as(c->proc, path, s, err, sizeof(err));
    else {
        doc_add(&c->report, DOC_INFO, "mediator", "a mediator answers at %s; whether uid %u may use a vGPU shows "
                "only to that user or root (sudo vgpu-doctor %d)", socket, (unsigned)uid, c->proc->pid);
        free(s);
        return;
    }
    if (r != 0) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator", "%s", err),
                "look at the mediator's log: journalctl -u vgpu-mediatord");
        free(s);
        return;
    }
    c->mediator_answers = true;
    char names[MAX_SEEN * (VGPU_NAME_LEN + 2)] = "";
    for (int i = 0; i < s->n; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", s->names[i]);
    }
    const char *want = c->proc ? doc_proc_getenv(c->proc, "VGPU_NAME") : getenv("VGPU_NAME");
    bool wanted_seen = !want || !*want;
    for (int i = 0; i < s->n && !wanted_seen; i++)
        wanted_seen = strcmp(s->names[i], want) == 0;
    if (uid == 0 || uid == owner)
        doc_add(&c->report, DOC_INFO, "mediator", "vgpu-mediatord answers at %s; uid %u (%s) sees every vGPU (%s), "
                "and is admitted to the first that lists it (or its groups)", socket, (unsigned)uid,
                uid == 0 ? "root" : "the socket's owner", s->n ? names : "none");
    else if (s->n == 0)
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator",
                        "no vGPU of vgpu-mediatord at %s admits uid %u: vgpu refuses its processes, which see no "
                        "GPU", socket, (unsigned)uid),
                "add uid %u to uids = (or one of its groups to gids =) of a [vgpu.NAME] section of the mediator's "
                "config (/etc/vgpu/mediatord.conf), then: sudo systemctl reload vgpu-mediatord", (unsigned)uid);
    else if (!wanted_seen)
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator",
                        "VGPU_NAME=%s, but uid %u may use only %s at %s: vgpu refuses the process", want,
                        (unsigned)uid, names, socket),
                "set VGPU_NAME to one of %s (or unset it), or have the operator add uid %u to [vgpu.%s]", names,
                (unsigned)uid, want);
    else
        doc_add(&c->report, DOC_OK, "mediator", "vgpu-mediatord answers at %s; uid %u may use %s", socket,
                (unsigned)uid, names);
    free(s);
}

/*
 * The operator's settings (common/operator.h), as the process's vgpu reads
 * them: a lock decides the socket, whatever the process's environment says.
 * Returns the socket the operator requires, "" for a guest window, or NULL
 * when the environment decides (or the file refuses every process).
 */
static const char *operator_socket(struct doc_ctx *c, struct vgpu_operator *o, bool *refused)
{
    char path[PATH_MAX * 2];
    doc_fs_path(&c->fs, VGPU_OPERATOR_CONFIG, path, sizeof(path));
    *refused = vgpu_operator_load(path, o) != 0;
    if (*refused) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "operator", "%s: every process that loads vgpu is refused", o->why),
                "sudo chown root:root %s && sudo chmod 644 %s, with root's directories above it (or remove it, to "
                "let each process's environment decide)", VGPU_OPERATOR_CONFIG, VGPU_OPERATOR_CONFIG);
        return NULL;
    }
    if (!o->present || o->require == VGPU_REQUIRE_NONE)
        return NULL;
    const char *env = c->proc ? doc_proc_getenv(c->proc, "VGPU_MEDIATOR_SOCKET") : getenv("VGPU_MEDIATOR_SOCKET");
    if (o->require == VGPU_REQUIRE_GUEST) {
        doc_add(&c->report, DOC_INFO, "operator", "the operator requires a vGPU's window on this VM's PCI bus (%s): "
                "no mediator is asked", VGPU_OPERATOR_CONFIG);
        return "";
    }
    doc_add(&c->report, DOC_INFO, "operator", "the operator requires vgpu-mediatord at %s (%s)%s%s%s",
            o->mediator_socket, VGPU_OPERATOR_CONFIG, env && *env ? "; the process's VGPU_MEDIATOR_SOCKET=" : "",
            env && *env ? env : "", env && *env ? " is ignored" : "");
    return o->mediator_socket;
}

void doc_check_mediator(struct doc_ctx *c)
{
    struct vgpu_operator op;
    bool refused;
    const char *socket = operator_socket(c, &op, &refused);
    if (refused || (socket && !*socket))
        return;
    bool required = socket != NULL;
    if (!required)
        socket = c->proc ? doc_proc_getenv(c->proc, "VGPU_MEDIATOR_SOCKET") : getenv("VGPU_MEDIATOR_SOCKET");
    bool named = socket && *socket;
    if (!required && named && strcmp(socket, "none") == 0) {
        doc_add(&c->report, DOC_INFO, "mediator", "VGPU_MEDIATOR_SOCKET=none: no mediator is asked");
        return;
    }
    if (!named)
        socket = VGPU_MEDIATOR_DEFAULT_SOCKET;
    char path[PATH_MAX * 2];
    doc_fs_path(&c->fs, socket, path, sizeof(path));
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (!named)
            doc_add(&c->report, DOC_INFO, "mediator", "no vgpu-mediatord (no socket at %s): vGPUs come from the "
                    "environment (standalone) or a VM's window", socket);
        else
            doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator",
                            "%s%s, which does not exist: vgpu refuses the process",
                            required ? "the operator's mediator_socket = " : "VGPU_MEDIATOR_SOCKET=", socket),
                    required ? "start vgpu-mediatord with socket = %s: sudo systemctl start vgpu-mediatord"
                             : "start vgpu-mediatord with socket = %s (sudo systemctl start vgpu-mediatord), or set "
                               "VGPU_MEDIATOR_SOCKET=none to run without one",
                    socket);
        return;
    }
    if (!S_ISSOCK(st.st_mode)) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator", "%s is not a socket: no mediator can answer there",
                        socket),
                "remove it and start the mediator: sudo rm %s && sudo systemctl start vgpu-mediatord", socket);
        return;
    }
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        doc_add(&c->report, DOC_INFO, "mediator", "%s is too long a path to connect to", path);
        return;
    }
    int fd, e = vgpu_mediator_connect(path, &fd);
    if (e == 0) {
        close(fd);
        report_admission(c, socket, path, st.st_uid);
        return;
    }
    if (e == ECONNREFUSED) {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator",
                        "%s is a socket, but no mediator answers on it (it stopped, or left its socket behind): "
                        "vgpu refuses every process that uses it, rather than run it without limits", socket),
                "start the mediator: sudo systemctl start vgpu-mediatord (or, to run without one, remove the "
                "socket: sudo rm %s)", socket);
    } else if (e == EACCES || e == EPERM) {
        struct group *g = getgrgid(st.st_gid);
        char gname[64];
        if (g)
            snprintf(gname, sizeof(gname), "%s", g->gr_name);
        else
            snprintf(gname, sizeof(gname), "%u", (unsigned)st.st_gid);
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator", "this user may not connect to %s (mode %03o, group %s)",
                        socket, (unsigned)(st.st_mode & 0777), gname),
                "add the user to the socket's group: sudo usermod -aG %s USER, then log in again", gname);
    } else {
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "mediator", "cannot connect to %s: %s", socket, strerror(e)),
                "look at the mediator's log: journalctl -u vgpu-mediatord");
    }
}
