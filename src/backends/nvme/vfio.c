/* SPDX-License-Identifier: MIT */
/*
 * VFIO for the nvme back end (Linux Documentation/driver-api/vfio.rst): container,
 * type1 IOMMU, groups, the device fd, BAR0 by mmap, PCI command register through the
 * config region, and the DMA arena.
 *
 * Address translation: the device-side code (bam/dev.h, cache_slots.h) puts a buffer's
 * pointer into PRP entries as they are. So every byte a controller reaches by DMA lives
 * in one arena whose IOVA is its own virtual address (VFIO_IOMMU_MAP_DMA with
 * iova == vaddr): the pointer is the DMA address and no translation runs anywhere.
 * That holds only if the arena's virtual addresses are inside the IOMMU's aperture
 * (VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE: e.g. 39 bits on an emulated intel-iommu,
 * with the MSI window 0xfee00000-0xfeefffff carved out), while user space's own
 * mappings sit near 2^47. So the arena is placed, not found: its whole size is
 * reserved (PROT_NONE, no memory) with MAP_FIXED_NOREPLACE at the first free address
 * of a usable IOVA range at or above 4 GiB, and our allocator (first fit over a free
 * list of pages) hands out pieces of it, each mapped read/write (fresh zero pages) and
 * then VFIO_IOMMU_MAP_DMA'd (which pins it) when allocated, unmapped and returned to
 * PROT_NONE when freed. The kernel can never place another mapping inside the arena,
 * so an IOVA is never handed out twice. Without an aperture capability (kernels
 * before 5.4) the arena is placed below 2^39, which any IOMMU covers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef BAM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "vfio.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PG 4096ull

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The usable IOVA ranges (inclusive); 0 ranges: the kernel gives no capability. */
static int iova_ranges(int container, uint64_t (*r)[2], int max)
{
	struct vfio_iommu_type1_info probe = {.argsz = sizeof(probe)};
	if (ioctl(container, VFIO_IOMMU_GET_INFO, &probe))
		return -errno;
	if (!(probe.flags & VFIO_IOMMU_INFO_CAPS) || probe.argsz <= sizeof(probe))
		return 0;
	struct vfio_iommu_type1_info *info = calloc(1, probe.argsz);
	if (!info)
		return -ENOMEM;
	info->argsz = probe.argsz;
	int n = 0;
	if (ioctl(container, VFIO_IOMMU_GET_INFO, info) == 0 && info->cap_offset) {
		uint32_t off = info->cap_offset;
		while (off && off + sizeof(struct vfio_info_cap_header) <= info->argsz) {
			struct vfio_info_cap_header *h = (void *)((char *)info + off);
			if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
				struct vfio_iommu_type1_info_cap_iova_range *cr = (void *)h;
				for (uint32_t i = 0; i < cr->nr_iovas && n < max; i++) {
					r[n][0] = cr->iova_ranges[i].start;
					r[n][1] = cr->iova_ranges[i].end;
					n++;
				}
			}
			off = h->next;
		}
	}
	free(info);
	return n;
}

/* Reserve the arena inside one usable range, at or above 4 GiB. */
static int place_arena(struct nvme_vfio *v, uint64_t (*r)[2], int n, char *err, size_t errlen)
{
	uint64_t fallback[1][2] = {{0, (1ull << 39) - 1}};
	if (n == 0) {
		r = fallback;
		n = 1;
	}
	const uint64_t step = 1ull << 30;
	for (int i = 0; i < n; i++) {
		uint64_t lo = r[i][0] < (4ull << 30) ? (4ull << 30) : (r[i][0] + step - 1) / step * step;
		uint64_t hi = r[i][1] > (1ull << 47) - 1 ? (1ull << 47) - 1 : r[i][1];
		for (uint64_t a = lo; a < hi && hi - a + 1 >= v->size; a += step) {
			void *p = mmap((void *)(uintptr_t)a, v->size, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if (p != (void *)(uintptr_t)a) { /* a kernel without MAP_FIXED_NOREPLACE */
				munmap(p, v->size);
				continue;
			}
			v->base = p;
			v->aperture_lo = r[i][0];
			v->aperture_hi = r[i][1];
			return 0;
		}
	}
	seterr(err, errlen,
	       "nvme: no room for a %llu MiB DMA arena at an address the IOMMU accepts (%d IOVA range(s); dma= smaller?)",
	       (unsigned long long)(v->size >> 20), n);
	return -ENOMEM;
}

int nvme_vfio_open(struct nvme_vfio *v, uint64_t dma_size, char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->container = -1;
	pthread_mutex_init(&v->lock, NULL);
	v->size = (dma_size + PG - 1) & ~(PG - 1);
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0) {
		int e = errno;
		seterr(err, errlen, "nvme: /dev/vfio/vfio: %s (load vfio-pci: modprobe vfio-pci)", strerror(e));
		return -e;
	}
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION) {
		seterr(err, errlen, "nvme: VFIO API version mismatch");
		return -ENOSYS;
	}
	if (ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1) {
		seterr(err, errlen, "nvme: the kernel's VFIO has no type1v2 IOMMU (is the IOMMU on? intel_iommu=on / amd_iommu)");
		return -ENOSYS;
	}
	return 0;
}

