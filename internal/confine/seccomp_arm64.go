//go:build linux

package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// deniedArch are the denied calls only arm64 has: none beyond the shared.
var deniedArch []uintptr
