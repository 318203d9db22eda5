/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include "bam/nvme.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "bam/bam.h"
#include "bam/atomic.h"
#include "bam/backend.h"
#include "cli_util.h"

int cli_backend_arg(const char *cmd, const char *backend)
{
	const size_t n = strlen(backend);
	if (n <= CLI_BACKEND_MAX)
		return 0;
	cli_fail("%s: --backend= is %zu characters long, at most %d\n", cmd, n, CLI_BACKEND_MAX);
	return 2;
}

int cli_backend_fail(const char *cmd, const char *given, int rc, const char *err)
{
	if (rc == -ENODEV) { /* --target=gpu without one: not the back end's fault */
		cli_fail("%s: %s\n", cmd, err);
		return 2;
	}
	cli_fail("%s: --backend=%s: %s\n", cmd, given, err);
	return rc == -EINVAL ? 2 : 1;
}

int cli_backend_precheck(const char *cmd, const char *given, const char *resolved, const char *no_gpu)
{
	char err[512];
	if (bam_backend_check(resolved, err, sizeof(err)))
		return cli_backend_fail(cmd, given, -EINVAL, err);
	if (no_gpu && cli_backend_media_gpu(resolved)) {
		snprintf(err, sizeof(err), "media=gpu puts the namespace in GPU memory: it needs the GPU target (%s; use media=dram)",
			 no_gpu);
		return cli_backend_fail(cmd, given, -EINVAL, err);
	}
	return 0;
}

static int media_cb(void *arg, const char *path)
{
	struct cli_media *m = arg;
	if (m->n == CLI_MEDIA_MAX || strlen(path) >= sizeof(m->path[0])) {
		m->incomplete = 1; /* (not for a string bam_ctx_open takes: 32 names at most) */
		return 0;
	}
	char *d = m->path[m->n];
	snprintf(d, sizeof(m->path[0]), "%s", path);
	struct stat st;
	m->created[m->n] = stat(d, &st) != 0 && errno == ENOENT;
	m->n++;
	return 0;
}

/* The noted media of the run in progress (the signal handlers' view) */
static const struct cli_media *volatile media_live;

static void media_unlink_created(const struct cli_media *m)
{
	for (int i = 0; i < m->n; i++)
		if (m->created[i])
			unlink(m->path[i]); /* (async-signal-safe) */
}

/* After a failed run (its context closed): remove the media files noted as missing
 * before the open, unless another process holds one (its media lock, taken by the
 * back ends, bam_media_lock): a file missing when noted may have been created since by
 * another process, whose lock then refused this run. */
