/* NVTX extended payloads: registered schemas and enums, and payloads decoded into named values. */
#include "nvtxpayload.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

struct nvtxpayload_field {
	struct collector_string name; /* text points at name_text */
	char name_text[NVTXPAYLOAD_NAME_MAX + 1];
	uint64_t offset;                       /* bytes from the payload's start */
	uint8_t size;                          /* bytes: 1, 2, 4 or 8 */
	uint8_t type;                          /* enum nvtxpayload_type; floats are 4 bytes, doubles 8 */
	const struct nvtxpayload_enum *values; /* NVTXPAYLOAD_ENUM: the enum's names */
};

struct nvtxpayload_schema {
	_Atomic int ready; /* set (release) once the rest is written; never changes after */
	const void *domain;
	uint64_t id;
	uint64_t size;    /* bytes a payload must hold: the static size, else the fields' end */
	uint32_t fields;  /* decodable fields kept */
	uint32_t skipped; /* entries that are not (strings, arrays, nested schemas, beyond the table) */
	struct nvtxpayload_field field[NVTXPAYLOAD_FIELDS_MAX];
};

struct nvtxpayload_value {
	uint64_t value;
	struct collector_string name; /* text points at text */
	char text[32];
};

struct nvtxpayload_enum {
	_Atomic int ready;
	const void *domain;
	uint64_t id;
	uint64_t size;  /* bytes of a value */
	uint32_t count; /* named values kept */
	struct nvtxpayload_value value[NVTXPAYLOAD_VALUES_MAX];
};

/*
 * No lock, so that no thread ever waits here (not even a forked child whose parent was registering):
 * a registration takes the next slot (count, which may pass the table's size: those are not kept),
 * fills it and then sets its ready flag; readers look at the ready slots below count.
 */
static struct nvtxpayload_schema nvtxpayload_schemas[NVTXPAYLOAD_SCHEMAS_MAX];
static _Atomic uint32_t nvtxpayload_schema_count;
static struct nvtxpayload_enum nvtxpayload_enums[NVTXPAYLOAD_ENUMS_MAX];
static _Atomic uint32_t nvtxpayload_enum_count;
static _Atomic uint64_t nvtxpayload_next_dynamic = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;
static _Atomic uint64_t nvtxpayload_lost;

/* Size and reading of a predefined entry type (0 size: not decoded here). */
static int nvtxpayload_basic_type(uint64_t type, uint8_t *size, uint8_t *kind)
{
	static const struct {
		uint8_t size, kind;
	} types[] = {
	    [NVTX_PAYLOAD_ENTRY_TYPE_CHAR] = {1, NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UCHAR] = {1, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_SHORT] = {sizeof(short), NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_USHORT] = {sizeof(short), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_INT] = {sizeof(int), NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UINT] = {sizeof(int), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_LONG] = {sizeof(long), NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_ULONG] = {sizeof(long), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG] = {sizeof(long long), NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG] = {sizeof(long long), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_INT8] = {1, NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UINT8] = {1, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_INT16] = {2, NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UINT16] = {2, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_INT32] = {4, NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UINT32] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_INT64] = {8, NVTXPAYLOAD_INT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_UINT64] = {8, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_FLOAT] = {4, NVTXPAYLOAD_DOUBLE},
	    [NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE] = {8, NVTXPAYLOAD_DOUBLE},
	    [NVTX_PAYLOAD_ENTRY_TYPE_SIZE] = {sizeof(size_t), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS] = {sizeof(void *), NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_CHAR8] = {1, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_CHAR16] = {2, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_CHAR32] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_BYTE] = {1, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32] = {4, NVTXPAYLOAD_DOUBLE},
	    [NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64] = {8, NVTXPAYLOAD_DOUBLE},
	    [NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID] = {8, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64] = {8, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32] = {4, NVTXPAYLOAD_UINT},
	    [NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64] = {8, NVTXPAYLOAD_UINT},
	};
	if (type >= sizeof types / sizeof types[0] || !types[type].size)
		return 0;
	*size = types[type].size;
	*kind = types[type].kind;
	return 1;
}

