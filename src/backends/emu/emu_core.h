/* SPDX-License-Identifier: MIT */
/*
 * emu_core.h - what the emulated NVMe controller adds to the shared front end
 * (src/nvmet/nvmet.h: SQE validation, PRP walk, CQE posting), used by its host threads
 * (CPU target) and its GPU-resident workers (emu_gpu.cu):
 *  - the controller: the front end's state, the media (memory the commands move data
 *    to and from), the timing profile and the faults;
 *  - timing: a completion is posted no earlier than max(arrival + latency, the time
 *    a token bucket of the profile's IOPS and bandwidth allows), per controller;
 *  - fault injection: error status on an LBA range or at a rate, added delay, dropped
 *    completions, a controller that stops answering after N commands.
 */
#ifndef BAM_EMU_CORE_H
#define BAM_EMU_CORE_H

#include "../../nvmet/nvmet.h"

#define EMU_MAX_QUEUES NVMET_MAX_QUEUES
#define EMU_MDTS NVMET_MDTS /* 2^8 pages = 1 MiB per command */
#define EMU_POLL_NS 1000 /* default poll_ns= */

struct emu_timing {
	uint64_t lat_read_ns, lat_write_ns;     /* unloaded latency */
	uint64_t ps_per_cmd_read, ps_per_cmd_write;   /* 1e12 / IOPS (0 = no cap) */
	uint64_t ps_per_byte_read, ps_per_byte_write; /* 1e12 / (bytes/s) (0 = no cap) */
};

struct emu_faults {
	uint64_t err_slba, err_elba;  /* commands touching [err_slba, err_elba) fail */
	uint32_t err_rate_ppm;        /* random failures, per million commands */
	uint32_t delay_rate_ppm;      /* commands delayed by delay_ns */
	uint64_t delay_ns;
	uint32_t drop_rate_ppm;       /* completions never posted */
	uint32_t pad;
	uint64_t stop_after;          /* stop answering after this many commands (0 = never) */
	uint64_t seed;
};

/* One emulated controller, in memory its workers reach. */
struct emu_ctrl {
	struct nvmet_ctrl nvmet;    /* namespace, queues, doorbells, counters */
	uint8_t *media;             /* nlba << lba_shift bytes */
	struct emu_timing t;
	struct emu_faults f;
	uint64_t vclock_ps;         /* token bucket: when the device is next free (ps after epoch) */
	uint64_t epoch_ns;          /* time origin of vclock_ps (absolute GPU time in ps would
				     * overflow 64 bits: %globaltimer counts from 1970) */
	uint32_t stop;              /* set by the host: workers return */
	uint32_t poll_ns;           /* GPU workers: longest pause between rounds while idle */
};

/* splitmix64: a counter-based generator, so a fault decision depends only on the
 * seed and the command's identity. */
BAM_HD_INLINE uint64_t emu_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

BAM_HD_INLINE int emu_roll(uint64_t seed, uint64_t id, uint32_t salt, uint32_t ppm)
{
	return ppm && (emu_mix64(seed ^ (id * 0x100000001b3ull) ^ ((uint64_t)salt << 56)) % 1000000u) < ppm;
}

/* Fault injection decided from the command's identity. Returns the status to report
 * (0 = none) and sets *drop / *extra_ns. */
BAM_HD_INLINE uint16_t emu_inject(struct emu_ctrl *c, const struct nvme_sqe *s, uint64_t id,
				  int *drop, uint64_t *extra_ns)
{
	const struct emu_faults *f = &c->f;
	uint16_t st = 0;
	*drop = 0;
	*extra_ns = 0;
	if (s->opc == NVME_CMD_READ || s->opc == NVME_CMD_WRITE) {
		uint64_t slba = nvme_sqe_slba(s), elba = slba + nvme_sqe_nlb(s);
		if (f->err_elba > f->err_slba && slba < f->err_elba && elba > f->err_slba)
			st = s->opc == NVME_CMD_READ ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ)
						     : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT);
	}
	if (!st && emu_roll(f->seed, id, 1, f->err_rate_ppm))
		st = s->opc == NVME_CMD_WRITE ? NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT)
					      : NVME_STATUS(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ);
	if (emu_roll(f->seed, id, 2, f->delay_rate_ppm))
		*extra_ns = f->delay_ns;
	if (emu_roll(f->seed, id, 3, f->drop_rate_ppm))
		*drop = 1;
	if (st || *drop || *extra_ns)
		bam_fetch_add_relaxed_gpu_u64(&c->nvmet.cnt.injected, 1);
	return st;
}

/* Picoseconds since the controller's epoch (set by the first caller). */
BAM_HD_INLINE uint64_t emu_rel_ps(struct emu_ctrl *c, uint64_t now_ns)
{
	uint64_t e = bam_load_relaxed_u64(&c->epoch_ns);
	if (e == 0) {
		uint64_t seen = bam_cas_acq_rel_gpu_u64(&c->epoch_ns, 0, now_ns);
		e = seen ? seen : now_ns;
	}
	return now_ns > e ? (now_ns - e) * 1000u : 0;
}

/* When a command of 'bytes' arriving at 'now_ns' completes under the profile: the
 * token bucket (vclock) advances by the command's service time; the completion is
 * at max(now + latency, the bucket's time). Returns 0 for the unlimited profile. */
BAM_HD_INLINE uint64_t emu_ready_time(struct emu_ctrl *c, int write, uint32_t bytes, uint64_t now_ns)
{
	const struct emu_timing *t = &c->t;
	uint64_t lat = write ? t->lat_write_ns : t->lat_read_ns;
	uint64_t pc = write ? t->ps_per_cmd_write : t->ps_per_cmd_read;
	uint64_t pb = (write ? t->ps_per_byte_write : t->ps_per_byte_read) * bytes;
	uint64_t svc = pc > pb ? pc : pb;
	if (!lat && !svc)
		return 0;
	uint64_t now_ps = emu_rel_ps(c, now_ns), done_ps = now_ps;
	if (svc) {
		uint64_t old = bam_load_relaxed_u64(&c->vclock_ps);
		for (;;) {
			uint64_t start = old > now_ps ? old : now_ps;
			uint64_t seen = bam_cas_acq_rel_gpu_u64(&c->vclock_ps, old, start + svc);
			if (seen == old) {
				done_ps = start + svc;
				break;
			}
			old = seen;
		}
	}
	uint64_t r = done_ps / 1000u + c->epoch_ns;
	return r > now_ns + lat ? r : now_ns + lat;
}

#endif /* BAM_EMU_CORE_H */
