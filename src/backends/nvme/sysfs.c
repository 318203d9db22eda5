/* SPDX-License-Identifier: MIT */
/*
 * sysfs side of the nvme back end (bam/nvme.h): list NVMe functions, bind to vfio-pci
 * and back through driver_override (Documentation/ABI/testing/sysfs-bus-pci), refusing
 * a function whose namespaces hold data that matters unless forced.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bam/nvme.h"

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

static void link_name(const char *path, char *out, size_t len)
{
	char l[PATH_MAX];
	ssize_t n = readlink(path, l, sizeof(l) - 1);
	out[0] = 0;
	if (n > 0) {
		l[n] = 0;
		if (snprintf(out, len, "%s", strrchr(l, '/') ? strrchr(l, '/') + 1 : l) >= (int)len)
			out[0] = 0;
	}
}

static void appendf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/* A file system or partition table signature at the start of block device 'dev'. */
static const char *signature(const char *dev)
{
	static unsigned char b[68 * 1024];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/dev/%s", dev);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = pread(fd, b, sizeof(b), 0);
	close(fd);
	if (n < 4096)
		return NULL;
	if (!memcmp(b + 512, "EFI PART", 8))
		return "a GPT partition table";
	if (n >= 1082 && b[1080] == 0x53 && b[1081] == 0xef)
		return "an ext2/3/4 file system";
	if (!memcmp(b, "XFSB", 4))
		return "an XFS file system";
	if (n >= 0x10048 && !memcmp(b + 0x10040, "_BHRfS_M", 8))
		return "a Btrfs file system";
	if (!memcmp(b, "LUKS\xba\xbe", 6))
		return "a LUKS header";
	if (!memcmp(b + 4086, "SWAPSPACE2", 10))
		return "swap space";
	if (!memcmp(b + 3, "NTFS", 4) || !memcmp(b + 82, "FAT32", 5) || !memcmp(b + 54, "FAT", 3))
		return "a FAT/NTFS file system";
	if (b[510] == 0x55 && b[511] == 0xaa)
		return "an MBR partition table";
	return NULL;
}

static int mounted(const char *dev)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	if (!f)
		return 0;
	char line[1024], want[64];
	int n = snprintf(want, sizeof(want), "/dev/%s", dev);
	int hit = 0;
	while (!hit && fgets(line, sizeof(line), f))
		hit = !strncmp(line, want, (size_t)n) && (line[n] == ' ' || line[n] == 'p');
	fclose(f);
	return hit;
}

/* Namespaces of a function the kernel's nvme driver holds, and whether any is in use. */
static void namespaces(struct bam_nvme_fn *fn)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/nvme", fn->bdf);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "nvme", 4))
			continue;
		char cpath[PATH_MAX];
		if (snprintf(cpath, sizeof(cpath), "%s/%s", path, e->d_name) >= (int)sizeof(cpath))
			continue;
		DIR *cd = opendir(cpath);
		if (!cd)
			continue;
		struct dirent *ne;
		while ((ne = readdir(cd))) {
			/* nvme0n1 (or nvme0c0n1 under multipath: the block device is nvme0n1) */
			if (strncmp(ne->d_name, e->d_name, strlen(e->d_name)) || !strchr(ne->d_name + 4, 'n'))
				continue;
			char blk[300], sz[32] = "", p2[PATH_MAX];
			const char *c = strchr(ne->d_name + 4, 'c');
			if (c && strchr(c, 'n'))
				snprintf(blk, sizeof(blk), "nvme%.*s%s", (int)(c - ne->d_name - 4), ne->d_name + 4, strchr(c, 'n'));
			else
				snprintf(blk, sizeof(blk), "%s", ne->d_name);
			snprintf(p2, sizeof(p2), "/sys/block/%s/size", blk);
			if (read_str(p2, sz, sizeof(sz)) == 0)
				appendf(fn->namespaces, sizeof(fn->namespaces), "%s%s %lluM", fn->namespaces[0] ? ", " : "", blk,
					strtoull(sz, NULL, 10) * 512 >> 20);
			else
				appendf(fn->namespaces, sizeof(fn->namespaces), "%s%s", fn->namespaces[0] ? ", " : "", blk);
			const char *why = NULL;
			char buf[160];
			if (mounted(blk))
				why = "mounted";
			snprintf(p2, sizeof(p2), "/sys/block/%s", blk);
			DIR *bd = opendir(p2);
			if (bd && !why) {
				struct dirent *be;
				while ((be = readdir(bd)))
					if (!strncmp(be->d_name, blk, strlen(blk)) && be->d_name[strlen(blk)] == 'p') {
						why = "partitioned";
						break;
					}
			}
			if (bd)
				closedir(bd);
			snprintf(p2, sizeof(p2), "/sys/block/%s/holders", blk);
			bd = opendir(p2);
			if (bd && !why) {
				struct dirent *be;
				while ((be = readdir(bd)))
					if (be->d_name[0] != '.') {
						why = "held by dm/md";
						break;
					}
			}
			if (bd)
				closedir(bd);
			const char *sig = why ? NULL : signature(blk);
			if (sig) {
				snprintf(buf, sizeof(buf), "holds %s", sig);
				why = buf;
			}
			if (why) {
				fn->in_use = 1;
				appendf(fn->in_use_why, sizeof(fn->in_use_why), "%s%s %s", fn->in_use_why[0] ? "; " : "", blk, why);
			}
		}
		closedir(cd);
	}
	closedir(d);
}

