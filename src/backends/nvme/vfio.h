/* SPDX-License-Identifier: MIT */
/*
 * VFIO plumbing of the nvme back end: one container (type1 IOMMU) holding the IOMMU
 * groups of the controllers' PCI functions, each function's BAR0 mapped, bus mastering
 * on, and a DMA arena whose IOVA equals its virtual address (vfio.c says why that is
 * sound and how the arena is placed inside the IOMMU's aperture).
 */
#ifndef BAM_NVME_VFIO_H
#define BAM_NVME_VFIO_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct nvme_vfio_dev {
	char bdf[32];
	int group_fd;
	int group;        /* IOMMU group number */
	int fd;           /* device fd */
	int req_fd;       /* eventfd of VFIO_PCI_REQ_IRQ_INDEX (-1: none) */
	volatile uint32_t *bar0;
	size_t bar0_size;
	int cfg_valid;
	uint64_t cfg_off; /* config region's offset in fd */
};

struct nvme_dma_chunk { /* a free or used range of the arena, in pages */
	uint64_t off, len;
};

struct nvme_vfio {
	int container;
	int n_groups;
	int groups[16];
	int group_fds[16];
	/* DMA arena: [base, base + size) reserved PROT_NONE, IOVA == virtual address */
	uint8_t *base;
	uint64_t size;
	uint64_t aperture_lo, aperture_hi; /* the IOVA range holding the arena (inclusive) */
	pthread_mutex_t lock;
	struct nvme_dma_chunk *free; /* sorted free list */
	uint32_t n_free, cap_free;
	struct nvme_dma_chunk *used; /* live allocations (off, len) */
	uint32_t n_used, cap_used;
	uint64_t mapped_bytes;
	int gpu_register; /* cudaHostRegister each allocation (GPU target) */
};

/* Open the container and type1 IOMMU (err: the reason). dma_size: the arena's size. */
int nvme_vfio_open(struct nvme_vfio *v, uint64_t dma_size, char *err, size_t errlen);
/* Attach the function 'bdf' (its group joins the container), map BAR0, bus master on. */
int nvme_vfio_dev_open(struct nvme_vfio *v, struct nvme_vfio_dev *d, const char *bdf, char *err, size_t errlen);
void nvme_vfio_dev_close(struct nvme_vfio_dev *d);
void nvme_vfio_close(struct nvme_vfio *v);
/* Arena memory mapped for DMA (read and write), zeroed, 4 KiB aligned; NULL if none
 * left or the IOMMU refuses (errno-style code in *rc). */
void *nvme_dma_alloc(struct nvme_vfio *v, uint64_t bytes, int *rc);
/* 0 when p was allocated by nvme_dma_alloc (and is now freed), -ENOENT otherwise. */
int nvme_dma_free(struct nvme_vfio *v, void *p);
/* Whether p lies in the arena. */
int nvme_dma_owns(const struct nvme_vfio *v, const void *p);

#endif
