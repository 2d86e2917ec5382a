/* HMAC-MD2 (RFC 1319, RFC 2104): the hash the CUDA runtime checks its
 * driver's integrity answer with (export_tables.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct vgpu_md2 {
    uint8_t x[48];   /* the state: X of RFC 1319 */
    uint8_t sum[16]; /* the checksum: C */
    uint8_t block[16];
    uint8_t l;    /* the checksum's last byte: L */
    uint8_t used; /* bytes in block */
};

void vgpu_md2_init(struct vgpu_md2 *m);
void vgpu_md2_update(struct vgpu_md2 *m, const void *data, size_t n);
void vgpu_md2_final(struct vgpu_md2 *m, uint8_t out[16]);

/* HMAC-MD2 of the concatenation of n parts under a 16-byte key. */
struct vgpu_hmac_part {
    const void *p;
    size_t n;
};
void vgpu_hmac_md2(const uint8_t key[16], const struct vgpu_hmac_part *parts, size_t n, uint8_t out[16]);
