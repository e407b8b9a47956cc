/* NVTX extended payloads: schemas and enums registered, payloads decoded into named fields, and
 * everything that cannot be decoded skipped and counted without a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "../../src/collector/nvtxpayload.h"
#include "cuscope/wire.h"

#define SID(n) (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + (n))

static int dom_a, dom_b; /* stand-ins for two domain handles */

struct coll {
	uint64_t comm;
	size_t bytes;
	int root;
	int op;
	const char *tag;
	double scale;
	float ratio;
	int8_t small;
};

static const nvtxPayloadSchemaEntry_t coll_entries[] = {
    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "comm", NULL, 0, offsetof(struct coll, comm), NULL, NULL},
    {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "bytes", NULL, 0, offsetof(struct coll, bytes), NULL, NULL},
    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "root", NULL, 0, offsetof(struct coll, root), NULL, NULL},
    {0, SID(11), "op", NULL, 0, offsetof(struct coll, op), NULL, NULL},
    {NVTX_PAYLOAD_ENTRY_FLAG_POINTER, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "tag", NULL, 0,
     offsetof(struct coll, tag), NULL, NULL},
    {0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "scale", NULL, 0, offsetof(struct coll, scale), NULL, NULL},
    {0, NVTX_PAYLOAD_ENTRY_TYPE_FLOAT, "ratio", NULL, 0, offsetof(struct coll, ratio), NULL, NULL},
    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT8, NULL, NULL, 0, offsetof(struct coll, small), NULL, NULL},
};

static uint64_t register_schema(const void *domain, const nvtxPayloadSchemaEntry_t *entries, size_t n,
                                uint64_t id, size_t static_size)
{
	nvtxPayloadSchemaAttr_t a = {
	    .fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
	                 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
	                 (id ? NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID : 0) |
	                 (static_size ? NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE : 0),
	    .type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
	    .entries = entries,
	    .numEntries = n,
	    .payloadStaticSize = static_size,
	    .schemaId = id};
	return nvtxpayload_schema_register(domain, &a);
}

static void register_enum(const void *domain, uint64_t id, size_t size)
{
	static const nvtxPayloadEnum_t e[] = {{"Sum", 0, 0}, {"Max", 2, 0}};
	nvtxPayloadEnumAttr_t a = {
	    .fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
	                 NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID,
	    .entries = e,
	    .numEntries = 2,
	    .sizeOfEnum = size,
	    .schemaId = id};
	assert_int_equal(nvtxpayload_enum_register(domain, &a), id);
}

static int setup(void **state)
{
	(void)state;
	nvtxpayload_reset();
	return 0;
}

static double as_double(uint64_t bits)
{
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

/* NCCL's case: a static schema with offsets, an enum field, a string pointer skipped. */
static void test_static_schema(void **state)
{
	(void)state;
	register_enum(&dom_a, SID(11), sizeof(int));
	assert_int_equal(register_schema(&dom_a, coll_entries, 8, SID(1), sizeof(struct coll)), SID(1));
	struct coll c = {0xfedcba9876543210ull, 1u << 20, -3, 2, "x", 0.25, 1.5f, -7};
	nvtxPayloadData_t d = {SID(1), sizeof c, &c};
	struct nvtxpayload_arg out[WIRE_ARGS_MAX];
	size_t n = nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX);
	assert_int_equal(n, 7);
	static const char *const names[] = {"comm", "bytes", "root", "op", "scale", "ratio", "field 7"};
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i].name->text, names[i]);
	assert_int_equal(out[0].value, 0xfedcba9876543210ull);
	assert_int_equal(out[0].type, NVTXPAYLOAD_UINT);
	assert_int_equal(out[1].value, 1u << 20);
	assert_int_equal((int64_t)out[2].value, -3);
	assert_int_equal(out[2].type, NVTXPAYLOAD_INT);
	assert_int_equal(out[3].value, 2);
	assert_int_equal(out[3].type, NVTXPAYLOAD_ENUM); /* by its name in the enum */
	assert_string_equal(out[3].text->text, "Max");
	assert_null(out[0].text);
	assert_true(as_double(out[4].value) == 0.25);
	assert_int_equal(out[4].type, NVTXPAYLOAD_DOUBLE);
	assert_true(as_double(out[5].value) == 1.5);
	assert_int_equal((int64_t)out[6].value, -7);
	assert_int_equal(nvtxpayload_undecoded(), 0);
	/* A value the enum does not name is a number. */
	c.op = 1;
	assert_int_equal(nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX), 7);
	assert_int_equal(out[3].value, 1);
	assert_int_equal(out[3].type, NVTXPAYLOAD_UINT);
	assert_null(out[3].text);
	/* The size is left to the tool: the schema's is taken. */
	d.size = SIZE_MAX;
	assert_int_equal(nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX), 7);
	/* Schemas belong to their domain. */
	assert_int_equal(nvtxpayload_decode(&dom_b, &d, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_undecoded(), 1);
}

