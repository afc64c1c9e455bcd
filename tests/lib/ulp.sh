# SPDX-License-Identifier: GPL-2.0
#
# The kernel's storage protocols over an RDMA device, for the guest tests
# tests/guest/ulp.sh (loopback on one device) and tests/twohost/ulp.sh (two
# VMs). Sourced after tests/guest/lib.sh and tests/traffic/lib.sh.
#
# Each ULP has a target side and a host side:
#   nvme  nvmet-rdma (configfs, a memory-backed null_blk namespace with
#         512-byte blocks) and nvme-rdma (`nvme connect -t rdma`)
#   iser  LIO's iSCSI target with an iSER network portal (ib_isert, a
#         fileio backstore on tmpfs) and open-iscsi's iser transport (ib_iser)
#   srp   LIO's SRP target (ib_srpt, a fileio backstore on tmpfs, listening
#         on rdma_cm port 5555) and ib_srp (add_target dest=IP:5555)
#   nfs   nfsd listening on "rdma 20049", exporting a tmpfs directory, and
#         the NFS client mounting it with proto=rdma,vers=4.2 (rpcrdma)
# ulp_target_up ULP ADDR MIB [INITIATORS...], ulp_target_down ULP,
# ulp_host_up ULP ADDR DEV [INFO] (sets ULP_PATH, the block device or the
# file to run fio on), ulp_host_down ULP. ulp_target_info ULP prints what
# the host needs from the target (SRP: the target's service GUID).
# ulp_fio NAME PATH MIB write|verify runs the verified fio job (see there).
# step NAME CMD... runs a step in this shell with one result.

ULP_DIR=/tmp/ulp
CFS=/sys/kernel/config
NVME_NQN=nqn.2014-08.org.rrxe:ulp
ISCSI_IQN=iqn.2003-01.org.rrxe:ulp
SRP_PORT=5555
NFS_PORT=20049
mkdir -p "$ULP_DIR"

# ulp_modules: makes the kernel's loadable modules (C rdma_rxe and the
# storage ULPs, installed by scripts/kernel.sh under the build's modroot/)
# loadable by name: `modprobe` here becomes `modprobe -d MODROOT`, and so
# does the kernel's own request_module() (ib_isert when an iSCSI portal
# turns on iSER, for one), through a wrapper named in
# /proc/sys/kernel/modprobe. (The guest's /lib is the host's, read-only,
# and has no modules of this kernel.) Also mounts configfs.
ulp_modules() {
	local kdir
	kdir=$(cat "$OUT/kernel-dir" 2>/dev/null) || { echo "no $OUT/kernel-dir (scripts/module.sh)" >&2; return 1; }
	MODROOT=$kdir/modroot
	[ -d "$MODROOT/lib/modules/$(uname -r)" ] ||
		{ echo "no modules for $(uname -r) under $MODROOT" >&2; return 1; }
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$MODROOT" >"$ULP_DIR/modprobe" &&
		chmod 755 "$ULP_DIR/modprobe" && echo "$ULP_DIR/modprobe" >/proc/sys/kernel/modprobe || return 1
	mountpoint -q $CFS || mount -t configfs configfs $CFS
}
modprobe() { command modprobe -d "$MODROOT" "$@"; }

# step NAME CMD...: runs CMD in this shell (it may set variables), its
# output in the log; one result.
step() {
	local name=$1 log=$ULP_DIR/step.log t0=$SECONDS
	shift
	"$@" >"$log" 2>&1
	local rc=$?
	sed "s/^/  | /" "$log"
	echo "# $name: $((SECONDS - t0))s (exit $rc), $((SECONDS - suite_start))s into the suite"
	if [ $rc = 0 ]; then
		pass "$name"
	else
		fail "$name" "'$*' exited $rc: $(grep -v '^ *$' "$log" | tail -n 3 | tr '\n' ' ' | cut -c1-300)"
	fi
	return $rc
}

# What the device $ULP_DEV holds (restrack), per kind: "qp 1 cq 1 ..." from
# `rdma resource show`.
res_of() { rdma resource show | grep " $ULP_DEV: " | sed 's/^[0-9]*: [^:]*: //'; }
res_count() { res_of | tr ' ' '\n' | awk -v k="$1" 'p { print; exit } $0 == k { p = 1 }'; }

