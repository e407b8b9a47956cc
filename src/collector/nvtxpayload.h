/*
 * NVTX extended payloads (private to the collector): the schemas a program registers through the
 * NVTX payload extension (nvtxPayloadSchemaRegister, nvtxPayloadEnumRegister; NCCL registers one
 * per API call) and the decoding of a push's, start's or mark's NVTX_PAYLOAD_TYPE_EXT payload into
 * (field name, value) pairs. Pure: fixed tables, no allocation, no ring, no lock (both run on the
 * program's threads inside NVTX calls).
 */
#ifndef CUSCOPE_COLLECTOR_NVTXPAYLOAD_H
#define CUSCOPE_COLLECTOR_NVTXPAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

#define NVTXPAYLOAD_SCHEMAS_MAX 128  /* schemas kept per process; later ones are not decoded (counted) */
#define NVTXPAYLOAD_ENUMS_MAX   32   /* enums kept per process */
#define NVTXPAYLOAD_VALUES_MAX  32   /* named values kept per enum */
#define NVTXPAYLOAD_FIELDS_MAX  16   /* decodable fields kept per schema */
#define NVTXPAYLOAD_NAME_MAX    63   /* bytes of a field name kept */
#define NVTXPAYLOAD_DATA_MAX    16   /* nvtxPayloadData_t entries read per event */
#define NVTXPAYLOAD_ENTRIES_MAX 1024 /* schema or enum entries looked at per registration */

/* How a decoded value reads (the values of enum wire_arg_type). */
enum nvtxpayload_type {
	NVTXPAYLOAD_UINT = 0,
	NVTXPAYLOAD_INT = 1,
	NVTXPAYLOAD_DOUBLE = 2,
	NVTXPAYLOAD_ENUM = 3, /* an unsigned value of a registered enum, text its name */
};

/* One decoded field: name (and an enum value's text) are the registration's (they live as long as
 * the process), value per type. */
struct nvtxpayload_arg {
	const struct collector_string *name;
	const struct collector_string *text; /* NVTXPAYLOAD_ENUM: the value's name; else NULL */
	uint64_t value;
	uint32_t type; /* enum nvtxpayload_type */
	uint32_t reserved;
};
_Static_assert(sizeof(struct nvtxpayload_arg) == 32, "nvtxpayload_arg layout");

/* nvtxPayloadSchemaRegister: keeps the schema's decodable fields under (domain, id) and returns the
 * id (a static one as given, else a new dynamic one); 0 for an unusable attribute block. */
uint64_t nvtxpayload_schema_register(const void *domain, const void *attr);
/* nvtxPayloadEnumRegister: keeps the enum's size and value names under (domain, id), so that
 * schema entries of that type decode as named values; returns the id, 0 for an unusable block. */
uint64_t nvtxpayload_enum_register(const void *domain, const void *attr);
/*
 * Decodes the `count` nvtxPayloadData_t at data (an event attribute's payload.ullValue and
 * reserved0) of an event in domain into at most max args; returns how many. Payloads of unknown
 * schemas, NULL pointers, sizes smaller than the schema's and fields beyond max add nothing and
 * are counted (nvtxpayload_undecoded).
 */
size_t nvtxpayload_decode(const void *domain, const void *data, uint32_t count, struct nvtxpayload_arg *out,
                          size_t max);
/* Payloads and fields not decoded since the process started. */
uint64_t nvtxpayload_undecoded(void);
/* Forgets every schema and enum (unit tests only: not safe while other threads decode). */
void nvtxpayload_reset(void);

#endif
