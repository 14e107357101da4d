package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/directaid/directaid/internal/sse"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// FeedResult is the live feed's fan-out: Subscribers streams of one Badger server receive every record
// published, one by one at Rate per second, for the measured time.
type FeedResult struct {
	Subscribers int
	Rate        int           // publications per second asked
	Published   int           // records published (each one event for every subscriber)
	Delivered   int64         // events received by all the subscribers
	Missing     int64         // events a subscriber never received before the end (should be 0)
	Elapsed     time.Duration // from the first publication to the last event received
	// Latency from a publication's answer to its event at a subscriber, over every (subscriber, event).
	P50, P99, Max time.Duration
	ServerCPU     time.Duration
}

// FeedFanout opens subscribers streams of the live feed on a fresh Badger server, publishes at rate per
// second for o.Duration, and measures what every subscriber receives.
func FeedFanout(o Options, subscribers, rate int) (*FeedResult, error) {
	tmp, err := os.MkdirTemp(o.TempDir, "directaid-feed-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	o.Directaid = fmt.Sprintf("\t\tfeed {\n\t\t\tstreams %d\n\t\t\tstreams_per_client %d\n\t\t}", subscribers+10, subscribers+10)
	srv, err := startServer(o, tmp, nil, "")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	base := "http://" + srv.Addr
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0, DisableCompression: true}}

	var sent sync.Map // record id → when its publication was answered
	lat := make([][]time.Duration, subscribers)
	var delivered atomic.Int64
	var lastRecv atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready, done sync.WaitGroup
	errs := make(chan error, subscribers)
	for i := range subscribers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", base+schema.EventsPath+"?emergencySlug=eje-cafetero", nil)
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				if err == nil {
					err = fmt.Errorf("subscriber %d: %s", i, resp.Status)
				}
				errs <- err
				ready.Done()
				return
			}
			defer resp.Body.Close()
			r := sse.NewReader(resp.Body)
			if _, err := r.Next(); err != nil { // the starting position
				errs <- err
				ready.Done()
				return
			}
			ready.Done()
			for {
				b, err := r.Next()
				if err != nil {
					return
				}
				if b.Event != schema.EventPublished {
					continue
				}
				now := time.Now()
				var it struct{ ID string }
				if json.Unmarshal([]byte(b.Data), &it) != nil {
					continue
				}
				if at, ok := sent.Load(it.ID); ok {
					lat[i] = append(lat[i], now.Sub(at.(time.Time)))
				}
				delivered.Add(1)
				lastRecv.Store(now.UnixNano())
			}
		}()
	}
	ready.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	cpu0 := srv.cpu()
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	published := 0
	for time.Since(start) < o.Duration {
		<-tick.C
		body, _ := json.Marshal(testserver.ValidRequest())
		resp, err := client.Post(base+helpPath, "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		var out struct{ ID string }
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil {
			return nil, fmt.Errorf("publication: %s %s", resp.Status, raw)
		}
		sent.Store(out.ID, time.Now())
		published++
	}
	tick.Stop()
	want := int64(published) * int64(subscribers)
	for deadline := time.Now().Add(10 * time.Second); delivered.Load() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	res := &FeedResult{Subscribers: subscribers, Rate: rate, Published: published, Delivered: delivered.Load(),
		Elapsed: time.Unix(0, lastRecv.Load()).Sub(start), ServerCPU: srv.cpu() - cpu0}
	res.Missing = want - res.Delivered
	cancel()
	done.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if n := len(all); n > 0 {
		res.P50, res.P99, res.Max = all[n/2], all[n*99/100], all[n-1]
	}
	return res, nil
}

// Print writes the result as a few lines.
func (f *FeedResult) Print(w io.Writer) {
	secs := f.Elapsed.Seconds()
	fmt.Fprintf(w, "live feed fan-out (Badger): %d subscribers, %d publications at %d/s\n", f.Subscribers, f.Published, f.Rate)
	fmt.Fprintf(w, "  events delivered  %d (%.0f/s), missing %d\n", f.Delivered, float64(f.Delivered)/secs, f.Missing)
	fmt.Fprintf(w, "  latency (publication answered → event received)  p50 %v  p99 %v  max %v\n",
		f.P50.Round(time.Millisecond), f.P99.Round(time.Millisecond), f.Max.Round(time.Millisecond))
	fmt.Fprintf(w, "  server CPU  %v (%.0f%% of one core)\n", f.ServerCPU.Round(time.Millisecond), 100*f.ServerCPU.Seconds()/secs)
}
