# SPDX-License-Identifier: GPL-2.0
"""
Shared pieces of the verbs tests (tests/verbs/*.py), run in the guest by
tests/guest/verbs.sh with the system python (/usr/bin/python3, pyverbs).

Each test prints one line per check, "PASS name", "FAIL name: why" or
"SKIP name: why", and "DONE" when it finished; verbs.sh turns the lines into
results and fails a run that did not reach "DONE".

`Verbs` is a ctypes binding of the few libibverbs calls that pyverbs cannot
express: pyverbs destroys an object's children before the object, so it can
never ask the kernel to deallocate a PD that an MR still uses, and it never
hands a destroyed object back to libibverbs.
"""
import ctypes
import errno
import os
import sys

_failures = 0


def out(line):
    print(line, flush=True)


def passed(name):
    out(f'PASS {name}')


def failed(name, why):
    global _failures
    _failures += 1
    out(f'FAIL {name}: {" ".join(str(why).split())}')


def skipped(name, why):
    out(f'SKIP {name}: {why}')


def info(msg):
    out(f'# {msg}')


def done():
    out('DONE')
    sys.exit(1 if _failures else 0)


def errname(code):
    if code is None:
        return 'success'
    return errno.errorcode.get(code, str(code))


def error_code(ex):
    """The errno of a pyverbs exception (pyverbs keeps some negative)."""
    code = getattr(ex, 'error_code', None)
    return abs(code) if code is not None else None


def outcome(fn):
    """Runs fn; returns (None, value) on success, (errno, exception) on an
    RDMA error. Other exceptions propagate."""
    from pyverbs.pyverbs_error import PyverbsRDMAError
    try:
        return None, fn()
    except PyverbsRDMAError as ex:
        code = error_code(ex)
        return (code if code else -1), ex


def expect_errno(name, want, fn, note=''):
    """One result: fn must fail with an errno in want (an int or a tuple).
    The errno seen is printed as a comment line either way."""
    want = want if isinstance(want, tuple) else (want,)
    wants = ' or '.join(errname(w) for w in want)
    try:
        code, val = outcome(fn)
    except Exception as ex:  # noqa: BLE001 - a test bug or pyverbs refusing
        failed(name, f'{type(ex).__name__}: {ex}')
        return None
    info(f'{name}: {errname(code)} (want {wants}){" - " + note if note else ""}')
    if code is None:
        close = getattr(val, 'close', None)
        if close:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        failed(name, f'succeeded, want {wants}')
    elif code in want:
        passed(name)
    else:
        failed(name, f'failed with {errname(code)}, want {wants}')
    return code


# --- ctypes libibverbs ---------------------------------------------------------

class QpCap(ctypes.Structure):
    _fields_ = [('max_send_wr', ctypes.c_uint32), ('max_recv_wr', ctypes.c_uint32),
                ('max_send_sge', ctypes.c_uint32), ('max_recv_sge', ctypes.c_uint32),
                ('max_inline_data', ctypes.c_uint32)]


class QpInitAttr(ctypes.Structure):
    _fields_ = [('qp_context', ctypes.c_void_p), ('send_cq', ctypes.c_void_p),
                ('recv_cq', ctypes.c_void_p), ('srq', ctypes.c_void_p),
                ('cap', QpCap), ('qp_type', ctypes.c_int), ('sq_sig_all', ctypes.c_int)]


class SrqAttr(ctypes.Structure):
    _fields_ = [('max_wr', ctypes.c_uint32), ('max_sge', ctypes.c_uint32),
                ('srq_limit', ctypes.c_uint32)]


class SrqInitAttr(ctypes.Structure):
    _fields_ = [('srq_context', ctypes.c_void_p), ('attr', SrqAttr)]


class GlobalRoute(ctypes.Structure):
    _fields_ = [('dgid', ctypes.c_uint8 * 16), ('flow_label', ctypes.c_uint32),
                ('sgid_index', ctypes.c_uint8), ('hop_limit', ctypes.c_uint8),
                ('traffic_class', ctypes.c_uint8)]


class AhAttr(ctypes.Structure):
    _fields_ = [('grh', GlobalRoute), ('dlid', ctypes.c_uint16), ('sl', ctypes.c_uint8),
                ('src_path_bits', ctypes.c_uint8), ('static_rate', ctypes.c_uint8),
                ('is_global', ctypes.c_uint8), ('port_num', ctypes.c_uint8)]


class QpAttrHead(ctypes.Structure):
    """The first fields of struct ibv_qp_attr; Verbs.modify_qp pads it."""
    _fields_ = [('qp_state', ctypes.c_int), ('cur_qp_state', ctypes.c_int),
                ('path_mtu', ctypes.c_int), ('path_mig_state', ctypes.c_int),
                ('qkey', ctypes.c_uint32), ('rq_psn', ctypes.c_uint32),
                ('sq_psn', ctypes.c_uint32), ('dest_qp_num', ctypes.c_uint32),
                ('qp_access_flags', ctypes.c_uint32), ('cap', QpCap),
                ('pad', ctypes.c_uint8 * 512)]


# Sizes of the public libibverbs structs (x86_64, glibc): what a copy of a
# destroyed object needs so that libibverbs and librxe read its handle.
SIZEOF = {'pd': 16, 'cq': 128, 'qp': 160, 'srq': 128, 'ah': 16}

IBV_QPT_RC = 2
IBV_QPT_UD = 4
IBV_QPS_INIT = 1
IBV_QP_STATE = 1