/* No offsets given: natural alignment, as the C compiler lays the struct out. */
static void test_implicit_offsets(void **state)
{
	(void)state;
	struct s {
		uint8_t a;
		uint32_t b;
		uint16_t c;
		uint64_t d;
		int16_t e;
	} v = {200, 0xdeadbeef, 0xabcd, 0x0123456789abcdefull, -2};
	static const nvtxPayloadSchemaEntry_t e[] = {
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT8, "a", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "b", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT16, "c", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "d", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT16, "e", NULL, 0, 0, NULL, NULL},
	};
	uint64_t id = register_schema(&dom_a, e, 5, 0, 0);
	assert_true(id >= NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START);
	assert_true(register_schema(&dom_a, e, 5, 0, 0) != id); /* each dynamic id is new */
	nvtxPayloadData_t d = {id, sizeof v, &v};
	struct nvtxpayload_arg out[WIRE_ARGS_MAX];
	assert_int_equal(nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX), 5);
	assert_int_equal(out[0].value, 200);
	assert_int_equal(out[1].value, 0xdeadbeef);
	assert_int_equal(out[2].value, 0xabcd);
	assert_int_equal(out[3].value, 0x0123456789abcdefull);
	assert_int_equal((int64_t)out[4].value, -2);
	/* A payload shorter than the fields reach: nothing, counted. */
	d.size = offsetof(struct s, e);
	assert_int_equal(nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_undecoded(), 1);
}