/* The registered enum (domain, id), NULL when there is none. */
static const struct nvtxpayload_enum *nvtxpayload_enum_find(const void *domain, uint64_t id)
{
	uint32_t n = atomic_load_explicit(&nvtxpayload_enum_count, memory_order_relaxed);
	if (n > NVTXPAYLOAD_ENUMS_MAX)
		n = NVTXPAYLOAD_ENUMS_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&nvtxpayload_enums[i].ready, memory_order_acquire) &&
		    nvtxpayload_enums[i].domain == domain && nvtxpayload_enums[i].id == id)
			return &nvtxpayload_enums[i];
	return NULL;
}

/* The schema registered as (domain, id), NULL when none. */
static const struct nvtxpayload_schema *nvtxpayload_find(const void *domain, uint64_t id)
{
	uint32_t n = atomic_load_explicit(&nvtxpayload_schema_count, memory_order_relaxed);
	if (n > NVTXPAYLOAD_SCHEMAS_MAX)
		n = NVTXPAYLOAD_SCHEMAS_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&nvtxpayload_schemas[i].ready, memory_order_acquire) &&
		    nvtxpayload_schemas[i].id == id && nvtxpayload_schemas[i].domain == domain)
			return &nvtxpayload_schemas[i];
	return NULL;
}

/* Fills s's fields from a schema's entries: names, offsets (natural alignment where an entry
 * after the first gives none), sizes; the rest is skipped. */
static void nvtxpayload_fill(struct nvtxpayload_schema *s, const void *domain,
                             const nvtxPayloadSchemaEntry_t *entries, size_t n)
{
	uint64_t end = 0; /* where the previous entry ended, for entries without an offset */
	int placed = 1;   /* end is known (false after an entry of unknown size) */
	for (size_t i = 0; i < n; i++) {
		const nvtxPayloadSchemaEntry_t *e = &entries[i];
		uint8_t size = 0, kind = 0;
		const struct nvtxpayload_enum *values = NULL;
		if (!nvtxpayload_basic_type(e->type, &size, &kind) &&
		    e->type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START) {
			values = nvtxpayload_enum_find(domain, e->type);
			uint64_t es = values ? values->size : 0;
			if (es == 1 || es == 2 || es == 4 || es == 8) {
				size = (uint8_t)es;
				kind = NVTXPAYLOAD_ENUM;
			}
		}
		int plain =
		    size && !(e->flags & (NVTX_PAYLOAD_ENTRY_FLAG_POINTER | NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY |
		                          NVTX_PAYLOAD_ENTRY_FLAG_DEEP_COPY | NVTX_PAYLOAD_ENTRY_FLAG_HIDE |
		                          NVTX_PAYLOAD_ENTRY_FLAG_OFFSET_FROM_BASE |
		                          NVTX_PAYLOAD_ENTRY_FLAG_OFFSET_FROM_HERE));
		uint64_t offset = e->offset;
		if (i > 0 && offset == 0) {
			if (!placed || !plain) {
				placed = 0; /* where this or the next entry lies is not known */
				s->skipped++;
				continue;
			}
			offset = (end + size - 1) / size * size;
		}
		if (!plain || s->fields == NVTXPAYLOAD_FIELDS_MAX || offset > UINT32_MAX) {
			placed = 0;
			s->skipped++;
			continue;
		}
		struct nvtxpayload_field *f = &s->field[s->fields];
		if (e->name && *e->name)
			snprintf(f->name_text, sizeof f->name_text, "%s", e->name);
		else
			snprintf(f->name_text, sizeof f->name_text, "field %zu", i);
		f->name.text = f->name_text;
		f->name.length = (uint32_t)strlen(f->name_text);
		f->name.id = 0; /* interned by the sender on first use */
		f->name.generation = 0;
		f->offset = offset;
		f->size = size;
		f->type = kind;
		f->values = kind == NVTXPAYLOAD_ENUM ? values : NULL;
		s->fields++;
		end = offset + size;
		placed = 1;
		if (end > s->size)
			s->size = end;
	}
}

