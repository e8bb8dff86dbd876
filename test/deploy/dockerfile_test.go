package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// builtByScripts are build context files that the tree may lack until a
// script makes them; they are checked against the .dockerignore, not for
// existence.
var builtByScripts = map[string]string{
	"pkg/javaagent/weft-agent.jar": "scripts/build-agent.sh",
}

// predefinedArgs are the build arguments BuildKit defines without an ARG.
var predefinedArgs = map[string]bool{
	"TARGETPLATFORM": true, "TARGETOS": true, "TARGETARCH": true, "TARGETVARIANT": true,
	"BUILDPLATFORM": true, "BUILDOS": true, "BUILDARCH": true, "BUILDVARIANT": true,
}

var argRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// lintDockerfile checks a Dockerfile as far as BuildKit can without a
// builder: its parser (syntax, unknown instructions, empty continuation
// lines) and the rules its instruction parser runs (FROM/AS casing, stage
// names, MAINTAINER), plus a few of `docker build --check`'s rules that need
// the whole file: JSON-form ENTRYPOINT/CMD (signals reach the process), ARGs
// used in FROM are declared before it, one CMD/ENTRYPOINT per stage, unique
// stage names.
func lintDockerfile(name string, dt []byte) []string {
	var out []string
	report := func(line int, rule, msg string) {
		out = append(out, fmt.Sprintf("%s:%d: %s: %s", name, line, rule, msg))
	}
	res, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	for _, w := range res.Warnings {
		line := 0
		if w.Location != nil {
			line = w.Location.Start.Line
		}
		report(line, "parser", w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		report(line, rule, msg)
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return append(out, fmt.Sprintf("%s: %v", name, err))
	}
	declared := map[string]bool{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			declared[kv.Key] = true
		}
	}
	names := map[string]bool{}
	for _, st := range stages {
		line := 0
		if len(st.Location) > 0 {
			line = st.Location[0].Start.Line
		}
		for _, m := range argRef.FindAllStringSubmatch(st.BaseName+" "+st.Platform, -1) {
			if !declared[m[1]] && !predefinedArgs[m[1]] {
				report(line, "UndefinedArgInFrom", fmt.Sprintf("FROM uses $%s, which no ARG before the first FROM declares", m[1]))
			}
		}
		if st.Name != "" {
			if names[strings.ToLower(st.Name)] {
				report(line, "DuplicateStageName", "stage "+st.Name+" is defined twice")
			}
			names[strings.ToLower(st.Name)] = true
		}
		seen := map[string]bool{}
		for _, c := range st.Commands {
			var cl *instructions.ShellDependantCmdLine
			switch c := c.(type) {
			case *instructions.EntrypointCommand:
				cl = &c.ShellDependantCmdLine
			case *instructions.CmdCommand:
				cl = &c.ShellDependantCmdLine
			default:
				continue
			}
			kw := strings.ToUpper(c.Name())
			cline := 0
			if loc := c.Location(); len(loc) > 0 {
				cline = loc[0].Start.Line
			}
			if cl.PrependShell {
				report(cline, "JSONArgsRecommended", kw+" in shell form: the process runs under /bin/sh -c and does not get SIGTERM")
			}
			if seen[kw] {
				report(cline, "MultipleInstructionsDisallowed", "more than one "+kw+" in a stage: only the last counts")
			}
			seen[kw] = true
		}
	}
	return out
}

type dockerfile struct {
	path   string
	stages []instructions.Stage
}

func parseDockerfile(path string, dt []byte) (*dockerfile, error) {
	res, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &dockerfile{path: path, stages: stages}, nil
}

