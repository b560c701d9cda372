//go:build !linux

package confine

import "runtime"

// Apply on a system other than Linux confines nothing: it runs p.Become
// and says what is missing.
func Apply(p Policy) (Result, error) {
	if p.Become != nil {
		if err := p.Become(); err != nil {
			return Result{}, err
		}
	}
	return Result{Missing: []string{"no Landlock, seccomp or capabilities on " + runtime.GOOS + ": live is not confined"}}, nil
}

// ProcReads are none outside Linux.
func ProcReads() (dirs, files []string) { return nil, nil }
