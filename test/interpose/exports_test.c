/*
 * A vgpu library exports exactly the real library's functions (from the
 * committed symbol list) plus dlopen and dlmopen: nothing missing, and no internal name
 * that could shadow one of the program's.  Read with libelf, as the loader
 * would see it.  Usage: test_exports LIB.so LIB.symbols
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX 2048

static int find(char names[][128], int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    static char want[MAX][128], have[MAX][128];
    int nwant = 0, nhave = 0, bad = 0;
    if (argc != 3)
        return 2;

    FILE *f = fopen(argv[2], "r");
    char line[512], name[128], kind[16];
    while (f && fgets(line, sizeof(line), f))
        if (line[0] != '#' && sscanf(line, "%127s %15s", name, kind) == 2 && strcmp(kind, "func") == 0)
            snprintf(want[nwant++], 128, "%s", name);
    snprintf(want[nwant++], 128, "dlopen");
    snprintf(want[nwant++], 128, "dlmopen");

    elf_version(EV_CURRENT);
    int fd = open(argv[1], O_RDONLY);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    Elf_Scn *scn = NULL;
    while (elf && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym s;
            if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || GELF_ST_BIND(s.st_info) == STB_LOCAL)
                continue;
            const char *n = elf_strptr(elf, sh.sh_link, s.st_name);
            if (n && *n && nhave < MAX) {
                snprintf(have[nhave++], 128, "%s", n);
                if (GELF_ST_TYPE(s.st_info) != STT_FUNC) {
                    printf("FAIL %s is exported but is not a function\n", n);
                    bad++;
                }
            }
        }
    }
    for (int i = 0; i < nwant; i++)
        if (find(have, nhave, want[i]) < 0) {
            printf("FAIL %s is not exported\n", want[i]);
            bad++;
        }
    for (int i = 0; i < nhave; i++)
        if (find(want, nwant, have[i]) < 0) {
            printf("FAIL %s is exported but is not the driver's\n", have[i]);
            bad++;
        }
    if (nwant < 100) {
        printf("FAIL only %d names in %s\n", nwant, argv[2]);
        bad++;
    }
    if (!bad)
        printf("ok - %s exports exactly the %d names of %s\n", argv[1], nwant, argv[2]);
    return bad ? 1 : 0;
}
