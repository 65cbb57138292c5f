package reload_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

const (
	allowlistFile = "data/agentd/allowlist.json"
	contextHooks  = "hooks/10-context.yaml"
	tenantExpr    = `"'Tenant: ' + string(metadata.tenant)"`
)

const tradeAllowlist = `{"allowlist": {"demo-tools": {"stock-service": ["stock_quote", "execute_trade"]}}}`

func TestWatch_DataEditFlipsAfterPlanningDecision(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	old := reg.Current()
	trade := plan(stockStep("step-1", "execute_trade"))
	requireRejected(t, old, trade)
	startWatch(t, r, reg, testDebounce)

	writeFile(t, filepath.Join(dir, allowlistFile), tradeAllowlist)

	gen := waitLive(t, reg, old.ID)
	requireAllowed(t, gen, trade)
	requireRejected(t, old, trade) // a generation never changes once built
}

func TestWatch_CELEditInHook(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	old := reg.Current()
	if got := tenantContext(t, old); got != "Tenant: acme" {
		t.Fatalf("rag_context = %v before the edit", got)
	}
	startWatch(t, r, reg, testDebounce)

	editFile(t, filepath.Join(dir, contextHooks), tenantExpr, `"'Customer: ' + string(metadata.tenant).upperAscii()"`)

	gen := waitLive(t, reg, old.ID)
	if got := tenantContext(t, gen); got != "Customer: ACME" {
		t.Fatalf("rag_context = %v after the edit", got)
	}
}

// A folder created after the watch started is watched: a second edit inside it,
// which no other folder sees, goes live too.
func TestWatch_NewFileInNewFolder(t *testing.T) {
	t.Run("data", func(t *testing.T) {
		dir := stockAgent(t, "")
		// The limits come from the new folder alone.
		if err := os.Remove(filepath.Join(dir, "data", "agentd", "limits.json")); err != nil {
			t.Fatal(err)
		}
		r, reg := newReloader(t, dir)
		quotes := plan(stockStep("step-1", "stock_quote"), stockStep("step-2", "stock_quote"))
		requireAllowed(t, reg.Current(), quotes)
		startWatch(t, r, reg, testDebounce)
		old := reg.Current()

		limits := filepath.Join(dir, "data", "agentd", "limits", "x.json")
		writeFile(t, limits, `{"max_steps": 1}`)
		gen := waitLive(t, reg, old.ID)
		requireRejected(t, gen, quotes)

		writeFile(t, limits, `{"max_steps": 2}`)
		gen = waitLive(t, reg, gen.ID)
		requireAllowed(t, gen, quotes)
	})
	t.Run("policies", func(t *testing.T) {
		dir := stockAgent(t, "")
		r, reg := newReloader(t, dir)
		startWatch(t, r, reg, testDebounce)
		old := reg.Current()

		module := filepath.Join(dir, "policies", "extra", "deeper", "new.rego")
		writeFile(t, module, "package agentd.extra\n\nanswer := 1\n")
		gen := waitLive(t, reg, old.ID)
		if !slices.Contains(gen.Files, "policies/extra/deeper/new.rego") {
			t.Fatalf("files of the new generation: %v", gen.Files)
		}

		writeFile(t, module, "package agentd.extra\n\nanswer := 2\n")
		waitLive(t, reg, gen.ID)
	})
}

// Editors save by writing a temporary file and renaming it over the original; the
// watch must survive that, save after save.
func TestWatch_RenameOverSave(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	startWatch(t, r, reg, testDebounce)
	path := filepath.Join(dir, contextHooks)
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prev := reg.Current().ID
	for i, label := range []string{"Org", "Team"} {
		tmp := filepath.Join(dir, "hooks", ".10-context.yaml.swp")
		data := regexp.MustCompile(`'Tenant: '`).ReplaceAllString(string(original), "'"+label+": '")
		writeFile(t, tmp, data)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		gen := waitLive(t, reg, prev)
		if got := tenantContext(t, gen); got != label+": acme" {
			t.Fatalf("save %d: rag_context = %v", i+1, got)
		}
		prev = gen.ID
	}
}

