/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the CLI's subcommands. */
#ifndef BAM_CLI_UTIL_H
#define BAM_CLI_UTIL_H
#include <stddef.h>
#include <stdint.h>
/* For an "emu" back-end string without size= or path=, append size=<per_ctrl>
 * (per_ctrl = ceil(total / count), rounded up to a multiple of align and of 4096).
 * Other strings are copied. */
void cli_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen);
/* Number of controllers an "emu" string asks for (count=), else 1. */
uint32_t cli_backend_count(const char *backend);
double cli_now(void);
/* Index of s in names[0..count), or -1. */
int cli_name_index(const char *const *names, int count, const char *s);
/* Parse a decimal unsigned integer in [min, max]: no sign, no suffix, no overflow.
 * 0 or -EINVAL. */
int cli_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int cli_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
#endif
