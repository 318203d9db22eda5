/* SPDX-License-Identifier: MIT */
/* Internal interface of the emulated controller back end. */
#ifndef BAM_EMU_H
#define BAM_EMU_H

#include "emu_core.h"

/* A timing profile (src/backends/emu/profiles.c; every figure with its source there). */
struct bam_emu_profile {
	const char *name;
	const char *model;          /* Identify Controller MN */
	double read_iops, write_iops;     /* per device, 0 = no cap */
	double read_bw, write_bw;         /* bytes/s, 0 = no cap */
	double lat_read_us, lat_write_us; /* unloaded latency */
	const char *source;
};

const struct bam_emu_profile *bam_emu_profile_find(const char *name);
/* Comma-separated list of profile names, for messages. */
const char *bam_emu_profile_names(void);
void bam_emu_profile_timing(const struct bam_emu_profile *p, struct emu_timing *t);

BAM_EXTERN_C_BEGIN
/* GPU-resident workers (emu_gpu.cu). 'ctrls' are device pointers. The workers run as
 * one persistent kernel on its own non-blocking stream; the call returns once every
 * worker block is resident (so no later application kernel can take the SMs they
 * need), or fails. Their stop word is in GPU memory, set by bam_emu_gpu_stop (and
 * by the pause around device-wide CUDA calls, gpu_rt.c). */
int bam_emu_gpu_start(struct emu_ctrl **ctrls, uint32_t n_ctrl, const uint32_t *nq,
		      uint32_t warps_per_ctrl, void **handle, char *err, size_t errlen);
/* Ask the workers to return and wait for them (bounded). 0 or -ETIMEDOUT/-EIO. */
int bam_emu_gpu_stop(void *handle);
BAM_EXTERN_C_END

#endif
