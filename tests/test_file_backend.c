/* SPDX-License-Identifier: MIT */
/*
 * The "file" back end on real files (a temporary directory under /tmp), CPU target:
 * what it reads equals the file's bytes (direct I/O, buffered I/O, and the GPU
 * target's staged data path run on the host with stage=1); writes reach the file
 * after a flush; out-of-range commands get LBA Out of Range; a kernel I/O error
 * becomes a media error status and -EIO at the array API; a file that shrinks under
 * the namespace fails reads past its end with Unrecovered Read Error (holes read
 * zeros); character devices and FIFOs are refused at open (emu's media file too);
 * three files striped under one array hold each line where the layout says.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "bam/bam.h"
#include "bam/cache.h"
#include "bam/dev.h"
#include "backends/file/file_core.h"

#define ST(sct, sc) NVME_STATUS(sct, sc)

static char dir[64];

/* the byte at offset o of test file k */
static uint8_t pat(uint32_t k, uint64_t o)
{
	uint64_t x = (o + 1) * 0x9e3779b97f4a7c15ull + k * 0x632be59bd9b4e019ull;
	return (uint8_t)(x >> 41);
}

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* create 'name' with 'bytes' of pattern k */
static void make_file(const char *name, uint32_t k, uint64_t bytes)
{
	char p[128];
	path_of(p, sizeof(p), name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	uint8_t *b = malloc(bytes);
	for (uint64_t o = 0; o < bytes; o++)
		b[o] = pat(k, o);
	assert_int_equal(pwrite(fd, b, bytes, 0), (ssize_t)bytes);
	assert_int_equal(fsync(fd), 0);
	free(b);
	close(fd);
}

static void read_file(const char *name, uint64_t off, void *buf, size_t len)
{
	char p[128];
	path_of(p, sizeof(p), name);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static struct bam_ctx *open_ctx(const char *fmt, ...)
{
	char spec[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(spec, sizeof(spec), fmt, ap);
	va_end(ap);
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 4, .queue_depth = 32,
				 .timeout_ns = 60000000000ull}; /* correctness tests: a loaded 2-core machine with O_DIRECT can stall for seconds */
	struct bam_ctx *ctx = NULL;
	char err[512];
	int rc = bam_ctx_open(spec, &o, &ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "open %s: %s\n", spec, err);
	assert_int_equal(rc, 0);
	return ctx;
}

static uint8_t *page_buf(size_t bytes)
{
	uint8_t *p = aligned_alloc(4096, BAM_ALIGN_UP(bytes, 4096));
	memset(p, 0xee, bytes);
	return p;
}

/* one I/O of nlb LBAs into/from buf (PRP list built when needed) */
static int io(struct bam_ctx *ctx, uint32_t c, uint8_t opc, uint64_t slba, uint32_t nlb, uint8_t *buf,
	      uint16_t *st)
{
	struct bam_dev *d = bam_ctx_dev(ctx);
	uint32_t shift = d->ctrl[c].lba_shift;
	uint64_t len = (uint64_t)nlb << shift;
	uint64_t *list = NULL;
	if (bam_prp_list_entries((uintptr_t)buf, len) > 1) {
		list = (uint64_t *)page_buf(bam_prp_list_bytes((uintptr_t)buf, len));
		bam_prp_list_fill(list, (uintptr_t)list, (uintptr_t)buf, len);
	}
	int rc = bam_dev_io(d, c, slba, opc, slba, nlb, (uintptr_t)buf, (uintptr_t)list, st);
	free(list);
	if (rc == -ETIMEDOUT) {
		/* not expected: leave the queues' and service threads' state in the log */
		fprintf(stderr, "io: controller %u opcode %u SLBA %llu timed out; back-end state:\n", c, opc,
			(unsigned long long)slba);
		bam_ctx_dump(ctx, stderr);
	}
	return rc;
}

static void expect_file_bytes(uint32_t k, uint64_t off, const uint8_t *got, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != pat(k, off + i)) {
			fprintf(stderr, "byte %zu (file offset %llu): got %02x, want %02x\n", i,
				(unsigned long long)(off + i), got[i], pat(k, off + i));
			fail();
		}
}

/* ---- errno -> NVMe status --------------------------------------------------------- */

static void test_errno_status(void **state)
{
	(void)state;
	assert_int_equal(bam_file_errno_status(NVME_CMD_READ, EIO), ST(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, EIO), ST(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT));
	assert_int_equal(bam_file_errno_status(NVME_CMD_FLUSH, EIO), ST(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, ENOSPC), ST(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, EDQUOT), ST(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, EROFS), ST(NVME_SCT_MEDIA, NVME_SC_ACCESS_DENIED));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, EBADF), ST(NVME_SCT_MEDIA, NVME_SC_ACCESS_DENIED));
	assert_int_equal(bam_file_errno_status(NVME_CMD_READ, EBADF), ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR));
	assert_int_equal(bam_file_errno_status(NVME_CMD_READ, EINVAL), ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR));
	assert_int_equal(bam_file_errno_status(NVME_CMD_WRITE, EFAULT), ST(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR));
	assert_string_equal(nvme_status_name(bam_file_errno_status(NVME_CMD_READ, EIO)), "Unrecovered Read Error");
}

