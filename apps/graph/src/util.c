/* SPDX-License-Identifier: MIT */
/*
 * util.c - small helpers of the graph module: messages, full I/O, crc32 over 64-bit
 * lengths, threads, the temp-file output protocol, and the neighbour-list sort.
 */
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "graph_internal.h"

void gr_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

double gr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Linux transfers at most 0x7ffff000 bytes per call; stay well below. */
#define GR_IO_MAX (1ull << 30)

int gr_pread_full(int fd, void *buf, uint64_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		size_t want = len > GR_IO_MAX ? GR_IO_MAX : (size_t)len;
		ssize_t r = pread(fd, p, want, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno ? -errno : -EIO; /* e.g. -EISDIR for a directory */
		}
		if (r == 0)
			return -EIO; /* the file ended before the range did */
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

int gr_pwrite_full(int fd, const void *buf, uint64_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		size_t want = len > GR_IO_MAX ? GR_IO_MAX : (size_t)len;
		ssize_t r = pwrite(fd, p, want, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

uint32_t gr_crc32(uint32_t crc, const void *buf, uint64_t len)
{
	const Bytef *p = buf;
	uLong c = crc;

	while (len) {
		uInt part = len > GR_IO_MAX ? (uInt)GR_IO_MAX : (uInt)len;
		c = crc32(c, p, part);
		p += part;
		len -= part;
	}
	return (uint32_t)c;
}

unsigned gr_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > GR_MAX_THREADS ? GR_MAX_THREADS : (unsigned)n;
}

uint64_t gr_default_mem_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t quarter = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz / 4 : 0;

	return quarter < (64ull << 20) ? (64ull << 20) : quarter;
}

struct gr_par {
	void (*fn)(void *arg, unsigned t);
	void *arg;
	unsigned t;
};

static void *gr_par_main(void *p)
{
	struct gr_par *w = p;

	w->fn(w->arg, w->t);
	return NULL;
}

void gr_parallel(unsigned nthreads, void (*fn)(void *arg, unsigned t), void *arg)
{
	pthread_t tid[GR_MAX_THREADS];
	struct gr_par w[GR_MAX_THREADS];
	int started[GR_MAX_THREADS];

	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > GR_MAX_THREADS)
		nthreads = GR_MAX_THREADS;
	for (unsigned t = 1; t < nthreads; t++) {
		w[t] = (struct gr_par){ fn, arg, t };
		started[t] = pthread_create(&tid[t], NULL, gr_par_main, &w[t]) == 0;
	}
	fn(arg, 0);
	/* A thread that could not be created runs its share here: same result, slower. */
	for (unsigned t = 1; t < nthreads; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else
			fn(arg, t);
	}
}