/* Unknown ids, NULL pointers, short sizes, too many fields: nothing read, each counted. */
static void test_bad_payloads(void **state)
{
	(void)state;
	register_enum(&dom_a, SID(11), sizeof(int));
	register_schema(&dom_a, coll_entries, 8, SID(1), sizeof(struct coll));
	struct coll c = {1, 2, 3, 0, NULL, 0, 0, 0};
	struct nvtxpayload_arg out[WIRE_ARGS_MAX];
	nvtxPayloadData_t unknown = {SID(2), sizeof c, &c};
	nvtxPayloadData_t null_payload = {SID(1), sizeof c, NULL};
	nvtxPayloadData_t short_payload = {SID(1), 8, &c};
	assert_int_equal(nvtxpayload_decode(&dom_a, &unknown, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_decode(&dom_a, &null_payload, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_decode(&dom_a, &short_payload, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_decode(&dom_a, NULL, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_undecoded(), 4);
	/* Two payloads of one event: the first's fields, then the second's up to the limit. */
	nvtxPayloadData_t two[2] = {{SID(1), sizeof c, &c}, {SID(1), sizeof c, &c}};
	assert_int_equal(nvtxpayload_decode(&dom_a, two, 2, out, WIRE_ARGS_MAX), WIRE_ARGS_MAX);
	assert_int_equal(nvtxpayload_undecoded(), 4 + 14 - WIRE_ARGS_MAX);
	assert_string_equal(out[7].name->text, "comm");
	/* reserved0 left at 0: one payload. */
	assert_int_equal(nvtxpayload_decode(&dom_a, two, 0, out, WIRE_ARGS_MAX), 7);
	/* Unusable attribute blocks register nothing and never crash. */
	assert_int_equal(nvtxpayload_schema_register(&dom_a, NULL), 0);
	nvtxPayloadSchemaAttr_t none = {.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES};
	assert_int_equal(nvtxpayload_schema_register(&dom_a, &none), 0);
	assert_int_equal(nvtxpayload_enum_register(&dom_a, NULL), 0);
}

/* Nested schemas, unions, arrays and entries of unknown types are skipped; fields after them decode
 * when their offset is given, and are skipped when it would have to be computed past them. */
static void test_nested_and_unknown(void **state)
{
	(void)state;
	struct inner {
		uint32_t x, y;
	};
	struct outer {
		uint32_t a;
		struct inner in;
		uint32_t b;
		char name[8];
		uint32_t c;
	} v = {1, {2, 3}, 4, "abc", 5};
	register_schema(&dom_a,
	                (const nvtxPayloadSchemaEntry_t[]){
	                    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "x", NULL, 0, 0, NULL, NULL},
	                    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "y", NULL, 0, 4, NULL, NULL}},
	                2, SID(5), 0);
	const nvtxPayloadSchemaEntry_t e[] = {
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "a", NULL, 0, 0, NULL, NULL},
	    {0, SID(5), "in", NULL, 0, offsetof(struct outer, in), NULL, NULL}, /* nested: skipped */
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "b", NULL, 0, offsetof(struct outer, b), NULL, NULL},
	    {NVTX_PAYLOAD_ENTRY_FLAG_ARRAY_FIXED_SIZE, NVTX_PAYLOAD_ENTRY_TYPE_CHAR, "name", NULL, 8,
	     offsetof(struct outer, name), NULL, NULL},                           /* array: skipped */
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "c", NULL, 0, 0, NULL, NULL},     /* after it, no offset */
	    {0, 999999, "odd", NULL, 0, 0, NULL, NULL},                           /* unknown type */
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT128, "wide", NULL, 0, 4, NULL, NULL}, /* not decoded here */
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "c2", NULL, 0, offsetof(struct outer, c), NULL, NULL},
	};
	register_schema(&dom_a, e, sizeof e / sizeof e[0], SID(6), 0);
	nvtxPayloadData_t d = {SID(6), sizeof v, &v};
	struct nvtxpayload_arg out[WIRE_ARGS_MAX];
	size_t n = nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name->text, "a");
	assert_int_equal(out[0].value, 1);
	assert_string_equal(out[1].name->text, "b");
	assert_int_equal(out[1].value, 4);
	assert_string_equal(out[2].name->text, "c2");
	assert_int_equal(out[2].value, 5);
	/* A union schema is not kept: its payloads count as undecoded. */
	nvtxPayloadSchemaAttr_t u = {.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
	                                          NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
	                                          NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
	                                          NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
	                             .type = NVTX_PAYLOAD_SCHEMA_TYPE_UNION,
	                             .entries = e,
	                             .numEntries = 1,
	                             .schemaId = SID(7)};
	assert_int_equal(nvtxpayload_schema_register(&dom_a, &u), SID(7));
	d.schemaId = SID(7);
	assert_int_equal(nvtxpayload_decode(&dom_a, &d, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_undecoded(), 1);
}

/* A bounded table: schemas past it keep their ids but are not decoded (counted), nothing breaks. */
static void test_table_full(void **state)
{
	(void)state;
	for (uint64_t i = 0; i < NVTXPAYLOAD_SCHEMAS_MAX + 10; i++)
		assert_int_equal(register_schema(&dom_b, coll_entries, 3, SID(100 + i), 0), SID(100 + i));
	/* Registered twice: the first stays. */
	assert_int_equal(register_schema(&dom_b, coll_entries + 1, 1, SID(100), 0), SID(100));
	struct coll c = {7, 8, 9, 0, NULL, 0, 0, 0};
	struct nvtxpayload_arg out[WIRE_ARGS_MAX];
	nvtxPayloadData_t first = {SID(100), sizeof c, &c};
	nvtxPayloadData_t last = {SID(100 + NVTXPAYLOAD_SCHEMAS_MAX - 1), sizeof c, &c};
	nvtxPayloadData_t past = {SID(100 + NVTXPAYLOAD_SCHEMAS_MAX), sizeof c, &c};
	assert_int_equal(nvtxpayload_decode(&dom_b, &first, 1, out, WIRE_ARGS_MAX), 3);
	assert_int_equal(out[0].value, 7);
	assert_int_equal(nvtxpayload_decode(&dom_b, &last, 1, out, WIRE_ARGS_MAX), 3);
	assert_int_equal(nvtxpayload_decode(&dom_b, &past, 1, out, WIRE_ARGS_MAX), 0);
	assert_int_equal(nvtxpayload_undecoded(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_static_schema, setup),
	    cmocka_unit_test_setup(test_implicit_offsets, setup),
	    cmocka_unit_test_setup(test_bad_payloads, setup),
	    cmocka_unit_test_setup(test_nested_and_unknown, setup),
	    cmocka_unit_test_setup(test_table_full, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