/* ---- reads equal the file --------------------------------------------------------------- */

static const char *const modes[] = {"direct=1", "direct=0", "stage=1"};

struct rand_job {
	struct bam_ctx *ctx;
	uint32_t k;
	uint64_t nlba;
	int bad;
};

/* many threads, random lengths and offsets: completions arrive out of order */
static void rand_reads(void *arg, uint64_t tid)
{
	struct rand_job *j = arg;
	uint8_t *b = page_buf(64 << 10);
	uint64_t r = tid * 0x9e3779b97f4a7c15ull + 5;
	for (int n = 0; n < 100; n++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		uint32_t nlb = 1 + (uint32_t)(r % 128); /* up to 64 KiB of 512 B LBAs */
		uint64_t slba = (r >> 20) % (j->nlba - nlb);
		uint16_t st;
		if (io(j->ctx, 0, NVME_CMD_READ, slba, nlb, b, &st) || st) {
			__atomic_fetch_add(&j->bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		for (uint32_t i = 0; i < nlb * 512u; i++)
			if (b[i] != pat(j->k, slba * 512 + i)) {
				__atomic_fetch_add(&j->bad, 1, __ATOMIC_RELAXED);
				break;
			}
	}
	free(b);
}

static void test_read_matches_file(void **state)
{
	(void)state;
	make_file("r.dat", 1, 1 << 20);
	for (unsigned m = 0; m < 3; m++) {
		char p[128];
		path_of(p, sizeof(p), "r.dat");
		struct bam_ctx *ctx = open_ctx("file:%s,%s", p, modes[m]);
		const char *desc = bam_ctx_backend_desc(ctx);
		assert_non_null(strstr(desc, m == 1 ? "direct=0" : "direct=1"));
		struct bam_ns_info ns;
		assert_int_equal(bam_ctx_ns_info(ctx, 0, &ns), 0);
		assert_int_equal(ns.lba_size, 512); /* ext4/tmpfs: 512 B direct-I/O alignment */
		assert_int_equal(ns.nlba, 2048);
		uint8_t *b = page_buf((1 << 20) + 4096);
		uint16_t st;

		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 3, 1, b, &st), 0); /* PRP1 only */
		assert_int_equal(st, 0);
		expect_file_bytes(1, 3 * 512, b, 512);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 17, 16, b, &st), 0); /* PRP1 + PRP2 */
		assert_int_equal(st, 0);
		expect_file_bytes(1, 17 * 512, b, 8192);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 100, 128, b, &st), 0); /* PRP list */
		assert_int_equal(st, 0);
		expect_file_bytes(1, 100 * 512, b, 65536);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 0, 2048, b, &st), 0); /* 1 MiB: MDTS */
		assert_int_equal(st, 0);
		expect_file_bytes(1, 0, b, 1 << 20);
		/* a PRP1 with a dword offset: not direct-I/O aligned, bounced */
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 40, 8, b + 4, &st), 0);
		assert_int_equal(st, 0);
		expect_file_bytes(1, 40 * 512, b + 4, 4096);
		/* a PRP list whose first page holds only the chain entry (Base 4.3.1) */
		uint64_t *two = (uint64_t *)page_buf(8192);
		two[511] = (uintptr_t)&two[512];
		bam_prp_list_fill(&two[512], (uintptr_t)&two[512], (uintptr_t)b, 65536);
		assert_int_equal(bam_dev_io(bam_ctx_dev(ctx), 0, 0, NVME_CMD_READ, 300, 128, (uintptr_t)b,
					    (uintptr_t)&two[511], &st), 0);
		assert_int_equal(st, 0);
		expect_file_bytes(1, 300 * 512, b, 65536);
		free(two);

		struct rand_job j = {.ctx = ctx, .k = 1, .nlba = ns.nlba};
		assert_int_equal(bam_cpu_launch(8, 8, rand_reads, &j), 0);
		assert_int_equal(j.bad, 0);

		struct bam_ctrl_stats cs;
		assert_int_equal(bam_ctx_ctrl_stats(ctx, 0, &cs), 0);
		assert_int_equal(cs.reads, 6 + 800);
		assert_int_equal(cs.errors, 0);
		assert_int_equal(cs.qp.timeouts, 0);
		free(b);
		bam_ctx_close(ctx);
	}
}

