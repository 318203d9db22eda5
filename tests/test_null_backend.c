/* SPDX-License-Identifier: MIT */
/*
 * The null back end (src/backends/null): a controller without media that completes
 * every valid command at once. Reads and writes through the queues, from several
 * threads over several queue pairs and two controllers, all complete with success and
 * leave the read buffers untouched; an invalid command still gets its status (the
 * shared front end checks it); the counters add up; an array over it works through the
 * cache; its parser answers bam_backend_info; and it is found, as every back end built
 * into libbam, without any registration, while a name taken by it cannot be registered.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bam/bam.h"
#include "bam/backend.h"
#include "bam/cache.h"
#include "bam/dev.h"

#define N_THREADS 8
#define N_IOS 500

static struct bam_ctx *open_null(const char *backend)
{
	struct bam_ctx_opts o = {.target = BAM_TARGET_CPU, .qpairs = 4, .queue_depth = 32,
				 .timeout_ns = 30000000000ull};
	struct bam_ctx *ctx = NULL;
	char err[256];
	int rc = bam_ctx_open(backend, &o, &ctx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "open %s: %s\n", backend, err);
	assert_int_equal(rc, 0);
	return ctx;
}

struct io_job {
	struct bam_ctx *ctx;
	uint32_t tid;
	int failures;
};

/* N_IOS commands of 8 LBAs: writes and reads alternating, on both controllers, each
 * read into a buffer filled with 0xa5 first that must come back unchanged. */
static void *io_thread(void *arg)
{
	struct io_job *j = arg;
	struct bam_dev *d = bam_ctx_dev(j->ctx);
	uint8_t *buf = aligned_alloc(4096, 4096);
	if (!buf) {
		j->failures++;
		return NULL;
	}
	for (uint32_t i = 0; i < N_IOS; i++) {
		const uint8_t opc = i & 1 ? NVME_CMD_READ : NVME_CMD_WRITE;
		const uint64_t slba = ((uint64_t)j->tid * N_IOS + i) * 8;
		uint16_t st = 0xffff;
		memset(buf, 0xa5, 4096);
		if (bam_dev_io(d, (i / 2) % 2, j->tid + i, opc, slba, 8, (uintptr_t)buf, 0, &st) || st)
			j->failures++;
		for (uint32_t k = 0; k < 4096; k++)
			if (buf[k] != 0xa5) {
				j->failures++;
				break;
			}
	}
	free(buf);
	return NULL;
}

static void test_io_through_queues(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_null("null:size=1G,count=2");
	assert_int_equal(bam_ctx_ctrl_count(ctx), 2);
	assert_string_equal(bam_ctx_backend_desc(ctx), "null:size=1073741824,lba=512,count=2");
	struct bam_ns_info ns;
	assert_int_equal(bam_ctx_ns_info(ctx, 1, &ns), 0);
	assert_int_equal(ns.nlba, (1ull << 30) / 512);
	assert_int_equal(ns.lba_size, 512);
	assert_non_null(strstr(ns.model, "null"));

	pthread_t th[N_THREADS];
	struct io_job jobs[N_THREADS];
	for (uint32_t t = 0; t < N_THREADS; t++) {
		jobs[t] = (struct io_job){.ctx = ctx, .tid = t};
		assert_int_equal(pthread_create(&th[t], NULL, io_thread, &jobs[t]), 0);
	}
	for (uint32_t t = 0; t < N_THREADS; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(jobs[t].failures, 0);
	}

	/* each controller took half the commands, half of them reads */
	const uint64_t per = (uint64_t)N_THREADS * N_IOS / 2;
	for (uint32_t c = 0; c < 2; c++) {
		struct bam_ctrl_stats s;
		assert_int_equal(bam_ctx_ctrl_stats(ctx, c, &s), 0);
		assert_int_equal(s.cmds, per);
		assert_int_equal(s.reads, per / 2);
		assert_int_equal(s.writes, per / 2);
		assert_int_equal(s.bytes_read, per / 2 * 4096);
		assert_int_equal(s.bytes_written, per / 2 * 4096);
		assert_int_equal(s.errors, 0);
	}

	/* a flush completes; an invalid command gets its status from the front end */
	struct bam_dev *d = bam_ctx_dev(ctx);
	uint8_t *buf = aligned_alloc(4096, 4096);
	uint16_t st = 0xffff;
	assert_int_equal(bam_dev_io(d, 0, 0, NVME_CMD_FLUSH, 0, 1, 0, 0, &st), 0);
	assert_int_equal(st, 0);
	assert_int_equal(bam_dev_io(d, 0, 0, NVME_CMD_READ, ns.nlba - 1, 2, (uintptr_t)buf, 0, &st), 0);
	assert_int_equal(st, NVME_STATUS(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE));
	struct bam_ctrl_stats s;
	assert_int_equal(bam_ctx_ctrl_stats(ctx, 0, &s), 0);
	assert_int_equal(s.flushes, 1);
	assert_int_equal(s.errors, 1);

	/* the provisioning path: writes discarded, reads give zeros */
	memset(buf, 0x5a, 4096);
	assert_int_equal(bam_ctx_media_write(ctx, 0, 4096, buf, 4096), 0);
	assert_int_equal(bam_ctx_media_read(ctx, 0, 4096, buf, 4096), 0);
	for (uint32_t k = 0; k < 4096; k++)
		assert_int_equal(buf[k], 0);
	assert_int_equal(bam_ctx_media_read(ctx, 0, (1ull << 30) - 512, buf, 1024), -ERANGE); /* past the end */
	free(buf);
	bam_ctx_close(ctx);
}