static int cfg_rw(struct nvme_vfio_dev *d, uint32_t off, void *buf, size_t len, int write)
{
	ssize_t r = write ? pwrite(d->fd, buf, len, (off_t)(d->cfg_off + off)) : pread(d->fd, buf, len, (off_t)(d->cfg_off + off));
	return r == (ssize_t)len ? 0 : -EIO;
}

int nvme_vfio_dev_open(struct nvme_vfio *v, struct nvme_vfio_dev *d, const char *bdf, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->fd = d->group_fd = d->req_fd = -1;
	snprintf(d->bdf, sizeof(d->bdf), "%s", bdf);
	char path[PATH_MAX], link[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
	if (access(path, F_OK)) {
		seterr(err, errlen, "nvme: %s: no such PCI function (see bam nvme list)", bdf);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	const char *drv = strrchr(link, '/') ? strrchr(link, '/') + 1 : "none";
	if (n <= 0 || strcmp(drv, "vfio-pci")) {
		seterr(err, errlen, "nvme: %s is bound to %s, not vfio-pci (bam nvme bind %s)", bdf, n > 0 ? drv : "no driver", bdf);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0) {
		seterr(err, errlen, "nvme: %s has no IOMMU group (no IOMMU: enable it in firmware and with intel_iommu=on)", bdf);
		return -ENODEV;
	}
	link[n] = 0;
	d->group = atoi(strrchr(link, '/') + 1);
	int gi;
	for (gi = 0; gi < v->n_groups; gi++)
		if (v->groups[gi] == d->group)
			break;
	if (gi == v->n_groups) {
		if (v->n_groups == 16) {
			seterr(err, errlen, "nvme: more than 16 IOMMU groups");
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "/dev/vfio/%d", d->group);
		int gfd = open(path, O_RDWR | O_CLOEXEC);
		if (gfd < 0) {
			int e = errno;
			seterr(err, errlen, "nvme: %s: %s%s", path, strerror(e),
			       e == EBUSY ? " (another process holds the device)" : e == EACCES ? " (run as root or chown the group)" : "");
			return -e;
		}
		struct vfio_group_status st = {.argsz = sizeof(st)};
		if (ioctl(gfd, VFIO_GROUP_GET_STATUS, &st) || !(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
			seterr(err, errlen, "nvme: IOMMU group %d is not viable: bind every function in it to vfio-pci", d->group);
			close(gfd);
			return -EBUSY;
		}
		if (ioctl(gfd, VFIO_GROUP_SET_CONTAINER, &v->container)) {
			int e = errno;
			seterr(err, errlen, "nvme: IOMMU group %d: VFIO_GROUP_SET_CONTAINER: %s", d->group, strerror(e));
			close(gfd);
			return -e;
		}
		if (v->n_groups == 0) {
			if (ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
				int e = errno;
				seterr(err, errlen, "nvme: VFIO_SET_IOMMU(type1v2): %s", strerror(e));
				close(gfd);
				return -e;
			}
			uint64_t r[32][2];
			int nr = iova_ranges(v->container, r, 32);
			if (nr < 0)
				nr = 0;
			int rc = place_arena(v, r, nr, err, errlen);
			if (rc) {
				close(gfd);
				return rc;
			}
			v->free = calloc(16, sizeof(*v->free));
			v->used = calloc(16, sizeof(*v->used));
			if (!v->free || !v->used)
				return -ENOMEM;
			v->cap_free = v->cap_used = 16;
			v->free[0].off = 0;
			v->free[0].len = v->size / PG;
			v->n_free = 1;
		}
		v->groups[v->n_groups] = d->group;
		v->group_fds[v->n_groups++] = gfd;
		gi = v->n_groups - 1;
	}
	d->fd = ioctl(v->group_fds[gi], VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (d->fd < 0) {
		int e = errno;
		seterr(err, errlen, "nvme: %s: VFIO_GROUP_GET_DEVICE_FD: %s", bdf, strerror(e));
		return -e;
	}
	struct vfio_region_info ri = {.argsz = sizeof(ri), .index = VFIO_PCI_CONFIG_REGION_INDEX};
	if (ioctl(d->fd, VFIO_DEVICE_GET_REGION_INFO, &ri) == 0) {
		d->cfg_off = ri.offset;
		d->cfg_valid = 1;
	}
	memset(&ri, 0, sizeof(ri));
	ri.argsz = sizeof(ri);
	ri.index = VFIO_PCI_BAR0_REGION_INDEX;
	if (ioctl(d->fd, VFIO_DEVICE_GET_REGION_INFO, &ri) || !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP) || ri.size < 0x2000) {
		seterr(err, errlen, "nvme: %s: BAR0 cannot be mapped (size %llu)", bdf, (unsigned long long)ri.size);
		return -ENODEV;
	}
	void *bar = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)ri.offset);
	if (bar == MAP_FAILED) {
		int e = errno;
		seterr(err, errlen, "nvme: %s: mmap BAR0: %s", bdf, strerror(e));
		return -e;
	}
	d->bar0 = bar;
	d->bar0_size = ri.size;
	/* PCI command: memory space + bus master (vfio-pci leaves bus mastering off) */
	uint16_t cmd = 0;
	if (!d->cfg_valid || cfg_rw(d, 4, &cmd, 2, 0)) {
		seterr(err, errlen, "nvme: %s: cannot read the PCI command register", bdf);
		return -EIO;
	}
	cmd |= 0x6;
	cmd &= (uint16_t)~0x400; /* INTx disabled: polled */
	if (cfg_rw(d, 4, &cmd, 2, 1)) {
		seterr(err, errlen, "nvme: %s: cannot enable bus mastering", bdf);
		return -EIO;
	}
	/* The kernel's request to give the device back (hot removal): an eventfd. */
	struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = VFIO_PCI_REQ_IRQ_INDEX};
	if (ioctl(d->fd, VFIO_DEVICE_GET_IRQ_INFO, &ii) == 0 && ii.count > 0) {
		int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (efd >= 0) {
			char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
			struct vfio_irq_set *is = (void *)buf;
			is->argsz = sizeof(buf);
			is->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
			is->index = VFIO_PCI_REQ_IRQ_INDEX;
			is->start = 0;
			is->count = 1;
			memcpy(is->data, &efd, sizeof(efd));
			if (ioctl(d->fd, VFIO_DEVICE_SET_IRQS, is) == 0)
				d->req_fd = efd;
			else
				close(efd);
		}
	}
	return 0;
}

