/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test programs that play several unprivileged users: a child process
 * drops to a uid of its own. Needs _GNU_SOURCE before any include.
 */
#ifndef RRXE_TESTS_VERBS_USERS_H
#define RRXE_TESTS_VERBS_USERS_H

#include <grp.h>
#include <sys/resource.h>
#include <unistd.h>

/* Drops the calling process to uid (and gid) without supplementary
 * groups, RLIMIT_MEMLOCK set to soft/hard first (while it may still raise
 * it); 0 or -1. */
static inline int become_user(uid_t uid, rlim_t memlock_soft, rlim_t memlock_hard)
{
	struct rlimit rl = { memlock_soft, memlock_hard };

	return setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	       setresuid(uid, uid, uid) ? -1 : 0;
}

#endif