/* ---- writes, flush, reread ------------------------------------------------------------ */

static void test_write_flush_reread(void **state)
{
	(void)state;
	for (unsigned m = 0; m < 3; m++) {
		make_file("w.dat", 2, 1 << 20);
		char p[128];
		path_of(p, sizeof(p), "w.dat");
		struct bam_ctx *ctx = open_ctx("file:%s,%s", p, modes[m]);
		uint8_t *src = page_buf(65536 + 8), *dst = page_buf(65536 + 8);
		for (uint32_t i = 0; i < 65536 + 8; i++)
			src[i] = (uint8_t)(i * 13 + m);
		uint16_t st;
		assert_int_equal(io(ctx, 0, NVME_CMD_WRITE, 200, 128, src, &st), 0); /* PRP list */
		assert_int_equal(st, 0);
		assert_int_equal(io(ctx, 0, NVME_CMD_WRITE, 8, 8, src + 4, &st), 0); /* bounced */
		assert_int_equal(st, 0);
		assert_int_equal(io(ctx, 0, NVME_CMD_FLUSH, 0, 1, NULL, &st), 0);
		assert_int_equal(st, 0);
		/* through the back end */
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 200, 128, dst, &st), 0);
		assert_int_equal(st, 0);
		assert_memory_equal(dst, src, 65536);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 8, 8, dst + 4, &st), 0);
		assert_int_equal(st, 0);
		assert_memory_equal(dst + 4, src + 4, 4096);
		/* on the file itself, and its neighbours untouched */
		uint8_t *f = page_buf(65536);
		read_file("w.dat", 200 * 512, f, 65536);
		assert_memory_equal(f, src, 65536);
		read_file("w.dat", 8 * 512, f, 4096);
		assert_memory_equal(f, src + 4, 4096);
		read_file("w.dat", 0, f, 4096);
		expect_file_bytes(2, 0, f, 4096);
		read_file("w.dat", 328 * 512, f, 512);
		expect_file_bytes(2, 328 * 512, f, 512);

		struct bam_ctrl_stats cs;
		bam_ctx_ctrl_stats(ctx, 0, &cs);
		assert_int_equal(cs.writes, 2);
		assert_int_equal(cs.flushes, 1);
		assert_int_equal(cs.bytes_written, 65536 + 4096);
		assert_int_equal(cs.errors, 0);
		free(src);
		free(dst);
		free(f);
		bam_ctx_close(ctx);
	}
}

/* ---- NVMe statuses ------------------------------------------------------------------------ */

