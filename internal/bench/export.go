package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ExportResult is one whole export (view=list&format=csv&all=true) of every record, read as fast as
// the client can.
type ExportResult struct {
	Records  int64 // data rows (the two header rows left out)
	Bytes    int64
	Duration time.Duration
	// The server's resident set before the export and its sampled peak during it, and the same for its
	// anonymous part (heap; the rest is Badger's mapped tables, page cache the kernel can reclaim).
	RSSBefore, RSSPeak, AnonBefore, AnonPeak int64
	Chunked                                  bool
	Cut                                      bool // stopped at the time cap before the end
}

// exportAll reads one whole CSV export from srv, for at most limit (then Cut, with what it read so far).
func exportAll(srv *server, limit time.Duration) (*ExportResult, error) {
	st := srv.status("VmRSS", "RssAnon")
	r := &ExportResult{RSSBefore: st["VmRSS"], AnonBefore: st["RssAnon"]}
	r.RSSPeak, r.AnonPeak = r.RSSBefore, r.AnonBefore
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			st := srv.status("VmRSS", "RssAnon")
			mu.Lock()
			r.RSSPeak, r.AnonPeak = max(r.RSSPeak, st["VmRSS"]), max(r.AnonPeak, st["RssAnon"])
			mu.Unlock()
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+srv.Addr+helpPath+"?view=list&format=csv&all=true", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("export: %s", resp.Status)
	}
	r.Chunked = len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	br := bufio.NewReaderSize(resp.Body, 256<<10)
	buf := make([]byte, 256<<10)
	var lines int64
	for {
		n, err := br.Read(buf)
		r.Bytes += int64(n)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil && ctx.Err() != nil {
			r.Cut = true
			break
		}
		if err != nil {
			return nil, fmt.Errorf("export: %w after %d bytes", err, r.Bytes)
		}
	}
	r.Duration = time.Since(t0)
	r.Records = lines - 2 // the bench's bodies hold no newline, so a line is a row

	mu.Lock()
	defer mu.Unlock()
	return r, nil
}

// someIDs reads the ids of the newest n records from the list, for the detail scenario.
func someIDs(addr string, n int) ([]string, error) {
	var ids []string
	cursor := ""
	for len(ids) < n {
		u := "http://" + addr + helpPath + "?view=list&limit=100&total=none"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		resp, err := http.Get(u)
		if err != nil {
			return nil, err
		}
		var page struct {
			Items      []struct{ ID string }
			NextCursor string
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no records to read")
	}
	return ids, nil
}