func loadDockerfile(t *testing.T, path string) *dockerfile {
	t.Helper()
	df, err := parseDockerfile(path, readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return df
}

func (d *dockerfile) stage(name string) (int, bool) {
	for i, s := range d.stages {
		if strings.EqualFold(s.Name, name) {
			return i, true
		}
	}
	return -1, false
}

// command returns the ENTRYPOINT + CMD the image of the target stage runs,
// following FROM <stage> chains.
func (d *dockerfile) command(target string) []string {
	var entrypoint, cmd []string
	var haveEP, haveCmd bool
	for i, ok := d.stage(target); ok; i, ok = d.stage(d.stages[i].BaseName) {
		cmds := d.stages[i].Commands
		for j := len(cmds) - 1; j >= 0; j-- {
			switch c := cmds[j].(type) {
			case *instructions.EntrypointCommand:
				if !haveEP {
					entrypoint, haveEP = shellForm(c.ShellDependantCmdLine), true
				}
			case *instructions.CmdCommand:
				if !haveCmd {
					cmd, haveCmd = shellForm(c.ShellDependantCmdLine), true
				}
			}
		}
	}
	return append(entrypoint, cmd...)
}

func shellForm(c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return append([]string{"/bin/sh", "-c"}, c.CmdLine...)
	}
	return c.CmdLine
}

// contextFilter says which build context paths Docker sends for a
// Dockerfile: BuildKit takes <Dockerfile>.dockerignore beside the
// Dockerfile when there is one, else the context's .dockerignore.
type contextFilter struct {
	source string
	pm     *patternmatcher.PatternMatcher
}

func newContextFilter(t *testing.T, dockerfilePath, contextDir string) *contextFilter {
	t.Helper()
	f := &contextFilter{}
	var patterns []string
	for _, p := range []string{dockerfilePath + ".dockerignore", filepath.Join(contextDir, ".dockerignore")} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if patterns, err = ignorefile.ReadAll(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.source = p
		break
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("%s: %v", f.source, err)
	}
	f.pm = pm
	return f
}

// sent reports whether the context path rel (slash-separated, relative to
// the context) reaches the build.
func (f *contextFilter) sent(t *testing.T, rel string) bool {
	t.Helper()
	excluded, err := f.pm.MatchesOrParentMatches(filepath.ToSlash(filepath.Clean(rel)))
	if err != nil {
		t.Fatalf("%s: %v", f.source, err)
	}
	return !excluded
}

// dockerfiles are the demo's Dockerfiles: every *.Dockerfile in demo/docker.
func dockerfiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(repoPath(t, "demo", "docker", "*Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no Dockerfile in demo/docker")
	}
	return paths
}

func TestDockerfilesPassChecks(t *testing.T) {
	for _, path := range dockerfiles(t) {
		for _, w := range lintDockerfile(filepath.Base(path), readFile(t, path)) {
			t.Error(w)
		}
	}
}

// The checks are live: a Dockerfile with mistakes does not pass them.
func TestDockerfileChecksCatchMistakes(t *testing.T) {
	path := repoPath(t, "demo", "docker", "weft.Dockerfile")
	dt := string(readFile(t, path))
	for name, mutate := range map[string]func(string) string{
		"undefined ARG in FROM": func(s string) string {
			return strings.Replace(s, "FROM golang:${GO_VERSION}", "FROM golang:${GO_VERSON}", 1)
		},
		"FROM/as casing": func(s string) string { return strings.Replace(s, " AS build", " as build", 1) },
		"shell-form ENTRYPOINT": func(s string) string {
			return strings.Replace(s, `ENTRYPOINT ["/usr/local/bin/weft"]`, "ENTRYPOINT /usr/local/bin/weft", 1)
		},
		"unknown instruction": func(s string) string { return strings.Replace(s, "WORKDIR /src", "WORKDIRR /src", 1) },
		"two CMDs":            func(s string) string { return strings.Replace(s, `CMD ["run"]`, "CMD [\"run\"]\nCMD [\"doctor\"]", 1) },
		"empty continuation line": func(s string) string {
			return strings.Replace(s, "--mount=type=cache,target=/go/pkg/mod \\\n", "--mount=type=cache,target=/go/pkg/mod \\\n\n", 1)
		},
	} {
		broken := mutate(dt)
		if broken == dt {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		if got := lintDockerfile("weft.Dockerfile", []byte(broken)); len(got) == 0 {
			t.Errorf("%s: passed the checks", name)
		} else {
			t.Logf("%s: %s", name, got[0])
		}
	}
}

// Every COPY names an earlier stage or a file the build context sends.
func TestDockerfileCopySources(t *testing.T) {
	root := repoRoot(t)
	for _, path := range dockerfiles(t) {
		df := loadDockerfile(t, path)
		// Both demo Dockerfiles build from the repository root (see
		// TestComposeBuilds for the compose side of this).
		filter := newContextFilter(t, path, root)
		for i, st := range df.stages {
			for _, c := range st.Commands {
				cp, ok := c.(*instructions.CopyCommand)
				if !ok {
					continue
				}
				if cp.From != "" {
					if j, ok := df.stage(cp.From); !ok || j >= i {
						t.Errorf("%s: COPY --from=%s names no earlier stage", filepath.Base(path), cp.From)
					}
					continue
				}
				for _, src := range cp.SourcePaths {
					if !filter.sent(t, src) {
						t.Errorf("%s: COPY %s: excluded from the build context by %s", filepath.Base(path), src, filter.source)
					}
					if script, ok := builtByScripts[filepath.Clean(src)]; ok {
						if _, err := os.Stat(filepath.Join(root, src)); err != nil {
							t.Logf("%s: COPY %s: not in the tree yet (made by %s); a docker build needs it", filepath.Base(path), src, script)
						}
						continue
					}
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("%s: COPY %s: %v", filepath.Base(path), src, err)
					}
				}
			}
		}
	}
}

