/* JSON output for the tools' --json. */
#pragma once

#include <stdio.h>

/* s as a JSON string: quotes, backslashes and control characters escaped. */
void vgpu_json_string(FILE *f, const char *s);