void nvme_vfio_dev_close(struct nvme_vfio_dev *d)
{
	if (d->fd >= 0 && d->cfg_valid) {
		uint16_t cmd = 0;
		if (cfg_rw(d, 4, &cmd, 2, 0) == 0) {
			cmd &= (uint16_t)~0x4; /* bus master off */
			cfg_rw(d, 4, &cmd, 2, 1);
		}
	}
	if (d->bar0)
		munmap((void *)(uintptr_t)d->bar0, d->bar0_size);
	d->bar0 = NULL;
	if (d->req_fd >= 0)
		close(d->req_fd);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = d->req_fd = -1;
}

static int chunk_insert(struct nvme_dma_chunk **a, uint32_t *n, uint32_t *cap, uint32_t at, struct nvme_dma_chunk c)
{
	if (*n == *cap) {
		struct nvme_dma_chunk *b = realloc(*a, (size_t)*cap * 2 * sizeof(**a));
		if (!b)
			return -ENOMEM;
		*a = b;
		*cap *= 2;
	}
	memmove(&(*a)[at + 1], &(*a)[at], (size_t)(*n - at) * sizeof(**a));
	(*a)[at] = c;
	(*n)++;
	return 0;
}

static void free_range(struct nvme_vfio *v, uint64_t off, uint64_t len)
{
	uint32_t i = 0;
	while (i < v->n_free && v->free[i].off < off)
		i++;
	/* merge with the neighbours */
	if (i > 0 && v->free[i - 1].off + v->free[i - 1].len == off) {
		v->free[i - 1].len += len;
		if (i < v->n_free && v->free[i - 1].off + v->free[i - 1].len == v->free[i].off) {
			v->free[i - 1].len += v->free[i].len;
			memmove(&v->free[i], &v->free[i + 1], (size_t)(v->n_free - i - 1) * sizeof(*v->free));
			v->n_free--;
		}
		return;
	}
	if (i < v->n_free && off + len == v->free[i].off) {
		v->free[i].off = off;
		v->free[i].len += len;
		return;
	}
	struct nvme_dma_chunk c = {off, len};
	if (chunk_insert(&v->free, &v->n_free, &v->cap_free, i, c))
		fprintf(stderr, "nvme: out of memory returning %llu pages to the DMA arena (leaked)\n", (unsigned long long)len);
}