// weft.Dockerfile's context holds every file `go build ./cmd/weft` reads
// (sources and go:embed files such as the BPF objects).
func TestWeftBuildContextHasEveryBuildInput(t *testing.T) {
	root := repoRoot(t)
	filter := newContextFilter(t, repoPath(t, "demo", "docker", "weft.Dockerfile"), root)
	for _, f := range []string{"go.mod", "go.sum"} {
		if !filter.sent(t, f) {
			t.Errorf("%s is not sent to the build", f)
		}
	}
	// -e: a package that does not build yet (work in progress elsewhere in
	// the tree) is reported, and the rest still checked.
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Dir,Module,Error,GoFiles,CgoFiles,SFiles,EmbedFiles", "./cmd/weft")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/weft: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	files := 0
	for dec.More() {
		var p struct {
			ImportPath, Dir                       string
			Module                                *struct{ Main bool }
			Error                                 *struct{ Err string }
			GoFiles, CgoFiles, SFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Logf("%s: not checked: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module == nil || !p.Module.Main {
			continue // standard library and module dependencies
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.SFiles, p.EmbedFiles} {
			for _, f := range list {
				rel, err := filepath.Rel(root, filepath.Join(p.Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				files++
				if !filter.sent(t, rel) {
					t.Errorf("%s: needed by go build, but not sent to the build (%s)", rel, filter.source)
				}
			}
		}
	}
	if files < 10 {
		t.Fatalf("go list found only %d files of weft's own packages", files)
	}
}

// java-services.Dockerfile's context sends the Maven sources but not local
// build output (target/), which would only slow the build and could shadow
// what the builder stage compiles.
func TestJavaBuildContext(t *testing.T) {
	root := repoRoot(t)
	filter := newContextFilter(t, repoPath(t, "demo", "docker", "java-services.Dockerfile"), root)
	services := repoPath(t, "demo", "services")
	var sent, kept []string
	err := filepath.WalkDir(services, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		inTarget := strings.Contains("/"+filepath.ToSlash(rel), "/target/")
		switch ok := filter.sent(t, rel); {
		case inTarget && ok:
			sent = append(sent, rel)
		case !inTarget && !ok:
			kept = append(kept, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(sent)
	sort.Strings(kept)
	for _, f := range sent {
		t.Errorf("%s: build output sent to the build", f)
	}
	for _, f := range kept {
		t.Errorf("%s: Maven source not sent to the build", f)
	}
	if !filter.sent(t, "demo/services/pom.xml") {
		t.Error("demo/services/pom.xml not sent to the build")
	}
}
