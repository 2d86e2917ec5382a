/*
 * vgpu-symdump: list the functions a shared library exports, from its ELF
 * dynamic symbol table, in the format of interpose/<lib>.symbols.
 *
 *   vgpu-symdump [--prefix P] [--merge OLD.symbols] LIB.so [LIB.so...]
 *
 * Output lines are "NAME func" or "NAME object", sorted by name.  --merge
 * keeps every entry of an existing list, so refreshing the list from the
 * CUDA toolkit's stub (which lacks the driver's interop and debugger names)
 * adds names without dropping the ones only the real driver has.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sym {
    char *name;
    const char *kind;
};

struct symlist {
    struct sym *v;
    size_t n, cap;
};

static int symlist_add(struct symlist *l, const char *name, const char *kind)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        struct sym *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].name = strdup(name);
    if (!l->v[l->n].name)
        return -ENOMEM;
    l->v[l->n].kind = kind;
    l->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct sym *)a)->name, ((const struct sym *)b)->name);
}

/* Adds the defined global function and object symbols of path's .dynsym. */
static int dump_library(const char *path, const char *prefix, struct symlist *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "vgpu-symdump: %s: %s\n", path, strerror(errno));
        return -1;
    }
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    int rc = -1;
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        fprintf(stderr, "vgpu-symdump: %s: not an ELF file\n", path);
        goto out;
    }
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; data && i < count; i++) {
            GElf_Sym s;
            if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF)
                continue;
            int bind = GELF_ST_BIND(s.st_info), type = GELF_ST_TYPE(s.st_info);
            if (bind != STB_GLOBAL && bind != STB_WEAK)
                continue;
            const char *kind = type == STT_FUNC || type == STT_GNU_IFUNC ? "func"
                               : type == STT_OBJECT                       ? "object"
                                                                          : NULL;
            const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
            if (!kind || !name || strncmp(name, prefix, strlen(prefix)) != 0)
                continue;
            if (symlist_add(out, name, kind) < 0)
                goto out;
        }
        rc = 0;
    }
    if (rc < 0)
        fprintf(stderr, "vgpu-symdump: %s: no dynamic symbol table\n", path);
out:
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

static int merge_list(const char *path, struct symlist *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "vgpu-symdump: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512], name[256], kind[16];
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || sscanf(line, "%255s %15s", name, kind) != 2)
            continue;
        if (symlist_add(out, name, strcmp(kind, "object") == 0 ? "object" : "func") < 0) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    const char *prefix = "";
    struct symlist list = { 0 };
    int i = 1;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc)
            prefix = argv[++i];
        else if (strcmp(argv[i], "--merge") == 0 && i + 1 < argc) {
            if (merge_list(argv[++i], &list) < 0)
                return 1;
        } else {
            fprintf(stderr, "usage: vgpu-symdump [--prefix P] [--merge OLD.symbols] LIB.so...\n");
            return 2;
        }
    }
    if (i == argc && list.n == 0) {
        fprintf(stderr, "usage: vgpu-symdump [--prefix P] [--merge OLD.symbols] LIB.so...\n");
        return 2;
    }
    for (; i < argc; i++)
        if (dump_library(argv[i], prefix, &list) < 0)
            return 1;
    qsort(list.v, list.n, sizeof(*list.v), by_name);
    printf("# Exported API surface; refresh with tools/vgpu-symdump (see docs/design/architecture.md).\n");
    for (size_t k = 0; k < list.n; k++)
        printf("%s %s\n", list.v[k].name, list.v[k].kind);
    return 0;
}