static void test_array_through_cache(void **state)
{
	(void)state;
	struct bam_ctx *ctx = open_null("null:size=64M,lba=4096");
	struct bam_cache *cache;
	struct bam_array *arr;
	struct bam_cache_opts co = {.capacity = 256 * 1024, .line_size = 64 * 1024};
	assert_int_equal(bam_cache_create(ctx, &co, &cache), 0);
	struct bam_array_opts ao = {.n_elems = (16u << 20) / 4, .elem_size = 4};
	assert_int_equal(bam_array_create(cache, &ao, &arr), 0);
	struct bam_array_dev *a = bam_array_dev(arr);

	/* every line of 16 MiB through a 256 KiB cache: misses, evictions, write-backs */
	for (uint64_t i = 0; i < ao.n_elems; i += 16384) {
		uint32_t v;
		assert_int_equal(bam_array_read_u32(a, i, &v), 0);
		assert_int_equal(bam_array_write_u32(a, i + 1, (uint32_t)i), 0);
		assert_int_equal(bam_array_read_u32(a, i + 1, &v), 0);
		assert_int_equal(v, (uint32_t)i); /* the cache holds the line written */
	}
	assert_int_equal(bam_cache_flush(cache), 0);
	struct bam_ctrl_stats s;
	assert_int_equal(bam_ctx_ctrl_stats(ctx, 0, &s), 0);
	assert_int_equal(s.reads, 256); /* one fill per 64 KiB line */
	assert_int_equal(s.writes, 256); /* each line written back once */
	assert_int_equal(s.bytes_read, 16u << 20);
	assert_int_equal(s.errors, 0);
	bam_array_destroy(arr);
	bam_cache_destroy(cache);
	bam_ctx_close(ctx);
}

static void test_info_and_strings(void **state)
{
	(void)state;
	struct bam_backend_info i;
	char err[256], out[128];
	assert_int_equal(bam_backend_info("null:size=1G,lba=4096,count=3", &i, err, sizeof(err)), 0);
	assert_string_equal(i.name, "null");
	assert_int_equal(i.n_ctrl, 3);
	assert_int_equal(i.size, 1ull << 30);
	assert_int_equal(i.lba_size, 4096);
	assert_int_equal(i.flags, 0); /* no media */
	assert_int_equal(bam_backend_info("null", &i, err, sizeof(err)), 0);
	assert_int_equal(i.flags, BAM_BACKEND_F_SIZABLE);
	assert_int_equal(bam_backend_sized("null:count=2", (3 << 20) + 1, 0, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "null:count=2,size=1576960"); /* 1.5 MiB + 1 byte, in 4 KiB blocks */

	assert_int_equal(bam_backend_check("null:lba=1024", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "lba=1024"));
	assert_int_equal(bam_backend_check("null:size=1000,lba=4096", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "multiple"));
	assert_int_equal(bam_backend_check("null:count=0", err, sizeof(err)), -EINVAL);
	assert_int_equal(bam_backend_check("null:colour=blue", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "colour"));
}

/* Built in: found with no registration; the name cannot be taken at run time; a
 * program's own back end is found after the built-in ones and listed with them. */
static void test_registry(void **state)
{
	(void)state;
	assert_non_null(bam_backend_find("null", 4));
	assert_string_equal(bam_backend_find("nullx", 4)->name, "null"); /* the first len bytes */
	static const struct bam_backend_ops taken = {.name = "null"};
	assert_int_equal(bam_backend_register(&taken), -EEXIST);
	static const struct bam_backend_ops mine = {.name = "mine"};
	assert_null(bam_backend_find("mine", 4));
	assert_int_equal(bam_backend_register(&mine), 0);
	assert_ptr_equal(bam_backend_find("mine", 4), &mine);
	char err[256];
	struct bam_ctx *ctx;
	assert_int_equal(bam_ctx_open("nosuch", NULL, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "null"));
	assert_non_null(strstr(err, "mine"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_io_through_queues),
		cmocka_unit_test(test_array_through_cache),
		cmocka_unit_test(test_info_and_strings),
		cmocka_unit_test(test_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
