/* CRC-32 (IEEE 802.3 polynomial) for capture chunk checksums. */
#ifndef CUSCOPE_CRC32_H
#define CUSCOPE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC over len bytes; start with crc = 0. */
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);

#endif
