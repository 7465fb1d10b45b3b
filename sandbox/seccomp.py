"""One syscall deny-list for every provider: a classic-BPF program for bubblewrap, a JSON
profile for Docker/Podman.

The sandboxed user already has no capabilities; the filter removes the kernel surface that an
unprivileged process still reaches: ptrace and cross-process memory access, mounting (also
inside a nested user namespace), creating user namespaces, and kernel facilities (bpf, keyrings,
perf, userfaultfd) that have a history of privilege escalations. Denied calls fail with EPERM.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import struct

# name -> (x86_64 number, aarch64 number); None where the syscall does not exist on that arch.
DENIED: dict[str, tuple[int | None, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "move_mount": (429, 429),
    "open_tree": (428, 428),
    "mount_setattr": (442, 442),
    "unshare": (272, 97),
    "setns": (308, 268),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "quotactl": (179, 60),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "acct": (163, 89),
    "syslog": (103, 116),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "iopl": (172, None),
    "ioperm": (173, None),
}
CLONE = (56, 220)
CLONE3 = (435, 435)
CLONE_NEWUSER = 0x10000000

_ARCH = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7), "arm64": (1, 0xC00000B7)}
_X32_BIT = 0x40000000

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; arg0 low word (little endian)


def supported() -> bool:
    return platform.machine() in _ARCH


def bpf_program() -> bytes:
    """The filter as `struct sock_filter[]`, as `bwrap --seccomp FD` reads it."""
    index, audit_arch = _ARCH[platform.machine()]
    numbers = sorted(nr for pair in DENIED.values() if (nr := pair[index]) is not None)
    # Instructions hold symbolic jump targets ("eperm", "enosys", "clone") until the end.
    prog: list[tuple[int, int | str, int | str, int]] = [
        (_LD_ABS, 0, 0, _OFF_ARCH),
        (_JEQ, 1, 0, audit_arch),
        (_RET, 0, 0, _ERRNO | errno.EPERM),  # a foreign ABI (i386 int 0x80): refuse everything
        (_LD_ABS, 0, 0, _OFF_NR),
    ]
    if index == 0:
        prog.append((_JGE, "eperm", 0, _X32_BIT))  # x32 syscalls alias the x86_64 ones
    prog += [(_JEQ, "eperm", 0, nr) for nr in numbers]
    prog += [(_JEQ, "clone", 0, CLONE[index]), (_JEQ, "enosys", 0, CLONE3[index])]
    prog.append((_RET, 0, 0, _ALLOW))
    labels = {"clone": len(prog)}
    # clone3 passes flags in memory BPF cannot read, so it gets ENOSYS and libc falls back to clone.
    prog += [(_LD_ABS, 0, 0, _OFF_ARG0), (_JSET, "eperm", 0, CLONE_NEWUSER), (_RET, 0, 0, _ALLOW)]
    labels["eperm"] = len(prog)
    prog.append((_RET, 0, 0, _ERRNO | errno.EPERM))
    labels["enosys"] = len(prog)
    prog.append((_RET, 0, 0, _ERRNO | errno.ENOSYS))

    def offset(pc: int, target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - pc - 1

    return b"".join(
        struct.pack("=HBBI", code, offset(pc, jt), offset(pc, jf), k)
        for pc, (code, jt, jf, k) in enumerate(prog)
    )


def bpf_fd() -> int:
    """A memfd holding the program, positioned at 0, ready to hand to bwrap (caller closes)."""
    fd = os.memfd_create("silva-seccomp", os.MFD_CLOEXEC)
    os.write(fd, bpf_program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def docker_profile() -> str:
    """The same policy as a Docker/Podman seccomp profile (`security_opt=["seccomp=<json>"]`)."""
    eperm = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    return json.dumps(
        {
            "defaultAction": "SCMP_ACT_ALLOW",
            "syscalls": [
                {"names": sorted(DENIED), **eperm},
                {
                    "names": ["clone"],
                    **eperm,
                    "args": [
                        {
                            "index": 0,
                            "value": CLONE_NEWUSER,
                            "valueTwo": CLONE_NEWUSER,
                            "op": "SCMP_CMP_MASKED_EQ",
                        }
                    ],
                },
                {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
            ],
        }
    )
