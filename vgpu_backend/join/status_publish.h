/*
 * This process's status record (contract/window/status_page.h): what
 * joining came to, published as a sealed memfd that vgpu-doctor reads
 * through /proc/PID/fd.
 */
#pragma once

struct vgpu_self;

/*
 * Publishes what s says, under the join lock (self.c): the first call
 * creates the record, later ones replace it when it changed.  Failure is a
 * debug log line: the record helps diagnosis and is never worth failing for.
 */
void vgpu_status_page_publish(const struct vgpu_self *s);