// The Kubernetes ConfigMap layout: the files live in a hidden timestamped folder,
// ..data links to it and the top-level folders link through ..data. An update
// writes a new timestamped folder, swaps ..data with a rename and removes the old one.
func TestWatch_ConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	stockAgent(t, filepath.Join(dir, "..2026_a"))
	mustSymlink(t, "..2026_a", filepath.Join(dir, "..data"))
	for _, sub := range []string{"hooks", "policies", "data"} {
		mustSymlink(t, filepath.Join("..data", sub), filepath.Join(dir, sub))
	}
	r, reg := newReloader(t, dir)
	old := reg.Current()
	trade := plan(stockStep("step-1", "execute_trade"))
	requireRejected(t, old, trade)
	startWatch(t, r, reg, testDebounce)

	update := func(from, to string, edit func(dir string)) {
		t.Helper()
		stockAgent(t, filepath.Join(dir, to))
		edit(filepath.Join(dir, to))
		mustSymlink(t, to, filepath.Join(dir, "..data_tmp"))
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(dir, from)); err != nil {
			t.Fatal(err)
		}
	}

	update("..2026_a", "..2026_b", func(d string) {
		writeFile(t, filepath.Join(d, allowlistFile), tradeAllowlist)
		editFile(t, filepath.Join(d, contextHooks), tenantExpr, `"'Account: ' + string(metadata.tenant)"`)
	})
	gen := waitLive(t, reg, old.ID)
	requireAllowed(t, gen, trade)
	if got := tenantContext(t, gen); got != "Account: acme" {
		t.Fatalf("rag_context = %v after the first swap", got)
	}

	// The next swap is seen too, and an edit inside the folder now in use.
	update("..2026_b", "..2026_c", func(string) {})
	back := waitLive(t, reg, gen.ID)
	requireRejected(t, back, trade)
	writeFile(t, filepath.Join(dir, "..2026_c", allowlistFile), tradeAllowlist)
	requireAllowed(t, waitLive(t, reg, back.ID), trade)
}

// Deleting a module other modules import fails the reload with file:line:col; the
// last good generation keeps serving and still enforces its policy. Restoring the
// file recovers.
func TestWatch_DeletingNeededPolicyKeepsLastGood(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	good := reg.Current()
	startWatch(t, r, reg, testDebounce)
	goodAt := reg.Status().LastGood
	lib := filepath.Join(dir, "policies", "agentd", "lib", "lib.rego")
	saved, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}

	st := waitFailed(t, reg)
	if !regexp.MustCompile(`policies/agentd/plan/plan\.rego:\d+:\d+: rego_compile: undefined function data\.agentd\.lib\.`).MatchString(st.Error) {
		t.Fatalf("status error does not name the broken reference by file:line:col:\n%s", st.Error)
	}
	if st.Generation != good.ID || !st.LastGood.Equal(goodAt) {
		t.Fatalf("status after the failure: generation %s, last good %v; want %s, %v", st.Generation, st.LastGood, good.ID, goodAt)
	}
	live := reg.Current()
	if live != good {
		t.Fatalf("live generation changed to %s after a failed reload", live.ID)
	}
	requireRejected(t, live, plan(stockStep("step-1", "execute_trade")))
	requireAllowed(t, live, plan(stockStep("step-1", "stock_quote")))

	writeFile(t, lib, string(saved))
	waitFor(t, "recovery", func() bool { return reg.Status().Result == "ok" })
	if reg.Current().ID != good.ID {
		t.Fatalf("restored content built generation %s, want %s", reg.Current().ID, good.ID)
	}
}

