/* The texts the executor gives for codes (client.h, vgpu_remote_text), and
 * those it names by handles (vgpu_remote_intern). */
#include "forwarder/remote/guest/client.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Kept for the life of the process, as the library's own are; codes are
 * few, so the list only grows.  Owned by this file, under texts_lock. */
struct text {
    struct text *next;
    unsigned slot;
    uint32_t code;
    char s[];
};
static struct text *texts;
static pthread_mutex_t texts_lock = PTHREAD_MUTEX_INITIALIZER;

/* A child of fork may find the lock held by a thread it does not have.
 * Registered at the first call that takes it. */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&texts_lock, NULL);
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

int vgpu_remote_text(unsigned slot, uint32_t code, vgpu_remote_fetch_text fetch, const char **out)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&texts_lock);
    for (const struct text *t = texts; t; t = t->next)
        if (t->slot == slot && t->code == code) {
            *out = t->s;
            pthread_mutex_unlock(&texts_lock);
            return 0;
        }
    pthread_mutex_unlock(&texts_lock);
    char s[512];
    int r = fetch(slot, code, s, sizeof(s));
    if (r != 0)
        return r;
    size_t got = strnlen(s, sizeof(s) - 1);
    struct text *t = malloc(sizeof(*t) + got + 1);
    if (!t)
        return -1;
    t->slot = slot;
    t->code = code;
    memcpy(t->s, s, got);
    t->s[got] = 0;
    pthread_mutex_lock(&texts_lock);
    t->next = texts;
    texts = t;
    pthread_mutex_unlock(&texts_lock);
    *out = t->s;
    return 0;
}

/* Interned texts have no slot of their own: UINT_MAX, code 0. */
const char *vgpu_remote_intern(const char *s)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&texts_lock);
    for (const struct text *t = texts; t; t = t->next)
        if (t->slot == UINT_MAX && strcmp(t->s, s) == 0) {
            pthread_mutex_unlock(&texts_lock);
            return t->s;
        }
    size_t n = strlen(s);
    struct text *t = malloc(sizeof(*t) + n + 1);
    if (t) {
        t->slot = UINT_MAX;
        t->code = 0;
        memcpy(t->s, s, n + 1);
        t->next = texts;
        texts = t;
    }
    pthread_mutex_unlock(&texts_lock);
    return t ? t->s : NULL;
}
