#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fail (exit 1, printing the first report with context) if a kernel log
# holds a BUG, WARNING, Oops, KASAN, lockdep, refcount, hung-task, RCU stall,
# kmemleak or "scheduling while atomic" report.
set -u
log=${1:?usage: splat.sh LOG}
pattern='BUG:|WARNING:|Oops|general protection fault|Kernel panic|KASAN|UBSAN|refcount_t:|scheduling while atomic|possible recursive locking|possible circular locking|INFO: task .* blocked for more than|rcu: INFO|self-detected stall|suspected memory leak|list_add corruption|list_del corruption|ODEBUG:'
if grep -qE "$pattern" "$log" 2>/dev/null; then
	line=$(grep -nE "$pattern" "$log" | head -n1 | cut -d: -f1)
	sed -n "$((line > 5 ? line - 5 : 1)),$((line + 40))p" "$log" >&2
	exit 1
fi
exit 0
