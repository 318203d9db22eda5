/* SPDX-License-Identifier: MIT */
/*
 * Timing profiles of the emulated controller. Each device's figures come from its
 * datasheet and from the BaM paper's measurements (../shared/docs/BAM-PAPER.md,
 * Qureshi et al., ASPLOS '23); the source is given per profile. The model: a command
 * completes at max(arrival + latency, the time a per-device token bucket allows),
 * the bucket's service time per command being max(1/IOPS, bytes/bandwidth).
 */
#include <string.h>
#include "emu.h"

static const struct bam_emu_profile profiles[] = {
	{"unlimited", "bam emulated NVMe (unlimited)", 0, 0, 0, 0, 0, 0,
	 "no limits: the emulator runs as fast as the machine lets it"},
	/* Intel Optane SSD DC P5800X (datasheet, 1.6 TB): 4 KB random read 1.5M IOPS,
	 * 4 KB random write 1.5M IOPS (-> 6.14 GB/s at 4 KB), sequential read 7.2 GB/s,
	 * write 6.2 GB/s. 512 B reads: the paper measured 45.8M IOPS from 10 devices
	 * (4.58M each) and 10.6M write IOPS (1.06M each); latency 11 us (paper, section
	 * "Little's law"). The bandwidth caps are set to the 4 KB random figures so that
	 * 4 KB random reads give the datasheet's 1.5M IOPS. */
	{"optane-p5800x", "bam emulated Intel Optane P5800X", 4.58e6, 1.06e6, 6.144e9, 6.144e9, 11.0, 11.0,
	 "Intel P5800X datasheet (4 KB 1.5M IOPS r/w, 7.2/6.2 GB/s seq); BaM paper: 4.58M 512 B read IOPS per device, 11 us latency"},
	/* Samsung PM1735 (datasheet, 3.2 TB): random read 1.5M IOPS, random write 250K
	 * IOPS, sequential read 8.0 GB/s, write 3.8 GB/s; latency: typical TLC NAND read
	 * ~90 us, write (DRAM-buffered) ~20 us (vendor class figures, not in the paper). */
	{"pm1735", "bam emulated Samsung PM1735", 1.5e6, 2.5e5, 8.0e9, 3.8e9, 90.0, 20.0,
	 "Samsung PM1735 datasheet (1.5M/250K IOPS, 8.0/3.8 GB/s); latency: TLC NAND class estimate"},
	/* Samsung 980 PRO (datasheet, 1 TB): random read 1M IOPS, random write 1M IOPS
	 * (QD32, 16 threads), sequential read 7.0 GB/s, write 5.0 GB/s; latency 324 us as
	 * the paper measured under load (section "Little's law"). */
	{"samsung-980pro", "bam emulated Samsung 980 PRO", 1.0e6, 1.0e6, 7.0e9, 5.0e9, 324.0, 324.0,
	 "Samsung 980 PRO datasheet (1M IOPS, 7.0/5.0 GB/s); BaM paper: 324 us latency"},
};

const struct bam_emu_profile *bam_emu_profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, name))
			return &profiles[i];
	if (!strcmp(name, "optane") || !strcmp(name, "p5800x"))
		return &profiles[1];
	if (!strcmp(name, "980pro") || !strcmp(name, "980-pro"))
		return &profiles[3];
	return NULL;
}

const char *bam_emu_profile_names(void)
{
	return "unlimited, optane-p5800x, pm1735, samsung-980pro";
}

void bam_emu_profile_timing(const struct bam_emu_profile *p, struct emu_timing *t)
{
	memset(t, 0, sizeof(*t));
	t->lat_read_ns = (uint64_t)(p->lat_read_us * 1000.0);
	t->lat_write_ns = (uint64_t)(p->lat_write_us * 1000.0);
	t->ps_per_cmd_read = p->read_iops > 0 ? (uint64_t)(1e12 / p->read_iops) : 0;
	t->ps_per_cmd_write = p->write_iops > 0 ? (uint64_t)(1e12 / p->write_iops) : 0;
	/* ps per byte, kept in 1/1 ps units: 6.144 GB/s = 162.76 ps/byte; the rounding
	 * (0.5%) is below the 10% the profile check allows */
	t->ps_per_byte_read = p->read_bw > 0 ? (uint64_t)(1e12 / p->read_bw + 0.5) : 0;
	t->ps_per_byte_write = p->write_bw > 0 ? (uint64_t)(1e12 / p->write_bw + 0.5) : 0;
}
