/* SPDX-License-Identifier: MIT */
/* What the two benchmarks share (engine.c): messages, the target, the back-end string. */
#ifndef BAM_IOBENCH_ENGINE_H
#define BAM_IOBENCH_ENGINE_H
#include <stddef.h>
#include <stdint.h>
#include "bam/iobench.h"

/* printf into a message of this kind to fn (nothing when fn is NULL) */
void ib_say(bam_iobench_msg_fn fn, void *arg, enum bam_iobench_msg_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* printf into err; returns rc */
int ib_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* BAM_TARGET_AUTO resolved: GPU when the build has CUDA and a GPU is there */
enum bam_target ib_target(enum bam_target t);
/* 1 when the build has CUDA and a usable GPU is there */
int ib_gpu_available(void);
/* bam_backend_sized for 'total' bytes; a string its back end refuses is copied as it is
 * (the check or the open refuses it, with the message). 0, or the error (the size
 * passes 2^64, out too short). */
int ib_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen);
/* bam_backend_info's flags, 0 for a string it refuses */
uint32_t ib_backend_flags(const char *backend);
/* What bam_ctx_open would refuse of the caller's back-end string 'given': 'resolved' (the
 * string the run opens) as bam_backend_check parses it, and GPU media on the CPU target
 * (no_gpu: why, as "this run is on the CPU target"; NULL on the GPU target).
 * 0 or -EINVAL with "--backend=GIVEN: why" in err. */
int ib_precheck(const char *given, const char *resolved, const char *no_gpu, char *err, size_t errlen);
/* bam_ctx_open's failure rc with its message liberr, into err as the header says; rc */
int ib_open_fail(const char *given, int rc, const char *liberr, char *err, size_t errlen);
#endif
