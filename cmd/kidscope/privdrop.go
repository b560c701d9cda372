package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// defaultDropUser is who live runs as, started as root without -Z, once its
// capture is open (tcpdump's -Z with a default user).
const defaultDropUser = "nobody"

// dropPlan is who live becomes once the capture socket, the first --write
// file and the metrics listener are open: nothing it does after that needs
// root, and the code that reads packets from the network is the code an
// attacker reaches.
type dropPlan struct {
	name     string
	uid, gid int
	groups   []int // supplementary groups, as initgroups(3) would set them
}

// planDrop resolves -Z. A nil plan means the process stays who it is: it is
// not root (a binary given CAP_NET_RAW with setcap, say, which keeps the
// capability: it opens packet sockets and grants no file access), or -Z
// names root.
func planDrop(name string, given bool) (*dropPlan, error) {
	euid := os.Geteuid()
	if !given {
		if euid != 0 {
			return nil, nil
		}
		name = defaultDropUser
	}
	u, err := lookupUser(name)
	if err != nil {
		if !given {
			return nil, fmt.Errorf("started as root, live drops to user %s once the capture is open, and there is no such user (-Z USER names another; -Z root keeps root)", name)
		}
		return nil, fmt.Errorf("-Z %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("-Z %s: user IDs %q/%q are not numbers", name, u.Uid, u.Gid)
	}
	if uid == euid {
		return nil, nil // already that user (-Z root as root)
	}
	if euid != 0 {
		return nil, fmt.Errorf("-Z %s: only root may change to another user (live runs as uid %d)", name, euid)
	}
	p := &dropPlan{name: u.Username, uid: uid, gid: gid}
	ids, err := u.GroupIds()
	if err != nil {
		ids = []string{u.Gid}
	}
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil {
			p.groups = append(p.groups, g)
		}
	}
	return p, nil
}

// lookupUser finds a user by name, or by number.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, nerr := strconv.Atoi(name); nerr == nil {
		if u, ierr := user.LookupId(name); ierr == nil {
			return u, nil
		}
	}
	return nil, err
}

// mayCreateIn says whether the plan's user may create files in dir, by
// permission bits: it must be able to search every directory on the way
// and write this one. The rotated --write files are created after the
// drop. (ACLs are not read: drop checks again with access(2) once it is
// that user.)
func (p *dropPlan) mayCreateIn(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	const search, write = 0o1, 0o2
	need := fs.FileMode(search | write)
	for {
		if !p.permits(dir, need) {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir, need = parent, search
	}
}

// permits reports whether the plan's user has the permissions need (in
// the "other" bits' places) on path, as the kernel picks the bits: the
// owner's if it owns it, else the group's if in its group, else others'.
func (p *dropPlan) permits(path string, need fs.FileMode) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := fi.Mode().Perm()
	if int(st.Uid) == p.uid {
		return perm>>6&need == need
	}
	if int(st.Gid) == p.gid || slices.Contains(p.groups, int(st.Gid)) {
		return perm>>3&need == need
	}
	return perm&need == need
}

// rotationCheck refuses, before anything is opened, a rotating --write
// whose directory the plan's user could not create the next files in.
func (p *dropPlan) rotationCheck(path string) error {
	dir := filepath.Dir(path)
	if p == nil || p.mayCreateIn(dir) {
		return nil
	}
	return fmt.Errorf("--write-max-size: live creates the rotated files after it drops root to %s, who may not create files in %s (choose a directory %s may write, or -Z a user who may)", p.name, dir, p.name)
}

// drop makes the process the plan's user, all threads (Go's syscall
// package applies setuid and friends to every thread on Linux), and checks
// that root cannot be had back. Open descriptors (the capture socket, the
// --write file, the metrics listener) keep working.
func (p *dropPlan) drop(rotateIn string) error {
	if p == nil {
		return nil
	}
	if err := syscall.Setgroups(p.groups); err != nil {
		return fmt.Errorf("-Z %s: setgroups: %w", p.name, err)
	}
	if err := syscall.Setgid(p.gid); err != nil {
		return fmt.Errorf("-Z %s: setgid %d: %w", p.name, p.gid, err)
	}
	if err := syscall.Setuid(p.uid); err != nil {
		return fmt.Errorf("-Z %s: setuid %d: %w", p.name, p.uid, err)
	}
	if syscall.Setuid(0) == nil || os.Geteuid() != p.uid || os.Getuid() != p.uid || os.Getegid() != p.gid {
		return fmt.Errorf("-Z %s: the process still runs with root's IDs after dropping them", p.name)
	}
	if rotateIn != "" {
		const wx = 0x2 | 0x1 // W_OK|X_OK
		if err := syscall.Access(rotateIn, wx); err != nil {
			return fmt.Errorf("--write-max-size: %s may not create the rotated files in %s: %w", p.name, rotateIn, err)
		}
	}
	return nil
}