# res_base: notes what the device holds now; res_back NAME: one result,
# no QP, cm_id or MR beyond what res_base noted.
declare -A BASE
res_base() { local k; for k in qp cm_id mr; do BASE[$k]=$(res_count $k); done; }
res_back() {
	local k got bad=
	for k in qp cm_id mr; do
		got=$(res_count $k)
		[ "$got" = "${BASE[$k]}" ] || bad+="$k $got (was ${BASE[$k]}) "
	done
	if [ -z "$bad" ]; then
		pass "$1"
	else
		fail "$1" "$bad; $(rdma resource show qp link "$ULP_DEV/1" 2>&1 | grep -v 'lqpn 1 ' | head -n 3 | tr '\n' ' ')"
	fi
}

# A small wait that prints what it waited for when it gives up.
ulp_wait() {
	local secs=$1
	shift
	wait_for "$secs" "$@" || { echo "timed out after ${secs}s: $*" >&2; return 1; }
}

# --- NVMe over Fabrics --------------------------------------------------------

# The host identity nvme-cli would read from /etc/nvme (absent here).
NVME_HOSTID=$(cat /proc/sys/kernel/random/uuid)
NVME_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$NVME_HOSTID

nvme_target_up() {
	local addr=$1 mib=$2 nb=$CFS/nullb/nullb-ulp ss=$CFS/nvmet/subsystems/$NVME_NQN port=$CFS/nvmet/ports/1
	modprobe nvmet-rdma || return 1   # built in or a module
	mkdir "$nb" && echo 1 >"$nb/memory_backed" && echo 512 >"$nb/blocksize" &&
		echo "$mib" >"$nb/size" && echo 1 >"$nb/power" || return 1
	mkdir "$ss" && echo 1 >"$ss/attr_allow_any_host" && mkdir "$ss/namespaces/1" &&
		echo -n /dev/nullb-ulp >"$ss/namespaces/1/device_path" &&
		echo 1 >"$ss/namespaces/1/enable" || return 1
	mkdir "$port" && echo ipv4 >"$port/addr_adrfam" && echo rdma >"$port/addr_trtype" &&
		echo "$addr" >"$port/addr_traddr" && echo 4420 >"$port/addr_trsvcid" &&
		ln -s "$ss" "$port/subsystems/$NVME_NQN"
}

nvme_target_down() {
	local ss=$CFS/nvmet/subsystems/$NVME_NQN port=$CFS/nvmet/ports/1 rc=0
	[ -L "$port/subsystems/$NVME_NQN" ] && { rm "$port/subsystems/$NVME_NQN" || rc=1; }
	[ -d "$port" ] && { rmdir "$port" || rc=1; }
	[ -d "$ss/namespaces/1" ] && { echo 0 >"$ss/namespaces/1/enable"; rmdir "$ss/namespaces/1" || rc=1; }
	[ -d "$ss" ] && { rmdir "$ss" || rc=1; }
	[ -d "$CFS/nullb/nullb-ulp" ] && { echo 0 >"$CFS/nullb/nullb-ulp/power"; rmdir "$CFS/nullb/nullb-ulp" || rc=1; }
	return $rc
}

# The controller (nvmeN) connected to our subsystem over rdma, if any.
nvme_ctrl() {
	local c
	for c in /sys/class/nvme-fabrics/ctl/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$NVME_NQN" ] && [ "$(cat "$c/transport")" = rdma ] &&
			{ basename "$c"; return 0; }
	done
	return 1
}

nvme_ns_dev() {
	local c n
	c=$(nvme_ctrl) || return 1
	for n in /sys/class/nvme-fabrics/ctl/$c/nvme*n1; do
		[ -e "$n" ] && [ -b "/dev/$(basename "$n")" ] && [ "$(cat "$n/size")" != 0 ] &&
			{ echo "/dev/$(basename "$n")"; return 0; }
	done
	return 1
}

# nvme_host_up ADDR: connects (with the options in NVME_OPTS, if any).
nvme_host_up() {
	local addr=$1
	modprobe nvme-rdma || return 1
	# shellcheck disable=SC2086
	nvme connect -t rdma -a "$addr" -s 4420 -n "$NVME_NQN" \
		--hostnqn="$NVME_HOSTNQN" --hostid="$NVME_HOSTID" ${NVME_OPTS:-} || return 1
	ulp_wait 60 nvme_ns_dev || return 1
	ULP_PATH=$(nvme_ns_dev)
}