// A broken edit never goes live; the next good edit does, without a restart.
func TestWatch_InvalidEditThenFixRecovers(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	good := reg.Current()
	startWatch(t, r, reg, testDebounce)
	path := filepath.Join(dir, contextHooks)

	editFile(t, path, tenantExpr, `"'Tenant: ' + "`)
	st := waitFailed(t, reg)
	if !regexp.MustCompile(`hooks/10-context\.yaml:\d+:\d+: `).MatchString(st.Error) {
		t.Fatalf("status error does not point into the hook file:\n%s", st.Error)
	}
	if reg.Current() != good || st.Generation != good.ID {
		t.Fatalf("a broken edit changed the live generation to %s", reg.Current().ID)
	}
	if got := tenantContext(t, reg.Current()); got != "Tenant: acme" {
		t.Fatalf("rag_context = %v while the edit is broken", got)
	}

	editFile(t, path, `"'Tenant: ' + "`, `"'Fixed: ' + string(metadata.tenant)"`)
	gen := waitLive(t, reg, good.ID)
	if st := reg.Status(); st.Error != "" {
		t.Fatalf("status after the fix still carries an error: %q", st.Error)
	}
	if got := tenantContext(t, gen); got != "Fixed: acme" {
		t.Fatalf("rag_context = %v after the fix", got)
	}
}

// A folder that is removed and created again is watched afresh.
func TestWatch_FolderRemovedAndRecreated(t *testing.T) {
	dir := stockAgent(t, "")
	r, reg := newReloader(t, dir)
	startWatch(t, r, reg, testDebounce)
	agentd := filepath.Join(dir, "data", "agentd")
	trade := plan(stockStep("step-1", "execute_trade"))
	old := reg.Current()

	if err := os.RemoveAll(agentd); err != nil {
		t.Fatal(err)
	}
	gen := waitLive(t, reg, old.ID) // no allow-list: every step is denied
	requireRejected(t, gen, plan(stockStep("step-1", "stock_quote")))

	writeFile(t, filepath.Join(agentd, "allowlist.json"), tradeAllowlist)
	gen = waitLive(t, reg, gen.ID)
	requireAllowed(t, gen, trade)

	writeFile(t, filepath.Join(agentd, "allowlist.json"), `{"allowlist": {}}`)
	requireRejected(t, waitLive(t, reg, gen.ID), trade)
}

// The config directory itself replaced by a rename (a deploy tool's swap) is seen
// through the watch on its parent.
func TestWatch_DirectoryReplacedByRename(t *testing.T) {
	parent := t.TempDir()
	dir := stockAgent(t, filepath.Join(parent, "config"))
	r, reg := newReloader(t, dir)
	old := reg.Current()
	startWatch(t, r, reg, testDebounce)

	next := stockAgent(t, filepath.Join(parent, "config.next"))
	writeFile(t, filepath.Join(next, allowlistFile), tradeAllowlist)
	if err := os.Rename(dir, filepath.Join(parent, "config.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, dir); err != nil {
		t.Fatal(err)
	}
	gen := waitLive(t, reg, old.ID)
	requireAllowed(t, gen, plan(stockStep("step-1", "execute_trade")))

	// Edits inside the new directory are seen.
	writeFile(t, filepath.Join(dir, allowlistFile), `{"allowlist": {}}`)
	requireRejected(t, waitLive(t, reg, gen.ID), plan(stockStep("step-1", "stock_quote")))
}

// A burst of saves is absorbed: fewer reloads than saves, and the last save wins.
func TestWatch_DebouncesBursts(t *testing.T) {
	dir := stockAgent(t, "")
	var live atomic.Int64
	r, reg := newReloaderWithLogger(t, dir, slog.New(logCounter{message: "config generation live", n: &live}))
	startWatch(t, r, reg, 5*testDebounce)
	live.Store(0)
	path := filepath.Join(dir, contextHooks)
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const saves = 20
	for i := range saves {
		writeFile(t, path, strings.Replace(string(original), "'Tenant: '", "'V"+strconv.Itoa(i)+": '", 1))
	}
	want := "V" + strconv.Itoa(saves-1) + ": acme"
	waitFor(t, "the last save to go live", func() bool {
		st := reg.Status()
		return st.Result == "ok" && st.Generation == reg.Current().ID && tenantContext(t, reg.Current()) == want
	})
	if n := live.Load(); n >= saves {
		t.Fatalf("%d saves caused %d reloads", saves, n)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestWatch_FailsOnlyWhenItCannotStart(t *testing.T) {
	reg := reload.NewRegistry(1)
	r, err := reload.NewReloader(filepath.Join(t.TempDir(), "missing"), config.Options{}, reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reload.Watch(t.Context(), r, reload.WatchOptions{}); err == nil {
		t.Fatal("Watch of a missing directory started")
	}
}
