package lint

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepo is a throwaway repository in a temporary directory, isolated
// from the user's and the system's git configuration.
type gitRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	r := &gitRepo{t: t, dir: t.TempDir(), env: append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")}
	r.git("init", "-q", "-b", "main")
	return r
}

// run runs name with args in the repository and returns its combined
// output and exit code (-1 if it could not run).
func (r *gitRepo) run(stdin string, name string, args ...string) (string, int) {
	r.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.dir, r.env, strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		r.t.Fatalf("%s %v: %v", name, args, err)
		return "", -1
	}
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	out, code := r.run("", "git", args...)
	if code != 0 {
		r.t.Fatalf("git %v: exit %d: %s", args, code, out)
	}
	return strings.TrimSpace(out)
}

// commit makes an empty commit with message msg and returns its short hash.
func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	if out, code := r.run(msg, "git", "commit", "-q", "--allow-empty", "--no-verify", "--cleanup=verbatim", "-F", "-"); code != 0 {
		r.t.Fatalf("git commit: exit %d: %s", code, out)
	}
	return r.git("rev-parse", "--short", "HEAD")
}

// TestCheckCommits runs scripts/check-commits on a throwaway history:
// good commits and a merge without a body pass; a long subject, a missing
// body and a missing blank line each fail and are named.
func TestCheckCommits(t *testing.T) {
	script := filepath.Join(moduleRoot(t), "scripts", "check-commits")
	r := newGitRepo(t)
	r.commit("old history: a subject only, before the rule\n")
	base := r.git("rev-parse", "HEAD")
	r.commit("kvhash: a good subject\n\nThe why, and the figures: 10 -> 8 ms.\n")
	// 72 characters, 74 bytes: the cap counts characters.
	r.commit("indexer: " + strings.Repeat("é", 63) + "\n\nA body.\n")
	r.git("checkout", "-q", "-b", "side")
	r.commit("side: a good commit\n\nWhy.\n")
	r.git("checkout", "-q", "main")
	r.git("merge", "-q", "--no-ff", "-m", "Merge branch side", "side") // merges are not checked
	out, code := r.run("", script, base+"..HEAD")
	if code != 0 || !strings.Contains(out, "3 commits") {
		t.Fatalf("good history: exit %d, want 0 and 3 commits checked:\n%s", code, out)
	}
	good := r.git("rev-parse", "HEAD")

	for _, c := range []struct{ msg, want string }{
		{"x: " + strings.Repeat("s", 70) + "\n\nA body.\n", "subject is 73 characters, over 72"},
		{"x: a subject only\n", "no body"},
		{"x: a subject only\n\n\n  \n", "no body"},
		{"x: a subject\nrunning on\n\nA body.\n", "no blank line after the subject"},
		{"\n\nA body without a subject.\n", "empty subject"},
	} {
		r.git("reset", "-q", "--hard", good)
		bad := r.commit(c.msg)
		r.commit("x: a good commit after it\n\nWhy.\n")
		out, code := r.run("", script, base+"..HEAD")
		if code != 1 || !strings.Contains(out, bad+" ") || !strings.Contains(out, c.want) ||
			!strings.Contains(out, "1 of 5 commits") {
			t.Errorf("message %q: exit %d, want 1 naming %s with %q and 1 of 5 commits:\n%s", c.msg, code, bad, c.want, out)
		}
	}

	// With no range the script checks from its recorded base, which this
	// repository lacks: an error, not a silent pass.
	if out, code := r.run("", script); code != 2 || !strings.Contains(out, "not found") {
		t.Errorf("default range without the base: exit %d, want 2:\n%s", code, out)
	}
}

// TestCommitMsgHook: scripts/hooks/commit-msg, installed with
// core.hooksPath, rejects a commit whose message breaks the rule and lets
// a good one through, ignoring the comment lines and the diff of
// `git commit -v` that git strips later.
func TestCommitMsgHook(t *testing.T) {
	hooks := filepath.Join(moduleRoot(t), "scripts", "hooks")
	hook := filepath.Join(hooks, "commit-msg")
	r := newGitRepo(t)
	msg := func(body string) string {
		p := filepath.Join(t.TempDir(), "COMMIT_EDITMSG")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	verbose := "# Please enter the commit message.\n" +
		"# ------------------------ >8 ------------------------\n" +
		"diff --git a/x b/x\n+a line of the diff\n"
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{"x: subject\n\nWhy: 3 -> 2 allocations.\n" + verbose, true},
		{"\n# a comment first\nx: subject\n\nWhy.\n", true},
		{"x: subject\n\n# only comments below the subject\n" + verbose, false},
		{"x: " + strings.Repeat("s", 70) + "\n\nWhy.\n", false},
		{"# nothing but comments\n", false},
	} {
		out, code := r.run("", hook, msg(c.body))
		if (code == 0) != c.ok {
			t.Errorf("hook on %q: exit %d, want ok=%v:\n%s", c.body, code, c.ok, out)
		}
	}

	r.git("config", "core.hooksPath", hooks)
	if out, code := r.run("", "git", "commit", "-q", "--allow-empty", "-m", "x: a subject only"); code == 0 {
		t.Errorf("git commit with a subject only passed the hook:\n%s", out)
	} else if !strings.Contains(out, "no body") {
		t.Errorf("hook's refusal does not say why:\n%s", out)
	}
	if _, code := r.run("", "git", "rev-parse", "-q", "--verify", "HEAD"); code == 0 {
		t.Error("the refused commit was made")
	}
	if out, code := r.run("", "git", "commit", "-q", "--allow-empty", "-m", "x: subject", "-m", "Why."); code != 0 {
		t.Errorf("good commit refused: exit %d:\n%s", code, out)
	}
}

// TestCheckCommitsBase: the base recorded in scripts/check-commits is an
// ancestor of HEAD, so the default range is this branch's history after
// it (skipped outside a git checkout or in a shallow clone).
func TestCheckCommitsBase(t *testing.T) {
	root := moduleRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "scripts", "check-commits"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BASE=([0-9a-f]{40})$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("scripts/check-commits records no BASE=<40 hex digits>")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		return cmd.Output()
	}
	if out, err := git("rev-parse", "--is-shallow-repository"); err != nil || !bytes.Equal(bytes.TrimSpace(out), []byte("false")) {
		t.Skipf("not a full git checkout (%v)", err)
	}
	if _, err := git("merge-base", "--is-ancestor", string(m[1]), "HEAD"); err != nil {
		t.Errorf("BASE %s is not an ancestor of HEAD: %v", m[1], err)
	}
}
