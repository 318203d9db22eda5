/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the CLI's subcommands. */
#ifndef BAM_CLI_UTIL_H
#define BAM_CLI_UTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
/* bam_backend_sized: size=<per controller> added where the back end creates media of a
 * size the caller may choose; a string the back end refuses is copied (the open refuses
 * it with the message). 0, or -EOVERFLOW when that size passes 2^64. */
int cli_backend_sized(const char *backend, uint64_t total, uint64_t align, char *out, size_t outlen);
/* 1 when the back end's media are in GPU memory (bam_backend_info), else 0: where a
 * benchmark's physical baseline must read from. */
int cli_backend_media_gpu(const char *backend);
/* Whether the back end's media are in memory (bam_backend_info), zero-filled in every
 * run and gone when it ends. */
int cli_backend_media_in_memory(const char *backend);
/* Longest --backend value the tools take: they append ",size=N" to an emu string in a
 * 1024-byte buffer. */
#define CLI_BACKEND_MAX 960
/* The helpers below that print take 'cmd', the prefix of their messages: "bam " and the
 * subcommand, e.g. "bam bench", "bam bfs" ("bam demo: bfs" for demo's BFS run). */
/* A --backend value as given: 0, or 2 (the exit status; the message printed) when it
 * is longer than CLI_BACKEND_MAX (a longer one was cut without a word). */
int cli_backend_arg(const char *cmd, const char *backend);
/* bam_ctx_open refused the user's --backend value 'given' (rc, the library's message
 * err): prints "cmd: --backend=given: err" and returns the exit status, 2 when the
 * string itself was refused (-EINVAL: unknown back end, key or value), else 1; for
 * -ENODEV (--target=gpu without a GPU) "cmd: err" and 2. */
int cli_backend_fail(const char *cmd, const char *given, int rc, const char *err);
/* Before long work, refuse what bam_ctx_open would refuse of the user's --backend value
 * 'given': the string the run will open ('resolved', e.g. with size= added) as
 * bam_backend_check parses it, and GPU media when the run has no GPU (no_gpu: why, as
 * "this run is on the CPU target"; NULL on the GPU target). 0, or 2 (the exit status;
 * the message printed as cli_backend_fail prints it). */
int cli_backend_precheck(const char *cmd, const char *given, const char *resolved, const char *no_gpu);
/* The files a back-end string names: emu's path= (PATH.0 .. PATH.{count-1} when
 * count > 1) and the file back end's paths. */
#define CLI_MEDIA_MAX 32 /* BAM_MAX_CTRLS: as many as a back end may have */
struct cli_media {
	int n;
	int incomplete;             /* a name could not be noted (too many, too long) */
	char path[CLI_MEDIA_MAX][4112];
	int created[CLI_MEDIA_MAX]; /* did not exist when noted */
};
/* Note the files 'backend' names and which of them do not exist yet. From then until
 * cli_media_forget or cli_media_keep, a SIGINT, SIGTERM or SIGHUP removes the noted files
 * that did not exist (then ends the process as the signal would), and a SIGBUS (emu's
 * memory-mapped media file shrank under the run) removes them, says so and exits 1. */
void cli_media_note(struct cli_media *m, const char *backend);
/* After a run that succeeded: its media files stay, whatever signal comes later. */
void cli_media_keep(const struct cli_media *m);
/* The name of the noted file that is the file open as fd (the same device and
 * inode), or NULL: a run would overwrite its own input. */
const char *cli_media_same(const struct cli_media *m, int fd);
/* After a failed run: remove the noted files that did not exist when noted, except one
 * another process holds (its media lock): that process created it meanwhile. */
void cli_media_forget(const struct cli_media *m);
/* Number of controllers the back-end string asks for (1 for a string the back end refuses). */
uint32_t cli_backend_count(const char *backend);
double cli_now(void);
/* Index of s in names[0..count), or -1. */
int cli_name_index(const char *const *names, int count, const char *s);