nvme_host_down() {
	local out
	out=$(nvme disconnect -n "$NVME_NQN" 2>&1)
	echo "$out"
	printf '%s' "$out" | grep -q 'disconnected 1 controller' && ! nvme_ctrl >/dev/null
}

# --- LIO backstores (iSER and SRP targets) -----------------------------------

# lio_backstore NAME MIB: a fileio backstore on a tmpfs file; prints its
# configfs path.
lio_backstore() {
	local d=$CFS/target/core/fileio_0/$1 f=$ULP_DIR/$1.img
	truncate -s "$2M" "$f" || return 1
	mkdir -p "$d" && echo "fd_dev_name=$f,fd_dev_size=$(($2 << 20))" >"$d/control" &&
		echo 1 >"$d/enable" || return 1
	echo "$d"
}

lio_backstore_down() {
	local d=$CFS/target/core/fileio_0/$1
	[ -d "$d" ] && { rmdir "$d" || return 1; }
	rm -f "$ULP_DIR/$1.img"
}

# The first disk (sdX) under a sysfs directory of a SCSI host or session.
scsi_disk_under() {
	local b
	for b in "$1"/target*/*:*:*:*/block/*; do
		[ -b "/dev/$(basename "$b")" ] && { echo "/dev/$(basename "$b")"; return 0; }
	done
	return 1
}

# --- iSER ---------------------------------------------------------------------

iser_target_up() {
	local addr=$1 mib=$2 bs tpg=$CFS/target/iscsi/$ISCSI_IQN/tpgt_1
	modprobe ib_isert || return 1
	bs=$(lio_backstore iser "$mib") || return 1
	mkdir -p "$tpg/lun/lun_0" && ln -s "$bs" "$tpg/lun/lun_0/iser" || return 1
	mkdir "$tpg/np/$addr:3260" && echo 1 >"$tpg/np/$addr:3260/iser" || return 1
	echo 0 >"$tpg/attrib/authentication" && echo 1 >"$tpg/attrib/generate_node_acls" &&
		echo 1 >"$tpg/attrib/cache_dynamic_acls" && echo 0 >"$tpg/attrib/demo_mode_write_protect" &&
		echo 1 >"$tpg/enable"
}

iser_target_down() {
	local t=$CFS/target/iscsi/$ISCSI_IQN rc=0 np
	if [ -d "$t/tpgt_1" ]; then
		echo 0 >"$t/tpgt_1/enable"
		for np in "$t"/tpgt_1/np/*; do
			[ -d "$np" ] || continue
			echo 0 >"$np/iser" 2>/dev/null
			rmdir "$np" || rc=1
		done
		rm -f "$t"/tpgt_1/lun/lun_0/iser
		rmdir "$t/tpgt_1/lun/lun_0" "$t/tpgt_1" || rc=1
	fi
	[ -d "$t" ] && { rmdir "$t" || rc=1; }
	lio_backstore_down iser || rc=1
	return $rc
}

# open-iscsi keeps its node database in /etc/iscsi and iscsid its lock and
# pid in /run: the guest root is read-only, so /etc/iscsi becomes a tmpfs
# holding a copy of the host's configuration (and an initiator name).
iscsi_etc() {
	mountpoint -q /etc/iscsi && return 0
	mkdir -p "$ULP_DIR/etc-iscsi" /run/lock/iscsi &&
		cp -a /etc/iscsi/. "$ULP_DIR/etc-iscsi/" &&
		mount -t tmpfs tmpfs /etc/iscsi && cp -a "$ULP_DIR/etc-iscsi/." /etc/iscsi/ || return 1
	echo "InitiatorName=iqn.2003-01.org.rrxe:host-$(cut -c1-8 /proc/sys/kernel/random/uuid)" >/etc/iscsi/initiatorname.iscsi
	rm -rf /etc/iscsi/nodes /etc/iscsi/send_targets
}

iser_session() {
	local s
	for s in /sys/class/iscsi_session/session*; do
		[ -e "$s/targetname" ] && [ "$(cat "$s/targetname")" = "$ISCSI_IQN" ] && { echo "$s"; return 0; }
	done
	return 1
}

iser_disk() { local s; s=$(iser_session) && scsi_disk_under "$s/device"; }

iser_host_up() {
	local addr=$1
	modprobe ib_iser || return 1
	iscsi_etc || return 1
	pidof iscsid >/dev/null || iscsid || return 1
	iscsiadm -m node -o new -T "$ISCSI_IQN" -p "$addr:3260" -I iser >/dev/null &&
		iscsiadm -m node -T "$ISCSI_IQN" -p "$addr:3260" -I iser --login || return 1
	ulp_wait 60 iser_disk || return 1
	ULP_PATH=$(iser_disk)
}

iser_host_down() {
	local addr=$1
	iscsiadm -m node -T "$ISCSI_IQN" -p "$addr:3260" -I iser --logout || return 1
	iscsiadm -m node -o delete -T "$ISCSI_IQN" -p "$addr:3260" -I iser || return 1
	ulp_wait 30 bash -c '! ls -d /sys/class/iscsi_session/session* >/dev/null 2>&1' || return 1
	iscsiadm -k 0 2>/dev/null || kill "$(pidof iscsid)" 2>/dev/null
	ulp_wait 10 bash -c '! pidof iscsid'
}

# --- SRP ----------------------------------------------------------------------

# The SRP target port name: the port's GUID as ib_srpt spells it, the
# interface ID of GID 0 (fe80::...) in four groups.
srpt_port_name() {
	local g
	g=$(cat "/sys/class/infiniband/$1/ports/1/gids/0") || return 1
	echo "${g#fe80:0000:0000:0000:}"
}

# srp_target_up ADDR MIB DEV INITIATORS...: ib_srpt's sessions over rdma_cm
# are named after an IP address, so each initiator address gets an ACL.
srp_target_up() {
	local addr=$1 mib=$2 dev=$3 bs p t ini
	shift 3
	modprobe ib_srpt || return 1
	bs=$(lio_backstore srp "$mib") || return 1
	mkdir -p "$CFS/target/srpt" && echo $SRP_PORT >"$CFS/target/srpt/discovery_auth/rdma_cm_port" || return 1
	p=$(srpt_port_name "$dev") || return 1
	t=$CFS/target/srpt/$p/$p
	mkdir -p "$t/lun/lun_0" && ln -s "$bs" "$t/lun/lun_0/srp" || return 1
	for ini in "$@"; do
		mkdir -p "$t/acls/$ini/lun_0" && ln -s "$t/lun/lun_0" "$t/acls/$ini/lun_0/lun_0" || return 1
	done
	echo 1 >"$t/enable"
}

srp_target_info() { cat /sys/module/ib_srpt/parameters/srpt_service_guid; }

srp_target_down() {
	local s=$CFS/target/srpt rc=0 p t a
	if [ -d "$s" ]; then
		for p in "$s"/*/; do
			p=${p%/}
			[ "$(basename "$p")" = discovery_auth ] && continue
			t=$p/$(basename "$p")
			if [ -d "$t" ]; then
				echo 0 >"$t/enable"
				for a in "$t"/acls/*/; do
					[ -d "$a" ] || continue
					rm -f "$a"lun_0/lun_0
					rmdir "$a"lun_0 "$a" || rc=1
				done
				rm -f "$t/lun/lun_0/srp"
				rmdir "$t/lun/lun_0" "$t" || rc=1
			fi
			rmdir "$p" || rc=1
		done
		echo 0 >"$s/discovery_auth/rdma_cm_port"
		rmdir "$s" || rc=1
	fi
	lio_backstore_down srp || rc=1
	return $rc
}

# The SCSI host number of the SRP target port we logged in to.
srp_host() {
	local r
	for r in /sys/class/srp_remote_ports/port-*; do
		[ -e "$r" ] || continue
		r=${r##*/port-}
		echo "${r%%:*}"
		return 0
	done
	return 1
}

