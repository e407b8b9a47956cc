/*
 * Test target with known truth: NVTX extended payloads the way NCCL sends them, through the real
 * nvtx3 headers. In domain "NCCL": an enum (the reduction op), a static schema for a collective's
 * parameters (with a string pointer the tool must skip) and a dynamic schema with implicit
 * offsets; ranges named by registered strings. Prints "pid P" and "done N"; exits 7.
 *
 * Expected ranges (name, style, args; args = the payload's fields, none when not decodable):
 *   ncclAllReduce   PushPop  comm=0x1000+i bytes=4096<<i root=-i op=Sum/Prod/Max scale=0.5*i  (i = 0, 1, 2)
 *   ncclCommInitRank PushPop newcomm=77 nranks=8 myrank=3 cudaDev=-1  (dynamic schema)
 *   ncclBroadcast   PushPop  none x3: an unregistered schema id, a NULL payload, a short payload
 *   ncclAllReduce   Mark     comm=9 bytes=1 root=0 op=Avg scale=-2.25
 *   ncclGroup       StartEnd comm=5 bytes=6 root=7 op=7 scale=1e+300  (7: a value the enum does not name)
 */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SCHEMA_COLL   (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 1)
#define SCHEMA_UNUSED (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 99)
#define ENUM_REDOP    (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 11)

struct coll_params {
	uint64_t comm;
	size_t bytes;
	int root;
	int op; /* the enum */
	const char *tag;
	double scale;
};

struct init_params {
	uint64_t newcomm;
	int nranks;
	int myrank;
	int cudaDev;
};

static nvtxDomainHandle_t dom;

/* Attributes of a registered-string event with one extended payload. */
static nvtxEventAttributes_t attr_payload(nvtxStringHandle_t name, nvtxPayloadData_t *data)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof a);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = name;
	a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
	a.payload.ullValue = (uint64_t)(uintptr_t)data;
	a.reserved0 = 1;
	return a;
}

int main(void)
{
	printf("pid %d\n", (int)getpid());
	dom = nvtxDomainCreateA("NCCL");

	static const nvtxPayloadEnum_t redops[] = {
	    {"Sum", 0, 0}, {"Prod", 1, 0}, {"Max", 2, 0}, {"Min", 3, 0}, {"Avg", 4, 0}};
	nvtxPayloadEnumAttr_t ea = {
	    .fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
	                 NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID,
	    .entries = redops,
	    .numEntries = sizeof redops / sizeof redops[0],
	    .sizeOfEnum = sizeof(int),
	    .schemaId = ENUM_REDOP};
	nvtxPayloadEnumRegister(dom, &ea);

	static const nvtxPayloadSchemaEntry_t coll_entries[] = {
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "comm", NULL, 0, offsetof(struct coll_params, comm), NULL,
	     NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "bytes", NULL, 0, offsetof(struct coll_params, bytes), NULL,
	     NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "root", NULL, 0, offsetof(struct coll_params, root), NULL, NULL},
	    {0, ENUM_REDOP, "op", NULL, 0, offsetof(struct coll_params, op), NULL, NULL},
	    {NVTX_PAYLOAD_ENTRY_FLAG_POINTER, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "tag", NULL, 0,
	     offsetof(struct coll_params, tag), NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "scale", NULL, 0, offsetof(struct coll_params, scale), NULL,
	     NULL},
	};
	nvtxPayloadSchemaAttr_t sa = {.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
	                              .type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
	                              .entries = coll_entries,
	                              .numEntries = sizeof coll_entries / sizeof coll_entries[0],
	                              .payloadStaticSize = sizeof(struct coll_params),
	                              .schemaId = SCHEMA_COLL};
	nvtxPayloadSchemaRegister(dom, &sa);

	/* Offsets left to the tool (natural alignment), the id chosen by it. */
	static const nvtxPayloadSchemaEntry_t init_entries[] = {
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "newcomm", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "nranks", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "myrank", NULL, 0, 0, NULL, NULL},
	    {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "cudaDev", NULL, 0, 0, NULL, NULL},
	};
	nvtxPayloadSchemaAttr_t ia = {.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
	                                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES,
	                              .type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
	                              .entries = init_entries,
	                              .numEntries = sizeof init_entries / sizeof init_entries[0]};
	uint64_t init_schema = nvtxPayloadSchemaRegister(dom, &ia);

	nvtxStringHandle_t all_reduce = nvtxDomainRegisterStringA(dom, "ncclAllReduce");
	nvtxStringHandle_t init_rank = nvtxDomainRegisterStringA(dom, "ncclCommInitRank");
	nvtxStringHandle_t broadcast = nvtxDomainRegisterStringA(dom, "ncclBroadcast");
	nvtxStringHandle_t group = nvtxDomainRegisterStringA(dom, "ncclGroup");
	long done = 0;

	for (int i = 0; i < 3; i++) {
		struct coll_params p = {0x1000u + (uint64_t)i, (size_t)4096 << i, -i, i, "tag", 0.5 * i};
		nvtxPayloadData_t data = {SCHEMA_COLL, sizeof p, &p};
		nvtxEventAttributes_t a = attr_payload(all_reduce, &data);
		nvtxDomainRangePushEx(dom, &a);
		done += (long)p.bytes;
		nvtxDomainRangePop(dom);
	}

	struct init_params ip = {77, 8, 3, -1};
	nvtxPayloadData_t idata = {init_schema, sizeof ip, &ip};
	nvtxEventAttributes_t ia_ev = attr_payload(init_rank, &idata);
	nvtxDomainRangePushEx(dom, &ia_ev);
	nvtxDomainRangePop(dom);

	/* Not decodable: each is a range without fields, and counted. */
	struct coll_params bad = {1, 2, 3, 0, NULL, 1.0};
	nvtxPayloadData_t unknown = {SCHEMA_UNUSED, sizeof bad, &bad};
	nvtxPayloadData_t null_payload = {SCHEMA_COLL, sizeof bad, NULL};
	nvtxPayloadData_t short_payload = {SCHEMA_COLL, 8, &bad};
	nvtxPayloadData_t *bads[] = {&unknown, &null_payload, &short_payload};
	for (int i = 0; i < 3; i++) {
		nvtxEventAttributes_t a = attr_payload(broadcast, bads[i]);
		nvtxDomainRangePushEx(dom, &a);
		nvtxDomainRangePop(dom);
	}

	struct coll_params mp = {9, 1, 0, 4, NULL, -2.25};
	nvtxPayloadData_t mdata = {SCHEMA_COLL, sizeof mp, &mp};
	nvtxEventAttributes_t ma = attr_payload(all_reduce, &mdata);
	nvtxDomainMarkEx(dom, &ma);

	struct coll_params gp = {5, 6, 7, 7, NULL, 1e300};
	nvtxPayloadData_t gdata = {SCHEMA_COLL, sizeof gp, &gp};
	nvtxEventAttributes_t ga = attr_payload(group, &gdata);
	nvtxRangeId_t id = nvtxDomainRangeStartEx(dom, &ga);
	usleep(1000);
	nvtxDomainRangeEnd(dom, id);

	printf("done %ld\n", done);
	return 7;
}
