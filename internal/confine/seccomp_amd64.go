//go:build linux

package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// deniedArch are the denied calls only amd64 has.
var deniedArch = []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB}
