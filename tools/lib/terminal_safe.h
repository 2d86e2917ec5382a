/*
 * Text that others wrote (a process's name and command line, a program's
 * path, a file name), made safe to print on a terminal: what a tenant puts
 * there must not clear root's screen, set its title, ring its bell or
 * print lines of its own.
 */
#pragma once

/*
 * In place: C0 control characters (newlines and escapes among them), DEL,
 * C1 control characters, the bidirectional overrides and isolates (which
 * reorder what follows them), and every byte that is not part of valid
 * UTF-8 become '?'.  Printable text, ASCII or not, is left as it is.
 */
void vgpu_terminal_safe(char *s);
