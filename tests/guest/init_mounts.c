// SPDX-License-Identifier: GPL-2.0
/*
 * The test guest's file systems, mounted by one static program: what
 * tests/guest/init does first, before it runs the job's script.
 *
 * init used to do this with some twenty programs (mount, mkdir, ln, ip),
 * each loaded with its libraries from the uncached root share: 12 to 14 s
 * of every boot of a debug guest under TCG. This program, static, starts
 * in a tenth of a second and makes the same system calls. init falls back
 * to its shell commands if the program is missing or fails (which recovers
 * from a failure before the shares are mounted: a 9p share mounts once).
 *
 * Exit status: 0 if everything is mounted, 1 (with a message on stderr)
 * at the first step that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define P9 "trans=virtio,version=9p2000.L,msize=262144"

static int failed(const char *what, const char *where)
{
	fprintf(stderr, "init_mounts: %s %s: %s\n", what, where, strerror(errno));
	return 1;
}

static int mnt(const char *src, const char *dir, const char *type, unsigned long flags,
	       const char *opts)
{
	if (mount(src, dir, type, flags, opts))
		return failed("mount", dir);
	return 0;
}

static int dir(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST)
		return failed("mkdir", path);
	return 0;
}

/* Whether PATH is a mount point: on another device than its parent. */
static int mounted(const char *path, const char *parent)
{
	struct stat a, b;

	return !stat(path, &a) && !stat(parent, &b) && a.st_dev != b.st_dev;
}

static int lo_up(void)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return failed("socket", "lo");
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		close(s);
		return failed("SIOCGIFFLAGS", "lo");
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		close(s);
		return failed("SIOCSIFFLAGS", "lo");
	}
	close(s);
	return 0;
}

int main(void)
{
	int fd;

	/*
	 * /usr and /etc again, cached: see init for why the root share is
	 * not and these are.
	 */
	if (mnt("proc", "/proc", "proc", 0, NULL) ||
	    mnt("usr", "/usr", "9p", MS_RDONLY, P9 ",cache=loose") ||
	    mnt("etc", "/etc", "9p", MS_RDONLY, P9 ",cache=loose") ||
	    mnt("sysfs", "/sys", "sysfs", 0, NULL))
		return 1;
	if (!mounted("/dev", "/") && mnt("devtmpfs", "/dev", "devtmpfs", 0, NULL))
		return 1;
	if (dir("/dev/pts") || dir("/dev/shm"))
		return 1;
	if (access("/dev/fd", F_OK) && symlink("/proc/self/fd", "/dev/fd"))
		return failed("symlink", "/dev/fd");
	if (mnt("devpts", "/dev/pts", "devpts", 0, NULL) ||
	    mnt("tmpfs", "/dev/shm", "tmpfs", 0, NULL) ||
	    mnt("tmpfs", "/run", "tmpfs", 0, NULL) ||
	    mnt("tmpfs", "/tmp", "tmpfs", 0, NULL) ||
	    mnt("tmpfs", "/var/tmp", "tmpfs", 0, NULL) ||
	    mnt("tmpfs", "/var/lib", "tmpfs", 0, NULL) ||
	    mnt("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL))
		return 1;
	/* kmemleak scans only when asked: see init. */
	fd = open("/sys/kernel/debug/kmemleak", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "scan=off", 8) != 8)
			fprintf(stderr, "init_mounts: kmemleak scan=off: %s\n", strerror(errno));
		close(fd);
	}
	if (dir("/run/rrxe") || dir("/run/results") || dir("/run/netns") ||
	    mnt("rrxe", "/run/rrxe", "9p", MS_RDONLY, P9 ",cache=loose") ||
	    mnt("results", "/run/results", "9p", 0, P9))
		return 1;
	return lo_up();
}
