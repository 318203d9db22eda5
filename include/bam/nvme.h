/* SPDX-License-Identifier: MIT */
/*
 * bam/nvme.h - helpers around the "nvme" back end (real controllers through vfio-pci,
 * docs/BACKENDS.md): the NVMe PCI functions the system has (sysfs), binding one to
 * vfio-pci and back (driver_override, as SPDK's setup.sh does), and the signal-handler
 * stop. Linux only.
 */
#ifndef BAM_NVME_H
#define BAM_NVME_H

#include "bam/defs.h"

BAM_EXTERN_C_BEGIN

/* One NVMe PCI function (class 0x0108xx) as sysfs describes it. */
struct bam_nvme_fn {
	char bdf[16];          /* "0000:01:00.0" */
	uint16_t vendor, device;
	char driver[32];       /* "nvme", "vfio-pci", "" (none) */
	int iommu_group;       /* -1: none (no IOMMU) */
	int numa_node;         /* -1: unknown */
	char namespaces[512];  /* with the kernel's nvme driver: "nvme0n1 512G" etc., ", "-separated */
	int in_use;            /* a namespace is mounted, has partitions, a file system or holders */
	char in_use_why[256];  /* why, when in_use */
};

/* Up to 'max' functions into out[]; returns how many there are (may exceed max), or a
 * negative errno (-ENOENT: no /sys/bus/pci). */
BAM_API int bam_nvme_list(struct bam_nvme_fn *out, int max);

/* Bind function 'bdf' to vfio-pci (bind = 1) or give it back to the kernel's nvme
 * driver (bind = 0). Binding refuses a function whose namespaces are in use (mounted,
 * partitioned, holding a file system or a holder such as dm/md) unless 'force'.
 * Returns 0 or a negative errno with the message in err (errlen bytes): -ENODEV (no
 * such function, or not NVMe), -EBUSY (in use), -EACCES (not root), -EIO. */
BAM_API int bam_nvme_bind(const char *bdf, int bind, int force, char *err, size_t errlen);

/* From a signal handler (async-signal-safe): disable (CC.EN = 0) every controller the
 * nvme back end has open in this process, which deletes their I/O queues and stops
 * their DMA before the process ends. */
BAM_API void bam_nvme_emergency_stop(void);

BAM_EXTERN_C_END

#endif /* BAM_NVME_H */
