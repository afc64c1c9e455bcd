// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for perftest in the bench guest: give perftest the TSC
 * rate the bench measured on the host (RRXE_TSC_MHZ), instead of its own
 * estimate.
 *
 * perftest times everything with rdtsc and converts cycles to time with
 * get_cpu_mhz(), which needs both a linear fit of rdtsc against
 * gettimeofday() with r^2 >= 0.9 and a "cpu MHz" line in /proc/cpuinfo;
 * otherwise it returns 0 and perftest prints 0.00 or inf. Under TCG the
 * guest kernel often cannot calibrate its TSC (no HPET or PM timer without
 * ACPI, and the PIT loop is too noisy when the host is busy): /proc/cpuinfo
 * then says 0 MHz and the guest clock is jiffies, which lose ticks. The
 * guest's rdtsc, though, is the host's TSC.
 *
 * So, when RRXE_TSC_MHZ is set:
 *   gettimeofday()           returns time derived from rdtsc at that rate;
 *   fopen("/proc/cpuinfo")   returns one line, "cpu MHz : RRXE_TSC_MHZ".
 * perftest's fit then finds exactly that rate and uses it. Nothing else in
 * perftest changes (its -D window still comes from alarm()).
 *
 * With RRXE_TSC_CLOCK_GETTIME=1 as well (fio in the storage cases, run with
 * clocksource=clock_gettime), clock_gettime() of CLOCK_MONOTONIC,
 * CLOCK_MONOTONIC_RAW and CLOCK_REALTIME also advances at the TSC rate
 * from its value when the process started, so that fio's run time, rates
 * and completion latencies are real time, not the guest clock's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <x86intrin.h>

static double mhz = -1;
static uint64_t tsc0;
static uint64_t us0;
static int cgt;
static struct timespec cgt0[8];

static int (*real_cgt)(clockid_t, struct timespec *);

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
	if (!real_cgt)
		real_cgt = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	return real_cgt(id, ts);
}

static void init(void)
{
	const char *e;
	struct timespec ts;

	if (mhz >= 0)
		return;
	e = getenv("RRXE_TSC_MHZ");
	mhz = e ? atof(e) : 0;
	e = getenv("RRXE_TSC_CLOCK_GETTIME");
	cgt = e && atoi(e) == 1;
	real_clock_gettime(CLOCK_MONOTONIC, &cgt0[CLOCK_MONOTONIC]);
	real_clock_gettime(CLOCK_MONOTONIC_RAW, &cgt0[CLOCK_MONOTONIC_RAW]);
	real_clock_gettime(CLOCK_REALTIME, &ts);
	cgt0[CLOCK_REALTIME] = ts;
	us0 = (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	tsc0 = __rdtsc();
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	uint64_t ns;

	init();
	if (mhz <= 0 || !cgt ||
	    (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW && id != CLOCK_REALTIME))
		return real_clock_gettime(id, ts);
	ns = (uint64_t)cgt0[id].tv_sec * 1000000000 + cgt0[id].tv_nsec +
	     (uint64_t)((__rdtsc() - tsc0) * 1000.0 / mhz);
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	uint64_t us;

	(void)tz;
	init();
	if (mhz <= 0) {
		struct timespec ts;

		real_clock_gettime(CLOCK_REALTIME, &ts);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
		return 0;
	}
	us = us0 + (uint64_t)((__rdtsc() - tsc0) / mhz);
	tv->tv_sec = us / 1000000;
	tv->tv_usec = us % 1000000;
	return 0;
}

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);
	char *buf;
	int n;

	if (!real)
		real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	init();
	if (mhz > 0 && path && strcmp(path, "/proc/cpuinfo") == 0) {
		n = asprintf(&buf, "cpu MHz\t\t: %.3f\n", mhz);
		if (n > 0)
			return fmemopen(buf, n, "r");
	}
	return real(path, mode);
}
