/*
 * What names the fake's devices, and its driver's export table: the same
 * in both libraries.
 */
#define _GNU_SOURCE
#include "test/fake/gpu/fakegpu.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Device identity                                                          */

void fakegpu_device_uuid(int dev, unsigned char out[FAKEGPU_UUID_BYTES])
{
    memset(out, 0, FAKEGPU_UUID_BYTES);
    out[0] = 0xfa;
    out[1] = 0x4e;
    out[FAKEGPU_UUID_BYTES - 1] = (unsigned char)dev;
}

void fakegpu_device_uuid_string(int dev, char out[48])
{
    unsigned char u[FAKEGPU_UUID_BYTES];
    fakegpu_device_uuid(dev, u);
    snprintf(out, 48, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

unsigned fakegpu_device_pci_bus(int dev)
{
    return (unsigned)dev + 1;
}

/* Parses the whole of text with a 3-field pattern ending in %n: true on a
 * match.  A macro, so that the compiler checks each literal pattern. */
#define SCAN3(text, pattern, a, b, c)                                                                                  \
    (consumed = -1,                                                                                                    \
     sscanf((text), pattern "%n", (a), (b), (c), &consumed) == 3 && consumed >= 0 && (text)[consumed] == '\0')

int fakegpu_device_from_pci_bus_id(const char *bus_id)
{
    if (!bus_id)
        return -1;

    unsigned domain = 0, bus = 0, device = 0, function = 0;
    int consumed = -1;
    bool full = sscanf(bus_id, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) == 4 && consumed >= 0 &&
                bus_id[consumed] == '\0';
    if (!full && !SCAN3(bus_id, "%x:%x:%x", &domain, &bus, &device)) {
        domain = 0;
        if (!SCAN3(bus_id, "%x:%x.%x", &bus, &device, &function))
            return -1;
    }
    if (domain != 0 || device != 0 || function != 0 || bus < 1 || bus > (unsigned)fakegpu_config()->devices)
        return -1;
    return (int)bus - 1;
}

/* ------------------------------------------------------------------------ */
/* Export table                                                             */

struct export_table {
    unsigned long long size; /* first 8 bytes: size of the table */
    void *entries[4];
};

static const struct export_table g_export_table = { sizeof(struct export_table), { 0 } };

const void *fakegpu_export_table(const unsigned char *id)
{
    return id && id[0] == 0xfa ? &g_export_table : NULL;
}