static int describe(const char *bdf, struct bam_nvme_fn *fn)
{
	char path[PATH_MAX], buf[64];
	memset(fn, 0, sizeof(*fn));
	snprintf(fn->bdf, sizeof(fn->bdf), "%s", bdf);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", bdf);
	if (read_str(path, buf, sizeof(buf)))
		return -ENODEV;
	if ((strtoul(buf, NULL, 16) >> 8) != 0x0108)
		return -ENODEV;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", bdf);
	if (!read_str(path, buf, sizeof(buf)))
		fn->vendor = (uint16_t)strtoul(buf, NULL, 16);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", bdf);
	if (!read_str(path, buf, sizeof(buf)))
		fn->device = (uint16_t)strtoul(buf, NULL, 16);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	link_name(path, fn->driver, sizeof(fn->driver));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	link_name(path, buf, sizeof(buf));
	fn->iommu_group = buf[0] ? atoi(buf) : -1;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bdf);
	fn->numa_node = read_str(path, buf, sizeof(buf)) ? -1 : atoi(buf);
	namespaces(fn);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int bam_nvme_list(struct bam_nvme_fn *out, int max)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	if (!d)
		return -ENOENT;
	char *names[1024];
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nn < 1024)
		if (e->d_name[0] != '.')
			names[nn++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)nn, sizeof(*names), cmp_str);
	int n = 0;
	for (int i = 0; i < nn; i++) {
		struct bam_nvme_fn fn;
		if (names[i] && describe(names[i], &fn) == 0) {
			if (n < max)
				out[n] = fn;
			n++;
		}
		free(names[i]);
	}
	return n;
}

int bam_nvme_bind(const char *bdf, int bind, int force, char *err, size_t errlen)
{
	struct bam_nvme_fn fn;
	char path[PATH_MAX];
	if (!bdf || strchr(bdf, '/') || describe(bdf, &fn)) {
		seterr(err, errlen, "%s: no NVMe PCI function of that address (bam nvme list)", bdf ? bdf : "(null)");
		return -ENODEV;
	}
	const char *want = bind ? "vfio-pci" : "nvme";
	if (!strcmp(fn.driver, want))
		return 0;
	if (bind && fn.in_use && !force) {
		seterr(err, errlen, "%s: refusing to take it from the kernel: %s (unmount/wipe it, or --force to lose access)",
		       bdf, fn.in_use_why);
		return -EBUSY;
	}
	if (bind && access("/sys/bus/pci/drivers/vfio-pci", F_OK)) {
		seterr(err, errlen, "vfio-pci is not loaded: modprobe vfio-pci");
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override", bdf);
	int rc = write_str(path, bind ? "vfio-pci" : "\n");
	if (rc) {
		seterr(err, errlen, "%s: %s", path, strerror(-rc));
		return rc == -EACCES || rc == -EPERM ? -EACCES : -EIO;
	}
	if (fn.driver[0]) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind", bdf);
		if ((rc = write_str(path, bdf))) {
			seterr(err, errlen, "%s: %s", path, strerror(-rc));
			return -EIO;
		}
	}
	if ((rc = write_str("/sys/bus/pci/drivers_probe", bdf))) {
		seterr(err, errlen, "/sys/bus/pci/drivers_probe %s: %s", bdf, strerror(-rc));
		return -EIO;
	}
	if (describe(bdf, &fn) || strcmp(fn.driver, want)) {
		seterr(err, errlen, "%s: now bound to '%s', not %s%s", bdf, fn.driver, want,
		       bind ? "" : " (is the nvme module loaded?)");
		return -EIO;
	}
	return 0;
}