void *nvme_dma_alloc(struct nvme_vfio *v, uint64_t bytes, int *rc)
{
	uint64_t pages = (bytes + PG - 1) / PG;
	if (!pages)
		pages = 1;
	*rc = 0;
	pthread_mutex_lock(&v->lock);
	uint32_t i;
	for (i = 0; i < v->n_free; i++)
		if (v->free[i].len >= pages)
			break;
	if (i == v->n_free || !v->base) {
		pthread_mutex_unlock(&v->lock);
		*rc = -ENOMEM;
		return NULL;
	}
	uint64_t off = v->free[i].off;
	v->free[i].off += pages;
	v->free[i].len -= pages;
	if (!v->free[i].len) {
		memmove(&v->free[i], &v->free[i + 1], (size_t)(v->n_free - i - 1) * sizeof(*v->free));
		v->n_free--;
	}
	uint8_t *p = v->base + off * PG;
	uint64_t len = pages * PG;
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		*rc = -errno;
		free_range(v, off, pages);
		pthread_mutex_unlock(&v->lock);
		return NULL;
	}
	struct vfio_iommu_type1_dma_map m = {
		.argsz = sizeof(m),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uint64_t)(uintptr_t)p,
		.iova = (uint64_t)(uintptr_t)p, /* IOVA == virtual address (see the top) */
		.size = len,
	};
	if (ioctl(v->container, VFIO_IOMMU_MAP_DMA, &m)) {
		*rc = -errno;
		mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		free_range(v, off, pages);
		pthread_mutex_unlock(&v->lock);
		return NULL;
	}
#ifdef BAM_HAVE_CUDA
	if (v->gpu_register) {
		/* pinned already (VFIO); registered so that GPU threads reach it at the same
		 * address (unified addressing; checked at the open) */
		if (cudaHostRegister(p, len, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess) {
			struct vfio_iommu_type1_dma_unmap um = {.argsz = sizeof(um), .iova = m.iova, .size = len};
			ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &um);
			mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			free_range(v, off, pages);
			pthread_mutex_unlock(&v->lock);
			*rc = -ENOMEM;
			return NULL;
		}
	}
#endif
	uint32_t j = 0;
	while (j < v->n_used && v->used[j].off < off)
		j++;
	struct nvme_dma_chunk c = {off, pages};
	if (chunk_insert(&v->used, &v->n_used, &v->cap_used, j, c)) {
		pthread_mutex_unlock(&v->lock);
		nvme_dma_free(v, p); /* not recorded: undo by hand */
		*rc = -ENOMEM;
		return NULL;
	}
	v->mapped_bytes += len;
	pthread_mutex_unlock(&v->lock);
	return p;
}

int nvme_dma_owns(const struct nvme_vfio *v, const void *p)
{
	return v->base && (const uint8_t *)p >= v->base && (const uint8_t *)p < v->base + v->size;
}

int nvme_dma_free(struct nvme_vfio *v, void *p)
{
	if (!nvme_dma_owns(v, p))
		return -ENOENT;
	uint64_t off = (uint64_t)((uint8_t *)p - v->base) / PG;
	pthread_mutex_lock(&v->lock);
	uint32_t j;
	for (j = 0; j < v->n_used; j++)
		if (v->used[j].off == off)
			break;
	if (j == v->n_used) {
		pthread_mutex_unlock(&v->lock);
		fprintf(stderr, "nvme: free of %p: not an allocation of the DMA arena\n", p);
		return 0;
	}
	uint64_t pages = v->used[j].len, len = pages * PG;
	memmove(&v->used[j], &v->used[j + 1], (size_t)(v->n_used - j - 1) * sizeof(*v->used));
	v->n_used--;
#ifdef BAM_HAVE_CUDA
	if (v->gpu_register)
		cudaHostUnregister(p);
#endif
	struct vfio_iommu_type1_dma_unmap um = {.argsz = sizeof(um), .iova = (uint64_t)(uintptr_t)p, .size = len};
	ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &um);
	mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	v->mapped_bytes -= len;
	free_range(v, off, pages);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

void nvme_vfio_close(struct nvme_vfio *v)
{
	while (v->n_used)
		nvme_dma_free(v, v->base + v->used[0].off * PG);
	if (v->base)
		munmap(v->base, v->size);
	v->base = NULL;
	for (int i = 0; i < v->n_groups; i++) {
		ioctl(v->group_fds[i], VFIO_GROUP_UNSET_CONTAINER);
		close(v->group_fds[i]);
	}
	v->n_groups = 0;
	if (v->container >= 0)
		close(v->container);
	v->container = -1;
	free(v->free);
	free(v->used);
	v->free = v->used = NULL;
	pthread_mutex_destroy(&v->lock);
}