uint64_t nvtxpayload_schema_register(const void *domain, const void *attr_in)
{
	const nvtxPayloadSchemaAttr_t *attr = attr_in;
	if (!attr || !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) || !attr->entries)
		return 0;
	uint64_t id;
	if ((attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) &&
	    attr->schemaId >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START &&
	    attr->schemaId < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START)
		id = attr->schemaId;
	else
		id = atomic_fetch_add(&nvtxpayload_next_dynamic, 1);
	size_t n = (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) ? attr->numEntries : 0;
	if (n > NVTXPAYLOAD_ENTRIES_MAX)
		n = NVTXPAYLOAD_ENTRIES_MAX; /* a registration's cost stays bounded */
	/* Only static and dynamic structs: unions and schemas of other kinds are left undecoded. A
	 * schema registered again keeps its first layout. */
	if ((attr->type != NVTX_PAYLOAD_SCHEMA_TYPE_STATIC &&
	     attr->type != NVTX_PAYLOAD_SCHEMA_TYPE_DYNAMIC) ||
	    nvtxpayload_find(domain, id))
		return id;
	uint32_t slot = atomic_fetch_add(&nvtxpayload_schema_count, 1);
	if (slot >= NVTXPAYLOAD_SCHEMAS_MAX)
		return id; /* the table is full: its payloads count as undecoded */
	struct nvtxpayload_schema *s = &nvtxpayload_schemas[slot];
	s->domain = domain;
	s->id = id;
	s->size = 0;
	s->fields = 0;
	s->skipped = 0;
	nvtxpayload_fill(s, domain, attr->entries, n);
	/* A dynamic schema's payloads vary in size: only its fields' end is required. */
	if (attr->type == NVTX_PAYLOAD_SCHEMA_TYPE_STATIC &&
	    (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE) &&
	    attr->payloadStaticSize > s->size)
		s->size = attr->payloadStaticSize;
	atomic_store_explicit(&s->ready, 1, memory_order_release);
	return id;
}

uint64_t nvtxpayload_enum_register(const void *domain, const void *attr_in)
{
	const nvtxPayloadEnumAttr_t *attr = attr_in;
	if (!attr)
		return 0;
	uint64_t id;
	if ((attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) &&
	    attr->schemaId >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START &&
	    attr->schemaId < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START)
		id = attr->schemaId;
	else
		id = atomic_fetch_add(&nvtxpayload_next_dynamic, 1);
	uint64_t size =
	    (attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE) ? attr->sizeOfEnum : sizeof(int);
	if (nvtxpayload_enum_find(domain, id))
		return id;
	uint32_t slot = atomic_fetch_add(&nvtxpayload_enum_count, 1);
	if (slot < NVTXPAYLOAD_ENUMS_MAX) {
		struct nvtxpayload_enum *e = &nvtxpayload_enums[slot];
		e->domain = domain;
		e->id = id;
		e->size = size;
		e->count = 0;
		size_t n = (attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES) && attr->entries
		               ? attr->numEntries
		               : 0;
		for (size_t i = 0; i < n && i < NVTXPAYLOAD_ENTRIES_MAX && e->count < NVTXPAYLOAD_VALUES_MAX;
		     i++) {
			if (!attr->entries[i].name || attr->entries[i].isFlag)
				continue; /* bit flags combine: a value is not one name */
			struct nvtxpayload_value *v = &e->value[e->count++];
			v->value = attr->entries[i].value;
			snprintf(v->text, sizeof v->text, "%s", attr->entries[i].name);
			v->name =
			    (struct collector_string){.text = v->text, .length = (uint32_t)strlen(v->text)};
		}
		atomic_store_explicit(&e->ready, 1, memory_order_release);
	}
	return id;
}

