/* SPDX-License-Identifier: MIT */
/* A per-test-program temporary folder for the graph tests: tmpdir_make() in the group
 * setup, tmp(NAME) for paths inside it, tmpdir_remove() in the teardown. */
#ifndef BAM_TEST_TMPDIR_H
#define BAM_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir[256];

/* Path of NAME in the folder; the last four results stay valid. */
static const char *tmp(const char *name)
{
	static char p[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tmpdir, name);
	return p[k];
}

/* Create $TMPDIR/PREFIX.XXXXXX (or under /tmp). 0 or -1. */
static int tmpdir_make(const char *prefix)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/%s.XXXXXX", t && *t ? t : "/tmp", prefix);
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* Remove the folder and the files in it. */
static int tmpdir_remove(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char p[1024];

	if (d) {
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(tmpdir);
	return 0;
}

#endif