srp_disk() { local h; h=$(srp_host) && scsi_disk_under "/sys/class/scsi_host/host$h/device"; }

# srp_host_up ADDR DEV GUID: GUID is the target's srpt_service_guid.
srp_host_up() {
	local addr=$1 dev=$2 guid=$3 a
	modprobe ib_srp || return 1
	a=/sys/class/infiniband_srp/srp-$dev-1/add_target
	ulp_wait 10 test -e "$a" || return 1
	echo "id_ext=$guid,ioc_guid=$guid,dest=$addr:$SRP_PORT" >"$a" || return 1
	ulp_wait 60 srp_disk || return 1
	ULP_PATH=$(srp_disk)
}

srp_host_down() {
	local r
	for r in /sys/class/srp_remote_ports/port-*; do
		[ -e "$r" ] && echo 1 >"$r/delete"
	done
	ulp_wait 30 bash -c '! ls -d /sys/class/srp_remote_ports/port-* >/dev/null 2>&1'
}

# --- NFS over RDMA ------------------------------------------------------------

# nfs_target_up ADDR MIB: nfsd serving NFSv4 only (no rpcbind needed) on
# the RDMA transport, port 20049; rpc.mountd answers the kernel's export
# upcalls. The grace period after start is ended at once (v4_end_grace),
# so clients need not wait 90 s for their first OPEN.
nfs_target_up() {
	local d=/proc/fs/nfsd
	modprobe rpcrdma || return 1
	mkdir -p "$ULP_DIR/export" /var/lib/nfs/v4recovery || return 1
	touch /var/lib/nfs/etab /var/lib/nfs/rmtab || return 1
	mountpoint -q "$d" || mount -t nfsd nfsd "$d" || return 1
	exportfs -o rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync "*:$ULP_DIR/export" || return 1
	pidof rpc.mountd >/dev/null || rpc.mountd -N 2 -N 3 || return 1
	echo 10 >"$d/nfsv4leasetime" && echo 10 >"$d/nfsv4gracetime" || return 1
	echo "-3 +4 +4.1 +4.2" >"$d/versions" || return 1
	echo "rdma $NFS_PORT" >"$d/portlist" || return 1
	echo 4 >"$d/threads" || return 1
	echo Y >"$d/v4_end_grace" || return 1
	grep -q "rdma $NFS_PORT" "$d/portlist"
}

