package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/internal/confine"
)

// confineLive gives up root as -Z says (plan, nil to keep the IDs) and
// shuts live in (internal/confine): no capability, no_new_privs, files
// written only in the --write directory, and no TCP connection unless it
// publishes. Live reads its capture socket, key logs and metrics listener
// through descriptors opened before; what it still opens by name is listed
// here. A kernel without Landlock or seccomp is said once, and live goes on.
func confineLive(cmd *cobra.Command, plan *dropPlan, rotateIn, write string, publishing bool) error {
	p := confine.Policy{Become: func() error { return plan.drop(rotateIn) }, Connect: publishing}
	if write != "" {
		// Rotation and the ring create and remove files beside the first
		// (a FIFO or device is written as it is: no directory).
		if fi, err := os.Stat(write); err == nil && fi.Mode().IsRegular() {
			p.WriteDirs = append(p.WriteDirs, filepath.Dir(write))
		}
	}
	if f := cmd.Flag("debug-memprofile"); f != nil && f.Value.String() != "" {
		p.WriteDirs = append(p.WriteDirs, filepath.Dir(f.Value.String()))
	}
	p.ReadDirs, p.ReadFiles = confine.ProcReads()
	if publishing {
		// The resolver reads /etc/resolv.conf (which may link to a
		// directory of its own), hosts, nsswitch.conf and services each
		// time they change; the whole of /etc, for they are replaced by
		// rename (a rule on a file follows the file, not its name). What
		// in /etc is secret is closed to the -Z user by its mode anyway.
		p.ReadDirs = append(p.ReadDirs, "/etc")
		if conf, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
			p.ReadDirs = append(p.ReadDirs, filepath.Dir(conf))
		}
	}
	// The local time zone, read from /etc/localtime at its first use,
	// which would come after and find nothing.
	_, _ = time.Now().Zone()
	res, err := confine.Apply(p)
	if err != nil {
		return err
	}
	for _, m := range res.Missing {
		fmt.Fprintln(os.Stderr, "kidscope: note:", m)
	}
	return nil
}