uint64_t gr_uniform(uint64_t *state, uint64_t bound)
{
	/* Lemire, "Fast random integer generation in an interval" (2019). */
	unsigned __int128 m = (unsigned __int128)gr_splitmix64(state) * bound;
	uint64_t l = (uint64_t)m;

	if (l < bound) {
		uint64_t t = (0 - bound) % bound;
		while (l < t) {
			m = (unsigned __int128)gr_splitmix64(state) * bound;
			l = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

uint64_t gr_layout(struct bam_graph_header *h, uint64_t n, uint64_t m, uint32_t id_bytes)
{
	h->id_bytes = id_bytes;
	h->n_vertices = n;
	h->n_edges = m;
	h->offsets_offset = BAM_GRAPH_HEADER_BYTES;
	h->offsets_bytes = 8 * (n + 1);
	h->edges_offset = BAM_ALIGN_UP(h->offsets_offset + h->offsets_bytes, (uint64_t)BAM_GRAPH_ALIGN);
	h->edges_bytes = (uint64_t)id_bytes * m;
	return BAM_ALIGN_UP(h->edges_offset + h->edges_bytes, (uint64_t)BAM_GRAPH_ALIGN);
}

uint32_t gr_header_crc(const struct bam_graph_header *h)
{
	struct bam_graph_header c;

	memcpy(&c, h, sizeof(c));
	c.header_crc32 = 0;
	return (uint32_t)crc32(0, (const Bytef *)&c, sizeof(c));
}

void gr_header_finish(struct bam_graph_header *h, uint32_t flags, uint32_t offsets_crc,
		      uint32_t edges_crc, const char *source)
{
	memcpy(h->magic, BAM_GRAPH_MAGIC, BAM_GRAPH_MAGIC_LEN);
	h->version = BAM_GRAPH_VERSION;
	h->flags = flags;
	h->offsets_crc32 = offsets_crc;
	h->edges_crc32 = edges_crc;
	memset(h->source, 0, sizeof(h->source));
	if (source)
		strncpy(h->source, source, sizeof(h->source) - 1);
	memset(h->reserved, 0, sizeof(h->reserved));
	h->header_crc32 = gr_header_crc(h);
}

/* The directory part of path into dir (dirname's answer, "." for a bare name). */
static void gr_dir_of(const char *path, char *dir, size_t len)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, len, "%s", dirname(tmp));
}

int gr_output_check(const char *output, char *err, size_t errlen)
{
	struct stat st;
	char dir[PATH_MAX];
	const size_t len = strlen(output);
	const char *base = strrchr(output, '/');

	/* what the rename at the end would refuse, said now rather than after the passes */
	base = base ? base + 1 : output;
	if (len >= PATH_MAX) {
		gr_err(err, errlen, "the output path is %zu bytes long, past PATH_MAX (%d): give a shorter -o", len, PATH_MAX);
		return -ENAMETOOLONG;
	}
	if (!*base) {
		gr_err(err, errlen, "%s: ends in '/': give -o a file name, not a folder", output);
		return -EEXIST;
	}
	if (strlen(base) > NAME_MAX) {
		gr_err(err, errlen, "%s: the file name is %zu bytes long, past NAME_MAX (%d): give a shorter -o", output,
		       strlen(base), NAME_MAX);
		return -ENAMETOOLONG;
	}
	gr_dir_of(output, dir, sizeof(dir));
	if (strlen(dir) + 40 >= PATH_MAX) { /* room for the temporary name beside it */
		gr_err(err, errlen, "the output's folder path is %zu bytes long, too near PATH_MAX (%d): give a shorter -o",
		       strlen(dir), PATH_MAX);
		return -ENAMETOOLONG;
	}
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) { /* (access would say EACCES) */
		gr_err(err, errlen, "%s: %s is not a folder", output, dir);
		return -ENOTDIR;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		const int e = errno;
		gr_err(err, errlen, "%s: cannot write in %s: %s", output, dir, strerror(e));
		return -e;
	}
	if (lstat(output, &st) != 0 || S_ISREG(st.st_mode))
		return 0; /* absent (or unreadable: the temp file's creation will say) */
	gr_err(err, errlen, "%s: exists and is not a regular file (%s): refusing to replace it; give another -o",
	       output, S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a symbolic link" :
	       S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
	/* its own code, not -EINVAL: the CLI tells a refused -o (exit 2) from bad input */
	return -EEXIST;
}

int gr_tmp_create(const char *output, char *tmp_path, size_t tmp_len, int *fd, char *err,
		  size_t errlen)
{
	char dir[PATH_MAX];
	int n, rc;
	mode_t um;

	*fd = -1;
	tmp_path[0] = 0;
	rc = gr_output_check(output, err, errlen);
	if (rc)
		return rc;
	gr_dir_of(output, dir, sizeof(dir));
#ifdef O_TMPFILE
	/* An unnamed file in output's directory: whatever ends the process (a signal, a
	 * crash, a kill) leaves nothing behind; gr_tmp_commit names it (through
	 * /proc/self/fd, so only where /proc is there). Else, or where the file system
	 * has no O_TMPFILE, a named temporary file. */
	if (access("/proc/self/fd", X_OK) == 0) {
		*fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
		if (*fd >= 0)
			return 0;
		if (errno == EACCES || errno == EROFS || errno == ENOENT || errno == ENOTDIR || errno == ENOSPC ||
		    errno == EDQUOT) {
			int e = errno;
			gr_err(err, errlen, "%s: cannot create temporary output in %s: %s", output, dir, strerror(e));
			return -e;
		}
	}
#endif
	/* a short name (NAME_MAX bounds a name, not the output's name plus a suffix) */
	n = snprintf(tmp_path, tmp_len, "%s/.tmp.bam.XXXXXX", dir);
	if (n < 0 || (size_t)n >= tmp_len) {
		tmp_path[0] = 0;
		gr_err(err, errlen, "%s: output path too long", output);
		return -ENAMETOOLONG;
	}
	*fd = mkstemp(tmp_path);
	if (*fd < 0) {
		int e = errno;
		tmp_path[0] = 0;
		gr_err(err, errlen, "%s: cannot create temporary output: %s", output, strerror(e));
		return -e;
	}
	/* mkstemp makes 0600; give the file the mode open(O_CREAT, 0666) would. */
	um = umask(0);
	umask(um);
	if (fchmod(*fd, 0666 & ~um) != 0) {
		/* harmless: the file stays private to its owner */
	}
	return 0;
}

void gr_tmp_abort(int fd, const char *tmp_path)
{
	if (fd >= 0)
		close(fd);
	if (tmp_path && tmp_path[0])
		unlink(tmp_path);
}

int gr_tmp_commit(int fd, const char *tmp_path, const char *output, uint64_t file_size,
		  char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc, dfd;

	if (ftruncate(fd, (off_t)file_size) != 0) {
		rc = -errno;
		gr_err(err, errlen, "%s: cannot size output: %s", output, strerror(-rc));
		goto fail;
	}
	/* Data and metadata on stable storage before the name points at them. */
	if (fsync(fd) != 0) {
		rc = -errno;
		gr_err(err, errlen, "%s: fsync: %s", output, strerror(-rc));
		goto fail;
	}
	/* an unnamed file (O_TMPFILE, tmp_path empty) gets a name beside output first */
	const char *named = tmp_path;
	char link_path[PATH_MAX];
	if (!tmp_path[0]) {
		char proc[64];
		gr_dir_of(output, dir, sizeof(dir));
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		rc = -EEXIST;
		for (unsigned k = 0; k < 1000 && rc == -EEXIST; k++) {
			const int ln = snprintf(link_path, sizeof(link_path), "%s/.tmp.bam.%ld.%u", dir, (long)getpid(), k);
			if (ln < 0 || (size_t)ln >= sizeof(link_path)) {
				rc = -ENAMETOOLONG;
				break;
			}
			rc = linkat(AT_FDCWD, proc, AT_FDCWD, link_path, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
		}
		if (rc) {
			gr_err(err, errlen, "%s: cannot name the output in %s: %s", output, dir, strerror(-rc));
			goto fail;
		}
		named = link_path;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = -errno;
		gr_err(err, errlen, "%s: close: %s", output, strerror(-rc));
		if (named != tmp_path)
			unlink(named);
		goto fail;
	}
	fd = -1;
	if (rename(named, output) != 0) {
		rc = -errno;
		gr_err(err, errlen, "%s: cannot rename %s: %s", output, named, strerror(-rc));
		if (named != tmp_path)
			unlink(named);
		goto fail;
	}
	/* Make the rename itself durable. */
	gr_dir_of(output, dir, sizeof(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	gr_tmp_abort(fd, tmp_path);
	return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Neighbour-list sort: introsort (median-of-3 quicksort, insertion sort below 24,     */
/* heapsort past 2 log2 n levels) without a callback, for both id widths. Lists from   */
/* web crawls usually arrive sorted, so a linear check comes first.                     */
/* ---------------------------------------------------------------------------------- */

#define GR_DEFINE_SORT(T, NAME)                                                          \
	static void NAME##_insertion(T *a, uint64_t n)                                   \
	{                                                                                \
		for (uint64_t i = 1; i < n; i++) {                                       \
			T x = a[i];                                                      \
			uint64_t j = i;                                                  \
			while (j > 0 && a[j - 1] > x) {                                  \
				a[j] = a[j - 1];                                         \
				j--;                                                     \
			}                                                                \
			a[j] = x;                                                        \
		}                                                                        \
	}                                                                                \
	static void NAME##_sift(T *a, uint64_t root, uint64_t n)                         \
	{                                                                                \
		T x = a[root];                                                           \
		for (;;) {                                                               \
			uint64_t c = 2 * root + 1;                                       \
			if (c >= n)                                                      \
				break;                                                   \
			if (c + 1 < n && a[c + 1] > a[c])                                \
				c++;                                                     \
			if (a[c] <= x)                                                   \
				break;                                                   \
			a[root] = a[c];                                                  \
			root = c;                                                        \
		}                                                                        \
		a[root] = x;                                                             \
	}                                                                                \
	static void NAME##_heapsort(T *a, uint64_t n)                                    \
	{                                                                                \
		for (uint64_t i = n / 2; i-- > 0;)                                       \
			NAME##_sift(a, i, n);                                            \
		for (uint64_t i = n; i-- > 1;) {                                         \
			T x = a[0];                                                      \
			a[0] = a[i];                                                     \
			a[i] = x;                                                        \
			NAME##_sift(a, 0, i);                                            \
		}                                                                        \
	}                                                                                \
	static void NAME##_intro(T *a, uint64_t n, int depth)                            \
	{                                                                                \
		while (n > 24) {                                                         \
			if (depth-- == 0) {                                              \
				NAME##_heapsort(a, n);                                   \
				return;                                                  \
			}                                                                \
			T x, p0 = a[0], p1 = a[n / 2], p2 = a[n - 1];                    \
			T piv = p0 < p1 ? (p1 < p2 ? p1 : (p0 < p2 ? p2 : p0))           \
					: (p0 < p2 ? p0 : (p1 < p2 ? p2 : p1));          \
			uint64_t i = 0, j = n - 1;                                       \
			for (;;) { /* Hoare partition */                                 \
				while (a[i] < piv)                                       \
					i++;                                             \
				while (a[j] > piv)                                       \
					j--;                                             \
				if (i >= j)                                              \
					break;                                           \
				x = a[i];                                                \
				a[i] = a[j];                                             \
				a[j] = x;                                                \
				i++;                                                     \
				j--;                                                     \
			}                                                                \
			/* [0, j] <= piv <= [j+1, n): recurse on the smaller side */     \
			uint64_t left = j + 1;                                           \
			if (left < n - left) {                                           \
				NAME##_intro(a, left, depth);                            \
				a += left;                                               \
				n -= left;                                               \
			} else {                                                         \
				NAME##_intro(a + left, n - left, depth);                 \
				n = left;                                                \
			}                                                                \
		}                                                                        \
		NAME##_insertion(a, n);                                                  \
	}                                                                                \
	static uint64_t NAME##_sort(T *a, uint64_t n, int dedup)                         \
	{                                                                                \
		uint64_t i;                                                              \
		for (i = 1; i < n && a[i - 1] <= a[i]; i++)                              \
			;                                                                \
		if (i < n) {                                                             \
			int depth = 0;                                                   \
			for (uint64_t k = n; k; k >>= 1)                                 \
				depth += 2;                                              \
			NAME##_intro(a, n, depth);                                       \
		}                                                                        \
		if (!dedup || n < 2)                                                     \
			return n;                                                        \
		uint64_t w = 1;                                                          \
		for (i = 1; i < n; i++)                                                  \
			if (a[i] != a[w - 1])                                            \
				a[w++] = a[i];                                           \
		return w;                                                                \
	}

GR_DEFINE_SORT(uint32_t, gr_u32)
GR_DEFINE_SORT(uint64_t, gr_u64)

uint64_t gr_sort_list(void *ids, uint32_t id_bytes, uint64_t len, int dedup)
{
	if (id_bytes == 4)
		return gr_u32_sort(ids, len, dedup);
	return gr_u64_sort(ids, len, dedup);
}