nfs_target_down() {
	local d=/proc/fs/nfsd rc=0
	if mountpoint -q "$d"; then
		[ "$(cat "$d/threads")" = 0 ] || echo 0 >"$d/threads" || rc=1
		exportfs -ua || rc=1
		umount "$d" || rc=1
	fi
	if pidof rpc.mountd >/dev/null; then
		kill "$(pidof rpc.mountd)"
		ulp_wait 10 bash -c '! pidof rpc.mountd' || rc=1
	fi
	rm -rf "$ULP_DIR/export"
	return $rc
}

nfs_host_up() {
	local addr=$1 m=$ULP_DIR/mnt
	modprobe rpcrdma || return 1
	mkdir -p "$m" &&
		mount -t nfs -o "proto=rdma,port=$NFS_PORT,vers=4.2" "$addr:/" "$m" || return 1
	grep -q " $m nfs4 .*proto=rdma" /proc/mounts || { echo "not an rdma mount: $(grep " $m " /proc/mounts)" >&2; return 1; }
	ULP_PATH=$m/fio.dat
}

nfs_host_down() { umount "$ULP_DIR/mnt"; }

# --- dispatch -----------------------------------------------------------------

ulp_target_up() {
	local ulp=$1 addr=$2 mib=$3
	shift 3
	case $ulp in
	nvme) nvme_target_up "$addr" "$mib" ;;
	iser) iser_target_up "$addr" "$mib" ;;
	srp) srp_target_up "$addr" "$mib" "$@" ;;
	nfs) nfs_target_up "$addr" "$mib" ;;
	esac
}
ulp_target_info() { case $1 in srp) srp_target_info ;; *) echo - ;; esac; }
ulp_target_down() { "$1_target_down"; }
ulp_host_up() {
	case $1 in
	nvme | iser | nfs) "$1_host_up" "$2" ;;
	srp) srp_host_up "$2" "$3" "$4" ;;
	esac
}
ulp_host_down() { "$1_host_down" "$2"; }

# --- fio ----------------------------------------------------------------------