/* Length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 if the bytes there are
 * not one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
size_t cli_utf8_len(const unsigned char *s);
/* s for a terminal: printable UTF-8 as it is, control characters and invalid bytes as
 * \xNN, a backslash as \\ (file names and strings from files can hold escape
 * sequences). */
void cli_text_escaped(FILE *f, const char *s);
/* The same for a message of one or more lines: its newlines kept, every other control
 * character escaped (the paths and values a message quotes come from the user). */
void cli_msg_escaped(FILE *f, const char *s);
/* fprintf(stderr, ...) with the text passed through cli_msg_escaped: for every message
 * that quotes user input (paths, option values, back-end strings). */
void cli_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_veprintf(const char *fmt, va_list ap);

/* cJSON_AddStringToObject with a copy of s whose bytes that are not valid UTF-8 are
 * each replaced by U+FFFD (file names are bytes; JSON text is UTF-8, RFC 8259 8.1). */
struct cJSON;
void cli_json_add_str(struct cJSON *o, const char *key, const char *s);
/* Print o (indented) and a newline on stdout, then free o. */
void cli_json_print(struct cJSON *o);
/* Parse a decimal unsigned integer in [min, max]: no sign, no suffix, no overflow.
 * 0 or -EINVAL. */
int cli_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int cli_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* ": a whole number from MIN to MAX" (or ": 0 or 1") when the last number cli_u64 or
 * cli_u32 refused was the string arg (the same pointer: an option's optarg), else "";
 * written into buf, returned. For the messages of refused option values. */
const char *cli_range_hint(const char *arg, char *buf, size_t len);
/* Does the command-line word arg ("--NAME" or "--NAME=VALUE") name an option of lo (a
 * getopt_long table)? For saying which command an option belongs to. */
struct option;
int cli_arg_names(const char *arg, const struct option *lo);

/* ---- failures under --json ------------------------------------------------------------
 * With --json, a failing subcommand still prints one JSON object on stdout (README,
 * "Machine-readable output"):
 *   {"error": {"command": "bfs", "message": "...", "exit_status": 1}}
 * message: the failure's text as printed on stderr (several lines joined by newlines, no
 * trailing newline); exit_status: the process's exit status, unchanged.
 * How: before parsing its options, a subcommand calls cli_json_init(), which finds out
 * whether --json is among them (so a bad value of an option before --json is covered
 * too). Its failures go through cli_fail() (stderr as before, and the text kept). main()
 * passes every exit status through cli_exit(), which prints the error object when the
 * status is non-zero and the subcommand printed no JSON document itself. A subcommand
 * that prints its own document although it fails (results with errors or a verification
 * mismatch in them) adds cli_json_error() to it as "error" and calls cli_json_printed(). */
struct option;
struct cJSON;
/* Start a subcommand (e.g. "bfs", "graph info"): forget the failures kept so far, and
 * return 1 if getopt_long with these options finds json_val (the --json entry) in argv
 * (a dry run: no messages; optind is 0 afterwards, so the real parse starts afresh). */
int cli_json_init(const char *command, int argc, char **argv, const char *optstring, const struct option *lo,
		  int json_val);
/* printf to stderr, and keep the text as the JSON error message */
void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* keep the text as the JSON error message only: where stderr already has the human
 * diagnostic in another form (getopt's message, the usage) */
void cli_fail_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"command", "message", "exit_status"} for a document the caller prints (owned by it) */
struct cJSON *cli_json_error(int status);
void cli_json_printed(void);
/* the exit status of main(), after the error object if one is due */
int cli_exit(int status);
/* --allow-write: 'backend' with allow_write=1 added when its back end guards writes
 * (bam_backend_info's BAM_BACKEND_F_WRITE_GUARDED: a real device), else 'backend'
 * itself. Static storage: valid until the next call. */
const char *cli_allow_write(const char *backend);
#endif
