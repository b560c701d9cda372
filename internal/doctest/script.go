package doctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// Script returns the testscript that runs a document's examples: one doc
// command per example, its output in the archive as want/LINE.
func Script(name string, exs []Example) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# The examples of %s (made by internal/doctest: go test ./internal/doctest).\n", name)
	a := &txtar.Archive{}
	for _, ex := range exs {
		fmt.Fprintf(&b, "doc %s %d %d %s\n", name, ex.Line, ex.Exit, quote(shellLine(ex.Command)))
		want := strings.Join(ex.Want, "\n")
		if want != "" {
			want += "\n"
		}
		a.Files = append(a.Files, txtar.File{Name: wantFile(ex.Line), Data: []byte(want)})
	}
	a.Comment = []byte(b.String())
	return txtar.Format(a)
}

func wantFile(line int) string { return "want/" + strconv.Itoa(line) }

// shellLine is the command as sh -c runs it: one line, with kidscope
// standing for "go run ./cmd/kidscope", which builds it.
func shellLine(cmd string) string {
	cmd = strings.ReplaceAll(cmd, "\\\n", " ")
	if rest, ok := strings.CutPrefix(cmd, "go run ./cmd/kidscope "); ok {
		cmd = "kidscope " + rest
	}
	return cmd
}

// quote is s as one testscript argument.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Recorder keeps what each example printed, for Rewrite.
type Recorder struct {
	mu      sync.Mutex
	results map[string]map[int]Result
}

// Results returns what the examples of a document printed, by line.
func (r *Recorder) Results(file string) map[int]Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[file]
}

func (r *Recorder) add(file string, line int, res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.results == nil {
		r.results = map[string]map[int]Result{}
	}
	if r.results[file] == nil {
		r.results[file] = map[int]Result{}
	}
	r.results[file][line] = res
}

// Cmds returns the testscript commands of the examples and of the
// command's own scripts:
//
//	doc FILE LINE EXIT COMMAND
//
// runs COMMAND with sh -c, standard error into standard output, and
// fails unless it exits EXIT and prints what want/LINE shows (Match).
// With a Recorder, each result is kept, and a difference does not fail:
// Rewrite then puts it in the document.
//
//	exits N PROGRAM [ARGS...]
//
// is exec that fails unless PROGRAM exits N (exec and ! exec tell only
// zero from non-zero); stdout and stderr are then PROGRAM's, for the
// commands that follow.
func Cmds(rec *Recorder) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exits": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 2 {
				ts.Fatalf("usage: exits N PROGRAM [ARGS...]")
			}
			want, err := strconv.Atoi(args[0])
			if err != nil {
				ts.Fatalf("exits: %v", err)
			}
			if code := exitCode(ts, ts.Exec(args[1], args[2:]...)); code != want {
				ts.Fatalf("exit code %d, want %d", code, want)
			}
		},
		"doc": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 4 {
				ts.Fatalf("usage: doc FILE LINE EXIT COMMAND")
			}
			file, cmd := args[0], args[3]
			line, err1 := strconv.Atoi(args[1])
			exit, err2 := strconv.Atoi(args[2])
			if err := errors.Join(err1, err2); err != nil {
				ts.Fatalf("doc: %v", err)
			}
			code := exitCode(ts, ts.Exec("sh", "-c", "exec 2>&1\n"+cmd))
			got := withoutRootWarning(Lines(ts.ReadFile("stdout")))
			want := strings.Split(strings.TrimSuffix(ts.ReadFile(wantFile(line)), "\n"), "\n")
			if rec != nil {
				rec.add(file, line, Result{Output: got, Exit: code})
				return
			}
			var msgs []string
			if code != exit {
				msgs = append(msgs, fmt.Sprintf("exit code %d, the document says %d", code, exit))
			}
			if !Match(want, got) {
				// The output in the document's shape (its elisions
				// elided), so that the diff shows only what differs.
				shown, err := Update(want, got)
				if err != nil {
					shown = got
				}
				d := diff.Diff(file+" (want)", []byte(strings.Join(normalize(want), "\n")+"\n"), "output (got)", []byte(strings.Join(shown, "\n")+"\n"))
				msgs = append(msgs, "the output is not what the document shows:\n"+string(d))
			}
			if msgs != nil {
				ts.Fatalf("%s:%d: $ %s\n%s\n(go test ./internal/doctest -update rewrites the document's output)", file, line, cmd, strings.Join(msgs, "\n"))
			}
		},
	}
}

// tsharkRootWarning is what tshark writes on stderr when it runs as root,
// as CI's tests do; a reader running it as themselves never sees it.
const tsharkRootWarning = `Running as user "root" and group "root". This could be dangerous.`

func withoutRootWarning(lines []string) []string {
	out := lines[:0:0]
	for _, l := range lines {
		if l != tsharkRootWarning {
			out = append(out, l)
		}
	}
	return out
}

// exitCode is the exit code that err, from ts.Exec, says.
func exitCode(ts *testscript.TestScript, err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		ts.Fatalf("%v", err)
	}
	return ee.ExitCode()
}

// Setup prepares a script's working directory as a checkout's root for
// the commands of the documents: samples/ and testdata/ of the repository
// at root are there (as links: a command must not write into them), and
// the directory bin, which holds the kidscope under test, comes first on
// PATH.
func Setup(root, bin string) func(*testscript.Env) error {
	return func(env *testscript.Env) error {
		for _, dir := range []string{"samples", "testdata"} {
			if err := os.Symlink(filepath.Join(root, dir), filepath.Join(env.WorkDir, dir)); err != nil {
				return err
			}
		}
		env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
		return nil
	}
}