# ulp_fio_job FILE PATH MIB [EXTRA]: the verified job over the first MIB
# MiB of PATH, in three regions with their own block sizes and user-buffer
# offsets (mem_align puts each I/O buffer at that offset into a page, so
# with O_DIRECT the ULP maps a first page entered at 512, 1536 or 3584
# bytes; the block sizes span 512 B to 1 MiB):
#   small:  1/4, random writes of 512 B to 16 KiB, buffers at page offset 512
#   medium: 1/4, sequential writes of 16 KiB to 256 KiB, offset 1536
#   large:  1/2, sequential writes of 256 KiB to 1 MiB, offset 3584
# Every block carries a crc32c and a header naming its offset; fio reads
# all back after writing (verify), and with verify_only=1 the same job
# (same seeds, so the same blocks) only reads and checks what is there.
ulp_fio_job() {
	local f=$1 path=$2 mib=$3 extra=${4:-} q
	q=$((mib / 4))
	cat >"$f" <<EOF
[global]
filename=$path
ioengine=libaio
direct=1
iodepth=8
thread
verify=crc32c
verify_fatal=1
verify_state_save=0
randrepeat=1
$extra
[small]
rw=randwrite
offset=0
size=${q}m
bsrange=512-16k
mem_align=512
[medium]
rw=write
offset=${q}m
size=${q}m
bsrange=16k-256k
mem_align=1536
[large]
rw=write
offset=$((2 * q))m
size=$((mib - 2 * q))m
bsrange=256k-1m
mem_align=3584
EOF
}

