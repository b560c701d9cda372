//go:build linux && (amd64 || arm64)

package confine

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestFilter runs the seccomp program in x/net/bpf's machine on crafted
// seccomp_data. That machine loads words big-endian where the kernel
// loads them in the host's order: the data is written big-endian here, so
// that what is checked is the program's logic.
func TestFilter(t *testing.T) {
	prog, err := filter()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	tests := []struct {
		name       string
		arch       uint32
		nr         uintptr
		arg0, arg1 uint32
		want       uint32
	}{
		{"read", auditArch, unix.SYS_READ, 0, 0, allow},
		{"openat", auditArch, unix.SYS_OPENAT, 0, 0, allow},
		{"execve", auditArch, unix.SYS_EXECVE, 0, 0, eperm},
		{"execveat", auditArch, unix.SYS_EXECVEAT, 0, 0, eperm},
		{"ptrace", auditArch, unix.SYS_PTRACE, 0, 0, eperm},
		{"mount", auditArch, unix.SYS_MOUNT, 0, 0, eperm},
		{"unshare", auditArch, unix.SYS_UNSHARE, 0, 0, eperm},
		{"bpf", auditArch, unix.SYS_BPF, 0, 0, eperm},
		{"io_uring_setup", auditArch, unix.SYS_IO_URING_SETUP, 0, 0, eperm},
		{"setuid", auditArch, unix.SYS_SETUID, 0, 0, eperm},
		{"a thread (Go's clone flags)", auditArch, unix.SYS_CLONE,
			unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD, 0, allow},
		{"clone into a user namespace", auditArch, unix.SYS_CLONE, unix.CLONE_NEWUSER, 0, eperm},
		{"clone into a network namespace", auditArch, unix.SYS_CLONE, unix.CLONE_NEWNET | unix.CLONE_VM, 0, eperm},
		{"clone3", auditArch, unix.SYS_CLONE3, 0, 0, enosys},
		{"ioctl TCGETS", auditArch, unix.SYS_IOCTL, 2, unix.TCGETS, allow},
		{"ioctl TIOCGWINSZ", auditArch, unix.SYS_IOCTL, 2, unix.TIOCGWINSZ, allow},
		{"ioctl TIOCSTI", auditArch, unix.SYS_IOCTL, 2, unix.TIOCSTI, eperm},
		{"ioctl TIOCLINUX", auditArch, unix.SYS_IOCTL, 2, unix.TIOCLINUX, eperm},
		{"another architecture's read", auditArch ^ 1, unix.SYS_READ, 0, 0, eperm},
		{"x32", auditArch, x32Bit | unix.SYS_READ, 0, 0, eperm},
	}
	for _, tt := range tests {
		data := make([]byte, 64)
		be := binary.BigEndian
		be.PutUint32(data[offNr:], uint32(tt.nr))
		be.PutUint32(data[offArch:], tt.arch)
		be.PutUint32(data[offArg0:], tt.arg0)
		be.PutUint32(data[offArg1:], tt.arg1)
		got, err := vm.Run(data)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if uint32(got) != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, got, tt.want)
		}
	}
	if _, err := bpf.Assemble(prog); err != nil {
		t.Errorf("the program does not assemble: %v", err)
	}
}
