package reload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure Watch. The zero value is valid.
type WatchOptions struct {
	// Debounce is the quiet period that must follow the last change before a reload
	// starts; zero or negative means 100ms.
	Debounce time.Duration
}

const defaultDebounce = 100 * time.Millisecond

// Watch reloads r whenever its config directory changes, until ctx is done, and then
// returns nil. It returns an error only when the watch cannot start: no fsnotify
// watcher, or the directory itself cannot be watched. It blocks; run it in its own
// goroutine. Not calling Watch turns watching off; a SIGHUP handler calls r.Reload.
//
// What is watched: the directory, every folder below it, including folders created
// later, and the directory's parent (only events about the directory's own name
// count there), so that a directory that is removed and created again, renamed over
// or re-pointed by a symlink is picked up again. Top-level entries that are symlinks
// are followed, as the loader follows them, so in the Kubernetes ConfigMap layout
// (hooks -> ..data/hooks, ..data -> ..<timestamp>) the timestamped folders in use are
// watched. Hidden entries are not walked: the swap of ..data arrives as an event in
// the directory itself. After every event the watched set is recomputed: symlinks are
// resolved again, new folders are added, and folders that vanished or were replaced by
// another one are dropped or watched afresh. A symlink swapped above the parent is not
// seen; that layout needs a SIGHUP.
//
// When: every event but a bare attribute change (chmod) starts or restarts a quiet
// period of opts.Debounce; when it ends, one r.Reload runs, never one per event (so
// changes that never pause for a quiet period hold the reload back until they do).
// Reload compiles aside and swaps in one store, or keeps the last good generation and
// records the error, so a broken save never goes live and a later fix recovers. Watch
// also reloads once, one quiet period after it started, so a change made between the
// caller's first load and the watches being in place is not lost. Reloads run one at
// a time in Watch's goroutine; events that arrive meanwhile start the next quiet
// period. Errors reported by fsnotify are logged with the reloader's logger and the
// watch goes on; after an event queue overflow the tree is re-walked and reloaded.
func Watch(ctx context.Context, r *Reloader, opts WatchOptions) error {
	debounce := opts.Debounce
	if debounce <= 0 {
		debounce = defaultDebounce
	}
	dir, err := filepath.Abs(r.dir)
	if err != nil {
		return fmt.Errorf("watch config directory: %w", err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("watch config directory: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch config directory %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(root); err != nil {
		return fmt.Errorf("watch config directory %s: %w", dir, err)
	}
	t := &tree{w: w, dir: dir, logger: r.logger, watched: map[string]fs.FileInfo{}, warned: map[string]bool{}}
	t.sync(ctx)
	r.logger.InfoContext(ctx, "watching config directory", "dir", dir, "folders", len(t.watched), "debounce", debounce)

	quiet := time.NewTimer(debounce)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !t.relevant(ev) {
				continue
			}
			t.sync(ctx)
			quiet.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			r.logger.WarnContext(ctx, "config watch error; watching goes on", "dir", dir, "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				t.sync(ctx)
				quiet.Reset(debounce)
			}
		case <-quiet.C:
			if ctx.Err() != nil {
				return nil
			}
			t.sync(ctx)
			// Reload logs, counts and records a failure itself; the watch goes on.
			_, _ = r.Reload(ctx)
		}
	}
}

// tree keeps one fsnotify watch on every folder of a config directory. It is used by
// one goroutine only.
type tree struct {
	w      *fsnotify.Watcher
	dir    string // absolute, symlinks not resolved
	logger *slog.Logger
	// watched maps the real path of each watched folder to the folder found there
	// when the watch was added.
	watched map[string]fs.FileInfo
	// parent is the real path of dir's parent; names are the entries of parent that
	// matter: dir's own name and, when dir is a symlink, the name of its target.
	parent string
	names  map[string]bool
	// warned holds the folders that could not be watched, each logged once.
	warned map[string]bool
}

// relevant reports whether ev may change what the loader reads. Attribute changes do
// not; in the parent folder only events about the config directory itself count.
func (t *tree) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	if filepath.Dir(ev.Name) == t.parent && !t.names[filepath.Base(ev.Name)] {
		return false
	}
	return true
}

// sync makes the watched set equal to the folders found now. A folder whose path now
// holds another folder (removed and created again, renamed over) is watched afresh.
func (t *tree) sync(ctx context.Context) {
	want := t.folders()
	live := make(map[string]bool, len(t.watched))
	for _, p := range t.w.WatchList() {
		live[p] = true
	}
	for p, old := range t.watched {
		if now, ok := want[p]; ok && live[p] && os.SameFile(old, now) {
			continue
		}
		// The watch may be gone already (the folder was removed); nothing to undo then.
		_ = t.w.Remove(p)
		delete(t.watched, p)
	}
	for p, fi := range want {
		if _, ok := t.watched[p]; ok {
			continue
		}
		if err := t.w.Add(p); err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !t.warned[p] {
				t.warned[p] = true
				t.logger.WarnContext(ctx, "config watch cannot watch a folder; its changes need a reload (SIGHUP)", "folder", p, "error", err)
			}
			continue
		}
		delete(t.warned, p)
		t.watched[p] = fi
	}
}

// folders returns the folders to watch by real path: dir's parent, dir and every
// folder below it that is not hidden, following the symlinks directly in dir.
func (t *tree) folders() map[string]fs.FileInfo {
	want := make(map[string]fs.FileInfo)
	t.parent, _ = addFolder(want, filepath.Dir(t.dir))
	root, ok := addFolder(want, t.dir)
	t.names = map[string]bool{filepath.Base(t.dir): true}
	if !ok {
		return want
	}
	if filepath.Dir(root) == t.parent {
		t.names[filepath.Base(root)] = true
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		if sub, ok := addFolder(want, filepath.Join(root, e.Name())); ok {
			walkFolders(want, sub)
		}
	}
	return want
}

// addFolder resolves p and adds it to want when it is a folder.
func addFolder(want map[string]fs.FileInfo, p string) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	want[real] = fi
	return real, true
}

// walkFolders adds every folder below root that is not hidden; symlinks below root
// are not followed, as the loader does not follow them.
func walkFolders(want map[string]fs.FileInfo, root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || p == root || !d.IsDir():
			return nil
		case hidden(d.Name()):
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err == nil {
			want[p] = fi
		}
		return nil
	})
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }
