/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every verbs helper program prints: one line per check, "PASS name"
 * or "FAIL name: why" (or "SKIP name: why"), and opening a device by name.
 * tests/guest/verbs.sh turns the lines into results.
 */
#ifndef RRXE_TESTS_VERBS_CHECK_H
#define RRXE_TESTS_VERBS_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

static int failures;

static inline void pass(const char *name)
{
	printf("PASS %s\n", name);
	fflush(stdout);
}

static inline void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void skip(const char *name, const char *why)
{
	printf("SKIP %s: %s\n", name, why);
	fflush(stdout);
}

/* check(name, cond, fmt, ...): PASS if cond, else FAIL with the message. */
#define check(name, cond, ...) do { if (cond) pass(name); else fail(name, __VA_ARGS__); } while (0)

static inline const char *err_str(int err) { return err ? strerror(err) : "success"; }

static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* The device named name with its GID gid_index in *gid, or NULL after a
 * FAIL setup line. */
static inline struct ibv_context *open_dev_gid(const char *name, int gid_index, union ibv_gid *gid)
{
	struct ibv_context *ctx = open_dev(name);

	if (!ctx || ibv_query_gid(ctx, 1, gid_index, gid)) {
		fail("setup", "open %s or query GID %d: %s", name, gid_index, strerror(errno));
		return NULL;
	}
	return ctx;
}

/* VmPin of process pid in KiB (its mm->pinned_vm: pinned MR pages and
 * what the driver charges beside them), or -1. */
static inline long vm_pin_kib(pid_t pid)
{
	char p[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

#endif