static void test_out_of_range(void **state)
{
	(void)state;
	make_file("o.dat", 3, 1 << 20); /* 2048 LBAs */
	char p[128];
	path_of(p, sizeof(p), "o.dat");
	struct bam_ctx *ctx = open_ctx("file:%s", p);
	uint8_t *b = page_buf(8192);
	uint16_t st;
	assert_int_equal(io(ctx, 0, NVME_CMD_READ, 2047, 2, b, &st), 0); /* last LBA + 1 */
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE));
	assert_string_equal(nvme_status_name(st), "LBA Out of Range");
	assert_int_equal(io(ctx, 0, NVME_CMD_WRITE, 1ull << 40, 1, b, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE));
	assert_int_equal(io(ctx, 0, NVME_CMD_READ, 2047, 1, b, &st), 0); /* the last LBA is fine */
	assert_int_equal(st, 0);
	expect_file_bytes(3, 2047 * 512, b, 512);
	/* the other nvmet_validate checks apply too */
	struct nvme_sqe s;
	bam_sqe_rw(&s, NVME_CMD_READ, 2, 0, 1, 9, (uintptr_t)b, 0);
	struct bam_dev *d = bam_ctx_dev(ctx);
	uint64_t deadline = bam_time_ns() + d->timeout_ns;
	uint16_t cid;
	assert_int_equal(bam_qpair_submit(&d->ctrl[0].qps[0], &s, deadline, &cid), 0);
	assert_int_equal(bam_qpair_wait(&d->ctrl[0].qps[0], cid, deadline, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_GENERIC, NVME_SC_INVALID_NS));
	/* the file was not extended by the refused write */
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_size, 1 << 20);
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	assert_int_equal(cs.errors, 3);
	assert_int_equal(cs.reads, 1);
	/* and at the array API: an array that does not fit is refused up front */
	struct bam_cache *c;
	struct bam_cache_opts co = {.capacity = 4 << 12, .line_size = 4096};
	assert_int_equal(bam_cache_create(ctx, &co, &c), 0);
	struct bam_array *a;
	struct bam_array_opts ao = {.n_elems = (1 << 20) / 8 + 1, .elem_size = 8};
	assert_int_equal(bam_array_create(c, &ao, &a), -EINVAL);
	bam_cache_destroy(c);
	free(b);
	bam_ctx_close(ctx);
}

/* Is [lo, hi) of this process's address space unmapped? */
static int unmapped(uint64_t lo, uint64_t hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char line[512];
	int ok = 1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && a < hi && b > lo)
			ok = 0;
	}
	fclose(f);
	return ok;
}

/*
 * A real EIO from the kernel: a controller backed by /proc/self/mem, whose bytes are
 * this process's address space. Nothing is mapped in its first MiB (checked), so
 * the kernel fails every read and write there with EIO; procfs also refuses
 * O_DIRECT, which exercises the fallback to buffered I/O.
 */

/* Element i of a u64 array of n elements over controller 0, through a cache of 4 lines
 * of 4 KiB: its line's fill fails, and the read gets -EIO. */
static void expect_array_read_eio(struct bam_ctx *ctx, uint64_t n, uint64_t i)
{
	struct bam_cache *c;
	struct bam_cache_opts co = {.capacity = 4 << 12, .line_size = 4096};
	assert_int_equal(bam_cache_create(ctx, &co, &c), 0);
	struct bam_array *a;
	struct bam_array_opts ao = {.n_elems = n, .elem_size = 8};
	assert_int_equal(bam_array_create(c, &ao, &a), 0);
	uint64_t v = 0;
	assert_int_equal(bam_array_read_u64(bam_array_dev(a), i, &v), -EIO);
	bam_array_destroy(a);
	bam_cache_destroy(c);
}