class Verbs:
    """A device opened through libibverbs with ctypes. Calls return
    (pointer, 0) or (None, errno) for creates, and an errno for destroys."""

    def __init__(self, dev_name):
        self.lib = ctypes.CDLL('libibverbs.so.1', use_errno=True)
        self.libc = ctypes.CDLL(None, use_errno=True)
        L = self.lib
        vp, u32, i = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
        sigs = {
            'ibv_get_device_list': ([ctypes.POINTER(i)], ctypes.POINTER(vp)),
            'ibv_free_device_list': ([ctypes.POINTER(vp)], None),
            'ibv_get_device_name': ([vp], ctypes.c_char_p),
            'ibv_open_device': ([vp], vp),
            'ibv_close_device': ([vp], i),
            'ibv_alloc_pd': ([vp], vp),
            'ibv_dealloc_pd': ([vp], i),
            'ibv_reg_mr': ([vp, vp, ctypes.c_size_t, i], vp),
            'ibv_dereg_mr': ([vp], i),
            'ibv_create_cq': ([vp, i, vp, vp, i], vp),
            'ibv_destroy_cq': ([vp], i),
            'ibv_create_qp': ([vp, ctypes.POINTER(QpInitAttr)], vp),
            'ibv_modify_qp': ([vp, vp, i], i),
            'ibv_destroy_qp': ([vp], i),
            'ibv_create_srq': ([vp, ctypes.POINTER(SrqInitAttr)], vp),
            'ibv_destroy_srq': ([vp], i),
            'ibv_create_ah': ([vp, ctypes.POINTER(AhAttr)], vp),
            'ibv_destroy_ah': ([vp], i),
            'ibv_query_gid': ([vp, ctypes.c_uint8, i, ctypes.c_uint8 * 16], i),
            'ibv_attach_mcast': ([vp, ctypes.POINTER(ctypes.c_uint8 * 16), ctypes.c_uint16], i),
            'ibv_detach_mcast': ([vp, ctypes.POINTER(ctypes.c_uint8 * 16), ctypes.c_uint16], i),
        }
        for fn, (args, res) in sigs.items():
            f = getattr(L, fn)
            f.argtypes, f.restype = args, res
        self.libc.malloc.argtypes, self.libc.malloc.restype = [ctypes.c_size_t], vp
        self.libc.free.argtypes, self.libc.free.restype = [vp], None
        n = i(0)
        lst = L.ibv_get_device_list(ctypes.byref(n))
        self.ctx = None
        for k in range(n.value):
            if L.ibv_get_device_name(lst[k]).decode() == dev_name:
                self.ctx = L.ibv_open_device(lst[k])
        L.ibv_free_device_list(lst)
        if not self.ctx:
            raise OSError(ctypes.get_errno(), f'cannot open {dev_name}')
        self.buf = ctypes.create_string_buffer(1 << 16)

    def _new(self, ptr):
        return (ptr, 0) if ptr else (None, ctypes.get_errno())

    def alloc_pd(self):
        return self._new(self.lib.ibv_alloc_pd(self.ctx))

    def reg_mr(self, pd, access=1):
        return self._new(self.lib.ibv_reg_mr(pd, self.buf, 4096, access))

    def create_cq(self, cqe=16):
        return self._new(self.lib.ibv_create_cq(self.ctx, cqe, None, None, 0))

    def create_qp(self, pd, cq, srq=None, qp_type=IBV_QPT_RC):
        a = QpInitAttr(send_cq=cq, recv_cq=cq, srq=srq, qp_type=qp_type,
                       cap=QpCap(max_send_wr=4, max_recv_wr=0 if srq else 4,
                                 max_send_sge=1, max_recv_sge=0 if srq else 1))
        return self._new(self.lib.ibv_create_qp(pd, ctypes.byref(a)))

    def modify_qp_state(self, qp, state):
        a = QpAttrHead(qp_state=state)
        return self.lib.ibv_modify_qp(qp, ctypes.addressof(a), IBV_QP_STATE)

    def create_srq(self, pd, max_wr=8):
        a = SrqInitAttr(attr=SrqAttr(max_wr=max_wr, max_sge=1))
        return self._new(self.lib.ibv_create_srq(pd, ctypes.byref(a)))

    def create_ah(self, pd, gid_index):
        gid = (ctypes.c_uint8 * 16)()
        if self.lib.ibv_query_gid(self.ctx, 1, gid_index, gid):
            return None, ctypes.get_errno()
        a = AhAttr(is_global=1, port_num=1,
                   grh=GlobalRoute(dgid=gid, sgid_index=gid_index, hop_limit=1))
        return self._new(self.lib.ibv_create_ah(pd, ctypes.byref(a)))

    def mcast(self, qp, mgid, attach=True):
        """Attaches (or detaches) qp to the group mgid (16 bytes); 0 or
        an errno."""
        g = (ctypes.c_uint8 * 16)(*mgid)
        f = self.lib.ibv_attach_mcast if attach else self.lib.ibv_detach_mcast
        ctypes.set_errno(0)
        rc = f(qp, ctypes.byref(g), 0)
        return (ctypes.get_errno() or errno.EIO) if rc < 0 else rc

    def copy(self, ptr, kind):
        """A malloc'd copy of a libibverbs object: after the object is
        destroyed, the copy carries its stale kernel handle. malloc, so that
        a provider which wrongly succeeds can free() it."""
        size = SIZEOF[kind]
        p = self.libc.malloc(size)
        ctypes.memmove(p, ptr, size)
        return p

    def close(self):
        if self.ctx:
            self.lib.ibv_close_device(self.ctx)
            self.ctx = None


def dev_and_gid(argv):
    dev = argv[1] if len(argv) > 1 else os.environ.get('DEV', 'rrxe0')
    gid = int(argv[2]) if len(argv) > 2 else int(os.environ.get('GID', '1'))
    return dev, gid
