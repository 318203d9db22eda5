/* SPDX-License-Identifier: MIT */
/*
 * bam_backend_info and bam_backend_sized: what a back-end string asks for, told by the
 * back end's own parser, and the size a tool adds for media the open creates.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "bam/backend.h"

static void test_info_emu(void **state)
{
	(void)state;
	struct bam_backend_info i;
	char err[256];
	assert_int_equal(bam_backend_info(NULL, &i, err, sizeof(err)), 0);
	assert_string_equal(i.name, "emu");
	assert_int_equal(i.n_ctrl, 1);
	assert_int_equal(i.size, 0);
	assert_int_equal(i.flags, BAM_BACKEND_F_MEDIA_MEMORY | BAM_BACKEND_F_SIZABLE);

	assert_int_equal(bam_backend_info("emu:count=0x4,lba=4096,size=1M", &i, err, sizeof(err)), 0);
	assert_int_equal(i.n_ctrl, 4);
	assert_int_equal(i.size, 1u << 20);
	assert_int_equal(i.lba_size, 4096);
	assert_int_equal(i.flags, BAM_BACKEND_F_MEDIA_MEMORY); /* size given: not sizable */

	assert_int_equal(bam_backend_info("emu:media=gpu", &i, err, sizeof(err)), 0);
	assert_int_equal(i.flags, BAM_BACKEND_F_MEDIA_MEMORY | BAM_BACKEND_F_MEDIA_GPU | BAM_BACKEND_F_SIZABLE);
	assert_int_equal(bam_backend_info("emu:media=gpu,media=dram", &i, err, sizeof(err)), 0); /* the last wins */
	assert_int_equal(i.flags & BAM_BACKEND_F_MEDIA_GPU, 0);

	assert_int_equal(bam_backend_info("emu:path=/nonexistent-dir/m.img,count=2", &i, err, sizeof(err)), 0);
	assert_int_equal(i.flags, BAM_BACKEND_F_MEDIA_MAPPED); /* path= implies media=file */
	assert_int_equal(i.n_ctrl, 2);

	assert_int_equal(bam_backend_info("emu:count=4x", &i, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "count"));
}

static void test_info_file_and_unknown(void **state)
{
	(void)state;
	struct bam_backend_info i;
	char err[256];
	assert_int_equal(bam_backend_info("file:/a,/b,/c,size=8K,lba=4096", &i, err, sizeof(err)), 0);
	assert_string_equal(i.name, "file");
	assert_int_equal(i.n_ctrl, 3);
	assert_int_equal(i.size, 8192);
	assert_int_equal(i.lba_size, 4096);
	assert_int_equal(i.flags, 0); /* files that outlive the run; never sized by a tool */

	assert_int_equal(bam_backend_info("nosuch:x", &i, err, sizeof(err)), -EINVAL);
	/* the message lists the registered back ends, from the registry */
	assert_non_null(strstr(err, "unknown back end 'nosuch'"));
	assert_non_null(strstr(err, "emu"));
	assert_non_null(strstr(err, "file"));
	assert_int_equal(bam_backend_info("emulator:media=gpu", &i, NULL, 0), -EINVAL);
}

static void test_sized(void **state)
{
	(void)state;
	char b[256];
	assert_int_equal(bam_backend_sized("", 1000, 512, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:size=4096");
	assert_int_equal(bam_backend_sized("emu:count=3", 1u << 20, 4096, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:count=3,size=352256"); /* ceil(2^20 / 3) up to 4 KiB */
	assert_int_equal(bam_backend_sized("emu", 10000, 8192, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:size=16384");
	assert_int_equal(bam_backend_sized("emu:count=2", 1u << 20, 3072, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:count=2,size=528384"); /* a multiple of lcm(3072, 4096) */
	/* the last count= (as the emulator reads it) */
	assert_int_equal(bam_backend_sized("emu:count=4,count=1", 8192, 4096, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:count=4,count=1,size=8192");
	assert_int_equal(bam_backend_sized("emu:size=1M", 1u << 30, 4096, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "emu:size=1M");
	assert_int_equal(bam_backend_sized("file:/x", 1u << 30, 4096, b, sizeof(b), NULL, 0), 0);
	assert_string_equal(b, "file:/x");
	assert_int_equal(bam_backend_sized("emu", UINT64_MAX - 100, 4096, b, sizeof(b), NULL, 0), -EOVERFLOW);
	assert_int_equal(bam_backend_sized("emu", UINT64_MAX - 4095, 4096, b, sizeof(b), NULL, 0), 0);
	assert_int_equal(bam_backend_sized("emu", 4096, 4096, b, 8, NULL, 0), -ENAMETOOLONG);
	assert_int_equal(bam_backend_sized("emu:colour=blue", 4096, 4096, b, sizeof(b), NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_info_emu),
		cmocka_unit_test(test_info_file_and_unknown),
		cmocka_unit_test(test_sized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
