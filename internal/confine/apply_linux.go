//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Apply confines the process as p says, in this order: the Landlock
// ruleset made (its paths are opened by the user the process still is,
// root), the capability bounding set emptied (only while a capability
// allows it), p.Become, the permitted, effective, inheritable and ambient
// capabilities cleared, no_new_privs, not dumpable, the ruleset enforced,
// seccomp. Each
// step covers every thread. An error is a step the kernel refused although
// it has the means; a kernel without Landlock or seccomp is not an error
// (Result.Missing).
func Apply(p Policy) (Result, error) {
	var res Result
	ruleset, err := newRuleset(p)
	if err != nil {
		return res, fmt.Errorf("confine: landlock: %w", err)
	}
	defer ruleset.close()
	if err := dropBoundingSet(); err != nil {
		return res, err
	}
	if p.Become != nil {
		if err := p.Become(); err != nil {
			return res, err
		}
	}
	if err := clearCapabilities(); err != nil {
		return res, err
	}
	if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); errno != 0 {
		return res, fmt.Errorf("confine: no_new_privs: %w", errno)
	}
	// No core dump (it would hold what was captured, passwords included)
	// and no ptrace or /proc/PID/mem for other processes of the same
	// user; a setuid from root does this already, a unit that starts
	// live as its user with a capability does not. The flag is the
	// process's, not a thread's.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return res, fmt.Errorf("confine: not dumpable: %w", err)
	}
	if err := ruleset.enforce(); err != nil {
		return res, fmt.Errorf("confine: landlock: %w", err)
	}
	if ruleset.abi == 0 {
		res.Missing = append(res.Missing, "this kernel has no Landlock (Linux 5.13 or later with landlock among the LSMs): the files live may open are not confined")
	}
	res.LandlockABI = ruleset.abi
	if !seccompSupported {
		res.Missing = append(res.Missing, "no seccomp filter for this architecture: the system calls live may make are not confined")
	} else if err := applySeccomp(); errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		res.Missing = append(res.Missing, "this kernel has no seccomp filters: the system calls live may make are not confined")
	} else if err != nil {
		return res, fmt.Errorf("confine: seccomp: %w", err)
	} else {
		res.Seccomp = true
	}
	return res, nil
}

// dropBoundingSet empties the capability bounding set, so that no
// program the process could start would get a capability back. It takes
// CAP_SETPCAP: a process without it (not root) has nothing to drop that
// no_new_privs does not already keep out.
func dropBoundingSet() error {
	var eff unix.CapUserData
	caps := [2]unix.CapUserData{}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("confine: capget: %w", err)
	}
	eff = caps[unix.CAP_SETPCAP/32]
	if eff.Effective&(1<<(unix.CAP_SETPCAP%32)) == 0 {
		return nil
	}
	for c := 0; c <= lastCap(); c++ {
		_, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0)
		if errno != 0 && errno != unix.EINVAL { // EINVAL: a capability this kernel does not know
			return fmt.Errorf("confine: drop capability %d from the bounding set: %w", c, errno)
		}
	}
	return nil
}

// lastCap is the highest capability number the kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
}

// clearCapabilities leaves no capability in any set of any thread. A
// setuid from root to another user clears the permitted and effective
// sets already; a process that stays root (-Z root) or was given
// capabilities by file (setcap) needs it done.
func clearCapabilities() error {
	if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); errno != 0 && errno != unix.EINVAL {
		return fmt.Errorf("confine: clear the ambient capabilities: %w", errno)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if _, _, errno := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&none[0])), 0); errno != 0 {
		return fmt.Errorf("confine: capset: %w", errno)
	}
	return nil
}

// Rights on the write directories: regular files only (no directories,
// devices, FIFOs, sockets or links are made), and no program run from
// them.
const (
	writeRights = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSReadDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeReg | ll.AccessFSTruncate
	readRights = ll.AccessFSReadFile | ll.AccessFSReadDir
)

// ruleset is a Landlock ruleset made and not yet enforced.
type ruleset struct {
	fd    int // -1: nothing to enforce
	flags uint32
	abi   int // the kernel's ABI version, 0 without Landlock
}

// newRuleset makes the ruleset for p: every thread restricted to p's
// files, no TCP bind, TCP connect only with p.Connect, and no signal or
// abstract socket outside the process. Each path is opened now, by the
// user the process still is: the -Z user may not be able to reach the
// --write directory by name (it writes there through the file opened
// before, and the rotated files by the ruleset's grant).
func newRuleset(p Policy) (*ruleset, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return &ruleset{fd: -1}, nil
	}
	cfg := landlock.V11.BestEffort()
	if p.Connect {
		cfg.HandledAccessNet &^= ll.AccessNetConnectTCP
		// A name is resolved over UDP, which ABI 10 restricts: a
		// publisher resolves its brokers' names.
		cfg.HandledAccessNet &^= ll.AccessNetConnectSendUDP
	}
	// libpsx, which enforces the ruleset on every thread below ABI 8,
	// lists the process's threads after it (go-landlock issue 39).
	rules := []landlock.Rule{landlock.PathAccess(ll.AccessFSReadDir, fmt.Sprintf("/proc/%d/task", os.Getpid()))}
	for _, d := range p.WriteDirs {
		rules = append(rules, landlock.PathAccess(writeRights, d))
	}
	for _, d := range p.ReadDirs {
		rules = append(rules, landlock.PathAccess(readRights, d).IgnoreIfMissing())
	}
	for _, f := range p.ReadFiles {
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadFile, f).IgnoreIfMissing())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return nil, err
	}
	return &ruleset{fd: fd, flags: flags, abi: abi}, nil
}

// enforce restricts every thread to the ruleset: in one call from ABI 8
// (TSYNC), through libpsx before. no_new_privs must be set on every
// thread already.
func (r *ruleset) enforce() error {
	if r.fd < 0 {
		return nil
	}
	if r.abi >= 8 {
		return ll.LandlockRestrictSelf(r.fd, r.flags|ll.FlagRestrictSelfTSync)
	}
	return ll.AllThreadsLandlockRestrictSelf(r.fd, r.flags)
}

func (r *ruleset) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// ProcReads are the /proc entries a process reads about itself: its
// directory (memory, descriptors and network counters for the Prometheus
// process collector, the runtime's own reads), resolved now, for
// /proc/self names another directory in each process; and /proc/stat,
// where the collector finds the boot time its start time counts from.
func ProcReads() (dirs, files []string) {
	self, err := filepath.EvalSymlinks("/proc/self")
	if err != nil {
		return nil, nil
	}
	return []string{self}, []string{"/proc/stat"}
}
