//go:build linux && (amd64 || arm64)

package confine

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denied are the system calls the filter refuses with EPERM: what leaves
// the process (exec, ptrace and reading other processes' memory), changes
// the system (mounts, namespaces, modules, clocks, swap, reboot, keys),
// reaches the kernel through a second door the filter cannot see into
// (io_uring, BPF, perf, userfaultfd), or changes who the process is.
// Names differing between architectures are in deniedArch.
var denied = append([]uintptr{
	unix.SYS_EXECVE, unix.SYS_EXECVEAT,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_PIDFD_GETFD, unix.SYS_KCMP, unix.SYS_PROCESS_MADVISE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN,
	unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_SYSLOG,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_NFSSERVCTL, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_VHANGUP, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_PERSONALITY, unix.SYS_FANOTIFY_INIT,
	unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID,
	unix.SYS_SETRESUID, unix.SYS_SETRESGID, unix.SYS_SETGROUPS, unix.SYS_SETFSUID,
	unix.SYS_SETFSGID, unix.SYS_CAPSET,
}, deniedArch...)

// newNamespaces are clone(2)'s flags that make a namespace: unshare by
// another name. Go's runtime clones threads without them.
const newNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// seccomp_data's offsets: the call's number, the architecture, then the
// arguments, 8 bytes each (an argument's low 32 bits first on a
// little-endian machine, which amd64 and arm64 are).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// filter is the seccomp program: a call of another architecture (i386's
// int 0x80 on amd64, x32) is refused whole, for its numbers differ; then
// the denied calls, clone with a namespace flag, clone3 (its flags are
// behind a pointer the filter cannot read: refused with ENOSYS, so that a
// library falls back to clone), and the terminal ioctls that type into
// or take over the terminal live's stderr may be (TIOCSTI, TIOCLINUX).
func filter() ([]bpf.Instruction, error) {
	eperm := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	enosys := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	var p []bpf.Instruction
	// Jumps are counted forward from the next instruction; the targets
	// are the last three instructions, so each jump is filled in once
	// the program's length is known.
	type fix struct {
		at     int
		target int // 0 eperm, 1 enosys, 2 allow
		onTrue bool
	}
	var fixes []fix
	jump := func(cond bpf.JumpTest, val uint32, target int, onTrue bool) {
		fixes = append(fixes, fix{len(p), target, onTrue})
		p = append(p, bpf.JumpIf{Cond: cond, Val: val})
	}
	p = append(p, bpf.LoadAbsolute{Off: offArch, Size: 4})
	jump(bpf.JumpNotEqual, auditArch, 0, true)
	p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	jump(bpf.JumpGreaterOrEqual, x32Bit, 0, true)
	for _, nr := range denied {
		jump(bpf.JumpEqual, uint32(nr), 0, true)
	}
	jump(bpf.JumpEqual, unix.SYS_CLONE3, 1, true)
	// clone: refused when its flags (argument 0) make a namespace.
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE, SkipTrue: 2})
	p = append(p, bpf.LoadAbsolute{Off: offArg0, Size: 4})
	jump(bpf.JumpBitsSet, newNamespaces, 0, true)
	// ioctl: refused for the two requests (argument 1).
	p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	jump(bpf.JumpNotEqual, unix.SYS_IOCTL, 2, true)
	p = append(p, bpf.LoadAbsolute{Off: offArg1, Size: 4})
	jump(bpf.JumpEqual, unix.TIOCSTI, 0, true)
	jump(bpf.JumpEqual, unix.TIOCLINUX, 0, true)
	end := len(p)
	p = append(p, allow, eperm, enosys)
	pos := map[int]int{0: end + 1, 1: end + 2, 2: end}
	for _, f := range fixes {
		skip := pos[f.target] - f.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp filter: a jump of %d instructions", skip)
		}
		j := p[f.at].(bpf.JumpIf)
		if f.onTrue {
			j.SkipTrue = uint8(skip)
		} else {
			j.SkipFalse = uint8(skip)
		}
		p[f.at] = j
	}
	return p, nil
}

// x32Bit marks the x32 ABI's call numbers on amd64 (none exist on arm64,
// where no call number comes near it).
const x32Bit = 0x40000000

// applySeccomp loads the filter on every thread (TSYNC). no_new_privs
// must be set already.
func applySeccomp() error {
	p, err := filter()
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(p)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	if tid != 0 {
		return fmt.Errorf("thread %d could not take the filter", tid)
	}
	return nil
}

const seccompSupported = true
