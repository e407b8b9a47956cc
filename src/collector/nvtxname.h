/*
 * NVTX messages that are unique per call (private to the collector): PyTorch's emit_nvtx (and so
 * `--torch`) names each operator's range "aten::addmm, seq = 12, op_id = 345" and, with
 * record_shapes, adds ", sizes = [[32, 256], [256]]" and ", input_op_ids = [(343,0), (0,-1)]".
 * Interned raw, every call would be a new string and the string table would fill within seconds;
 * the range is named by the operator instead.
 */
#ifndef CUSCOPE_COLLECTOR_NVTXNAME_H
#define CUSCOPE_COLLECTOR_NVTXNAME_H

#include <stddef.h>

/*
 * The length of text's name without PyTorch's per-call suffix: text[0..result) is "aten::addmm"
 * for "aten::addmm, seq = 12, op_id = 345". The suffix is taken only when it is exactly
 * torch's (", seq = N", ", op_id = N", ", sizes = [...]", ", input_op_ids = [...]", each at most
 * once, in that order, reaching the end) and leaves a non-empty name; otherwise length. Reads
 * the text backwards from its end, so a message without such a suffix costs a byte or two.
 * The numbers are not kept: a range has no arguments in the store.
 */
size_t nvtxname_op_length(const char *text, size_t length);

#endif
