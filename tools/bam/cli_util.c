/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bam/atomic.h"
#include "cli_util.h"

uint32_t cli_backend_count(const char *backend)
{
	if (strncmp(backend, "emu", 3))
		return 1;
	const char *cs = strstr(backend, "count=");
	unsigned long n = cs ? strtoul(cs + 6, NULL, 10) : 1;
	return n ? (uint32_t)n : 1;
}

void cli_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen)
{
	if (strncmp(backend, "emu", 3) || strstr(backend, "size=") || strstr(backend, "path=")) {
		snprintf(out, outlen, "%s", backend);
		return;
	}
	uint64_t count = cli_backend_count(backend);
	uint64_t per = (total + count - 1) / count;
	/* whole lines, and whole 4 KiB blocks: a multiple of any LBA size (512 or 4096) the
	 * back-end string may ask for, so a line/LBA mismatch is reported as such */
	if (align < 4096)
		align = 4096;
	per = (per + align - 1) / align * align;
	snprintf(out, outlen, "%s%ssize=%llu", backend, strchr(backend, ':') ? "," : ":", (unsigned long long)per);
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

int cli_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL; /* rejects '-', '+', spaces, empty */
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int rc = cli_u64(s, min, max, &v);
	if (!rc)
		*out = (uint32_t)v;
	return rc;
}