static void media_unlink_created_unlocked(const struct cli_media *m)
{
	for (int i = 0; i < m->n; i++) {
		if (!m->created[i])
			continue;
		const int fd = open(m->path[i], O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
			unlink(m->path[i]);
		close(fd);
	}
}

static void json_signal_error(const char *msg, size_t len);

static void media_on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	const struct cli_media *m = media_live;
	if (sig == SIGBUS && (!m || si->si_code == BUS_MCEERR_AR || si->si_code == BUS_MCEERR_AO)) {
		/* not a run's mapped media (none live, or a machine-check memory error): the
		 * default action, when the fault repeats on return */
		signal(SIGBUS, SIG_DFL);
		return;
	}
	/* one thread says it and ends the process: others that fault at the same moment (every
	 * worker reading the shrunk file) wait for that, or the error was printed twice */
	static int taken;
	if (__atomic_exchange_n(&taken, 1, __ATOMIC_SEQ_CST))
		for (;;)
			pause();
	if (sig != SIGBUS)
		bam_nvme_emergency_stop(); /* (async-signal-safe: register stores) */
	if (m)
		media_unlink_created(m);
	if (sig == SIGBUS) {
		static const char msg[] = "bam: SIGBUS: a memory-mapped media file (emu media=file) shrank or went away "
					  "during the run; the run stopped, the media files it created are removed\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)w;
		json_signal_error(msg, sizeof(msg) - 2); /* (without its newline) */
		_exit(1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* mapped: the media are emu's memory-mapped files (SIGBUS when one is cut short) */
/* device: a real device (nvme): a SIGINT, SIGTERM or SIGHUP first disables its
 * controllers (bam_nvme_emergency_stop), so no DMA outlives the process */
static void media_watch(const struct cli_media *m, int mapped, int device)
{
	static int installed, installed_bus;
	media_live = m;
	if (!m->n && !device)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = media_on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	int sigs[4], ns = 0;
	if (!installed) {
		sigs[ns++] = SIGINT;
		sigs[ns++] = SIGTERM;
		sigs[ns++] = SIGHUP;
		installed = 1;
	}
	if (mapped && !installed_bus) {
		sigs[ns++] = SIGBUS;
		installed_bus = 1;
	}
	for (int i = 0; i < ns; i++) {
		struct sigaction old;
		/* a signal the caller ignores (nohup, a shell's background job) stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

void cli_media_keep(const struct cli_media *m)
{
	if (media_live == m)
		media_live = NULL;
}

static struct bam_backend_info backend_info(const char *backend);

/* The back end's own parser says which files the open takes (bam_backend_media): a
 * parser of our own here read count=0x2 as 0 and took path tokens with '=' for options,
 * so the graph file could be given as media without being recognised. A string the
 * parser refuses notes nothing: the open refuses it too. */
void cli_media_note(struct cli_media *m, const char *backend)
{
	m->n = 0;
	m->incomplete = 0;
	const char *b = *backend ? backend : "emu";
	const int rc = bam_backend_media(b, media_cb, m, NULL, 0);
	if (rc == -EINVAL) /* (a string the open refuses too) */
		m->n = 0;
	else if (rc) /* not all listed (out of memory): the caller refuses the run */
		m->incomplete = 1;
	const uint32_t fl = backend_info(b).flags;
	media_watch(m, !!(fl & BAM_BACKEND_F_MEDIA_MAPPED), !!(fl & BAM_BACKEND_F_WRITE_GUARDED));
}

const char *cli_media_same(const struct cli_media *m, int fd)
{
	struct stat a, b;
	if (m->incomplete) /* (the caller says so first: cli_media_note's incomplete) */
		return NULL;
	if (fstat(fd, &a))
		return NULL;
	for (int i = 0; i < m->n; i++) {
		if (stat(m->path[i], &b))
			continue;
		if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return m->path[i];
		/* a loop device over the graph file */
		struct loop_info64 li;
		int lfd = S_ISBLK(b.st_mode) ? open(m->path[i], O_RDONLY | O_CLOEXEC) : -1;
		if (lfd >= 0) {
			const int over = ioctl(lfd, LOOP_GET_STATUS64, &li) == 0 && (dev_t)li.lo_device == a.st_dev &&
					 (ino_t)li.lo_inode == a.st_ino;
			close(lfd);
			if (over)
				return m->path[i];
		}
	}
	return NULL;
}

void cli_media_forget(const struct cli_media *m)
{
	media_unlink_created_unlocked(m); /* (first: a signal meanwhile unlinks them too) */
	cli_media_keep(m);
}

/* What the back end's own parser says of 'backend' (bam_backend_info); for a string it
 * refuses, one controller and no flags: the open refuses it with the message. */
static struct bam_backend_info backend_info(const char *backend)
{
	struct bam_backend_info info;
	if (bam_backend_info(backend, &info, NULL, 0)) {
		memset(&info, 0, sizeof(info));
		info.n_ctrl = 1;
	}
	return info;
}

uint32_t cli_backend_count(const char *backend)
{
	return backend_info(backend).n_ctrl;
}

int cli_backend_media_gpu(const char *backend)
{
	return !!(backend_info(backend).flags & BAM_BACKEND_F_MEDIA_GPU);
}

int cli_backend_media_in_memory(const char *backend)
{
	return !!(backend_info(backend).flags & BAM_BACKEND_F_MEDIA_MEMORY);
}

int cli_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen)
{
	const int rc = bam_backend_sized(backend, total, align, out, outlen, NULL, 0);
	if (rc == -EINVAL) { /* (the precheck or the open refuses it, with the message) */
		snprintf(out, outlen, "%s", backend);
		return 0;
	}
	return rc;
}

size_t cli_utf8_len(const unsigned char *s)
{
	const unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	uint32_t cp, min;
	if ((c & 0xe0) == 0xc0) {
		n = 2, cp = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, cp = c & 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A control character: C0, DEL, or C1 (U+0080..U+009F, UTF-8 c2 80..c2 9f: 0x9b is a
 * terminal's CSI), at p, a valid UTF-8 sequence of n bytes. */
static int text_control(const unsigned char *p, size_t n)
{
	return (n == 1 && (p[0] < 0x20 || p[0] == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

/* s for a terminal: valid printable UTF-8 as it is; control characters and bytes that
 * are not valid UTF-8 as \xNN, one per byte, and a backslash as \\ (so the text
 * reads back unambiguously). Strings from a file (a graph's source field) can hold
 * anything, terminal escape sequences included. */
static void text_escaped(FILE *f, const char *s, int keep_lines)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = cli_utf8_len(p);
		if (keep_lines && *p == '\n') {
			fputc('\n', f);
			p++;
		} else if (!n || text_control(p, n)) {
			for (size_t i = 0; i < (n ? n : 1); i++)
				fprintf(f, "\\x%02x", p[i]);
			p += n ? n : 1;
		} else if (*p == '\\') {
			fputs("\\\\", f);
			p++;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
}

void cli_text_escaped(FILE *f, const char *s)
{
	text_escaped(f, s, 0);
}

void cli_msg_escaped(FILE *f, const char *s)
{
	text_escaped(f, s, 1);
}

void cli_eprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_veprintf(fmt, ap);
	va_end(ap);
}

void cli_veprintf(const char *fmt, va_list ap)
{
	char buf[1024], *t = buf;
	va_list aq;
	va_copy(aq, ap);
	int len = vsnprintf(buf, sizeof(buf), fmt, aq);
	va_end(aq);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(buf)) {
		if (!(t = malloc((size_t)len + 1))) {
			vfprintf(stderr, fmt, ap); /* (no memory: unescaped rather than nothing) */
			return;
		}
		vsnprintf(t, (size_t)len + 1, fmt, ap);
	}
	cli_msg_escaped(stderr, t);
	if (t != buf)
		free(t);
}

void cli_json_print(cJSON *o)
{
	char *t = cJSON_Print(o);
	printf("%s\n", t ? t : "null");
	free(t);
	cJSON_Delete(o);
}

void cli_json_add_str(struct cJSON *o, const char *key, const char *s)
{
	size_t len = strlen(s);
	char *t = malloc(3 * len + 1); /* each byte at most one 3-byte U+FFFD */
	if (!t) {
		cJSON_AddStringToObject(o, key, "?");
		return;
	}
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = cli_utf8_len(p);
		if (n) {
			memcpy(t + k, p, n);
			k += n;
			p += n;
		} else {
			memcpy(t + k, "\xef\xbf\xbd", 3);
			k += 3;
			p++;
		}
	}
	t[k] = 0;
	cJSON_AddStringToObject(o, key, t);
	free(t);
}

int cli_name_index(const char *const *names, int count, const char *s)
{
	for (int i = 0; i < count; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

double cli_now(void)
{
	return (double)bam_time_ns() / 1e9;
}

/* the range of the last number cli_u64 refused (cli_range_hint) */
static struct {
	const char *s; /* the string refused */
	uint64_t min, max;
} last_range;

int cli_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	last_range.s = NULL;
	char *end = NULL;
	errno = 0;
	/* rejects '-', '+', spaces, empty */
	unsigned long long v = s && isdigit((unsigned char)s[0]) ? strtoull(s, &end, 10) : 0;
	if (!s || !isdigit((unsigned char)s[0]) || errno || *end || v < min || v > max) {
		last_range.s = s;
		last_range.min = min;
		last_range.max = max;
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int cli_arg_names(const char *arg, const struct option *lo)
{
	if (!arg || strncmp(arg, "--", 2))
		return 0;
	arg += 2;
	const size_t n = strcspn(arg, "=");
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && !strncmp(arg, lo->name, n))
			return 1;
	return 0;
}

const char *cli_range_hint(const char *arg, char *buf, size_t len)
{
	buf[0] = 0;
	if (!arg || last_range.s != arg)
		return buf;
	if (last_range.max == last_range.min + 1)
		snprintf(buf, len, ": %llu or %llu", (unsigned long long)last_range.min, (unsigned long long)last_range.max);
	else
		snprintf(buf, len, ": a whole number from %llu to %llu", (unsigned long long)last_range.min,
			 (unsigned long long)last_range.max);
	last_range.s = NULL;
	return buf;
}

int cli_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int rc = cli_u64(s, min, max, &v);
	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

/* ---- failures under --json ------------------------------------------------------------ */

static struct {
	const char *command; /* non-NULL: --json was given */
	char *message;       /* the failure texts so far, joined by newlines (malloc) */
	int printed;         /* the subcommand printed its own JSON document */
} cli_json;

/* --json's error object from a signal handler: write(2) only, no allocation, and only
 * where nothing was printed yet (msg: plain text, nothing to escape) */
static void json_signal_error(const char *msg, size_t len)
{
	if (!cli_json.command || cli_json.printed)
		return;
	const char *parts[] = {"{\"error\":{\"command\":\"", cli_json.command, "\",\"message\":\"", NULL,
			       "\",\"exit_status\":1}}\n"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		ssize_t w = parts[i] ? write(STDOUT_FILENO, parts[i], strlen(parts[i])) : write(STDOUT_FILENO, msg, len);
		(void)w;
	}
}

int cli_json_init(const char *command, int argc, char **argv, const char *optstring, const struct option *lo,
		  int json_val)
{
	int saved = opterr, ch, want = 0;
	free(cli_json.message);
	memset(&cli_json, 0, sizeof(cli_json));
	/* on a copy of argv: GNU getopt_long moves the operands to the end as it goes, and
	 * a dry run over the real argv left `bfs G --level-loop` parsed as --level-loop=G */
	char **copy = malloc(((size_t)argc + 1) * sizeof(*copy));
	if (!copy)
		return 0;
	memcpy(copy, argv, ((size_t)argc + 1) * sizeof(*copy));
	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, copy, optstring, lo, NULL)) != -1)
		if (ch == json_val)
			want = 1;
	opterr = saved;
	optind = 0;
	free(copy);
	if (want)
		cli_json.command = command;
	return want;
}

static void keep(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int len = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (len < 0)
		return;
	size_t old = cli_json.message ? strlen(cli_json.message) : 0;
	char *m = realloc(cli_json.message, old + (size_t)len + 2);
	if (!m)
		return;
	cli_json.message = m;
	if (old)
		m[old++] = '\n';
	vsnprintf(m + old, (size_t)len + 1, fmt, ap);
	size_t n = old + (size_t)len;
	while (n > old && m[n - 1] == '\n') /* the line's own newline: not part of the message */
		m[--n] = 0;
	if (n == old && old) /* an empty text: no separator either */
		m[old - 1] = 0;
}

void cli_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_veprintf(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	keep(fmt, ap);
	va_end(ap);
}

void cli_fail_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	keep(fmt, ap);
	va_end(ap);
}

cJSON *cli_json_error(int status)
{
	char fb[256];
	const char *cmd = cli_json.command ? cli_json.command : "bam";
	if (!cli_json.message || !cli_json.message[0]) /* a failure that printed no text of its own */
		snprintf(fb, sizeof(fb), "%s%s: failed with exit status %d (see stderr)", cli_json.command ? "bam " : "",
			 cmd, status);
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "command", cmd);
	cli_json_add_str(e, "message", cli_json.message && cli_json.message[0] ? cli_json.message : fb);
	cJSON_AddNumberToObject(e, "exit_status", status);
	return e;
}

void cli_json_printed(void)
{
	cli_json.printed = 1;
}

int cli_exit(int status)
{
	if (status && cli_json.command && !cli_json.printed) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddItemToObject(j, "error", cli_json_error(status));
		char *s = cJSON_PrintUnformatted(j);
		if (s)
			printf("%s\n", s);
		free(s);
		cJSON_Delete(j);
		cli_json.printed = 1;
	}
	fflush(stdout);
	free(cli_json.message);
	cli_json.message = NULL;
	return status;
}

const char *cli_allow_write(const char *backend)
{
	static char buf[CLI_BACKEND_MAX + 32];
	struct bam_backend_info info;
	if (!backend || bam_backend_info(backend, &info, NULL, 0) || !(info.flags & BAM_BACKEND_F_WRITE_GUARDED) ||
	    (info.flags & BAM_BACKEND_F_WRITE_ALLOWED))
		return backend;
	snprintf(buf, sizeof(buf), "%s%sallow_write=1", backend, strchr(backend, ':') ? "," : ":");
	return buf;
}