static void test_kernel_eio(void **state)
{
	(void)state;
	if (!unmapped(0, 1 << 20)) {
		fprintf(stderr, "low addresses mapped: skipping the /proc/self/mem case\n");
		return;
	}
	struct bam_ctx *ctx = open_ctx("file:/proc/self/mem,size=1M");
	assert_non_null(strstr(bam_ctx_backend_desc(ctx), "direct=0"));
	uint8_t *b = page_buf(8192);
	uint16_t st;
	assert_int_equal(io(ctx, 0, NVME_CMD_READ, 128, 8, b, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ));
	assert_int_equal(io(ctx, 0, NVME_CMD_WRITE, 256, 16, b, &st), 0);
	assert_int_equal(st, ST(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT));
	assert_int_equal(bam_ctx_media_read(ctx, 0, 4096, b, 512), -EIO);
	struct bam_ctrl_stats cs;
	bam_ctx_ctrl_stats(ctx, 0, &cs);
	assert_int_equal(cs.errors, 2);
	/* through the cache: the failed fill reaches the caller as -EIO */
	expect_array_read_eio(ctx, 1024, 5);
	free(b);
	bam_ctx_close(ctx);
}

/*
 * A file that shrinks under its namespace (truncate while the back end runs): the
 * blocks past its new end are gone, and a read of them completes with Unrecovered
 * Read Error, not with zeros and success (a wrong answer); a read that starts inside
 * the file and runs past its end too (short reads are continued up to the end of
 * file first). Blocks inside the file still read, and holes inside it (the file
 * grown again, sparse) read as zeros. In every data path, and through the cache and
 * the provisioning path as -EIO.
 */
static void test_shrunk_file_read_error(void **state)
{
	(void)state;
	const uint64_t keep[3] = {2048, 1000, 2048}; /* direct I/O: an aligned end */
	const uint16_t ure = ST(NVME_SCT_MEDIA, NVME_SC_UNRECOVERED_READ);
	for (unsigned m = 0; m < 3; m++) {
		make_file("s.dat", 4, 64 << 10);
		char p[128];
		path_of(p, sizeof(p), "s.dat");
		struct bam_ctx *ctx = open_ctx("file:%s,%s", p, modes[m]);
		assert_int_equal(truncate(p, (off_t)keep[m]), 0);
		uint8_t *b = page_buf(8192);
		uint16_t st;
		/* inside the file: read */
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 0, 1, b, &st), 0);
		assert_int_equal(st, 0);
		expect_file_bytes(4, 0, b, 512);
		/* from inside the file over its end, and wholly past it */
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 0, 16, b, &st), 0);
		assert_int_equal(st, ure);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, keep[m] / 512, 1, b, &st), 0);
		assert_int_equal(st, ure);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 100, 8, b, &st), 0);
		assert_int_equal(st, ure);
		struct bam_ctrl_stats cs;
		bam_ctx_ctrl_stats(ctx, 0, &cs);
		assert_int_equal(cs.errors, 3);
		assert_int_equal(bam_ctx_media_read(ctx, 0, 60 << 10, b, 512), -EIO);
		assert_int_equal(bam_ctx_media_read(ctx, 0, 0, b, 512), 0);
		expect_file_bytes(4, 0, b, 512);
		/* through the cache: the failed fill reaches the caller as -EIO */
		expect_array_read_eio(ctx, 8192, 4096);
		/* grown again: the new blocks are a hole inside the file, zeros */
		assert_int_equal(truncate(p, 64 << 10), 0);
		assert_int_equal(io(ctx, 0, NVME_CMD_READ, 100, 16, b, &st), 0);
		assert_int_equal(st, 0);
		for (uint64_t i = 0; i < 8192; i++)
			assert_int_equal(b[i], 0);
		free(b);
		bam_ctx_close(ctx);
	}
}

/*
 * Storage that is neither a regular file nor a block device cannot hold a namespace:
 * /dev/null takes every write and reads zeros (a run "succeeds" with a wrong answer),
 * a FIFO has no offsets. Refused at open with -EINVAL, the message naming the path
 * and what it is; with or without size=, also as the second of two files. Opening
 * the FIFO must not wait for a writer: the read-only fallback (a FIFO this process
 * may not write, when not root) opens it O_RDONLY, which would block.
 */
