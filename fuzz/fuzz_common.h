/* SPDX-License-Identifier: MIT */
/*
 * fuzz_common.h - what every libFuzzer harness of fuzz/ shares: the invariant check
 * that aborts (so libFuzzer records the input as a crash), a private scratch folder
 * per process for the files the graph harnesses write, and whole-file writes.
 *
 * The harnesses are also compiled into tests/test_fuzz_regressions.c (with
 * BAM_FUZZ_REPLAY defined, so no LLVMFuzzerTestOneInput is emitted), which replays
 * tests/regress/ through exactly this code; so everything here builds with gcc and
 * the project's warnings as well as with clang -fsanitize=fuzzer.
 */
#ifndef BAM_FUZZ_COMMON_H
#define BAM_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An invariant of the code under test does not hold: report and abort. libFuzzer
 * treats the abort as a crash and saves the input; the replay test fails. */
#define FZ_CHECK(cond)                                                                  \
	do {                                                                            \
		if (!(cond))                                                            \
			fz_violation(__FILE__, __LINE__, #cond);                        \
	} while (0)

static inline void fz_violation(const char *file, int line, const char *what)
{
	fprintf(stderr, "fuzz: invariant violated at %s:%d: %s\n", file, line, what);
	abort();
}

/* Names of the files a harness may leave in the scratch folder (removed at exit). */
static const char *const fz_names[] = {
	"in", "in.snap", "in.mtx", "in.graph-txt", "in.arcs", "in.gz", "in.mtx.gz",
	"in.graph-txt.gz", "in.arcs.gz", "out.bcsr", "graph.bcsr",
};
static char fz_dir_path[256];

static inline void fz_cleanup(void)
{
	char p[320];

	if (!fz_dir_path[0])
		return;
	for (size_t i = 0; i < sizeof(fz_names) / sizeof(fz_names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fz_dir_path, fz_names[i]);
		unlink(p);
	}
	rmdir(fz_dir_path);
	fz_dir_path[0] = 0;
}

/* The per-process scratch folder: in /dev/shm when there is one (the importers fsync
 * their output, which is free on tmpfs), else in $TMPDIR or /tmp. Aborts if none can
 * be made: a harness without a folder would test nothing. */
static inline const char *fz_dir(void)
{
	if (fz_dir_path[0])
		return fz_dir_path;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(fz_dir_path, sizeof(fz_dir_path), "%s/bam-fuzz.%ld.XXXXXX", base, (long)getpid());
	if (!mkdtemp(fz_dir_path)) {
		fprintf(stderr, "fuzz: cannot create a scratch folder under %s: %s\n", base, strerror(errno));
		abort();
	}
	atexit(fz_cleanup);
	return fz_dir_path;
}

/* path = scratch folder / name (name must be one of fz_names). */
static inline void fz_path(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", fz_dir(), name);
}

/* Write the whole buffer to path (created or truncated). Aborts on failure: the
 * scratch folder is ours, so a failed write is the harness's problem, not an input. */
static inline void fz_write_file(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const char *p = data;

	if (fd < 0) {
		fprintf(stderr, "fuzz: open %s: %s\n", path, strerror(errno));
		abort();
	}
	while (size) {
		ssize_t w = write(fd, p, size);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "fuzz: write %s: %s\n", path, strerror(errno));
			abort();
		}
		p += w;
		size -= (size_t)w;
	}
	close(fd);
}

/* Little-endian loads from fuzz data (any alignment). */
static inline uint64_t fz_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

#endif /* BAM_FUZZ_COMMON_H */
