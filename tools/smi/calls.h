/* vgpu-smi --calls PID: what a remote guest's calls cost (calls.c). */
#pragma once

#include <stdbool.h>

/* Prints process pid's record of its calls (each library it connected),
 * as a table or, with json, one JSON document; the exit status. */
int vgpu_smi_calls(int pid, bool json);