static void test_refuses_char_dev_and_fifo(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .timeout_ns = 60000000000ull};
	struct bam_ctx *ctx = NULL;
	char err[512], spec[600], f[128], r[128];
	assert_int_equal(bam_ctx_open("file:/dev/null,size=64M", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_null(ctx);
	assert_non_null(strstr(err, "/dev/null is a character device"));
	assert_int_equal(bam_ctx_open("file:/dev/zero", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/dev/zero is a character device"));
	const mode_t fifo_modes[2] = {0600, 0400};
	for (unsigned k = 0; k < 2; k++) {
		path_of(f, sizeof(f), "fifo");
		unlink(f);
		assert_int_equal(mkfifo(f, fifo_modes[k]), 0);
		snprintf(spec, sizeof(spec), "file:%s,size=1M", f);
		err[0] = 0;
		assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
		assert_null(ctx);
		assert_non_null(strstr(err, f));
		assert_non_null(strstr(err, "is a FIFO"));
		assert_non_null(strstr(err, "regular file or a block device"));
		make_file("r.dat", 1, 64 << 10);
		path_of(r, sizeof(r), "r.dat");
		snprintf(spec, sizeof(spec), "file:%s,%s", r, f);
		assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "is a FIFO"));
		unlink(f);
	}
	/* the emulator's media file: only a regular file (mmap'ed, sized, allocated) */
	assert_int_equal(bam_ctx_open("emu:media=file,path=/dev/null,size=1M", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/dev/null is a character device"));
	assert_int_equal(mkfifo(f, 0600), 0);
	snprintf(spec, sizeof(spec), "emu:path=%s", f);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, f));
	assert_non_null(strstr(err, "is a FIFO"));
	struct stat sb;
	assert_int_equal(lstat(f, &sb), 0); /* not replaced, not removed */
	assert_true(S_ISFIFO(sb.st_mode));
	unlink(f);
}

/* ---- three files striped under one array ------------------------------------------------ */

#define STRIPE_LINE (16u << 10) /* lines over 8 KiB: reads use PRP lists */
#define STRIPE_LINES 60u
#define STRIPE_ELEMS (STRIPE_LINES * STRIPE_LINE / 8)

static uint64_t elem_value(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ull ^ 0x5bd1e995u;
}

/* where element i lives: line l on controller l % 3 at byte (l / 3) * line + offset */
static void elem_place(uint64_t i, uint32_t *ctrl, uint64_t *off)
{
	uint64_t byte = i * 8, l = byte / STRIPE_LINE;
	*ctrl = (uint32_t)(l % 3);
	*off = (l / 3) * STRIPE_LINE + byte % STRIPE_LINE;
}

struct stripe_job {
	struct bam_array_dev *a;
	int bad;
};

static void stripe_reads(void *arg, uint64_t tid)
{
	struct stripe_job *j = arg;
	uint64_t r = tid * 0x9e3779b97f4a7c15ull + 11;
	for (int n = 0; n < 2000; n++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		uint64_t i = r % STRIPE_ELEMS, v;
		if (bam_array_read_u64(j->a, i, &v) || v != elem_value(i))
			__atomic_fetch_add(&j->bad, 1, __ATOMIC_RELAXED);
	}
}

static void test_striped_array(void **state)
{
	(void)state;
	static const char *names[3] = {"s0.dat", "s1.dat", "s2.dat"};
	for (unsigned m = 0; m < 3; m++) {
		/* lay the elements out in the files as the stripe layout places them */
		char p[3][128];
		uint64_t per = STRIPE_LINES / 3 * STRIPE_LINE;
		uint8_t *img[3];
		for (int k = 0; k < 3; k++) {
			img[k] = calloc(1, per);
			path_of(p[k], sizeof(p[k]), names[k]);
		}
		for (uint64_t i = 0; i < STRIPE_ELEMS; i++) {
			uint32_t c;
			uint64_t off, v = elem_value(i);
			elem_place(i, &c, &off);
			memcpy(img[c] + off, &v, 8);
		}
		for (int k = 0; k < 3; k++) {
			int fd = open(p[k], O_RDWR | O_CREAT | O_TRUNC, 0644);
			assert_true(fd >= 0);
			assert_int_equal(pwrite(fd, img[k], per, 0), (ssize_t)per);
			assert_int_equal(fsync(fd), 0);
			close(fd);
		}
		struct bam_ctx *ctx = open_ctx("file:%s,%s,%s,%s", p[0], p[1], p[2], modes[m]);
		assert_int_equal(bam_ctx_ctrl_count(ctx), 3);
		struct bam_cache *c;
		struct bam_cache_opts co = {.capacity = 6 * STRIPE_LINE, .line_size = STRIPE_LINE};
		assert_int_equal(bam_cache_create(ctx, &co, &c), 0);
		struct bam_array *a;
		struct bam_array_opts ao = {.n_elems = STRIPE_ELEMS, .elem_size = 8, .layout = BAM_LAYOUT_STRIPE};
		assert_int_equal(bam_array_create(c, &ao, &a), 0);
		struct bam_array_dev *ad = bam_array_dev(a);

		/* every element, in order (the cache holds 6 of 60 lines: evictions) */
		for (uint64_t i = 0; i < STRIPE_ELEMS; i++) {
			uint64_t v = 0;
			assert_int_equal(bam_array_read_u64(ad, i, &v), 0);
			if (v != elem_value(i)) {
				fprintf(stderr, "element %llu: got %llx\n", (unsigned long long)i, (unsigned long long)v);
				fail();
			}
		}
		/* many threads at random */
		struct stripe_job j = {.a = ad};
		assert_int_equal(bam_cpu_launch(8, 8, stripe_reads, &j), 0);
		assert_int_equal(j.bad, 0);

		/* writes through the cache land at the striped positions after a flush.
		 * Buffered only: bam_cache_flush runs 64 busy-waiting host threads, and on
		 * a 2-CPU machine they can starve the kernel worker that completes ext4's
		 * O_DIRECT writes past the timeout (docs/BACKENDS.md, "Limits");
		 * test_write_flush_reread checks O_DIRECT writes without that load. */
		if (m == 1) {
			for (uint64_t i = 0; i < STRIPE_ELEMS; i += 97)
				assert_int_equal(bam_array_write_u64(ad, i, ~elem_value(i)), 0);
			assert_int_equal(bam_cache_flush(c), 0);
			for (uint64_t i = 0; i < STRIPE_ELEMS; i++) {
				uint32_t ctrl;
				uint64_t off, v;
				elem_place(i, &ctrl, &off);
				read_file(names[ctrl], off, &v, 8);
				assert_true(v == (i % 97 ? elem_value(i) : ~elem_value(i)));
			}
		}
		for (uint32_t k = 0; k < 3; k++) {
			struct bam_ctrl_stats cs;
			bam_ctx_ctrl_stats(ctx, k, &cs);
			assert_true(cs.reads >= STRIPE_LINES / 3); /* every controller served its lines */
			assert_true(m != 1 || cs.writes > 0);
			assert_int_equal(cs.errors, 0);
		}
		bam_array_destroy(a);
		bam_cache_destroy(c);
		bam_ctx_close(ctx);
		for (int k = 0; k < 3; k++)
			free(img[k]);
	}
}

/* ---- the back-end string ---------------------------------------------------------------- */

static void test_backend_strings(void **state)
{
	(void)state;
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 2, .queue_depth = 16, .timeout_ns = 60000000000ull};
	struct bam_ctx *ctx;
	char err[512], spec[600], a[128], b[128];
	path_of(a, sizeof(a), "new_a.dat");
	path_of(b, sizeof(b), "new_b.dat");
	unlink(a);
	unlink(b);

	assert_int_equal(bam_ctx_open("file:", &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no file"));
	snprintf(spec, sizeof(spec), "file:%s", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "No such file"));
	assert_non_null(strstr(err, "size="));
	snprintf(spec, sizeof(spec), "file:%s,colour=blue", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown key"));
	snprintf(spec, sizeof(spec), "file:%s,lba=1000,size=1M", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	snprintf(spec, sizeof(spec), "file:%s,size=1000", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "multiple"));
	snprintf(spec, sizeof(spec), "file:%s,direct=2,size=1M", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	snprintf(spec, sizeof(spec), "file:%s", dir);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "directory"));

	/* path= syntax; size= creates the files; lba=4096 */
	snprintf(spec, sizeof(spec), "file:path=%s,path=%s,size=2M,lba=4096,workers=1,qd=8", a, b);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), 0);
	assert_int_equal(bam_ctx_ctrl_count(ctx), 2);
	struct bam_ns_info ns;
	assert_int_equal(bam_ctx_ns_info(ctx, 1, &ns), 0);
	assert_int_equal(ns.lba_size, 4096);
	assert_int_equal(ns.nlba, 512);
	assert_int_equal(ns.mdts_bytes, 1 << 20);
	assert_non_null(strstr(ns.model, "new_b.dat"));
	/* diagnostics: the controller-side view (before any I/O: nothing in flight) */
	FILE *tf = tmpfile();
	assert_non_null(tf);
	bam_ctx_dump(ctx, tf);
	char dump[4096] = "";
	rewind(tf);
	size_t dn = fread(dump, 1, sizeof(dump) - 1, tf);
	dump[dn] = 0;
	fclose(tf);
	assert_non_null(strstr(dump, "file ctrl 1 ("));
	assert_non_null(strstr(dump, "file q 2: created=1 depth=16"));
	const char *desc = bam_ctx_backend_desc(ctx);
	assert_non_null(strstr(desc, "lba=4096"));
	assert_non_null(strstr(desc, "workers=1"));
	assert_non_null(strstr(desc, "qd=8"));
	/* provisioning path, unaligned */
	char msg[] = "hello, storage";
	assert_int_equal(bam_ctx_media_write(ctx, 1, 4097, msg, sizeof(msg)), 0);
	char back[sizeof(msg)];
	assert_int_equal(bam_ctx_media_read(ctx, 1, 4097, back, sizeof(back)), 0);
	assert_memory_equal(back, msg, sizeof(msg));
	assert_int_equal(bam_ctx_media_read(ctx, 1, 2 << 20, back, 1), -ERANGE);
	/* and through the queues: 4 KiB LBAs */
	uint8_t *buf = page_buf(4096);
	uint16_t st;
	assert_int_equal(io(ctx, 1, NVME_CMD_READ, 1, 1, buf, &st), 0);
	assert_int_equal(st, 0);
	assert_memory_equal(buf + 1, msg, sizeof(msg));
	free(buf);
	bam_ctx_close(ctx);
	struct stat sb;
	assert_int_equal(stat(a, &sb), 0);
	assert_int_equal(sb.st_size, 2 << 20);
	/* reopened without size=: the file's size */
	snprintf(spec, sizeof(spec), "file:%s", a);
	assert_int_equal(bam_ctx_open(spec, &o, &ctx, err, sizeof(err)), 0);
	assert_int_equal(bam_ctx_ns_info(ctx, 0, &ns), 0);
	assert_int_equal(ns.nlba, 4096);
	bam_ctx_close(ctx);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/bamfileXXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	static const char *names[] = {"r.dat", "w.dat", "o.dat", "s.dat", "s0.dat", "s1.dat", "s2.dat",
				      "new_a.dat", "new_b.dat", "fifo"};
	char p[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_of(p, sizeof(p), names[i]);
		unlink(p);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_status),
		cmocka_unit_test(test_read_matches_file),
		cmocka_unit_test(test_write_flush_reread),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_kernel_eio),
		cmocka_unit_test(test_shrunk_file_read_error),
		cmocka_unit_test(test_refuses_char_dev_and_fifo),
		cmocka_unit_test(test_striped_array),
		cmocka_unit_test(test_backend_strings),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
