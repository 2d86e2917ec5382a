/*
 * The program a command really runs, for the tools that look at it before
 * (vgpu-run) or while (vgpu-doctor) it runs: found on PATH as execvp
 * finds it, and through #! lines to the interpreter.
 */
#pragma once

#include <stddef.h>

/* Finds the file execvp would run for name: 0 with it in out, or an errno. */
int vgpu_find_program(const char *name, char *out, size_t len);

/* Follows #! lines from prog (a file) to the program that really runs: the
 * kernel starts a script's interpreter, and "#!/usr/bin/env NAME" starts
 * NAME from PATH.  LD_PRELOAD only matters to that last program. */
void vgpu_follow_interpreters(char *prog, size_t len);