/* Reads one field of a payload (p holds at least its offset + size bytes). */
static uint64_t nvtxpayload_read(const struct nvtxpayload_field *f, const unsigned char *p)
{
	p += f->offset;
	if (f->type == NVTXPAYLOAD_DOUBLE) {
		double d;
		if (f->size == 4) {
			float x;
			memcpy(&x, p, sizeof x);
			d = x;
		} else {
			memcpy(&d, p, sizeof d);
		}
		uint64_t bits;
		memcpy(&bits, &d, sizeof bits);
		return bits;
	}
	uint8_t v1;
	uint16_t v2;
	uint32_t v4;
	uint64_t v8 = 0;
	int sign = f->type == NVTXPAYLOAD_INT;
	switch (f->size) {
	case 1:
		memcpy(&v1, p, 1);
		v8 = sign ? (uint64_t)(int64_t)(int8_t)v1 : v1;
		break;
	case 2:
		memcpy(&v2, p, 2);
		v8 = sign ? (uint64_t)(int64_t)(int16_t)v2 : v2;
		break;
	case 4:
		memcpy(&v4, p, 4);
		v8 = sign ? (uint64_t)(int64_t)(int32_t)v4 : v4;
		break;
	default:
		memcpy(&v8, p, 8);
		break;
	}
	return v8;
}

size_t nvtxpayload_decode(const void *domain, const void *data_in, uint32_t count,
                          struct nvtxpayload_arg *out, size_t max)
{
	const nvtxPayloadData_t *data = data_in;
	uint64_t lost = 0;
	size_t n = 0;
	if (!count)
		count = 1; /* reserved0 left at 0 by hand-written attributes: one payload */
	if (!data) {
		atomic_fetch_add_explicit(&nvtxpayload_lost, 1, memory_order_relaxed);
		return 0;
	}
	if (count > NVTXPAYLOAD_DATA_MAX) {
		lost += count - NVTXPAYLOAD_DATA_MAX;
		count = NVTXPAYLOAD_DATA_MAX;
	}
	for (uint32_t d = 0; d < count; d++) {
		const struct nvtxpayload_schema *s = nvtxpayload_find(domain, data[d].schemaId);
		/* SIZE_MAX: the program left the size to the tool, which takes the schema's. */
		if (!s || !data[d].payload || data[d].size < s->size) {
			lost++;
			continue;
		}
		for (uint32_t i = 0; i < s->fields; i++) {
			if (n == max) {
				lost += s->fields - i;
				break;
			}
			const struct nvtxpayload_field *f = &s->field[i];
			out[n].name = &f->name;
			out[n].text = NULL;
			out[n].value = nvtxpayload_read(f, data[d].payload);
			out[n].type = f->type == NVTXPAYLOAD_ENUM ? NVTXPAYLOAD_UINT : f->type;
			out[n].reserved = 0;
			/* An enum's value by its name; a value it does not name stays a number. */
			for (uint32_t k = 0; f->values && k < f->values->count; k++) {
				if (f->values->value[k].value == out[n].value) {
					out[n].text = &f->values->value[k].name;
					out[n].type = NVTXPAYLOAD_ENUM;
					break;
				}
			}
			n++;
		}
	}
	if (lost)
		atomic_fetch_add_explicit(&nvtxpayload_lost, lost, memory_order_relaxed);
	return n;
}

uint64_t nvtxpayload_undecoded(void)
{
	return atomic_load_explicit(&nvtxpayload_lost, memory_order_relaxed);
}

void nvtxpayload_reset(void)
{
	for (size_t i = 0; i < NVTXPAYLOAD_SCHEMAS_MAX; i++)
		atomic_store(&nvtxpayload_schemas[i].ready, 0);
	for (size_t i = 0; i < NVTXPAYLOAD_ENUMS_MAX; i++)
		atomic_store(&nvtxpayload_enums[i].ready, 0);
	atomic_store(&nvtxpayload_schema_count, 0);
	atomic_store(&nvtxpayload_enum_count, 0);
	atomic_store(&nvtxpayload_lost, 0);
	atomic_store(&nvtxpayload_next_dynamic, NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START);
}
