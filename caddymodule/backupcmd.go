package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "backup",
		Usage: "--dir <directory> [--keep <n>] [--admin <address> | --config <Caddyfile>]",
		Short: "Takes a backup of the running server into a directory and keeps the newest n",
		Long: `Fetches a consistent backup from the running server's admin endpoint (GET /directaid/backup),
writes it to <dir>/directaid-<UTC time, to the millisecond>.bak (complete or not at all), checks it as
'directaid restore --verify' does, and then deletes the oldest backups of <dir> beyond --keep.
Nothing is deleted when the new backup fails. The systemd timer directaid-backup.timer runs this daily.
The admin endpoint is --admin, else the admin address of the --config file, else $CADDY_ADMIN, else
the shipped one, ` + DefaultAdminSocket + `.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("dir", "", "Directory of the backups")
			cmd.Flags().Int("keep", 7, "How many backups to keep (the newest)")
			addAdminFlags(cmd)
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(backupCmd)
		},
	})
}

const backupPrefix, backupSuffix = "directaid-", ".bak"

func backupCmd(fl caddycmd.Flags) (int, error) {
	dir, keep := fl.String("dir"), fl.Int("keep")
	if dir == "" || keep < 1 {
		return caddy.ExitCodeFailedStartup, errors.New("usage: directaid backup --dir <directory> [--keep n≥1] [--admin address | --config Caddyfile]")
	}
	admin, err := adminAddress(fl)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	path, n, err := takeBackup(admin, dir, time.Now())
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	fmt.Printf("backup %s: %d bytes\n", path, n)
	if verifyBackupFile != nil {
		if err := verifyBackupFile(path, os.Stdout); err != nil {
			// Keep the file for a post-mortem but do not let it count among the kept ones.
			bad := path + ".failed"
			_ = os.Rename(path, bad)
			return caddy.ExitCodeFailedStartup, fmt.Errorf("backup %s does not restore: %w", bad, err)
		}
	}
	removed, err := pruneBackups(dir, keep)
	for _, r := range removed {
		fmt.Printf("removed old backup %s\n", r)
	}
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// verifyBackupFile checks a backup by restoring it (set by the restore command's file); nil skips the check.
var verifyBackupFile func(path string, report io.Writer) error

// takeBackup streams the admin endpoint's backup into dir under a name that sorts by time. The file gets
// its final name only once complete and synced, so a failed run leaves no file that looks like a backup.
func takeBackup(admin, dir string, now time.Time) (string, int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	resp, err := caddycmd.AdminAPIRequest(admin, "GET", "/directaid/backup", nil, nil)
	if err != nil {
		return "", 0, fmt.Errorf("backup from %s: %w", admin, err)
	}
	defer resp.Body.Close()
	path := filepath.Join(dir, backupPrefix+now.UTC().Format("20060102T150405.000Z")+backupSuffix)
	tmp, err := os.CreateTemp(dir, ".partial-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	n, err := io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("backup from %s: %w", admin, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", 0, err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return path, n, nil
}

// pruneBackups deletes all but the newest keep backups of dir (by name, which is by time).
func pruneBackups(dir string, keep int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, backupPrefix) && strings.HasSuffix(n, backupSuffix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var removed []string
	for len(names) > keep {
		p := filepath.Join(dir, names[0])
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
		names = names[1:]
	}
	return removed, nil
}
