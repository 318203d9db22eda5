/* SPDX-License-Identifier: MIT */
/*
 * Fuzz regressions: every tests/regress/HARNESS-BUG input replayed through the same
 * harness code libFuzzer runs (the fuzz/ harnesses are included here with
 * BAM_FUZZ_REPLAY, which leaves out their LLVMFuzzerTestOneInput). A harness aborts
 * when an invariant breaks, so a regression that comes back fails this program.
 * Inputs listed in tests/regress/open-bugs (reported, not yet fixed) are named, not
 * replayed. Also a smoke run of each harness on the crafted graphs of tests/graph/data
 * and a few SQEs, so that the harnesses keep building and passing under gcc.
 * BAM_REGRESS_DIR overrides the folder (default: regress/ beside this file).
 */
#define BAM_FUZZ_REPLAY 1
#include "../fuzz/fuzz_import_snap.c"
#include "../fuzz/fuzz_import_mtx.c"
#include "../fuzz/fuzz_import_law.c"
#include "../fuzz/fuzz_import_arcs.c"
#include "../fuzz/fuzz_import_auto.c"
#include "../fuzz/fuzz_import_gz.c"
#include "../fuzz/fuzz_graph_file.c"
#include "../fuzz/fuzz_emu_sqe.c"

#include <dirent.h>
#include <libgen.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

static const struct {
	const char *name;
	int (*run)(const uint8_t *data, size_t size);
} harnesses[] = {
	{"fuzz_import_snap", fz_import_snap_input}, {"fuzz_import_mtx", fz_import_mtx_input},
	{"fuzz_import_law", fz_import_law_input},   {"fuzz_import_arcs", fz_import_arcs_input},
	{"fuzz_import_auto", fz_import_auto_input}, {"fuzz_import_gz", fz_import_gz_input},
	{"fuzz_graph_file", fz_graph_file_input},   {"fuzz_emu_sqe", fz_emu_sqe_input},
};
#define N_HARNESSES (sizeof(harnesses) / sizeof(harnesses[0]))

static char regress_dir[1024], data_dir[1024];

static void find_dirs(void)
{
	const char *env = getenv("BAM_REGRESS_DIR");
	char here[1024];
	snprintf(here, sizeof(here), "%s", __FILE__);
	const char *d = dirname(here);
	if (env && *env)
		snprintf(regress_dir, sizeof(regress_dir), "%s", env);
	else
		snprintf(regress_dir, sizeof(regress_dir), "%s/regress", d);
	snprintf(data_dir, sizeof(data_dir), "%s/graph/data", d);
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	if (!f)
		return -errno;
	uint8_t *b = malloc(cap);
	for (;;) {
		if (!b) {
			fclose(f);
			return -ENOMEM;
		}
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		b = realloc(b, cap);
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

/* Is 'name' listed in open-bugs? */
static int is_open_bug(const char *name)
{
	char path[1100], line[512];
	snprintf(path, sizeof(path), "%s/open-bugs", regress_dir);
	FILE *f = fopen(path, "r");
	int found = 0;
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, " \t\r\n");
		found = line[0] != '#' && l == strlen(name) && !strncmp(line, name, l);
	}
	fclose(f);
	return found;
}

static void test_replay_regressions(void **state)
{
	(void)state;
	DIR *d = opendir(regress_dir);
	struct dirent *e;
	int replayed = 0, open = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		const char *dash = strchr(e->d_name, '-');
		if (strncmp(e->d_name, "fuzz_", 5) || !dash)
			continue;
		size_t hl = (size_t)(dash - e->d_name);
		size_t k;
		for (k = 0; k < N_HARNESSES; k++)
			if (strlen(harnesses[k].name) == hl && !strncmp(harnesses[k].name, e->d_name, hl))
				break;
		if (k == N_HARNESSES)
			fail_msg("regression %s: no harness of that name", e->d_name);
		if (is_open_bug(e->d_name)) {
			printf("open bug (listed in open-bugs, not replayed): %s\n", e->d_name);
			open++;
			continue;
		}
		char path[1400];
		uint8_t *buf;
		size_t len;
		snprintf(path, sizeof(path), "%s/%s", regress_dir, e->d_name);
		assert_int_equal(read_file(path, &buf, &len), 0);
		printf("replay %s (%zu bytes)\n", e->d_name, len);
		fflush(stdout);
		harnesses[k].run(buf, len);
		free(buf);
		replayed++;
	}
	closedir(d);
	printf("%d regressions replayed, %d open bugs not replayed\n", replayed, open);
}

