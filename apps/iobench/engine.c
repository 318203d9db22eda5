/* SPDX-License-Identifier: MIT */
/* What the I/O and array benchmarks share (engine.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "bam/backend.h"
#include "engine.h"

void ib_say(bam_iobench_msg_fn fn, void *arg, enum bam_iobench_msg_kind kind, const char *fmt, ...)
{
	if (!fn)
		return;
	char buf[1536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fn(arg, kind, buf);
}

int ib_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#ifdef BAM_HAVE_CUDA
/* The GPU runtime's probe (src/core/gpu_rt.c; bam_ctx_open resolves the target with
 * it): the one library function used here that bam.h does not declare. */
extern int bam_gpu_available(void);
#endif

int ib_gpu_available(void)
{
#ifdef BAM_HAVE_CUDA
	return bam_gpu_available();
#else
	return 0;
#endif
}

enum bam_target ib_target(enum bam_target t)
{
	if (t == BAM_TARGET_AUTO)
		t = ib_gpu_available() ? BAM_TARGET_GPU : BAM_TARGET_CPU;
	return t;
}

int ib_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen)
{
	const int rc = bam_backend_sized(backend, total, align, out, outlen, NULL, 0);
	if (rc == -EINVAL) { /* (the precheck or the open refuses it, with the message) */
		snprintf(out, outlen, "%s", backend);
		return 0;
	}
	return rc;
}

uint32_t ib_backend_flags(const char *backend)
{
	struct bam_backend_info info;
	if (bam_backend_info(backend, &info, NULL, 0))
		return 0;
	return info.flags;
}

int ib_open_fail(const char *given, int rc, const char *liberr, char *err, size_t errlen)
{
	if (rc == -ENODEV) /* --target=gpu without one: not the back end's fault */
		return ib_fail(err, errlen, rc, "%s", liberr);
	return ib_fail(err, errlen, rc, "--backend=%s: %s", given, liberr);
}

int ib_precheck(const char *given, const char *resolved, const char *no_gpu, char *err, size_t errlen)
{
	char e[512];
	if (bam_backend_check(resolved, e, sizeof(e)))
		return ib_open_fail(given, -EINVAL, e, err, errlen);
	if (no_gpu && (ib_backend_flags(resolved) & BAM_BACKEND_F_MEDIA_GPU)) {
		snprintf(e, sizeof(e), "media=gpu puts the namespace in GPU memory: it needs the GPU target (%s; use media=dram)",
			 no_gpu);
		return ib_open_fail(given, -EINVAL, e, err, errlen);
	}
	return 0;
}
