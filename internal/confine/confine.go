package confine

// Policy says what the process still needs once confined.
type Policy struct {
	// Become changes the process to the unprivileged user it runs as from
	// now on (setgroups, setgid, setuid, on every thread); nil keeps its
	// IDs. Apply calls it after emptying the capability bounding set,
	// which takes a capability the user will not have, and before the
	// rest.
	Become func() error
	// WriteDirs are directories in which regular files may be created,
	// written, read, truncated and removed (and renamed within one of
	// them), beneath them included. Nothing else may be written.
	WriteDirs []string
	// ReadFiles and ReadDirs may be read (a directory: what lies beneath
	// it). Files already open stay readable and writable as they were
	// opened: Landlock checks a path when it is opened.
	ReadFiles []string
	ReadDirs  []string
	// Connect lets the process make TCP connections (to publish to a
	// broker); without it, it can make none. It can never bind a TCP
	// port: listeners are opened before.
	Connect bool
}

// Result says what Apply put in force. Missing lists, one line each,
// what the kernel lacks; the rest applied.
type Result struct {
	// LandlockABI is the Landlock ABI version enforced, 0 for none.
	LandlockABI int
	// Seccomp is true once the filter is on every thread.
	Seccomp bool
	// Missing says what could not be applied on this kernel.
	Missing []string
}
