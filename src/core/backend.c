/* SPDX-License-Identifier: MIT */
/* Back-end registry (the built-in table and run-time registrations) and the helpers back
 * ends share: option strings, file kinds. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include "bam/backend.h"
#include "ctx_internal.h"

/* The back ends of a program's own, registered at run time (bam_backend_register), after
 * the built-in ones (bam_backends_builtin, generated from src/backends/<name>/). */
#define BAM_MAX_BACKENDS 16
static const struct bam_backend_ops *registry[BAM_MAX_BACKENDS];
static unsigned n_registered;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct bam_backend_ops *builtin_find(const char *name, size_t len)
{
	for (const struct bam_backend_ops *const *b = bam_backends_builtin; *b; b++)
		if (strlen((*b)->name) == len && !strncmp((*b)->name, name, len))
			return *b;
	return NULL;
}

int bam_backend_register(const struct bam_backend_ops *ops)
{
	int rc = 0;
	pthread_mutex_lock(&registry_lock);
	if (builtin_find(ops->name, strlen(ops->name)))
		rc = -EEXIST;
	for (unsigned i = 0; i < n_registered && !rc; i++)
		if (!strcmp(registry[i]->name, ops->name))
			rc = -EEXIST;
	if (!rc && n_registered == BAM_MAX_BACKENDS)
		rc = -ENOSPC;
	if (!rc)
		registry[n_registered++] = ops;
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

const struct bam_backend_ops *bam_backend_find(const char *name, size_t len)
{
	const struct bam_backend_ops *ops = builtin_find(name, len);
	if (ops)
		return ops;
	pthread_mutex_lock(&registry_lock);
	for (unsigned i = 0; i < n_registered && !ops; i++)
		if (strlen(registry[i]->name) == len && !strncmp(registry[i]->name, name, len))
			ops = registry[i];
	pthread_mutex_unlock(&registry_lock);
	return ops;
}

void bam_backend_names(char *buf, size_t len)
{
	size_t at = 0, k = 0;
	buf[0] = 0;
	for (const struct bam_backend_ops *const *b = bam_backends_builtin; *b && at < len; b++, k++) {
		const int n = snprintf(buf + at, len - at, "%s%s", k ? ", " : "", (*b)->name);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	pthread_mutex_lock(&registry_lock);
	for (unsigned i = 0; i < n_registered && at < len; i++, k++) {
		const int n = snprintf(buf + at, len - at, "%s%s", k ? ", " : "", registry[i]->name);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	pthread_mutex_unlock(&registry_lock);
}

int bam_kv_parse(const char *args, int (*cb)(void *arg, const char *k, const char *v), void *arg)
{
	char *copy = strdup(args ? args : "");
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *v = "";
		if (eq) {
			*eq = 0;
			v = eq + 1;
		}
		if ((rc = cb(arg, tok, v)) != 0)
			break;
	}
	free(copy);
	return rc;
}

int bam_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (~0ull >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* the other processes that have the file (dev, ino) open: "pid 123 (bam), pid 456
 * (dd)" into buf, "" if none could be seen */
static void media_holders(dev_t dev, ino_t ino, char *buf, size_t len)
{
	buf[0] = 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	size_t at = 0;
	int found = 0;
	const long self = (long)getpid();
	struct dirent *de;
	while ((de = readdir(proc)) && found < 4) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/%ld/fd", pid);
		DIR *fds = opendir(fdpath);
		if (!fds)
			continue;
		struct dirent *fe;
		int has = 0;
		while (!has && (fe = readdir(fds))) {
			char lp[64 + sizeof(fe->d_name)];
			struct stat st;
			if (fe->d_name[0] == '.')
				continue;
			snprintf(lp, sizeof(lp), "%s/%s", fdpath, fe->d_name);
			has = stat(lp, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
		}
		closedir(fds);
		if (!has)
			continue;
		char comm[64] = "?", cp[64];
		snprintf(cp, sizeof(cp), "/proc/%ld/comm", pid);
		FILE *f = fopen(cp, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%spid %ld (%s)", found ? ", " : "", pid, comm);
		found++;
	}
	closedir(proc);
}

int bam_media_lock(int fd, int writable, const char *who, const char *path, char *err, size_t errlen)
{
	struct flock fl = {.l_type = writable ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	const int e = errno;
	if (e != EAGAIN && e != EACCES) {
		snprintf(err, errlen, "%s: %s: cannot lock it: %s", who, path, strerror(e));
		return -e;
	}
	char holders[256] = "";
	struct stat st;
	if (fstat(fd, &st) == 0)
		media_holders(st.st_dev, st.st_ino, holders, sizeof(holders));
	snprintf(err, errlen,
		 "%s: %s is in use by %s: two users of one media file or device overwrite each other's data "
		 "(wait for it to end, or give another file)",
		 who, path, holders[0] ? holders : "another open of it (in this process, or by a process whose files cannot be read)");
	return -EBUSY;
}

void bam_media_open_hint(const char *path, int e, int creating, char *buf, size_t len)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	struct stat st;
	const int dir_ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	buf[0] = 0;
	switch (e) {
	case ENOENT:
		if (!dir_ok)
			snprintf(buf, len, " (its folder %s does not exist: create it first, e.g. mkdir -p)", dir);
		else if (!creating)
			snprintf(buf, len, " (give size= to create it)");
		break;
	case ENOTDIR:
		snprintf(buf, len, " (a component of the path is not a folder)");
		break;
	case EROFS:
		snprintf(buf, len, " (%s is on a read-only file system: give a path on a writable one)", path);
		break;
	case ENOSPC:
	case EDQUOT:
		snprintf(buf, len, " (the file system of %s is full%s)", dir, e == EDQUOT ? ": disk quota reached" : "");
		break;
	case EACCES:
	case EPERM:
		if (creating)
			snprintf(buf, len, " (no permission to create files in %s)", dir);
		else
			snprintf(buf, len, " (no permission to open it)");
		break;
	default:
		break;
	}
}

const char *bam_file_kind(unsigned mode)
{
	const mode_t m = (mode_t)mode;
	return S_ISREG(m)    ? "a regular file"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISLNK(m)  ? "a symbolic link"
			     : "not a file";
}