# ulp_fio NAME PATH MIB write|verify: runs the job (write: write and read
# back; verify: verify_only) and checks fio's exit status, that no job
# reported an error, and that it read (and so verified) all MIB MiB and,
# for write, wrote them. Prints the problem, or nothing; FIO_SECS and
# FIO_MIBS (MiB/s moved) describe the run.
ulp_fio() {
	local name=${1//\//_} path=$2 mib=$3 mode=$4 rc t0 extra=
	local job=$ULP_DIR/$name.fio out=$ULP_DIR/$name.json
	[ "$mode" = verify ] && extra=verify_only=1
	ulp_fio_job "$job" "$path" "$mib" "$extra"
	t0=$(now)
	(cd "$ULP_DIR" && fio --output-format=json --output="$out" "$job") >"$ULP_DIR/$name.stderr" 2>&1
	rc=$?
	[ -d /run/results ] && cp "$out" "/run/results/fio-$name.json" 2>/dev/null
	FIO_SECS=$(elapsed "$t0")
	python3 - "$out" "$mib" "$mode" "$rc" "$FIO_SECS" <<'PY'
import json, sys
path, mib, mode, rc, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
want = mib << 20
try:
    with open(path) as f:
        text = f.read()
    d = json.loads(text[text.index("{"):])
except Exception as e:
    print("fio exit %d, no JSON report (%s)" % (rc, e))
    sys.exit()
jobs = d.get("jobs", [])
rd = sum(j["read"]["io_bytes"] for j in jobs)
wr = sum(j["write"]["io_bytes"] for j in jobs)
errs = ["%s: error %d" % (j["jobname"], j["error"]) for j in jobs if j.get("error")]
for j in jobs:
    sys.stderr.write("#   %s: write %.1f MiB in %.1f s, %d ops; read %.1f MiB in %.1f s, %d ops\n" % (
        j["jobname"], j["write"]["io_bytes"] / 2**20, j["write"]["runtime"] / 1000, j["write"]["total_ios"],
        j["read"]["io_bytes"] / 2**20, j["read"]["runtime"] / 1000, j["read"]["total_ios"]))
if mode == "verify":
    wr = 0  # verify_only counts the writes it skips
sys.stderr.write("# fio %s: %d jobs, wrote %.1f MiB, read and verified %.1f MiB in %.1f s (%.2f MiB/s)\n"
                 % (mode, len(jobs), wr / 2**20, rd / 2**20, secs, (rd + wr) / 2**20 / max(secs, 0.01)))
if rc != 0:
    print("fio exit %d" % rc)
elif errs:
    print("; ".join(errs))
elif len(jobs) != 3:
    print("%d jobs reported, want 3" % len(jobs))
elif rd != want:
    print("read (verified) %d bytes, want %d" % (rd, want))
elif mode == "write" and wr != want:
    print("wrote %d bytes, want %d" % (wr, want))
PY
}

# ulp_fio_check NAME PROBLEM: one result for a fio run; on failure the
# first lines of fio's own complaint are added.
ulp_fio_check() {
	if [ -z "$2" ]; then
		pass "$1"
	else
		fail "$1" "$2; $(grep -v '^ *$' "$ULP_DIR/${1//\//_}.stderr" 2>/dev/null | head -n 3 | tr '\n' ' ' | cut -c1-300)"
	fi
}

# ulp_fio_timed NAME PATH MIB SECS: for the fault tests, one job in the
# background (FIO_PID) that writes random blocks of 512 B to 256 KiB
# (buffers at page offset 512) over the first MIB MiB of PATH for SECS
# seconds and verifies every 16 blocks (crc32c) soon after writing them.
# Synchronous I/O (psync), because of what a fault does to the disk: once
# the controller goes (device removal, rmmod), the block device's size
# drops to 0 and an O_DIRECT read past the end completes with 0 bytes and
# no error. An asynchronous engine (libaio) hands that short read to
# verify, which checks a buffer the read never filled (the data of the
# buffer's previous I/O: "bad header offset ..."), with C rxe as with
# rrxe; psync sees the short read and fails it ("full resid", EIO).
ulp_fio_timed() {
	local name=$1 path=$2 mib=$3 secs=$4
	printf '%s\n' "[global]" "filename=$path" ioengine=psync direct=1 thread \
		verify=crc32c verify_fatal=1 verify_state_save=0 verify_backlog=16 \
		"[timed]" rw=randwrite "size=${mib}m" bsrange=512-256k mem_align=512 \
		time_based "runtime=$secs" >"$ULP_DIR/$name.fio"
	(cd "$ULP_DIR" && exec fio --output-format=json --output="$ULP_DIR/$name.json" "$ULP_DIR/$name.fio") \
		>"$ULP_DIR/$name.stderr" 2>&1 &
	FIO_PID=$!
}

# ulp_fio_timed_wait NAME LIMIT [stop]: waits at most LIMIT s for the
# background fio (then kills it); with stop, first asks it to stop
# (SIGTERM: fio ends its job, reports and exits 128). Sets FIO_RC (124:
# killed), FIO_READ (bytes verified), FIO_WRITTEN and FIO_WHY: what went
# wrong (exit status, the job's error, e.g. 84 for a verify failure,
# nothing verified), empty if nothing did.
ulp_fio_timed_wait() {
	local name=$1 end=$((SECONDS + $2)) r
	[ "${3:-}" = stop ] && kill -TERM "$FIO_PID" 2>/dev/null
	while kill -0 "$FIO_PID" 2>/dev/null && [ $SECONDS -lt $end ]; do nap 0.5; done
	if kill -0 "$FIO_PID" 2>/dev/null; then
		kill -9 "$FIO_PID"
		wait "$FIO_PID"
		FIO_RC=124
	else
		wait "$FIO_PID"
		FIO_RC=$?
	fi
	[ -d /run/results ] && cp "$ULP_DIR/$name.json" "/run/results/fio-$name.json" 2>/dev/null
	r=$(python3 - "$ULP_DIR/$name.json" "$FIO_RC" "${3:-}" <<'PY'
import json, sys
rc = int(sys.argv[2])
if sys.argv[3] == "stop" and rc == 128:
    rc = 0
try:
    text = open(sys.argv[1]).read()
    j = json.loads(text[text.index("{"):])["jobs"][0]
except Exception as e:
    print("0 0 fio exit %d, no JSON report" % rc)
    sys.exit()
rd, wr = j["read"]["io_bytes"], j["write"]["io_bytes"]
why = ""
if rc:
    why = "fio exit %d" % rc
if j["error"]:
    why += "%sjob error %d" % (", " if why else "", j["error"])
if rd == 0:
    why += "%snothing verified" % (", " if why else "")
print(rd, wr, why)
PY
)
	read -r FIO_READ FIO_WRITTEN FIO_WHY <<<"$r"
	echo "# fio $name: exit $FIO_RC, wrote $((FIO_WRITTEN >> 20)) MiB, verified $((FIO_READ >> 20)) MiB${FIO_WHY:+; $FIO_WHY}; $(grep -m2 -iE 'err|verify' "$ULP_DIR/$name.stderr" | tr '\n' ' ' | cut -c1-200)"
}