/* Each importer harness on each crafted text graph, with a few option bytes. */
static void test_smoke_importers(void **state)
{
	(void)state;
	static const uint8_t opts[] = {0x00, 0x07, 0xd0, 0x6d, 0xb2};
	DIR *d = opendir(data_dir);
	struct dirent *e;
	int runs = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[1400];
		uint8_t *text, *in;
		size_t len;
		snprintf(path, sizeof(path), "%s/%s", data_dir, e->d_name);
		assert_int_equal(read_file(path, &text, &len), 0);
		in = malloc(len + 2);
		assert_non_null(in);
		memcpy(in + 2, text, len);
		for (size_t o = 0; o < sizeof(opts); o++) {
			in[1] = opts[o];
			for (size_t k = 0; k < 5; k++) /* the five plain-text importers */
				harnesses[k].run(in + 1, len + 1);
			/* gzip harness: as is (a .gz file stays gzip), and compressed here */
			in[0] = opts[o];
			in[1] = 0x00;
			fz_import_gz_input(in, len + 2);
			in[1] = 0x08;
			fz_import_gz_input(in, len + 2);
			in[1] = 0x1c; /* mtx, compressed, cut short */
			fz_import_gz_input(in, len + 2);
			runs += 8;
		}
		free(in);
		free(text);
	}
	closedir(d);
	printf("%d importer runs\n", runs);
	assert_true(runs > 0);
}

/* The graph-file harness on a file an import wrote, intact and with bytes changed. */
static void test_smoke_graph_file(void **state)
{
	(void)state;
	char in[1400], out[320], err[256];
	struct bam_graph_build_opts o = {.threads = 1};
	snprintf(in, sizeof(in), "%s/tiny.mtx", data_dir);
	fz_path(out, sizeof(out), "out.bcsr");
	assert_int_equal(bam_graph_import(in, out, BAM_GRAPH_FMT_AUTO, &o, NULL, err, sizeof(err)), 0);
	uint8_t *f, *buf;
	size_t len;
	assert_int_equal(read_file(out, &f, &len), 0);
	buf = malloc(len + 1);
	assert_non_null(buf);
	memcpy(buf + 1, f, len);
	for (int fix = 0; fix < 4; fix++) {
		buf[0] = (uint8_t)fix;
		fz_graph_file_input(buf, len + 1);
		/* flip bytes of the header fields, the offsets and the edges */
		static const size_t at[] = {0x10, 0x18, 0x28, 0x38, 0x50, 4096, 4104, 8192};
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
			if (at[k] >= len)
				continue;
			buf[1 + at[k]] ^= 0x41;
			fz_graph_file_input(buf, len + 1);
			buf[1 + at[k]] ^= 0x41;
		}
	}
	free(buf);
	free(f);
	unlink(out);
}

/* The SQE harness on a read with a PRP list, and on variations of it. */
static void test_smoke_emu_sqe(void **state)
{
	(void)state;
	uint8_t in[FZ_HDR + 3 * NVME_PAGE_SIZE];
	struct nvme_sqe s;
	memset(in, 0, sizeof(in));
	memset(&s, 0, sizeof(s));
	s.opc = NVME_CMD_READ;
	s.nsid = 1;
	s.cdw12 = 15;                    /* 16 LBAs of 4 KiB */
	s.prp1 = NVME_PAGE_SIZE + 0x40;  /* page 1, offset 0x40: 17 segments */
	s.prp2 = 2 * NVME_PAGE_SIZE;     /* the list on page 2 */
	memcpy(in, &s, sizeof(s));
	in[64] = 1 | (6u << 1);          /* 4 KiB LBAs, 256 of them */
	for (uint64_t k = 0; k < 16; k++) {
		uint64_t page = (3 + k % 5) * NVME_PAGE_SIZE;
		memcpy(in + FZ_HDR + 2 * NVME_PAGE_SIZE + 8 * k, &page, 8);
	}
	fz_emu_sqe_input(in, sizeof(in));
	for (size_t b = 0; b < 64 * 8; b++) { /* every single-bit change of the SQE */
		in[b / 8] ^= (uint8_t)(1u << (b % 8));
		fz_emu_sqe_input(in, sizeof(in));
		in[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
}

int main(void)
{
	find_dirs();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_regressions),
		cmocka_unit_test(test_smoke_importers),
		cmocka_unit_test(test_smoke_graph_file),
		cmocka_unit_test(test_smoke_emu_sqe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
