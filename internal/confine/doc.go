// Package confine shuts a running process in, with the kernel's own means,
// once it has opened what it needs: it gives up every capability, sets
// no_new_privs, and applies a Landlock ruleset (the files it may still
// read and write, no TCP it did not ask for, no signals or abstract
// sockets outside) and a seccomp filter that refuses the system calls a
// packet analyser never makes (exec, ptrace, mount, namespaces, kernel
// modules, BPF, io_uring, keyrings, changing IDs, injecting keystrokes
// into a terminal).
//
// The kernel keeps credentials, Landlock domains and seccomp filters per
// thread, and a Go program runs on threads it did not choose: every step
// is applied to all of them (libpsx for capabilities and no_new_privs,
// go-landlock's all-threads enforcement for Landlock, the TSYNC flag for
// seccomp). Threads started later inherit the confinement of the thread
// that starts them.
//
// The seccomp filter is a deny-list, not an allow-list: the system calls
// Go's runtime, its resolver, TLS and the Prometheus collectors make vary
// between Go versions and kernels, and an allow-list that missed one would
// kill a capture on a production host. What it refuses is what an attacker
// who took over the parser would need to leave the process.
//
// A kernel without Landlock or seccomp does not stop the program: Apply
// says what it could not apply, and the caller says so once.
package confine
